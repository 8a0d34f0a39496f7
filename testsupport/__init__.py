"""Support code shared by tests/ and bench/, which import this and never each other."""

"""`make test`'s runner: lint, the prepare and the test lanes side by side (`python -m
tools.testrun`), ending with one timing table (docs/testing.md, "Lanes and budgets")."""

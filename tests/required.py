"""What a test does when the machine lacks what it needs: skip, or fail where CI requires every
tier (E2E=required, as `.ci/run` sets it): a check CI skips is a check CI reports as done."""

import os
from typing import NoReturn

import pytest


def required() -> bool:
    """Whether every tier must run (E2E=required)."""
    return os.environ.get("E2E") == "required"


def unavailable(reason: str) -> NoReturn:
    """Skip the test for want of `reason`, or fail it when every tier is required."""
    if required():
        pytest.fail(f"required but unavailable: {reason}")
    pytest.skip(reason)

"""Fixtures every test module shares: the hook's Flask test client, the golden fixture cases,
the Hypothesis profile the property tests run under, and the figures tests measured."""

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, settings

from hooks.app import create_app
from tests import golden
from testsupport.jobs import NOW

# No per-example deadline: a loaded CI machine makes timing a flake, not a finding. Choose
# another registered profile with HYPOTHESIS_PROFILE.
settings.register_profile("mxjob", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# `make check`: the same properties on fewer examples, for a quick loop while editing.
settings.register_profile("quick", parent=settings.get_profile("mxjob"), max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "mxjob"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the end-to-end tests and the rejoin harness measured (the lines they print), shown
    at the end of every run, so CI's log keeps the figures the docs quote."""
    lines = [
        f"{report.nodeid.rsplit('::', 1)[-1]}: {line.strip()}"
        for report in terminalreporter.stats.get("passed", [])
        if report.when in ("call", "teardown") and not report.nodeid.startswith("tests/test_fuzz")
        for line in report.capstdout.splitlines()
        if line.strip()
    ]
    if lines:
        terminalreporter.section("measured")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def make_client() -> Callable[..., FlaskClient]:
    """A test client of the hook in testing mode at the builders' NOW; `config` overrides."""

    def make(**config: Any) -> FlaskClient:
        return create_app({"TESTING": True, "CLOCK": lambda: NOW, **config}).test_client()

    return make


@pytest.fixture
def client(make_client: Callable[..., FlaskClient]) -> FlaskClient:
    """The hook's test client with the default configuration."""
    return make_client()


@pytest.fixture
def seed_case() -> Path:
    """The golden case of a job's first sync."""
    return golden.FIXTURES / "dist-first-sync"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test taking `fixture_case` runs once per golden case directory under tests/fixtures."""
    if "fixture_case" in metafunc.fixturenames:
        cases = golden.folders()
        metafunc.parametrize("fixture_case", cases, ids=[p.name for p in cases])


#: What a gunicorn worker runs with; whether deep JSON overflows depends on it.
PYTHON_DEFAULT_RECURSION_LIMIT = 1000


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default limit, as in a gunicorn worker (hypothesis may leave it raised)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_DEFAULT_RECURSION_LIMIT)
    yield
    sys.setrecursionlimit(limit)

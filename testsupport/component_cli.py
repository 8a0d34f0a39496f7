"""A component's command line (`python -m <component>`, mxjob/component/runtime.py) run in a test
against an in-memory cluster, with the process's settings as they were afterwards."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest

from mxjob.component import runtime


@contextmanager
def against(
    monkeypatch: pytest.MonkeyPatch, controller: ModuleType, cluster: object, *variables: str
) -> Iterator[None]:
    """Within: the command line gets no client of its own, and the component's `controller`
    module hands `cluster` out as each of its two APIs (its `clients`); the environment
    `variables` and LOG_LEVEL are unset. After: the root logger as it was (the command line
    configures it)."""
    monkeypatch.setattr(runtime, "api_client", lambda kubeconfig: object())
    monkeypatch.setattr(controller, "clients", lambda api: (cluster, cluster))
    for name in (*variables, "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:], root.level = handlers, level

"""Every hook call is counted once and logged once, whatever its outcome (hooks/call.py): the
same fields on every line (docs/http.md#logs), the same outcome in the line and the metric."""

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hooks.app import create_app, sync_tag
from tests import conversion_cases
from tests.builders import NOW, mxjob, replica, request
from tests.test_logs import captured

JSON = "application/json"
SYNC = json.dumps(request(mxjob())).encode()
REVIEW = json.dumps(conversion_cases.v1alpha1_proposal_example()).encode()
#: Fields of every hook line, and the reference each hook adds (None where the body names none).
EVERY_LINE = {"time", "level", "message", "pid", "hook", "outcome", "status", "duration_ms"}
REFERENCE = {"sync": {"namespace", "name", "uid"}, "convert": {"uid"}}


def _broken(*_: object) -> Any:
    raise RuntimeError("a bug")


@dataclass(frozen=True)
class Case:
    path: str
    data: bytes
    status: int
    outcome: str
    level: str
    #: Fields this outcome adds to the line, and a value each must have (None: any value).
    details: dict[str, Any] = field(default_factory=dict)
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    #: A name to replace with a function that raises: a bug where the hook calls it.
    bug: str = ""


CASES = {
    "sync-answered": Case(
        "/sync", SYNC, 200, "created", "info", {"children": 13, "response_bytes": None}
    ),
    "sync-invalid": Case(
        "/sync",
        json.dumps(request(mxjob(replicas={"Server": replica(1)}))).encode(),
        200,
        "invalid",
        "info",
        {"problems": None, "response_bytes": None},
    ),
    "sync-not-modified": Case(
        "/sync",
        SYNC,
        304,
        "not_modified",
        "info",
        headers={"If-None-Match": sync_tag(create_app().config, SYNC)},
    ),
    "sync-malformed": Case(
        "/sync", b"{", 400, "rejected", "warning", {"error": "malformed_json", "reason": None}
    ),
    "sync-content-type": Case(
        "/sync",
        SYNC,
        415,
        "rejected",
        "warning",
        {"error": "unsupported_media_type", "content_type": "text/plain"},
        content_type="text/plain",
    ),
    "sync-too-large": Case(
        "/sync",
        SYNC,
        413,
        "rejected",
        "warning",
        {"error": "request_entity_too_large"},
        config={"MAX_CONTENT_LENGTH": 64},
    ),
    "sync-not-a-request": Case(
        "/sync",
        b'{"parent": {"metadata": {"name": "mnist"}}, "children": []}',
        422,
        "rejected",
        "warning",
        {"error": "not_a_sync_request", "name": "mnist"},
    ),
    "sync-bug-deciding": Case(
        "/sync", SYNC, 500, "error", "error", {"name": "mnist"}, config={"CLOCK": _broken}
    ),
    "sync-bug-decoding": Case("/sync", SYNC, 500, "error", "error", bug="hooks.wire.decode"),
    "convert-answered": Case(
        "/convert", REVIEW, 200, "success", "info", {"objects": 1, "response_bytes": None}
    ),
    "convert-failure": Case(
        "/convert",
        json.dumps(conversion_cases.refused_type_twice()).encode(),
        200,
        "failure",
        "warning",
        {"reason": None, "response_bytes": None},
    ),
    "convert-refused": Case(
        "/convert",
        json.dumps(conversion_cases.broken_no_uid()).encode(),
        422,
        "rejected",
        "warning",
        {"error": "not_a_conversion_review"},
    ),
    "convert-bug": Case(
        "/convert",
        REVIEW,
        500,
        "error",
        "error",
        {"uid": conversion_cases.UID, "objects": 1},
        bug="hooks.app.answer",
    ),
}


def _calls(hook: str) -> float:
    """Calls of `hook` observed so far, whatever their outcome."""
    labels = {"hook": hook}
    return REGISTRY.get_sample_value("mxjob_hook_sync_duration_seconds_count", labels) or 0.0


def _count(hook: str, outcome: str) -> float:
    labels = {"hook": hook, "outcome": outcome}
    return REGISTRY.get_sample_value("mxjob_hook_syncs_total", labels) or 0.0


@pytest.mark.parametrize("name", CASES)
def test_a_call_is_counted_once_and_logged_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    hook = case.path.strip("/")
    if case.bug:
        monkeypatch.setattr(case.bug, _broken)
    client = create_app({"CLOCK": lambda: NOW, **case.config}).test_client()
    calls, counted = _calls(hook), _count(hook, case.outcome)

    def send(c: Any) -> Any:
        return c.post(
            case.path, data=case.data, content_type=case.content_type, headers=case.headers
        )

    answers: list[Any] = []
    [line] = captured(client, lambda c: answers.append(send(c)))
    assert answers[0].status_code == case.status
    assert (_calls(hook), _count(hook, case.outcome)) == (calls + 1, counted + 1)
    assert EVERY_LINE | REFERENCE[hook] <= set(line)
    assert (line["hook"], line["outcome"], line["status"]) == (hook, case.outcome, case.status)
    assert line["level"] == case.level
    assert line["request_bytes"] == len(case.data)
    for key, want in case.details.items():
        assert key in line and want in (None, line[key]), (key, line.get(key))

"""Structured logs: one JSON object per line, the MXJob reference and outcome on every sync
line, refusals logged with their reason and never the body, the level from LOG_LEVEL."""

import io
import json
import logging
import sys
from typing import Any

import pytest
from flask.testing import FlaskClient

from hooks import logs
from hooks.app import create_app
from tests import conversion_cases
from tests.builders import UID, mxjob, replica, request
from testsupport.server import serve

JSON = "application/json"
MARKER = "do-not-log-the-body-7f3a"


def captured(client: FlaskClient, send: Any) -> list[dict[str, Any]]:
    """Run `send(client)` and return the log lines it wrote."""
    logger = logs.configure()
    stream = io.StringIO()
    # Only the hook's own handler: pytest adds its capture handlers to non-propagating loggers.
    handlers = [
        h
        for h in logger.handlers
        if isinstance(h, logging.StreamHandler) and isinstance(h.formatter, logs.JsonFormatter)
    ]
    previous = [h.setStream(stream) for h in handlers]
    try:
        send(client)
    finally:
        for handler, old in zip(handlers, previous, strict=True):
            handler.setStream(old or sys.stderr)
    text = stream.getvalue()
    assert text.endswith("\n") or not text
    return [json.loads(line) for line in text.splitlines()]


def test_formatter_writes_one_json_object_per_line() -> None:
    record = logging.LogRecord("mxjob.hook", logging.WARNING, __file__, 1, "a\nb %s", ("c",), None)
    record.fields = {"name": "job", "count": 3}
    line = logs.JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "a\nb c"
    assert entry["level"] == "warning"
    assert entry["time"].endswith("Z") and len(entry["time"]) == len("2026-03-01T12:00:00.000Z")
    assert entry["name"] == "job" and entry["count"] == 3
    assert "logger" not in entry


def test_formatter_keeps_tracebacks_on_the_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("other", logging.ERROR, __file__, 1, "x", (), sys.exc_info())
    entry = json.loads(logs.JsonFormatter().format(record))
    assert "ValueError: boom" in entry["error"]
    assert entry["logger"] == "other"


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("debug", logging.DEBUG),
        ("WARNING", logging.WARNING),
        (" error ", logging.ERROR),
        ("verbose", logging.INFO),
        ("", logging.INFO),
    ],
)
def test_level_from_env(value: str, level: int) -> None:
    assert logs.level_from_env(value) == level


def test_configure_is_idempotent() -> None:
    logger = logs.configure()
    count = len(logger.handlers)
    assert logs.configure() is logger
    assert len(logger.handlers) == count
    assert sum(isinstance(h.formatter, logs.JsonFormatter) for h in logger.handlers) == 1
    assert logger.propagate is False


def post(body: object, path: str = "/sync") -> Any:
    return lambda c: c.post(path, data=json.dumps(body), content_type=JSON)


def test_every_sync_line_names_the_job_and_its_outcome(client: FlaskClient) -> None:
    [line] = captured(client, post(request(mxjob())))
    assert line["level"] == "info"
    assert line["message"] == "sync default/mnist: created"
    assert {k: line[k] for k in ("hook", "namespace", "name", "uid", "outcome", "status")} == {
        "hook": "sync",
        "namespace": "default",
        "name": "mnist",
        "uid": UID,
        "outcome": "created",
        "status": 200,
    }
    assert line["children"] == 13
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] > 0
    assert line["request_bytes"] > 0 and line["response_bytes"] > 0


def test_an_invalid_spec_logs_its_problems(client: FlaskClient) -> None:
    [line] = captured(client, post(request(mxjob(replicas={"Server": replica(1)}))))
    assert line["outcome"] == "invalid"
    assert any("Scheduler" in p for p in line["problems"])


@pytest.mark.parametrize(
    ("data", "content_type", "status"),
    [
        (b'{"parent": {"spec": "' + MARKER.encode(), JSON, 400),
        (json.dumps({"parent": {"metadata": {}, "spec": MARKER}}).encode(), JSON, 422),
        (json.dumps({"note": MARKER}).encode(), "text/plain", 415),
    ],
    ids=["malformed", "not-sync", "content-type"],
)
def test_a_refusal_logs_the_reason_not_the_body(
    client: FlaskClient, data: bytes, content_type: str, status: int
) -> None:
    [line] = captured(client, lambda c: c.post("/sync", data=data, content_type=content_type))
    assert line["level"] == "warning"
    assert line["status"] == status
    assert line["outcome"] == "rejected"
    assert line["reason"] and line["error"]
    assert line["request_bytes"] == len(data)
    assert MARKER not in json.dumps(line)


def test_a_refused_request_names_the_job_when_it_can(client: FlaskClient) -> None:
    body = {
        "parent": {"metadata": {"name": "mnist", "namespace": "ml", "uid": "u1"}},
        "controller": 1,
    }
    [line] = captured(client, post(body))
    assert (line["namespace"], line["name"], line["uid"]) == ("ml", "mnist", "u1")


def test_log_level_warning_keeps_refusals_only(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "warning")
    try:
        found = captured(
            client,
            lambda c: (
                c.post("/sync", data=json.dumps(request(mxjob())), content_type=JSON),
                c.post("/sync", data=b"{", content_type=JSON),
            ),
        )
    finally:
        monkeypatch.delenv("LOG_LEVEL")
        logs.configure()
    assert [line["status"] for line in found] == [400]


def test_a_bug_logs_the_traceback_with_the_job() -> None:
    def broken() -> Any:
        raise RuntimeError("clock broken")

    app = create_app({"CLOCK": broken})
    found = captured(
        app.test_client(),
        lambda c: c.post("/sync", data=json.dumps(request(mxjob())), content_type=JSON),
    )
    [line] = found
    assert line["level"] == "error"
    assert line["name"] == "mnist" and line["outcome"] == "error"
    assert "RuntimeError: clock broken" in line["error"]


def test_every_conversion_line_names_the_review_and_its_jobs(client: FlaskClient) -> None:
    [line] = captured(client, post(conversion_cases.v1alpha1_proposal_example(), "/convert"))
    assert line["level"] == "info"
    assert line["message"] == "convert 1 object to kubeflow.org/v1: success"
    assert {k: line[k] for k in ("hook", "uid", "jobs", "objects", "outcome", "status")} == {
        "hook": "convert",
        "uid": conversion_cases.UID,
        "jobs": ["default/example-dist-job"],
        "objects": 1,
        "outcome": "success",
        "status": 200,
    }
    assert line["request_bytes"] > 0 and line["response_bytes"] > 0


def test_a_conversion_failure_is_a_warning_with_its_reason(client: FlaskClient) -> None:
    [line] = captured(client, post(conversion_cases.refused_type_twice(), "/convert"))
    assert (line["level"], line["outcome"]) == ("warning", "failure")
    assert "WORKER appears twice" in line["reason"]


def test_a_refused_review_names_its_uid(client: FlaskClient) -> None:
    body = conversion_cases.broken_desired_version_not_served()
    [line] = captured(client, post(body, "/convert"))
    assert (line["hook"], line["uid"], line["status"]) == ("convert", conversion_cases.UID, 422)
    assert line["outcome"] == "rejected" and "desiredAPIVersion" in line["reason"]


def test_gunicorn_writes_only_json_lines() -> None:
    data = json.dumps(request(mxjob())).encode()
    with serve(workers=1) as server:
        assert server.call("POST", "/sync", data)[1]
        text = server.log.read_text()
    entries = [json.loads(line) for line in text.splitlines()]
    assert all({"time", "level", "message", "pid"} <= set(e) for e in entries)
    assert any(e.get("logger") == "gunicorn.error" for e in entries)
    [sync] = [e for e in entries if e.get("hook") == "sync"]
    assert (sync["name"], sync["uid"], sync["outcome"]) == ("mnist", UID, "created")


def test_a_conversion_line_quoting_a_megabyte_stays_short(client: FlaskClient) -> None:
    """Once logged whole: a value of 1 MB in a Failure's reason, a uid of 1 MB in a refusal."""
    failing = conversion_cases.refused_stash_changing_managed_by()
    (job,) = failing["request"]["objects"]
    job["metadata"]["name"] = "n" * 2**20
    refused = conversion_cases.broken(uid="u" * 2**20)
    for body in (failing, refused):
        [line] = captured(client, post(body, "/convert"))
        assert len(json.dumps(line)) < 4096, str(line)[:300]

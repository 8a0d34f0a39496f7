"""The HTTP adapter: read the body, call the pure core, write the answer (docs/http.md).

Two hooks: Metacontroller's `POST /sync` and the CRD's conversion webhook `POST /convert`. Both
pass one door (`_door`): the body read with the garbage collector paused (hooks/body.py), the
hook's decision, and one `Call` (hooks/call.py) that counts and logs the call once, whatever its
outcome. A request the hook cannot read is refused with a werkzeug `HTTPException`, answered as
`{"error", "message"}` like every other error. An invalid MXJob is not a broken request: it gets
HTTP 200 and a Failed condition, as an object that cannot be converted gets 200 and a Failure
result. A 500 is a bug: logged with its traceback and the job, counted (`outcome="error"`).
"""

import logging
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from flask import Flask, Response, current_app, request
from flask.logging import default_handler
from werkzeug.exceptions import HTTPException, InternalServerError

from hooks import body, etag, logs, metrics, wire
from hooks.call import LISTED, Call
from hooks.core import budget
from hooks.core.conversion.review import answer
from hooks.core.sync import sync

#: Metacontroller sends every child in full; 5000 pods with status are about 60 MB.
DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024
#: Metacontroller's hook, served on `POST /sync`; the `hook` label of its metrics and log lines.
HOOK = "sync"
#: The conversion webhook, served on `POST /convert`.
CONVERT = "convert"
#: What a hook's log line names before its body names more (never mutated: a call replaces it).
UNKNOWN = {HOOK: logs.job_reference(None), CONVERT: {"uid": None}}
#: The answer of each probe, by path.
PROBES = {"/healthz": {"status": "ok"}, "/readyz": {"status": "ready"}}
#: Which hooks a process serves: `sync` (the hook's pods, with /metrics), `convert` (the
#: conversion webhook's pods), both when unset (`make run`); probes always.
SERVE = "MXJOB_SERVE"
#: The CRD whose v1 spec schema the webhook checks a stash against (copied into the image).
CRD_FILE = Path(__file__).resolve().parents[1] / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml"
_LOG = logging.getLogger(logs.LOGGER_NAME)


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Application factory; `config` may set MAX_CONTENT_LENGTH, MAX_ANSWER_BYTES, CLOCK and
    SERVE (for tests)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = int(
        os.environ.get("MXJOB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)
    )
    app.config["MAX_ANSWER_BYTES"] = answer_budget(app.config["MAX_CONTENT_LENGTH"])
    app.config["CLOCK"] = lambda: datetime.now(UTC)
    app.config.update(config or {})
    # Flask's own lines (an exception outside the hooks) go out as JSON too.
    app.logger.removeHandler(default_handler)
    app.logger.handlers[:] = logs.configure().handlers
    app.logger.propagate = False
    serves = app.config.get("SERVE") or served(os.environ.get(SERVE))
    if HOOK in serves:
        app.add_url_rule(f"/{HOOK}", HOOK, _door(HOOK, _sync), methods=["POST"])
        app.add_url_rule("/metrics", "metrics", _metrics)
    if CONVERT in serves:
        app.config["V1_SPEC"] = v1_spec_schema()
        app.add_url_rule(f"/{CONVERT}", CONVERT, _door(CONVERT, _convert), methods=["POST"])
    for path in PROBES:
        app.add_url_rule(path, "probe", _probe)
    app.register_error_handler(HTTPException, _unrouted)
    return app


def served(setting: str | None) -> frozenset[str]:
    """The hooks `MXJOB_SERVE` names: `sync`, `convert`, or both when unset or empty."""
    if not setting:
        return frozenset({HOOK, CONVERT})
    if setting not in (HOOK, CONVERT):
        raise ValueError(f"{SERVE} must be {HOOK!r} or {CONVERT!r}, got {setting!r}")
    return frozenset({setting})


def v1_spec_schema() -> dict[str, Any]:
    """The openAPIV3Schema of the CRD's v1 `spec`, read from CRD_FILE."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    spec: dict[str, Any] = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def answer_budget(body_limit: int) -> int:
    """The largest answer to one job (hooks/core/budget.py): `MXJOB_MAX_ANSWER_BYTES`, else
    from the body limit and the memory limit of the container (`MXJOB_MEMORY_LIMIT_BYTES`, set
    from `limits.memory`) shared by its `WEB_CONCURRENCY` workers; at most budget.CEILING."""
    given = os.environ.get("MXJOB_MAX_ANSWER_BYTES")
    if given:
        return min(int(given), budget.CEILING)
    memory = os.environ.get("MXJOB_MEMORY_LIMIT_BYTES")
    workers = int(os.environ.get("WEB_CONCURRENCY") or os.cpu_count() or 1)
    return budget.budget(body_limit, int(memory) if memory else None, workers)


def sync_tag(config: Mapping[str, Any], data: bytes) -> str:
    """The ETag of a sync answer: of the body, and of the settings the answer depends on."""
    return etag.of(HOOK, data, (config["MAX_ANSWER_BYTES"], config["MAX_CONTENT_LENGTH"]))


def _door(hook: str, handle: Callable[[Call, bytes], Response]) -> Callable[[], Response]:
    """The view of `hook`: read the body, let `handle` answer it, answer what it raises; the
    call counted and logged once, whatever the outcome."""

    def view() -> Response:
        call = Call(hook, UNKNOWN[hook], request.content_length or 0)
        try:
            with body.collector_paused():
                data = body.read()
                call.request_bytes = len(data)
                return handle(call, data)
        except HTTPException as exc:  # a request the hook cannot read: 4xx
            call.refused(exc, request.content_type)
            return body.error_answer(exc)
        except Exception as exc:  # a bug: 500 (raised as it is in testing mode)
            call.failure = exc
            if current_app.testing:
                raise
            return body.error_answer(InternalServerError("the hook failed; see its log"))
        finally:
            call.end()

    return view


def _sync(call: Call, data: bytes) -> Response:
    """Metacontroller's sync: 304 for a body already answered, else decode, decide, encode."""
    config = current_app.config
    tag = sync_tag(config, data)
    if etag.matches(request.headers.get("If-None-Match"), tag):
        call.answered(metrics.NOT_MODIFIED, status=304)
        return Response(status=304, headers={"ETag": tag})
    parsed = body.sync_request(data)
    call.about_job(parsed)
    room = config["MAX_CONTENT_LENGTH"] - len(data)
    decided = sync(parsed, config["CLOCK"](), config["MAX_ANSWER_BYTES"], room)
    encoded = wire.encode(decided.to_json())
    call.answered(
        metrics.outcome(decided.status, invalid=bool(decided.invalid)),
        response_bytes=len(encoded),
        children=len(decided.children),
        problems=[str(p) for p in [*decided.invalid, *decided.held][:LISTED]] or None,
    )
    response = body.answer(encoded)
    if etag.tagged(decided.resync_after_seconds):
        response.headers["ETag"] = tag
    return response


def _convert(call: Call, data: bytes) -> Response:
    """The conversion webhook: the review's objects at its desired version, or a Failure,
    logged at warning with its reason (the API server refuses the request that needed it)."""
    review = body.review(data)
    call.about_review(review)
    converted = answer(review, current_app.config["V1_SPEC"])
    encoded = wire.encode(converted)
    result = converted["response"]["result"]
    reason = result.get("message")
    level = logging.INFO if reason is None else logging.WARNING
    call.answered(result["status"].lower(), response_bytes=len(encoded), level=level, reason=reason)
    return body.answer(encoded)


def _probe() -> Response:
    """`GET /healthz`, `GET /readyz`: the worker answers."""
    return body.answer(wire.encode(PROBES[request.path]))


def _metrics() -> Response:
    """`GET /metrics`: every worker's values, Prometheus text."""
    return Response(metrics.exposition(), mimetype=None, content_type=metrics.CONTENT_TYPE)


def _unrouted(exc: HTTPException) -> Response:
    """An error outside the hooks (no such route or method, a failed probe): logged, answered."""
    error, _ = body.error_of(exc)
    status, method, path = exc.code or 500, request.method, request.path
    fields = {"status": status, "error": error, "method": method, "path": path}
    level = logging.ERROR if status >= 500 else logging.INFO
    _LOG.log(level, "%s %s: %s", method, path, error, extra={logs.FIELDS: fields})
    return body.error_answer(exc)

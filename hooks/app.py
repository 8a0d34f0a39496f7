"""The HTTP edge: parse the body, call the pure core, serialise the answer (SPEC §7).

A broken request gets a 4xx with `{"error", "message"}`; an invalid MXJob is not a broken
request (it gets HTTP 200 and a Failed condition). A 500 is a bug: it is logged with the job
reference and counted (`outcome="error"`), and answered with the same JSON error shape.
Every answered sync is logged as one JSON line and counted in `GET /metrics`.
"""

import contextlib
import gc
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Flask, Response, request
from flask.logging import default_handler
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge

from hooks import etag, logs, metrics, wire
from hooks.core.request import RequestError, SyncRequest, parse
from hooks.core.sync import SyncResponse, finalize, sync

#: Metacontroller sends every child in full; 5000 pods with status are about 60 MB.
DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024
Clock = Callable[[], datetime]
Decide = Callable[[SyncRequest, datetime], SyncResponse]
#: An invalid spec's problems are logged, the first few of them.
LOGGED_PROBLEMS = 5


def _utcnow() -> datetime:
    return datetime.now(UTC)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for one request, back on (if it was) afterwards.

    Decoding a sync request creates millions of objects that all survive until the response is
    built; the collector, counting allocations, scans the whole growing heap again and again:
    at 1000 replicas that tripled the time of a sync. The request's objects hold no cycles, so
    reference counting frees them all when the request ends. Sync workers (one request at a
    time per process) make the process-wide switch safe.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _dumps(body: object) -> bytes:
    """orjson, or the standard library for what orjson refuses (nesting deeper than 254)."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _json(body: object, status: int = 200) -> Response:
    return Response(_dumps(body), status=status, mimetype="application/json")


def _error(status: int, error: str, message: str) -> Response:
    return _json({"error": error, "message": message}, status)


class _RefusedError(Exception):
    """A request the hook cannot answer: the 4xx status, error code and message to send."""

    def __init__(self, status: int, error: str, message: str, body: object = None) -> None:
        super().__init__(message)
        self.status, self.error, self.message, self.body = status, error, message, body


def _read_body() -> bytes:
    """The request body; raises `_RefusedError` for a wrong content type or too large a body."""
    if request.mimetype != "application/json":
        raise _RefusedError(
            415, "unsupported_media_type", "send the sync request as application/json"
        )
    try:
        length = request.content_length
        if length is None or request.max_content_length is None:
            return request.get_data(cache=False)
        if length > request.max_content_length:
            raise RequestEntityTooLarge()
        # One read of the declared length: werkzeug's get_data reads 64 KiB at a time into a
        # bytearray and copies it out, holding the body twice at its peak (a 109 MB body at
        # 5000 replicas).
        data: bytes = request.environ["wsgi.input"].read(length)
        if len(data) != length:
            raise ClientDisconnected()
        return data
    except HTTPException as exc:  # 413 from MAX_CONTENT_LENGTH
        code = exc.code or 400
        raise _RefusedError(code, _error_name(exc), exc.description or _error_name(exc)) from exc


def _decode(data: bytes) -> SyncRequest:
    """The sync request of `data`; raises `_RefusedError`.

    The fast decoding (hooks/wire.py) reads only what the core reads; whatever it cannot vouch
    for is decoded in full, which also names the problem of a bad request.
    """
    fast = wire.decode(data)
    if fast is not None:
        return fast
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _RefusedError(400, "malformed_json", f"the body is not valid JSON: {exc}") from exc
    try:
        return parse(body)
    except RequestError as exc:
        raise _RefusedError(422, "not_a_sync_request", str(exc), body) from exc


def _error_name(exc: HTTPException) -> str:
    return (exc.name or "error").lower().replace(" ", "_")


def _refused(hook: str, started: float, refusal: _RefusedError) -> Response:
    """Count, log (the reason, never the body) and answer a refused request."""
    size = request.content_length or 0
    metrics.observe(hook, metrics.REJECTED, time.perf_counter() - started, size, None)
    fields = {
        "hook": hook,
        **logs.job_reference(_parent_of(refusal.body)),
        "outcome": metrics.REJECTED,
        "status": refusal.status,
        "error": refusal.error,
        "reason": refusal.message,
        "content_type": request.content_type,
        "request_bytes": size,
    }
    _log().warning("%s refused: %s", hook, refusal.message, extra={logs.FIELDS: fields})
    return _error(refusal.status, refusal.error, refusal.message)


def _answer(hook: str, decide: Decide, clock: Clock, testing: bool) -> Response:
    """Read the request, decide, encode; count and log the call with the job reference."""
    started = time.perf_counter()
    try:
        data = _read_body()
        size = len(data)
        tag = etag.of(hook, data)
        if tag is not None and etag.matches(request.headers.get("If-None-Match"), tag):
            return _not_modified(hook, started, tag, size)
        parsed = _decode(data)
    except _RefusedError as refusal:
        return _refused(hook, started, refusal)
    reference = {
        "hook": hook,
        "namespace": parsed.namespace,
        "name": parsed.name,
        "uid": logs.job_reference(parsed.parent)["uid"],
    }
    try:
        decided = decide(parsed, clock())
        body = wire.encode(decided.to_json())
    except RequestError as exc:  # a part of the request the answer would have to echo
        echoed = {"parent": parsed.parent}
        return _refused(hook, started, _RefusedError(422, "not_a_sync_request", str(exc), echoed))
    except Exception:
        metrics.observe(hook, metrics.ERROR, time.perf_counter() - started, size, None)
        fields = {**reference, "outcome": metrics.ERROR, "status": 500}
        _log().exception("%s failed: a bug in the hook", hook, extra={logs.FIELDS: fields})
        if testing:
            raise
        return _error(500, "internal_server_error", "the hook failed; see its log")
    seconds = time.perf_counter() - started
    result = metrics.outcome(decided.status, bool(decided.invalid))
    metrics.observe(hook, result, seconds, size, len(body))
    log = _log()
    if log.isEnabledFor(logging.INFO):
        fields = {
            **reference,
            "outcome": result,
            "status": 200,
            "duration_ms": round(seconds * 1000, 3),
            "children": len(decided.children),
            "request_bytes": size,
            "response_bytes": len(body),
        }
        if decided.invalid:
            fields["problems"] = [str(p) for p in decided.invalid[:LOGGED_PROBLEMS]]
        where = f"{parsed.namespace}/{parsed.name}"
        log.info("%s %s: %s", hook, where, result, extra={logs.FIELDS: fields})
    answer = Response(body, status=200, mimetype="application/json")
    if tag is not None and etag.tagged(hook, decided.resync_after_seconds):
        answer.headers["ETag"] = tag
    return answer


def _not_modified(hook: str, started: float, tag: str, size: int) -> Response:
    """Metacontroller still holds the answer to this very body: 304, nothing decoded."""
    seconds = time.perf_counter() - started
    metrics.observe(hook, metrics.NOT_MODIFIED, seconds, size, None)
    log = _log()
    if log.isEnabledFor(logging.INFO):
        fields = {
            "hook": hook,
            "outcome": metrics.NOT_MODIFIED,
            "status": 304,
            "duration_ms": round(seconds * 1000, 3),
            "request_bytes": size,
        }
        log.info("%s: not modified", hook, extra={logs.FIELDS: fields})
    answer = Response(status=304)
    answer.headers["ETag"] = tag
    return answer


def _log() -> logging.Logger:
    return logging.getLogger(logs.LOGGER_NAME)


def _parent_of(body: object) -> object:
    return body.get("parent") if isinstance(body, dict) else None


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Application factory; `config` may set MAX_CONTENT_LENGTH and CLOCK (for tests)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = int(
        os.environ.get("MXJOB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)
    )
    app.config["CLOCK"] = _utcnow
    app.config.update(config or {})
    log = logs.configure()
    # Flask's own lines (an exception outside the hooks) go out as JSON too.
    app.logger.removeHandler(default_handler)
    app.logger.handlers[:] = log.handlers
    app.logger.propagate = False

    def handle(hook: str, decide: Decide) -> Response:
        with collector_paused():
            return _answer(hook, decide, app.config["CLOCK"], app.testing)

    @app.post("/sync")
    def sync_route() -> Response:
        return handle("sync", sync)

    @app.post("/finalize")
    def finalize_route() -> Response:
        return handle("finalize", finalize)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        return _json({"status": "ready"})

    @app.get("/metrics")
    def metrics_route() -> Response:
        return Response(metrics.exposition(), mimetype=None, content_type=metrics.CONTENT_TYPE)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        name = _error_name(exc)
        fields = {"status": code, "error": name, "method": request.method, "path": request.path}
        level = logging.ERROR if code >= 500 else logging.INFO
        log.log(level, "%s %s: %s", request.method, request.path, name, extra={logs.FIELDS: fields})
        return _error(code, name, exc.description or name)

    return app

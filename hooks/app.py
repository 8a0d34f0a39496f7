"""The HTTP adapter: read the body, call the pure core, write the answer (docs/http.md).

Two hooks: Metacontroller's `POST /sync` and the CRD's conversion webhook `POST /convert`. A
request the hook cannot read is refused with a werkzeug `HTTPException`; one error handler
answers every such exception as `{"error", "message"}` and counts and logs the refused hook
calls. An invalid MXJob is not a broken request: it gets HTTP 200 and a Failed condition, as an
object that cannot be converted gets 200 and a Failure result. A 500 is a bug: logged with the
job reference where it happens and counted (`outcome="error"`). Every answered call is logged
as one JSON line and counted in `GET /metrics`.
"""

import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Flask, Response, g, request
from flask.logging import default_handler
from werkzeug.exceptions import (
    BadRequest,
    ClientDisconnected,
    HTTPException,
    InternalServerError,
    RequestEntityTooLarge,
    UnprocessableEntity,
    UnsupportedMediaType,
)

from hooks import etag, logs, metrics, wire
from hooks.core.conversion import ConversionReview, Review, ReviewError, answer, parse_review
from hooks.core.request import RequestError, SyncRequest, parse_request
from hooks.core.sync import sync

#: Metacontroller sends every child in full; 5000 pods with status are about 60 MB.
DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024
Clock = Callable[[], datetime]
#: Metacontroller's hook, served on `POST /sync`; the `hook` label of its metrics and log lines.
HOOK = "sync"
#: The conversion webhook, served on `POST /convert`.
CONVERT = "convert"
#: An invalid spec's problems are logged, the first few of them; so are the jobs of a review.
LOGGED_PROBLEMS = 5
_LOG = logging.getLogger(logs.LOGGER_NAME)


class MalformedJSONError(BadRequest):
    """400: the body is not JSON."""

    error = "malformed_json"


class NotASyncRequestError(UnprocessableEntity):
    """422: JSON, but not a Metacontroller sync request; `reference` names the job if it can."""

    error = "not_a_sync_request"

    def __init__(self, message: str, body: object) -> None:
        super().__init__(message)
        parent = body.get("parent") if isinstance(body, dict) else None
        self.reference = logs.job_reference(parent)


class NotAConversionReviewError(UnprocessableEntity):
    """422: JSON, but not a ConversionReview; `reference` names the review if it can."""

    error = "not_a_conversion_review"

    def __init__(self, message: str, body: object) -> None:
        super().__init__(message)
        request = body.get("request") if isinstance(body, dict) else None
        uid = request.get("uid") if isinstance(request, dict) else None
        self.reference = {"uid": uid if isinstance(uid, str) else None}


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


def _json(body: object, status: int = 200) -> Response:
    return Response(wire.encode(body), status=status, mimetype="application/json")


def _read_body() -> bytes:
    """The request body; raises an HTTPException (werkzeug's own 413 for too large a body)."""
    if request.mimetype != "application/json":
        raise UnsupportedMediaType("send the body as application/json")
    length, limit = request.content_length, request.max_content_length
    if length is None or limit is None:
        return request.get_data(cache=False)
    if length > limit:
        raise RequestEntityTooLarge()
    # One read of the declared length: werkzeug's get_data reads 64 KiB at a time into a
    # bytearray and copies it out, holding the body twice at its peak (a 109 MB body at 5000
    # replicas).
    data: bytes = request.environ["wsgi.input"].read(length)
    if len(data) != length:
        raise ClientDisconnected()
    return data


def _decode(data: bytes) -> SyncRequest:
    """The sync request of `data`; raises an HTTPException.

    The fast decoding (hooks/wire.py) reads only what the core reads; whatever it cannot vouch
    for is decoded in full, which also names the problem of a bad request.
    """
    fast = wire.decode(data)
    if fast is not None:
        return fast
    body = _loads(data)
    try:
        return parse_request(body)
    except RequestError as exc:
        raise NotASyncRequestError(str(exc), body) from exc


def _loads(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedJSONError(f"the body is not valid JSON: {exc}") from exc


@contextlib.contextmanager
def _bugs_answered(
    hook: str, reference: dict[str, Any], started: float, size: int, testing: bool
) -> Iterator[None]:
    """An exception the hook did not expect is a bug: counted, logged with its traceback and
    the job, answered 500 (raised as it is in testing mode). HTTP errors pass through."""
    try:
        yield
    except HTTPException:
        raise
    except Exception as exc:
        metrics.observe(hook, metrics.ERROR, time.perf_counter() - started, size, None)
        fields = {**reference, "outcome": metrics.ERROR, "status": 500}
        _LOG.exception("%s failed: a bug in the hook", hook, extra={logs.FIELDS: fields})
        if testing:
            raise
        raise InternalServerError("the hook failed; see its log") from exc


def _answer(clock: Clock, testing: bool) -> Response:
    """Read the request, decide, encode; count and log the call with the job reference."""
    g.started = started = time.perf_counter()
    data = _read_body()
    size = len(data)
    tag = etag.of(HOOK, data)
    if etag.matches(request.headers.get("If-None-Match"), tag):
        return _not_modified(started, tag, size)
    parsed = _decode(data)
    reference = {
        "hook": HOOK,
        "namespace": parsed.namespace,
        "name": parsed.name,
        "uid": logs.job_reference(parsed.parent)["uid"],
    }
    with _bugs_answered(HOOK, reference, started, size, testing):
        try:
            decided = sync(parsed, clock())
            body = wire.encode(decided.to_json())
        except RequestError as exc:  # a part of the request the answer would have to echo
            raise NotASyncRequestError(str(exc), {"parent": parsed.parent}) from exc
    seconds = time.perf_counter() - started
    result = metrics.outcome(decided.status, bool(decided.invalid))
    metrics.observe(HOOK, result, seconds, size, len(body))
    if _LOG.isEnabledFor(logging.INFO):
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
        _LOG.info("%s %s: %s", HOOK, where, result, extra={logs.FIELDS: fields})
    answer = Response(body, status=200, mimetype="application/json")
    if etag.tagged(decided.resync_after_seconds):
        answer.headers["ETag"] = tag
    return answer


def _convert(testing: bool) -> Response:
    """Read a ConversionReview, convert, encode; count and log the call with its jobs."""
    g.started = started = time.perf_counter()
    data = _read_body()
    size = len(data)
    body = _loads(data)
    try:
        review = parse_review(body)
    except ReviewError as exc:
        raise NotAConversionReviewError(str(exc), body) from exc
    reference = _review_reference(review)
    with _bugs_answered(CONVERT, reference, started, size, testing):
        converted = answer(review)
        encoded = wire.encode(converted)
    seconds = time.perf_counter() - started
    result = converted["response"]["result"]
    outcome = result["status"].lower()
    metrics.observe(CONVERT, outcome, seconds, size, len(encoded))
    _log_conversion(converted, reference, seconds, size, len(encoded))
    return Response(encoded, status=200, mimetype="application/json")


def _review_reference(review: Review) -> dict[str, Any]:
    """The review's uid and target version, and the first jobs it holds (`namespace/name`)."""
    jobs = [logs.job_reference(obj) for obj in review.objects[:LOGGED_PROBLEMS]]
    return {
        "hook": CONVERT,
        "uid": review.uid,
        "desired_api_version": review.desired,
        "objects": len(review.objects),
        "jobs": [f"{job['namespace']}/{job['name']}" for job in jobs],
    }


def _log_conversion(
    converted: ConversionReview,
    reference: dict[str, Any],
    seconds: float,
    request_bytes: int,
    response_bytes: int,
) -> None:
    """Info for a conversion, warning for a Failure (the API server refuses the request)."""
    result = converted["response"]["result"]
    failed = "message" in result
    level = logging.WARNING if failed else logging.INFO
    if not _LOG.isEnabledFor(level):
        return
    fields = {
        **reference,
        "outcome": result["status"].lower(),
        "status": 200,
        "duration_ms": round(seconds * 1000, 3),
        "request_bytes": request_bytes,
        "response_bytes": response_bytes,
    }
    if failed:
        fields["reason"] = result["message"]
    count = reference["objects"]
    where = f"{count} object{'' if count == 1 else 's'} to {reference['desired_api_version']}"
    _LOG.log(level, "%s %s: %s", CONVERT, where, fields["outcome"], extra={logs.FIELDS: fields})


def _not_modified(started: float, tag: str, size: int) -> Response:
    """Metacontroller still holds the answer to this very body: 304, nothing decoded."""
    seconds = time.perf_counter() - started
    metrics.observe(HOOK, metrics.NOT_MODIFIED, seconds, size, None)
    if _LOG.isEnabledFor(logging.INFO):
        fields = {
            "hook": HOOK,
            "outcome": metrics.NOT_MODIFIED,
            "status": 304,
            "duration_ms": round(seconds * 1000, 3),
            "request_bytes": size,
        }
        _LOG.info("%s: not modified", HOOK, extra={logs.FIELDS: fields})
    answer = Response(status=304)
    answer.headers["ETag"] = tag
    return answer


def _refused(hook: str, status: int, error: str, message: str, reference: dict[str, Any]) -> None:
    """Count and log (the reason, never the body) a hook call refused with a 4xx."""
    size = request.content_length or 0
    metrics.observe(hook, metrics.REJECTED, time.perf_counter() - g.started, size, None)
    fields = {
        "hook": hook,
        **reference,
        "outcome": metrics.REJECTED,
        "status": status,
        "error": error,
        "reason": message,
        "content_type": request.content_type,
        "request_bytes": size,
    }
    _LOG.warning("%s refused: %s", hook, message, extra={logs.FIELDS: fields})


def _unrouted(status: int, error: str) -> None:
    """Log an error outside the hook: no such route or method, or a failed probe."""
    method, path = request.method, request.path
    fields = {"status": status, "error": error, "method": method, "path": path}
    level = logging.ERROR if status >= 500 else logging.INFO
    _LOG.log(level, "%s %s: %s", method, path, error, extra={logs.FIELDS: fields})


#: The hook each route serves, and what a refusal that names nothing logs for it.
_HOOKS_BY_ENDPOINT = {"hook_route": HOOK, "convert_route": CONVERT}
_UNKNOWN_REFERENCE = {HOOK: logs.job_reference(None), CONVERT: {"uid": None}}


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Application factory; `config` may set MAX_CONTENT_LENGTH and CLOCK (for tests)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = int(
        os.environ.get("MXJOB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)
    )
    app.config["CLOCK"] = lambda: datetime.now(UTC)
    app.config.update(config or {})
    # Flask's own lines (an exception outside the hook) go out as JSON too.
    app.logger.removeHandler(default_handler)
    app.logger.handlers[:] = logs.configure().handlers
    app.logger.propagate = False

    @app.post(f"/{HOOK}")
    def hook_route() -> Response:
        with collector_paused():
            return _answer(app.config["CLOCK"], app.testing)

    @app.post(f"/{CONVERT}")
    def convert_route() -> Response:
        return _convert(app.testing)

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
    def error_response(exc: HTTPException) -> Response:
        """Every HTTP error as `{"error", "message"}`, counted and logged."""
        code = exc.code or 500
        error = getattr(exc, "error", None) or (exc.name or "error").lower().replace(" ", "_")
        message = exc.description or error
        hook = _HOOKS_BY_ENDPOINT.get(str(request.endpoint))
        if hook is None:
            _unrouted(code, error)
        elif code < 500:  # the hook's 500 was logged with its traceback where it happened
            reference = getattr(exc, "reference", None) or _UNKNOWN_REFERENCE[hook]
            _refused(hook, code, error, message, reference)
        return _json({"error": error, "message": message}, code)

    return app

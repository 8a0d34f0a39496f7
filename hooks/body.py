"""A hook call's request body, read and decoded, and its JSON answers (docs/http.md#errors).

A hook reads its body whole: `application/json`, at most `MAX_CONTENT_LENGTH` bytes. What it
cannot read is refused with a werkzeug `HTTPException` whose `error` is the code answered in
`{"error", "message"}`; an exception naming the job or review carries its `reference` for the
log line. The cyclic garbage collector is paused while a body is decoded and answered.
"""

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import orjson
from flask import Response, request
from werkzeug.exceptions import (
    BadRequest,
    ClientDisconnected,
    HTTPException,
    RequestEntityTooLarge,
    UnprocessableEntity,
    UnsupportedMediaType,
)

from hooks import logs, wire
from hooks.core.conversion.review import Review, ReviewError, parse_review
from hooks.core.request import RequestError, SyncRequest, parse_request

JSON = "application/json"
T = TypeVar("T")


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
        self.reference = {"uid": logs.logged_name(uid)}


class _Pause:
    """The cyclic garbage collector off while any request of the process is decoded and
    answered, back on (if it was) when the last one ends.

    Decoding a sync request creates millions of objects that all survive until the response is
    built; the collector, counting allocations, scans the whole growing heap again and again:
    at 1000 replicas that tripled the time of a sync. The request's objects hold no cycles, so
    reference counting frees them all when the request ends. A worker answers a few requests
    side by side in threads (hooks/worker.py), and the switch is the process's: counted.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._was_enabled = False

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if not self._calls:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1
                if not self._calls and self._was_enabled:
                    gc.enable()


collector_paused = _Pause()


def read() -> bytes:
    """The request body; raises an HTTPException (werkzeug's own 413 for too large a body)."""
    if request.mimetype != JSON:
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


def sync_request(data: bytes) -> SyncRequest:
    """The sync request of `data`; raises an HTTPException.

    The fast decoding (hooks/wire.py) reads only what the core reads; whatever it cannot vouch
    for is decoded in full, which also names the problem of a bad request.
    """
    fast = wire.decode(data)
    if fast is not None:
        return fast
    return _parsed(data, parse_request, RequestError, NotASyncRequestError)


def review(data: bytes) -> Review:
    """The ConversionReview of `data`; raises an HTTPException."""
    return _parsed(data, parse_review, ReviewError, NotAConversionReviewError)


def _parsed(
    data: bytes,
    parse: Callable[[object], T],
    problem: type[ValueError],
    refused: Callable[[str, object], HTTPException],
) -> T:
    """`data` decoded as JSON and parsed; the parser's `problem` refused with its message."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedJSONError(f"the body is not valid JSON: {exc}") from exc
    try:
        return parse(body)
    except problem as exc:
        raise refused(str(exc), body) from exc


def answer(encoded: bytes, status: int = 200) -> Response:
    """A JSON answer of bytes already encoded."""
    return Response(encoded, status=status, mimetype=JSON)


def error_of(exc: HTTPException) -> tuple[str, str]:
    """The `error` code and `message` answered for `exc`."""
    error: Any = getattr(exc, "error", None)
    code = str(error or (exc.name or "error").lower().replace(" ", "_"))
    return code, exc.description or code


def error_answer(exc: HTTPException) -> Response:
    """`{"error", "message"}` with the status of `exc`: every error the hook answers."""
    error, message = error_of(exc)
    return answer(wire.encode({"error": error, "message": message}), exc.code or 500)

"""The HTTP edge: parse the body, call the pure core, serialise the answer (SPEC §7).

A broken request gets a 4xx with `{"error", "message"}`; an invalid MXJob is not a broken
request (it gets HTTP 200 and a Failed condition). A 500 is a bug.
"""

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from hooks.core.request import RequestError, SyncRequest, parse
from hooks.core.sync import SyncResponse, finalize, sync

#: Metacontroller sends every child in full; 5000 pods with status are about 60 MB.
DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024
Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _json(body: object, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status=status, mimetype="application/json")


def _error(status: int, error: str, message: str) -> Response:
    return _json({"error": error, "message": message}, status)


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Application factory; `config` may set MAX_CONTENT_LENGTH and CLOCK (for tests)."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = int(
        os.environ.get("MXJOB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)
    )
    app.config["CLOCK"] = _utcnow
    app.config.update(config or {})

    def handle(decide: Callable[[SyncRequest, datetime], SyncResponse]) -> Response:
        if request.mimetype != "application/json":
            return _error(
                415, "unsupported_media_type", "send the sync request as application/json"
            )
        try:
            body = orjson.loads(request.get_data(cache=False))
        except orjson.JSONDecodeError as exc:
            return _error(400, "malformed_json", f"the body is not valid JSON: {exc}")
        try:
            parsed = parse(body)
        except RequestError as exc:
            return _error(422, "not_a_sync_request", str(exc))
        return _json(decide(parsed, app.config["CLOCK"]()).to_json())

    @app.post("/sync")
    def sync_route() -> Response:
        return handle(sync)

    @app.post("/finalize")
    def finalize_route() -> Response:
        return handle(finalize)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        return _json({"status": "ready"})

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        name = (exc.name or "error").lower().replace(" ", "_")
        return _error(code, name, exc.description or name)

    return app

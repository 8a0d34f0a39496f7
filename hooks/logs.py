"""Structured logs: one JSON object per line on stderr, the MXJob reference on every sync line.

Every line has `time` (UTC, milliseconds), `level`, `message` and `pid` (which gunicorn
worker); the line of a hook call (hooks/call.py) adds `hook`, the job or review it names,
`outcome`, `status` (the HTTP code), `duration_ms` and the body sizes (docs/http.md#logs). A
refused request (4xx) logs why, never the body: it may be 100 MB of pods.
The level comes from `LOG_LEVEL` (debug, info, warning, error, critical; default info).

stdlib `logging` with a small formatter is enough: the fields are fixed and few, and orjson
(already a runtime dependency) serialises them faster than python-json-logger would.
gunicorn's own lines use the same formatter (`logconfig_dict` in `gunicorn_config.py`).
"""

import logging
import os
import sys
import traceback
from datetime import UTC, datetime
from typing import Any

import orjson

LOGGER_NAME = "mxjob.hook"
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
DEFAULT_LEVEL = "info"
#: `extra={FIELDS: {...}}` adds these keys to the JSON object of one line.
FIELDS = "fields"
#: Frames of a traceback kept (the innermost): a RecursionError would otherwise log 1000.
TRACEBACK_FRAMES = 25
#: Characters of a name or uid logged at most: a DNS subdomain's 253.
NAME_CHARS = 253


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "message", …fields}`, one line, no spaces, never raising."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "message": record.getMessage(),
            "pid": record.process,
        }
        if record.name != LOGGER_NAME:
            entry["logger"] = record.name
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()

    def formatException(self, ei: Any) -> str:  # noqa: N802  (logging's name)
        """The innermost TRACEBACK_FRAMES frames of each exception in the chain."""
        kind, value, tb = ei
        lines = traceback.format_exception(kind, value, tb, limit=-TRACEBACK_FRAMES)
        return "".join(lines).rstrip("\n")


def level_from_env(value: str | None = None) -> int:
    """The logging level named by `LOG_LEVEL`; an unknown name means info (and is not fatal)."""
    name = value if value is not None else os.environ.get("LOG_LEVEL", DEFAULT_LEVEL)
    return LEVELS.get(name.strip().lower(), LEVELS[DEFAULT_LEVEL])


def configure(level: int | None = None) -> logging.Logger:
    """The hook's logger, writing JSON lines to stderr at `level` (default: from `LOG_LEVEL`).

    Idempotent: the application factory calls it once per app, tests many times.
    """
    logger = logging.getLogger(LOGGER_NAME)
    if not any(getattr(h, "_mxjob", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        handler._mxjob = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level_from_env() if level is None else level)
    # Our handler writes the line; the root logger (gunicorn's or pytest's) must not repeat it.
    logger.propagate = False
    return logger


def job_reference(parent: object) -> dict[str, Any]:
    """`namespace`, `name`, `uid` of the MXJob a body names, as far as it names them."""
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    if not isinstance(metadata, dict):
        return {"namespace": None, "name": None, "uid": None}
    return {key: logged_name(metadata.get(key)) for key in ("namespace", "name", "uid")}


def logged_name(value: object) -> str | None:
    """A name as logged: a Kubernetes name has at most NAME_CHARS characters, so a longer one,
    which a body from anywhere but the API server may hold, is cut there."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= NAME_CHARS else f"{value[: NAME_CHARS - 1]}…"

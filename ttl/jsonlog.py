"""Structured logs: one JSON object per line, carrying the job reference and the action."""

import json
import logging
from datetime import UTC, datetime
from typing import Any

LEVELS = ("debug", "info", "warning", "error", "critical")


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "message", …fields}`; `fields` come from `extra={"fields": {…}}`."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, sort_keys=False, default=str)


def configure(level: str) -> None:
    """Send every log record of the process to stderr as JSON lines, at `level` and above."""
    if level.lower() not in LEVELS:
        raise ValueError(f"LOG_LEVEL must be one of {', '.join(LEVELS)}, not {level!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The client's own debug output is one line per HTTP call; keep it out of debug runs.
    logging.getLogger("urllib3").setLevel(max(root.level, logging.INFO))
    logging.getLogger("kubernetes").setLevel(max(root.level, logging.INFO))

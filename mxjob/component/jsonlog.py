"""Structured logs: one JSON object per line, carrying the job reference and the action.

The formatter is the hook's own (`hooks.logs`), so both components log the same shape.
"""

import logging

from hooks.logs import JsonFormatter

LEVELS = ("debug", "info", "warning", "error", "critical")


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

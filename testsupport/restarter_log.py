"""How the restarter component's JSON log lines name its pod patches (mxjob/restarter/controller.py
logs one line per patch): read by the real-node checkpoint test and by `make bench-restart`."""

from typing import Any


def patch_kind(entry: dict[str, Any]) -> str | None:
    """What a log line's patch wrote: `nudge` (a nudge alone), `go=False` (the order),
    `go=True` (go); None for any other line (a pass, a race, an error)."""
    action = entry.get("action")
    if action == "nudge":
        return "nudge"
    return f"go={entry.get('go')}" if action == "patch" else None

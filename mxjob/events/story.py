"""Which Events tell a job's story: one per condition that turned True (and one per resume),
named after the job, the condition and the moment it turned, so that writing it twice (after a
restart, or by two replicas) is refused by the API server as a duplicate. Pure: `now` is a
parameter.

Transitions older than `RECENT` are not told: the API server deletes Events after an hour by
default (`--event-ttl`), and telling an old transition again then would only repeat it. A
condition's words are told cleaned as the hook cleans what it quotes (hooks/core/quoting.py):
the hook writes them clean, but a status written by another hand, or by an older hook, could
carry escape sequences to `kubectl describe`.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hooks.core.public import clean, dig, parse_time

#: A little under the API server's default Event time to live (1 h).
RECENT = timedelta(minutes=55)
#: Conditions that tell of trouble, as Warning Events (the old operator's MXJobRestarting and
#: MXJobFailed were Warnings too).
WARNINGS = frozenset({"Restarting", "Failed"})


@dataclass(frozen=True)
class JobEvent:
    """One Event on one MXJob."""

    name: str
    type: str
    reason: str
    message: str
    time: datetime


def _tells(condition: dict[str, Any]) -> bool:
    """A condition that turned True, or a suspended job resumed (Suspended turned False)."""
    status = condition.get("status")
    return status == "True" or (condition.get("type") == "Suspended" and status == "False")


def story(job: Any, now: datetime) -> list[JobEvent]:
    """The Events for every transition of `job` within `RECENT` of `now` that `_tells`."""
    name, uid = dig(job, "metadata", "name"), dig(job, "metadata", "uid")
    conditions = dig(job, "status", "conditions")
    if not isinstance(name, str) or not isinstance(uid, str) or not isinstance(conditions, list):
        return []
    told = []
    for condition in conditions:
        if not isinstance(condition, dict) or not _tells(condition):
            continue
        ctype, at = condition.get("type"), condition.get("lastTransitionTime")
        when = parse_time(at)
        if not isinstance(ctype, str) or when is None or now - when > RECENT:
            continue
        key = hashlib.sha256(f"{uid}/{ctype}/{at}".encode()).hexdigest()[:16]
        told.append(
            JobEvent(
                name=f"{name}.{key}",
                type="Warning" if ctype in WARNINGS else "Normal",
                reason=clean(str(condition.get("reason") or f"MXJob{ctype}")),
                message=clean(str(condition.get("message") or "")),
                time=when,
            )
        )
    return sorted(told, key=lambda e: e.time)

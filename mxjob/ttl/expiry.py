"""When a finished MXJob expires: a pure function of the job object and `now`.

Only a `Succeeded` or `Failed` condition with status "True" makes a job finished (both are
terminal and never flip back: docs/status.md#conditions). The job then expires
`ttlSecondsAfterFinished` after its finish time, which is `status.completionTime`, or, without
it, the lastTransitionTime of the terminal condition. A job the hook refused (`Failed` for
`MXJobInvalidSpec`) keeps the pods it already had running, so it is finished only once the hook
gives it a `completionTime`, which it does when none of them runs any more
(docs/run-policy.md#ttlsecondsafterfinished). The TTL is read from `spec.runPolicy`,
falling back to the inline layout of kubeflow/mxnet-operator v1 (`spec.ttlSecondsAfterFinished`).

Deleting is the one irreversible step, so every doubt keeps the job: a malformed status, spec or
timestamp gives `NEVER` with `malformed=True` and a reason naming the field, for the caller to log.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from hooks.core.public import TERMINAL, Reason, format_time, parse_time

TTL_FIELD = "ttlSecondsAfterFinished"


class Action(StrEnum):
    """What to do with a job."""

    DELETE = "delete"
    RECHECK = "recheck"
    NEVER = "never"


@dataclass(frozen=True)
class Decision:
    """The verdict on one job.

    `at` is the moment the job expires (`DELETE`: already passed; `RECHECK`: look again then);
    `None` for `NEVER`. `malformed` marks a `NEVER` caused by an object we could not read.
    """

    action: Action
    reason: str
    at: datetime | None = None
    malformed: bool = False


class _MalformedError(Exception):
    """A field we must read has the wrong shape; the message names the field."""


def _never(reason: str) -> Decision:
    return Decision(Action.NEVER, reason)


def decide(job: object, now: datetime) -> Decision:
    """Whether the MXJob `job` (the API object as a dict) is to be deleted at `now`."""
    try:
        return _decide(job, now if now.tzinfo is not None else now.replace(tzinfo=UTC))
    except _MalformedError as exc:
        return Decision(Action.NEVER, f"malformed: {exc}; keeping the job", malformed=True)


def _decide(job: object, now: datetime) -> Decision:
    if not isinstance(job, dict):
        raise _MalformedError("the object is not a JSON object")
    metadata = _object(job, "metadata")
    if metadata.get("deletionTimestamp") is not None:
        return _never("already being deleted")
    terminal = _terminal_conditions(_object(job, "status"))
    if not terminal:
        return _never("not finished (no Succeeded or Failed condition with status True)")
    refused = any(c.get("reason") == Reason.INVALID_SPEC for c in terminal)
    if refused and _object(job, "status").get("completionTime") is None:
        return _never("refused by the hook (MXJobInvalidSpec), and its pods may still run")
    ttl = _ttl(_object(job, "spec"))
    if ttl is None:
        return _never(f"finished, but no {TTL_FIELD} is set")
    finished = _finish_time(_object(job, "status"), terminal)
    try:
        expiry = finished + timedelta(seconds=ttl)
    except OverflowError:
        return _never(f"finished, but {TTL_FIELD}={ttl} puts the expiry past year 9999")
    what = f"finished at {format_time(finished)} with {TTL_FIELD}={ttl}"
    if now >= expiry:
        return Decision(Action.DELETE, f"{what}: expired at {format_time(expiry)}", expiry)
    return Decision(Action.RECHECK, f"{what}: expires at {format_time(expiry)}", expiry)


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]` as an object; absent or null is empty, any other type is malformed."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _MalformedError(f"{key} is a {type(value).__name__}, not an object")
    return value


def _terminal_conditions(status: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions of a terminal type with status "True"."""
    conditions = status.get("conditions")
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        raise _MalformedError("status.conditions is not a list")
    for index, condition in enumerate(conditions):
        if not isinstance(condition, dict):
            raise _MalformedError(f"status.conditions[{index}] is not an object")
    terminal_types = {t.value for t in TERMINAL}
    return [c for c in conditions if c.get("type") in terminal_types and c.get("status") == "True"]


def _ttl(spec: dict[str, Any]) -> int | None:
    """`spec.runPolicy.ttlSecondsAfterFinished`, else the inline `spec.ttlSecondsAfterFinished`."""
    for path, holder in (
        (f"spec.runPolicy.{TTL_FIELD}", _object(spec, "runPolicy")),
        (f"spec.{TTL_FIELD}", spec),
    ):
        value = holder.get(TTL_FIELD)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise _MalformedError(f"{path} is {value!r}, not an integer")
        if value < 0:
            raise _MalformedError(f"{path} is {value}, a negative number of seconds")
        return value
    return None


def _finish_time(status: dict[str, Any], terminal: list[dict[str, Any]]) -> datetime:
    """`status.completionTime`, else the (latest) lastTransitionTime of the terminal conditions."""
    completion = status.get("completionTime")
    if completion is not None:
        return _time(completion, "status.completionTime")
    return max(
        _time(c.get("lastTransitionTime"), f"the {c['type']} condition's lastTransitionTime")
        for c in terminal
    )


def _time(value: object, field: str) -> datetime:
    parsed = parse_time(value)
    if parsed is None:
        shown = "missing" if value is None else f"{value!r}, not an RFC 3339 time"
        raise _MalformedError(f"finished, but {field} is {shown}")
    return parsed

"""Kubeflow job conditions: how a new condition joins the list carried from the last status.

Semantics of kubeflow/common `setCondition`: an identical condition changes nothing; otherwise
the condition moves to the end (so `conditions[-1:]` is the latest), keeping its
lastTransitionTime while its status is unchanged. Running and Restarting replace each other,
and a terminal condition turns Running (and, beyond kubeflow, Restarting) to False.
"""

from typing import Any

from hooks.core.api import TERMINAL, ConditionStatus, ConditionType, Reason

#: Conditions a finished job can no longer be in.
_ENDED_BY_TERMINAL = (ConditionType.RUNNING, ConditionType.RESTARTING)
#: Conditions that replace each other: a job is running or restarting, never both.
_EXCLUSIVE = {ConditionType.RUNNING, ConditionType.RESTARTING}


def clean(conditions: object) -> list[dict[str, Any]]:
    """The well-formed conditions of a previous status, each with known keys only."""
    keys = ("type", "status", "reason", "message", "lastUpdateTime", "lastTransitionTime")
    known = {c.value for c in ConditionType}
    if not isinstance(conditions, list):
        return []
    return [
        {k: c[k] for k in keys if isinstance(c.get(k), str)}
        for c in conditions
        if isinstance(c, dict)
        and isinstance(c.get("type"), str)
        and c["type"] in known
        and c.get("status") in tuple(ConditionStatus)
    ]


def find(conditions: list[dict[str, Any]], ctype: ConditionType) -> dict[str, Any] | None:
    """The condition of a type, if present."""
    return next((c for c in conditions if c.get("type") == ctype.value), None)


def is_true(conditions: list[dict[str, Any]], ctype: ConditionType) -> bool:
    """Whether the condition of a type is present with status True."""
    found = find(conditions, ctype)
    return found is not None and found.get("status") == ConditionStatus.TRUE


def _stamped(condition: dict[str, Any], time: str | None, transition: str | None) -> dict[str, Any]:
    if time is not None:
        condition["lastUpdateTime"] = time
    if transition is not None:
        condition["lastTransitionTime"] = transition
    return condition


def set_condition(
    conditions: list[dict[str, Any]],
    ctype: ConditionType,
    status: bool,
    reason: Reason,
    message: str,
    time: str | None,
) -> list[dict[str, Any]]:
    """The list with the condition set; `time` is the event that caused it, never the clock."""
    value = (ConditionStatus.TRUE if status else ConditionStatus.FALSE).value
    existing = find(conditions, ctype)
    if existing is not None and (
        existing.get("status"),
        existing.get("reason"),
        existing.get("message"),
    ) == (value, reason.value, message):
        return conditions
    transition = time
    if existing is not None and existing.get("status") == value:
        transition = existing.get("lastTransitionTime", time)
    updated: list[dict[str, Any]] = []
    for condition in conditions:
        other = condition.get("type")
        if other == ctype.value or {other, ctype} == _EXCLUSIVE:
            continue
        if (
            ctype in TERMINAL
            and other in _ENDED_BY_TERMINAL
            and condition.get("status") == ConditionStatus.TRUE
        ):
            updated.append(
                _stamped({**condition, "status": ConditionStatus.FALSE.value}, time, time)
            )
        else:
            updated.append(condition)
    new = {"type": ctype.value, "status": value, "reason": reason.value, "message": message}
    updated.append(_stamped(new, time, transition))
    return updated

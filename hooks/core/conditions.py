"""Kubeflow job conditions: how a new condition joins the list carried from the last status.

Semantics of kubeflow/common `setCondition`: an identical condition changes nothing; otherwise
the condition moves to the end (so `conditions[-1:]` is the latest), keeping its
lastTransitionTime while its status is unchanged. Running and Restarting replace each other,
and a terminal condition turns Running (and, beyond kubeflow, Restarting) to False.
"""

from typing import Required, TypedDict, cast

from hooks.core.api import TERMINAL, ConditionStatus, ConditionType, Reason

#: Conditions a finished job can no longer be in.
_ENDED_BY_TERMINAL = (ConditionType.RUNNING, ConditionType.RESTARTING)
#: Conditions that replace each other: a job is running or restarting, never both.
_EXCLUSIVE = {ConditionType.RUNNING, ConditionType.RESTARTING}


class Condition(TypedDict, total=False):
    """A job condition as written to the status: type and status always, the rest when known."""

    type: Required[str]
    status: Required[str]
    reason: str
    message: str
    lastUpdateTime: str
    lastTransitionTime: str


#: The keys a condition may have.
_KEYS = ("type", "status", "reason", "message", "lastUpdateTime", "lastTransitionTime")
#: How the words of a hold begin and end, in the message of a held job's latest condition
#: (`held`; docs/security.md#the-answer-budget).
HELD, HELD_END = "held: ", "until it fits again"


def clean(conditions: object) -> list[Condition]:
    """The well-formed conditions of a previous status, each with known keys only."""
    known = {c.value for c in ConditionType}
    if not isinstance(conditions, list):
        return []
    return [
        cast(Condition, {k: _unheld(k, c[k]) for k in _KEYS if isinstance(c.get(k), str)})
        for c in conditions
        if isinstance(c, dict)
        and isinstance(c.get("type"), str)
        and c["type"] in known
        and c.get("status") in tuple(ConditionStatus)
    ]


def held(message: str, words: str) -> str:
    """A condition message extended by why the job is held (`words` end with HELD_END)."""
    return extended(message, HELD + words)


def _unheld(key: str, value: str) -> str:
    """A condition's value as read, a message without the words of a hold: the hook writes each
    condition again as if the job had never been held, and finds a restart's step in it."""
    if key != "message" or not value.endswith(f"{HELD_END}."):
        return value
    cut = value.rfind(f"; {HELD}")
    return value if cut < 0 else f"{value[:cut]}."


def extended(message: str, words: str) -> str:
    """A condition message extended by more words (what the job waits for, a replica that
    cannot start), ending in one full stop."""
    ending = "" if words.endswith(".") else "."
    return f"{message.removesuffix('.')}; {words}{ending}"


def says(message: object, base: str) -> bool:
    """Whether a written message is `base`, or `base` extended (`extended`)."""
    if not isinstance(message, str):
        return False
    return message == base or message.startswith(f"{base.removesuffix('.')}; ")


def find(conditions: list[Condition], ctype: ConditionType) -> Condition | None:
    """The condition of a type, if present."""
    return next((c for c in conditions if c.get("type") == ctype.value), None)


def is_true(conditions: list[Condition], ctype: ConditionType) -> bool:
    """Whether the condition of a type is present with status True."""
    found = find(conditions, ctype)
    return found is not None and found.get("status") == ConditionStatus.TRUE


def _stamped(condition: Condition, time: str | None, transition: str | None) -> Condition:
    if time is not None:
        condition["lastUpdateTime"] = time
    if transition is not None:
        condition["lastTransitionTime"] = transition
    return condition


def set_condition(
    conditions: list[Condition],
    ctype: ConditionType,
    *,
    status: bool,
    reason: Reason,
    message: str,
    time: str | None,
) -> list[Condition]:
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
    updated: list[Condition] = []
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
    new: Condition = {
        "type": ctype.value,
        "status": value,
        "reason": reason.value,
        "message": message,
    }
    updated.append(_stamped(new, time, transition))
    return updated

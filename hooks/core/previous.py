"""The status the last sync wrote, and the one a finished job's result record keeps, each read
once: what the hook carries forward and the steps a restart waits to see (docs/status.md,
docs/run-policy.md).

Metacontroller sends the parent as its cache holds it, so the status may be stale, and nothing
but the hook should write it; one the hook cannot read is treated like a stale cache: rebuilt
from the children, never a reason to refuse. Its conditions are cleaned here, once: well-formed
ones of known types, with known keys only.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core.api import TERMINAL, ConditionStatus, ConditionType
from hooks.core.children import ConfigMap
from hooks.core.fields import parsed_json
from hooks.core.timestamps import parse_time

#: The result record's key holding the finished job's status (written by
#: hooks/core/build/configmaps.py's `desired_result`).
RESULT_KEY = "status"


@dataclass(frozen=True)
class PreviousStatus:
    """A job status as written before: by the last sync, or in the job's result record."""

    #: As it came, for a status that is carried whole (a finished or handed-off job).
    written: dict[str, Any] = field(default_factory=dict)
    conditions: list[cond.Condition] = field(default_factory=list)
    start: datetime | None = None

    def is_true(self, ctype: ConditionType) -> bool:
        """Whether it has the condition of a type with status True."""
        return cond.is_true(self.conditions, ctype)

    @property
    def terminal(self) -> bool:
        """Whether it shows Succeeded or Failed (terminal, never flips back)."""
        return any(self.is_true(ctype) for ctype in TERMINAL)

    @property
    def failed_reason(self) -> str | None:
        """The reason of its Failed=True condition, if any."""
        found = self._failed()
        return found.get("reason") if found else None

    @property
    def failed_message(self) -> str | None:
        """The message of its Failed=True condition, if any."""
        found = self._failed()
        return found.get("message") if found else None

    def _failed(self) -> cond.Condition | None:
        found = cond.find(self.conditions, ConditionType.FAILED)
        return found if found and found.get("status") == ConditionStatus.TRUE else None

    @property
    def suspended_until(self) -> datetime | None:
        """Up to when the job's own suspension may have deleted its pods: while it shows
        Suspended=True, any moment; once resumed, the resume; never suspended, None."""
        found = cond.find(self.conditions, ConditionType.SUSPENDED)
        if found is None:
            return None
        if found.get("status") == ConditionStatus.TRUE:
            return datetime.max.replace(tzinfo=UTC)
        return parse_time(found.get("lastTransitionTime")) or datetime.max.replace(tzinfo=UTC)

    def shows(self, ctype: ConditionType, message: str) -> bool:
        """Whether it has the condition of a type True with this message, or with it extended
        by what the job waits for (a restart's step waiting for a gang scheduler's admission
        is that step all the same)."""
        found = cond.find(self.conditions, ctype)
        return (
            found is not None
            and found.get("status") == ConditionStatus.TRUE
            and cond.says(found.get("message"), message)
        )


def read_previous(status: object) -> PreviousStatus:
    """A written status; anything but an object reads as none."""
    if not isinstance(status, dict):
        return PreviousStatus()
    return PreviousStatus(
        written=status,
        conditions=cond.clean(status.get("conditions")),
        start=parse_time(status.get("startTime")),
    )


def recorded_status(observed: ConfigMap | None) -> PreviousStatus | None:
    """The terminal status kept in an observed result record, if it holds one."""
    text = (observed.data or {}).get(RESULT_KEY) if observed is not None else None
    status = parsed_json(text)
    return read_previous(status) if isinstance(status, dict) else None

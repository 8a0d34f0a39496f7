"""What the observed children say: each pod read into its slot, attempt, phase and exit.

Restart bookkeeping comes only from here (docs/restarts.md): the attempt from the pod name, earlier
restarts from the `restarts-before` annotation the hook itself put on replacement pods, in-place
restarts from container `restartCount`, the run from the `run` annotation (docs/restarts.md).
"""

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from hooks.core.api import ANNOTATION_RESTARTS, ANNOTATION_RUN, MXNET_CONTAINER, ConditionStatus
from hooks.core.fields import dig, dig_dict, dig_int, dig_list
from hooks.core.naming import Slot, parse_pod_name
from hooks.core.timestamps import latest, parse_time


class PodPhase(StrEnum):
    """A Pod's `status.phase`, as the kubelet reports it."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


FINISHED_PHASES = (PodPhase.SUCCEEDED, PodPhase.FAILED)
_PHASES = {phase.value: phase for phase in PodPhase}
#: Pod condition set when the cluster takes a pod away: preemption, drain, taint, node shutdown.
DISRUPTION = "DisruptionTarget"


@dataclass(frozen=True)
class ObservedPod:
    """One observed pod of a replica slot."""

    name: str
    slot: Slot
    attempt: int
    phase: PodPhase
    terminating: bool
    created: datetime | None
    started: datetime | None
    finished: datetime | None
    exit_code: int | None
    reason: str | None
    restart_count: int
    restarts_before: int
    run: int = 0
    disrupted: bool = False
    #: (container name, exit code) of every terminated container, for failurePolicy rules.
    exits: tuple[tuple[str, int], ...] = ()
    #: The pod's `status.reason` and the mxnet container's terminated `reason`, where set.
    reasons: frozenset[str] = frozenset()
    #: The pod's conditions as (type, status).
    conditions: frozenset[tuple[str, str]] = frozenset()

    @property
    def active(self) -> bool:
        """Running and not on its way out."""
        return self.phase is PodPhase.RUNNING and not self.terminating

    @property
    def last_event(self) -> datetime | None:
        """The latest moment this pod shows: finish, start or creation."""
        return latest(self.finished, self.started, self.created)


def read_pod(job: str, pod: dict[str, Any]) -> ObservedPod | None:
    """Read one observed pod; None for a pod whose name this job never gives."""
    parsed = parse_pod_name(job, str(dig(pod, "metadata", "name")))
    if parsed is None:
        return None
    slot, attempt = parsed
    statuses = [s for s in dig_list(pod, "status", "containerStatuses") if isinstance(s, dict)]
    mxnet = next((s for s in statuses if s.get("name") == MXNET_CONTAINER), {})
    terminated = dig_dict(mxnet, "state", "terminated")
    phase = dig(pod, "status", "phase")
    conditions = frozenset(
        (c["type"], c["status"])
        for c in dig_list(pod, "status", "conditions")
        if isinstance(c, dict)
        and isinstance(c.get("type"), str)
        and isinstance(c.get("status"), str)
    )
    pod_reason = _text(dig(pod, "status", "reason"))
    mxnet_reason = _text(terminated.get("reason"))
    return ObservedPod(
        name=str(dig(pod, "metadata", "name")),
        slot=slot,
        attempt=attempt,
        phase=_PHASES.get(phase, PodPhase.PENDING) if isinstance(phase, str) else PodPhase.PENDING,
        terminating=dig(pod, "metadata", "deletionTimestamp") is not None,
        created=parse_time(dig(pod, "metadata", "creationTimestamp")),
        started=parse_time(dig(mxnet, "state", "running", "startedAt"))
        or parse_time(terminated.get("startedAt"))
        or parse_time(dig(pod, "status", "startTime")),
        finished=parse_time(terminated.get("finishedAt")),
        exit_code=dig_int(terminated, "exitCode"),
        reason=pod_reason or mxnet_reason,
        restart_count=sum(max(dig_int(s, "restartCount") or 0, 0) for s in statuses),
        restarts_before=_count(dig(pod, "metadata", "annotations", ANNOTATION_RESTARTS)),
        run=_count(dig(pod, "metadata", "annotations", ANNOTATION_RUN)),
        disrupted=(DISRUPTION, ConditionStatus.TRUE.value) in conditions,
        exits=tuple(
            (s["name"], code)
            for s in statuses
            if isinstance(s.get("name"), str)
            and (code := dig_int(s, "state", "terminated", "exitCode")) is not None
        ),
        reasons=frozenset(r for r in (pod_reason, mxnet_reason) if r),
        conditions=conditions,
    )


def _count(value: object) -> int:
    """A non-negative count written as an annotation string; anything else counts as 0."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    return 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def pods_by_slot(job: str, pods: dict[str, dict[str, Any]]) -> dict[Slot, list[ObservedPod]]:
    """Observed pods grouped by slot, oldest attempt first; foreign names are left out."""
    slots: dict[Slot, list[ObservedPod]] = {}
    for pod in pods.values():
        observed = read_pod(job, pod)
        if observed is not None:
            slots.setdefault(observed.slot, []).append(observed)
    for attempts in slots.values():
        attempts.sort(key=lambda p: p.attempt)
    return slots

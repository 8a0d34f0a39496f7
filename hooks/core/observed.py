"""What the observed children say: each pod read into its slot, attempt, phase and exit.

Restart bookkeeping comes only from here (docs/restarts.md): the attempt from the pod name, earlier
restarts from the `restarts-before` annotation the hook itself put on replacement pods, in-place
restarts from container `restartCount`, the run from the `run` annotation (docs/restarts.md).
"""

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from hooks.core.api import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_RESTARTS,
    ANNOTATION_RUN,
    DISRUPTION,
    KUEUE_TERMINATION,
    MXNET_CONTAINER,
    ConditionStatus,
)
from hooks.core.fields import dig, dig_dict, dig_int, dig_list
from hooks.core.naming import Slot, parse_pod_name
from hooks.core.rejoin import WAIT_CONTAINER
from hooks.core.request import SPEC_READ
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
#: How long past its `deletionTimestamp` (the end of its grace period, when the kubelet kills
#: it) a pod may still be observed before it counts as lost with its node (docs/restarts.md).
LOST_AFTER = timedelta(seconds=15)
#: Why a container cannot start, as the kubelet says it: the job shows them (docs/status.md).
CANNOT_START = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
#: Longest kubelet or scheduler message quoted in a condition message.
_QUOTED_MAX = 200


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
    #: `metadata.deletionTimestamp`: the moment the kubelet kills the pod if it has not ended.
    deadline: datetime | None = None
    #: Why the pod cannot start (`ImagePullBackOff: …`, `Unschedulable: …`), while it waits.
    blocked: str | None = None
    #: How the rejoin wait failed (`sleep` missing from the image…): the pod can never run.
    wait_failed: str | None = None
    #: Still observed LOST_AFTER past its deletionTimestamp: its node does not answer.
    lost: bool = False
    #: (container name, exit code) of every terminated container, for failurePolicy rules.
    exits: tuple[tuple[str, int], ...] = ()
    #: The pod's `status.reason` and the mxnet container's terminated `reason`, where set.
    reasons: frozenset[str] = frozenset()
    #: The pod's conditions as (type, status).
    conditions: frozenset[tuple[str, str]] = frozenset()
    #: The node it is bound to (`spec.nodeName`), once a scheduler bound it.
    node: str | None = None
    #: Why Kueue is taking the pod away (its `TerminationTarget` condition's reason, e.g.
    #: `WorkloadEvictedDueToPreempted`): the queue took the job's admission back.
    evicted: str | None = None
    #: The scheduler it asks for (`spec.schedulerName`).
    scheduler: str | None = None
    #: Its `spec.schedulingGates` names: a gated pod is not even considered by a scheduler.
    gates: frozenset[str] = frozenset()
    #: When it was bound to a node (its `PodScheduled` condition turning True).
    scheduled: datetime | None = None
    #: Made by another controller (no `attempt` annotation, which this hook puts on every pod
    #: it makes): training-operator's pods of a job adopted in a migration (docs/migration.md).
    foreign: bool = False

    @property
    def active(self) -> bool:
        """Running and not on its way out."""
        return self.phase is PodPhase.RUNNING and not self.terminating

    @property
    def blocked_reason(self) -> str | None:
        """The kubelet's or the scheduler's reason in `blocked` (`ImagePullBackOff`, …)."""
        return self.blocked.split(":", 1)[0] if self.blocked else None

    @property
    def last_event(self) -> datetime | None:
        """The latest moment this pod shows: finish, start or creation."""
        return latest(self.finished, self.started, self.created)

    def settled(self, now: datetime) -> "ObservedPod":
        """The pod as the hook treats it at `now`: one still observed LOST_AFTER past its
        deletionTimestamp is lost with its node, and counts as failed."""
        at = lost_at(self)
        if at is None or now < at:
            return self
        return replace(self, phase=PodPhase.FAILED, lost=True)


def lost_at(pod: ObservedPod) -> datetime | None:
    """When a terminating pod will count as lost, if it has not ended by then."""
    if pod.deadline is None or pod.phase in FINISHED_PHASES:
        return None
    try:
        return pod.deadline + LOST_AFTER
    except OverflowError:  # a deletionTimestamp near year 9999
        return None


def read_pod(job: str, pod: dict[str, Any]) -> ObservedPod | None:
    """Read one observed pod; None for a pod whose name this job never gives."""
    parsed = parse_pod_name(job, str(dig(pod, "metadata", "name")))
    if parsed is None:
        return None
    slot, attempt = parsed
    statuses = [s for s in dig_list(pod, "status", "containerStatuses") if isinstance(s, dict)]
    inits = [s for s in dig_list(pod, "status", "initContainerStatuses") if isinstance(s, dict)]
    mxnet = next((s for s in statuses if s.get("name") == MXNET_CONTAINER), {})
    terminated = dig_dict(mxnet, "state", "terminated")
    raw_phase = dig(pod, "status", "phase")
    phase = _PHASES.get(raw_phase, PodPhase.PENDING) if isinstance(raw_phase, str) else None
    conditions = [c for c in dig_list(pod, "status", "conditions") if isinstance(c, dict)]
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else pod.get(SPEC_READ)
    pod_reason = _text(dig(pod, "status", "reason"))
    mxnet_reason = _text(terminated.get("reason"))
    return ObservedPod(
        name=str(dig(pod, "metadata", "name")),
        slot=slot,
        attempt=attempt,
        phase=phase or PodPhase.PENDING,
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
        disrupted=_condition(conditions, DISRUPTION, ConditionStatus.TRUE) is not None,
        deadline=parse_time(dig(pod, "metadata", "deletionTimestamp")),
        blocked=_blocked([*inits, *statuses], conditions) if phase is PodPhase.PENDING else None,
        wait_failed=_wait_failed(inits),
        exits=tuple(
            (s["name"], code)
            for s in statuses
            if isinstance(s.get("name"), str)
            and (code := dig_int(s, "state", "terminated", "exitCode")) is not None
        ),
        reasons=frozenset(r for r in (pod_reason, mxnet_reason) if r),
        conditions=frozenset(
            (c["type"], c["status"])
            for c in conditions
            if isinstance(c.get("type"), str) and isinstance(c.get("status"), str)
        ),
        evicted=_evicted(conditions),
        scheduled=_scheduled(conditions),
        foreign=dig(pod, "metadata", "annotations", ANNOTATION_ATTEMPT) is None,
        node=_text(dig(spec, "nodeName")),
        scheduler=_text(dig(spec, "schedulerName")),
        gates=frozenset(
            g["name"]
            for g in dig_list(spec, "schedulingGates")
            if isinstance(g, dict) and isinstance(g.get("name"), str)
        ),
    )


def _condition(conditions: list[dict[str, Any]], ctype: str, status: str) -> dict[str, Any] | None:
    return next(
        (c for c in conditions if c.get("type") == ctype and c.get("status") == status), None
    )


def _scheduled(conditions: list[dict[str, Any]]) -> datetime | None:
    found = _condition(conditions, "PodScheduled", ConditionStatus.TRUE)
    return None if found is None else parse_time(found.get("lastTransitionTime"))


def _evicted(conditions: list[dict[str, Any]]) -> str | None:
    """The reason of Kueue's `TerminationTarget` condition, when it stops the pod's group."""
    found = _condition(conditions, KUEUE_TERMINATION, ConditionStatus.TRUE)
    return None if found is None else _text(found.get("reason")) or KUEUE_TERMINATION


def _blocked(statuses: list[dict[str, Any]], conditions: list[dict[str, Any]]) -> str | None:
    """Why a pending pod cannot start: a container the kubelet cannot start, or no node."""
    for status in statuses:
        waiting = dig_dict(status, "state", "waiting")
        reason = waiting.get("reason")
        if reason in CANNOT_START:
            return quoted(str(reason), waiting.get("message"))
    unscheduled = _condition(conditions, "PodScheduled", ConditionStatus.FALSE)
    if unscheduled is not None and unscheduled.get("reason") == "Unschedulable":
        return quoted("Unschedulable", unscheduled.get("message"))
    return None


def _wait_failed(inits: list[dict[str, Any]]) -> str | None:
    """How the rejoin wait ended, if it failed."""
    wait = next((s for s in inits if s.get("name") == WAIT_CONTAINER), {})
    terminated = dig_dict(wait, "state", "terminated")
    code = dig_int(terminated, "exitCode")
    if not code:
        return None
    reason = _text(terminated.get("reason")) or f"exit code {code}"
    return quoted(reason, terminated.get("message"))


def quoted(reason: str, message: object) -> str:
    """`reason: message`, the message cut to a condition's length."""
    if not isinstance(message, str) or not message:
        return reason
    short = message if len(message) <= _QUOTED_MAX else message[: _QUOTED_MAX - 1] + "…"
    return f"{reason}: {short}"


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

"""What the observed children say: each pod read into its slot, attempt, phase and exit.

Restart bookkeeping comes only from here (docs/restarts.md): the attempt from the pod name, earlier
restarts from the `restarts-before` annotation the hook itself put on replacement pods, in-place
restarts from container `restartCount`, the run from the `run` annotation (docs/restarts.md).
"""

from datetime import datetime, timedelta
from enum import StrEnum

import msgspec

from hooks.core.api import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_GO,
    ANNOTATION_PROGRESS,
    ANNOTATION_RESTART,
    ANNOTATION_RESTARTS,
    ANNOTATION_RUN,
    DISRUPTION,
    KUEUE_TERMINATION,
    MXNET_CONTAINER,
    WAIT_CONTAINER,
    ConditionStatus,
)
from hooks.core.children import (
    ChildError,
    Condition,
    ContainerStatus,
    Pod,
    PodSpec,
    PodStatus,
    Terminated,
    pod_spec,
)
from hooks.core.held import RESTARTING_CONDITION, InPlace, in_place
from hooks.core.naming import Slot, parse_pod_name
from hooks.core.progress import NOTHING, Noted, read_noted
from hooks.core.quoting import clean
from hooks.core.timestamps import latest, moment


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
#: Bytes of a kubelet's or scheduler's message quoted in a condition message at most, and of
#: a reason (`OOMKilled`, a Kueue eviction's): as a failure's line (hooks/core/failures.py).
QUOTED_BYTES = 200


class Ended(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How one run of the mxnet container ended, as the kubelet reported it."""

    exit_code: int
    reason: str | None = None
    finished: datetime | None = None
    #: Its termination message as it came (hooks/core/failures.py cleans what is shown of it).
    message: str | None = None


class ObservedPod(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One observed pod of a replica slot. A Struct, not a dataclass: a sync reads one per pod,
    and a frozen dataclass spends longer setting its fields than the hook reading them."""

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
    #: When its deletion was asked for: the deadline less the deletion's grace period.
    deleted_at: datetime | None = None
    #: Deleted by someone else than the hook (`kubectl delete pod`, an eviction, a drain):
    #: judged as failed from the moment the hook sees it (`judged_deleted`).
    deleted: bool = False
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
    #: How the mxnet container ended, once it has (its exit code known).
    ended: Ended | None = None
    #: How it ended before the kubelet last restarted it in place (`lastState`).
    ended_before: Ended | None = None
    #: Its newest progress report and when the progress component last saw nothing move
    #: (hooks/core/progress.py), as that component keeps them on the pod.
    noted: Noted = NOTHING
    #: Held back by its barrier after an in-place restart, for its `run` (hooks/core/held.py).
    held: bool = False

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

    @property
    def failed_at(self) -> datetime | None:
        """When its failure happened: a deleted pod's deletion, else its end (or last event)."""
        if self.deleted:
            return self.deleted_at
        return self.finished or self.last_event

    def as_failed(self) -> "ObservedPod":
        """The pod as failure rules judge it: a deleted pod failed without an exit code, what
        its process did with SIGTERM says nothing of the job."""
        if not self.deleted:
            return self
        return msgspec.structs.replace(self, exit_code=None, exits=())

    def settled(self, now: datetime) -> "ObservedPod":
        """The pod as the hook treats it at `now`: one still observed LOST_AFTER past its
        deletionTimestamp is lost with its node, and counts as failed."""
        at = lost_at(self)
        if at is None or now < at:
            return self
        return msgspec.structs.replace(self, phase=PodPhase.FAILED, lost=True)


def lost_at(pod: ObservedPod) -> datetime | None:
    """When a terminating pod will count as lost, if it has not ended by then."""
    if pod.deadline is None or pod.phase in FINISHED_PHASES:
        return None
    try:
        return pod.deadline + LOST_AFTER
    except OverflowError:  # a deletionTimestamp near year 9999
        return None


def read_pod(job: str, pod: Pod, *, placement: bool = True) -> ObservedPod | None:
    """Read one observed pod; None for a pod whose name this job never gives. Each group of
    fields has its reader below: the mxnet container's run and end (`_started`, `_ended`,
    `_exits`), the conditions (`_condition_pairs`), why it waits (`_waiting`), and where it is
    placed, read from its spec with `placement` only (`_placed`): they tell what a gang
    scheduler or Kueue waits for, and nothing else."""
    parsed = parse_pod_name(job, pod.metadata.name)
    if parsed is None:
        return None
    slot, attempt = parsed
    metadata, status = pod.metadata, pod.status
    mxnet = next((s for s in status.container_statuses if s.name == MXNET_CONTAINER), _NO_STATUS)
    terminated = mxnet.state.terminated or _NOT_TERMINATED
    phase = _PHASES.get(status.phase or "", PodPhase.PENDING)
    # Each (type, status) once, the first listed: what the conditions say, in one pass.
    conditions = {(c.type, c.status): c for c in reversed(status.conditions)}
    reasons = (said(status.reason), said(terminated.reason))
    node, scheduler, gates = _placed(pod_spec(pod) if placement else _NOT_PLACED)
    observed = ObservedPod(
        name=metadata.name,
        slot=slot,
        attempt=attempt,
        phase=phase,
        terminating=metadata.deletion_timestamp is not None,
        created=moment(metadata.creation_timestamp),
        started=_started(mxnet, terminated, status.start_time),
        finished=moment(terminated.finished_at),
        exit_code=terminated.exit_code,
        reason=reasons[0] or reasons[1],
        restart_count=sum(max(s.restart_count, 0) for s in status.container_statuses),
        restarts_before=_count(metadata.annotation(ANNOTATION_RESTARTS)),
        run=_count(metadata.annotation(ANNOTATION_RUN)),
        disrupted=_DISRUPTED in conditions,
        deadline=moment(metadata.deletion_timestamp),
        deleted_at=_requested(metadata.deletion_timestamp, metadata.deletion_grace_period_seconds),
        blocked=_waiting(phase, status, conditions.get(_UNSCHEDULED)),
        wait_failed=_wait_failed(status.init_container_statuses),
        exits=_exits(status.container_statuses),
        reasons=frozenset(r for r in reasons if r),
        conditions=_condition_pairs(conditions),
        evicted=_evicted(conditions.get(_EVICTED)),
        scheduled=_scheduled(conditions.get(_SCHEDULED)),
        foreign=ANNOTATION_ATTEMPT not in metadata.annotations,
        node=node,
        scheduler=scheduler,
        gates=gates,
        ended=_ended(terminated),
        ended_before=_ended(mxnet.last_state.terminated),
        noted=read_noted(metadata.annotation(ANNOTATION_PROGRESS)),
    )
    place = in_place(
        status.container_statuses,
        status.init_container_statuses,
        (metadata.annotation(ANNOTATION_RESTART), metadata.annotation(ANNOTATION_GO)),
        restarting=(RESTARTING_CONDITION, ConditionStatus.TRUE.value) in conditions,
    )
    if place is None:
        return observed
    running = mxnet.state.running
    return _restarted_in_place(observed, place, moment(running.started_at) if running else None)


def _restarted_in_place(pod: ObservedPod, place: InPlace, running: datetime | None) -> ObservedPod:
    """A pod that restarts in place as its barrier says it is (hooks/core/held.py): of the run
    it was released into, or held for. Its restart counts and its mxnet container's last state
    tell in-place restarts only, which the run records count already; its progress note may
    tell of its process before the restart, and is read only if it is of the mxnet process
    `running` since then (none runs: no note; the pod's start is the first process's)."""
    run = pod.run if place.run is None else place.run
    # A held pod runs no process to note; a released one only what its new process reported.
    noted = NOTHING if place.held else pod.noted.since(running)
    pod = msgspec.structs.replace(
        pod, run=run, restart_count=0, ended_before=None, held=place.held, noted=noted
    )
    if not place.held or pod.phase is PodPhase.PENDING:
        return pod
    # Held, whatever phase the kubelet shows for a moment: its processes do not run.
    return msgspec.structs.replace(
        pod, phase=PodPhase.PENDING, ended=None, exit_code=None, finished=None, exits=(),
        reasons=frozenset(),
    )  # fmt: skip


def _started(
    mxnet: ContainerStatus, terminated: Terminated, pod_started: datetime | None
) -> datetime | None:
    """When the mxnet container (re)started running, else when its last run (`terminated`)
    started, else when the kubelet took the pod."""
    running = mxnet.state.running
    return (
        moment(running.started_at if running else None)
        or moment(terminated.started_at)
        or moment(pod_started)
    )


def _exits(statuses: list[ContainerStatus]) -> tuple[tuple[str, int], ...]:
    """(container name, exit code) of every terminated container, for failurePolicy rules."""
    ended = ((s.name, s.state.terminated) for s in statuses if s.state.terminated is not None)
    return tuple(
        (name, t.exit_code) for name, t in ended if name is not None and t.exit_code is not None
    )


def _condition_pairs(
    conditions: dict[tuple[str | None, str | None], Condition],
) -> frozenset[tuple[str, str]]:
    """The pod's conditions as (type, status), those with both set."""
    return frozenset((t, s) for t, s in conditions if t is not None and s is not None)


def _waiting(phase: PodPhase, status: PodStatus, unscheduled: Condition | None) -> str | None:
    """Why a pending pod cannot start (`_blocked`); nothing once it has left Pending, nor
    before the kubelet or the API server gave it a phase."""
    if status.phase is None or phase is not PodPhase.PENDING:
        return None
    return _blocked([*status.init_container_statuses, *status.container_statuses], unscheduled)


def _evicted(termination: Condition | None) -> str | None:
    """Why Kueue is taking the pod away, from its true `TerminationTarget` condition."""
    return None if termination is None else said(termination.reason) or KUEUE_TERMINATION


def _scheduled(scheduled: Condition | None) -> datetime | None:
    """When it was bound to a node, from its true `PodScheduled` condition."""
    return None if scheduled is None else moment(scheduled.last_transition_time)


def _placed(spec: PodSpec) -> tuple[str | None, str | None, frozenset[str]]:
    """Where the pod is bound, the scheduler it asks for and its scheduling gates."""
    gates = frozenset(g.name for g in spec.scheduling_gates if g.name is not None)
    return spec.node_name or None, spec.scheduler_name or None, gates


def _ended(terminated: Terminated | None) -> Ended | None:
    """A terminated state with its exit code, as an `Ended`."""
    if terminated is None or terminated.exit_code is None:
        return None
    return Ended(
        exit_code=terminated.exit_code,
        reason=terminated.reason or None,
        finished=moment(terminated.finished_at),
        message=terminated.message or None,
    )


_NO_STATUS = ContainerStatus()
_NOT_TERMINATED = Terminated()
_NOT_PLACED = PodSpec()
_SCHEDULED = ("PodScheduled", ConditionStatus.TRUE.value)
_UNSCHEDULED = ("PodScheduled", ConditionStatus.FALSE.value)
_EVICTED = (KUEUE_TERMINATION, ConditionStatus.TRUE.value)
_DISRUPTED = (DISRUPTION, ConditionStatus.TRUE.value)


def _requested(deadline: datetime | None, grace: int | None) -> datetime | None:
    """When a deletion was asked for: its deadline less its grace period (whole seconds)."""
    if deadline is None:
        return None
    try:
        return moment(deadline - timedelta(seconds=max(grace or 0, 0)))
    except OverflowError:  # a grace period reaching before year 1
        return moment(deadline)


def judged_deleted(pod: ObservedPod, own_until: datetime | None) -> ObservedPod:
    """The pod with `deleted` set when someone else than the hook deleted it: it is being
    deleted, not lost with its node (that has its own rule) nor stopped by Kueue (which restarts
    the run), and its deletion came after `own_until`, up to which the job's own suspension
    deleted its pods (docs/restarts.md#deleted-pods)."""
    if pod.deleted_at is None or pod.lost or pod.evicted is not None:
        return pod
    if own_until is not None and pod.deleted_at <= own_until:
        return pod
    return msgspec.structs.replace(pod, deleted=True)


def _blocked(statuses: list[ContainerStatus], unscheduled: Condition | None) -> str | None:
    """Why a pending pod cannot start: a container the kubelet cannot start, or no node."""
    for status in statuses:
        waiting = status.state.waiting
        if waiting is not None and waiting.reason in CANNOT_START:
            return quoted(str(waiting.reason), waiting.message)
    if unscheduled is not None and unscheduled.reason == "Unschedulable":
        return quoted("Unschedulable", unscheduled.message)
    return None


def _wait_failed(inits: list[ContainerStatus]) -> str | None:
    """How the rejoin wait ended, if it failed."""
    wait = next((s for s in inits if s.name == WAIT_CONTAINER), _NO_STATUS)
    terminated = wait.state.terminated
    if terminated is None or not terminated.exit_code:
        return None
    reason = terminated.reason or f"exit code {terminated.exit_code}"
    return quoted(reason, terminated.message)


def quoted(reason: str, message: object) -> str:
    """`reason: message`, both as text from a pod is quoted (hooks/core/quoting.py), the
    message cut to a condition's length."""
    words = clean(message, QUOTED_BYTES) if isinstance(message, str) else ""
    return f"{clean(reason, QUOTED_BYTES)}: {words}" if words else clean(reason, QUOTED_BYTES)


def said(reason: str | None) -> str | None:
    """A reason from the cluster as it is quoted, None for none (or nothing left of it)."""
    if not reason:
        return None
    return clean(reason, QUOTED_BYTES) or None


def _count(value: object) -> int:
    """A non-negative count written as an annotation string; anything else counts as 0."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    return 0


def pods_by_slot(
    job: str, pods: dict[str, Pod], *, placement: bool = True
) -> dict[Slot, list[ObservedPod]]:
    """Observed pods grouped by slot, oldest attempt first; foreign names are left out."""
    slots: dict[Slot, list[ObservedPod]] = {}
    for name, pod in pods.items():
        try:
            observed = read_pod(job, pod, placement=placement)
        except ChildError as exc:
            raise ChildError(str(exc), child=name) from None
        if observed is not None:
            slots.setdefault(observed.slot, []).append(observed)
    for attempts in slots.values():
        if len(attempts) > 1:
            attempts.sort(key=lambda p: p.attempt)
    return slots

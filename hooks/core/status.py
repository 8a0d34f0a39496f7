"""The MXJob status (docs/status.md): conditions, replica counts, start and completion times.

A pure function of the request: conditions are carried from the previous status and changed
only by observed events, so a quiet job gets a byte-identical status and Metacontroller rests.
"""

import contextlib
from datetime import datetime, timedelta
from typing import Any, Required, TypedDict, cast

from hooks.core import conditions as cond
from hooks.core.api import ConditionType, Reason, ReplicaType
from hooks.core.failures import LastFailure, read_last_failure
from hooks.core.job import Job
from hooks.core.labels import type_selector
from hooks.core.naming import Slot
from hooks.core.observed import FINISHED_PHASES, ObservedPod, PodPhase
from hooks.core.outcome import Outcome
from hooks.core.previous import PreviousStatus
from hooks.core.progress import Report
from hooks.core.restart.runs import InPlaceOrder
from hooks.core.restart.slots import SlotPlan
from hooks.core.timestamps import earliest, format_time, latest


class ReplicaStatus(TypedDict):
    """One replica type's counts in `status.replicaStatuses`."""

    active: int
    succeeded: int
    failed: int
    restarts: int
    selector: str


class Resume(TypedDict):
    """Where a run began (docs/status.md#progress): the epoch of its first report."""

    run: int
    epoch: int


class Progress(TypedDict, total=False):
    """`status.progress` (docs/status.md#progress): the newest report of a Worker, and where
    each run began."""

    epoch: Required[int]
    batch: int
    samplesPerSecond: float
    epochSeconds: float
    replicaType: Required[str]
    replicaIndex: Required[int]
    lastReportTime: Required[str]
    percent: int
    estimatedCompletionTime: str
    resumes: list[Resume]


class JobStatus(TypedDict, total=False):
    """The MXJob status the hook writes (docs/status.md)."""

    conditions: Required[list[cond.Condition]]
    replicaStatuses: Required[dict[str, ReplicaStatus]]
    startTime: str
    completionTime: str
    lastFailure: LastFailure
    progress: Progress
    inPlaceRestart: InPlaceOrder


def _stamp(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def frozen(previous: PreviousStatus) -> JobStatus:
    """A finished job's status as recorded (by this hook, so of its shape); Metacontroller owns
    `observedGeneration`."""
    written = previous.written
    return cast(JobStatus, {k: v for k, v in written.items() if k != "observedGeneration"})


def start_time(
    previous: PreviousStatus, pods: dict[Any, list[ObservedPod]], *, queued: bool = False
) -> datetime | None:
    """Earliest pod creation of the current run; carried forward, except across a resume. A
    job in a Kueue queue starts when its first pod is admitted and scheduled (or, without that
    moment, starts running): time spent queued is not run time (docs/scheduling.md#kueue)."""
    if previous.start is not None and not previous.is_true(ConditionType.SUSPENDED):
        return previous.start
    live = [p for attempts in pods.values() for p in attempts if not p.terminating]
    return earliest(*((p.scheduled or p.started) if queued else p.created for p in live))


def replica_statuses(job: Job, plans: list[SlotPlan]) -> dict[str, ReplicaStatus]:
    """Per type: pods running, succeeded and failed (latest attempt of each slot; a pod someone
    deleted counts as failed from then on), restarts."""
    statuses: dict[str, ReplicaStatus] = {}
    for rtype in job.spec.replicas:
        current = [p.current for p in plans if p.slot.rtype is rtype and p.current is not None]
        restarts = sum(p.restarts for p in plans if p.slot.rtype is rtype)
        statuses[rtype.value] = _replica_status(job.name, rtype, current, restarts)
    return statuses


def _replica_status(
    name: str, rtype: ReplicaType, latest: list[ObservedPod], restarts: int
) -> ReplicaStatus:
    """One type's counts over `latest` (the latest pod of each slot): a pod someone deleted
    counts as failed, not as succeeded."""
    return {
        "active": sum(1 for pod in latest if pod.active),
        "succeeded": sum(
            1 for pod in latest if pod.phase is PodPhase.SUCCEEDED and not pod.deleted
        ),
        "failed": sum(1 for pod in latest if pod.phase is PodPhase.FAILED or pod.deleted),
        "restarts": restarts,
        "selector": type_selector(name, rtype),
    }


def progress(job: Job, plans: list[SlotPlan], previous: PreviousStatus) -> Progress | None:
    """The newest report of a Worker of the run, with its percentage and estimated completion
    when the job says how many epochs it trains; until the run reports, the one the previous
    status showed (a restarted run still shows how far the job got)."""
    reported = [
        (report, p.current.noted.began, p.slot, p.current.run)
        for p in plans
        if p.slot.rtype is ReplicaType.WORKER and p.current and (report := p.current.noted.report)
    ]
    carried = carried_progress(previous)
    if not reported:
        return carried
    report, _, slot, _ = max(reported, key=lambda found: found[0].time)
    resumes = _resumes(carried, [(_began(r, began), run) for r, began, _, run in reported])
    shown: dict[str, Any] = {"epoch": report.epoch}
    if report.batch is not None:
        shown["batch"] = report.batch
    if report.speed is not None:
        shown["samplesPerSecond"] = report.speed
    if report.epoch_seconds is not None:
        shown["epochSeconds"] = report.epoch_seconds
    where = {"lastReportTime": report.time, "replicaType": slot.rtype.value}
    found = shown | _forecast(report, job.spec.epochs) | where | {"replicaIndex": slot.index}
    return cast(Progress, found | ({"resumes": resumes} if resumes else {}))


def _began(report: Report, began: int | None) -> int:
    """Where the Worker's run began: the first report the component read in its log, or,
    noted by a component that did not say, its newest report's epoch."""
    return began if began is not None else report.epoch


#: Runs whose beginning the status keeps: the newest.
MAX_RESUMES = 10


def _resumes(carried: Progress | None, reported: list[tuple[int, int]]) -> list[Resume]:
    """The runs' beginnings the status showed, and the newest run's once it reports: the
    lowest epoch where its Workers began, when first seen (a run restored from a checkpoint
    begins where the checkpoint ends, docs/restarts.md#checkpoints)."""
    known = list(carried.get("resumes", [])) if carried is not None else []
    newest = max(run for _, run in reported)
    if any(entry["run"] == newest for entry in known):
        return known
    epoch = min(epoch for epoch, run in reported if run == newest)
    return [*known, Resume(run=newest, epoch=epoch)][-MAX_RESUMES:]


def _forecast(report: Report, epochs: int | None) -> dict[str, Any]:
    """Percent done and, once an epoch's duration is known, the estimated completion: the
    report's moment plus the epochs left at that duration (the current epoch counted whole)."""
    if epochs is None:
        return {}
    done = min(report.epochs_done, epochs)
    found: dict[str, Any] = {"percent": done * 100 // epochs}
    when = report.moment
    if report.epoch_seconds is not None and when is not None:
        with contextlib.suppress(OverflowError):  # beyond year 9999: no estimate
            left = timedelta(seconds=(epochs - done) * report.epoch_seconds)
            found["estimatedCompletionTime"] = format_time(when + left)
    return found


#: The fields of `status.progress` and their types, as `carried_progress` reads them back.
_PROGRESS_FIELDS: dict[str, type | tuple[type, ...]] = {
    "epoch": int,
    "batch": int,
    "samplesPerSecond": (int, float),
    "epochSeconds": (int, float),
    "replicaType": str,
    "replicaIndex": int,
    "lastReportTime": str,
    "percent": int,
    "estimatedCompletionTime": str,
}
_REQUIRED_PROGRESS = ("epoch", "replicaType", "replicaIndex", "lastReportTime")


def carried_progress(previous: PreviousStatus) -> Progress | None:
    """The previous status's progress, its known fields of the right types (a string of at
    most 64 characters) only; None when a required one is missing. Nobody but the hook should
    write the status, so a stray write is trimmed, never trusted."""
    written = previous.written.get("progress")
    if not isinstance(written, dict):
        return None
    kept = {
        key: value
        for key, value in written.items()
        if key in _PROGRESS_FIELDS
        and isinstance(value, _PROGRESS_FIELDS[key])
        and not isinstance(value, bool)
        and not (isinstance(value, str) and len(value) > 64)
    }
    if any(key not in kept for key in _REQUIRED_PROGRESS):
        return None
    resumes = _carried_resumes(written.get("resumes"))
    return cast(Progress, kept | ({"resumes": resumes} if resumes else {}))


def _carried_resumes(written: object) -> list[Resume]:
    """The resume points written before, those of the right shape, at most MAX_RESUMES."""
    if not isinstance(written, list):
        return []
    return [
        Resume(run=entry["run"], epoch=entry["epoch"])
        for entry in written[-MAX_RESUMES:]
        if isinstance(entry, dict)
        and all(type(entry.get(key)) is int and entry[key] >= 0 for key in ("run", "epoch"))
    ]


def _assemble(
    conditions: list[cond.Condition],
    replicas: dict[str, ReplicaStatus],
    start: str | None,
    completion: str | None,
    last: LastFailure | None,
    shown: Progress | None = None,
) -> JobStatus:
    status: JobStatus = {"conditions": conditions, "replicaStatuses": replicas}
    if start is not None:
        status["startTime"] = start
    if completion is not None:
        status["completionTime"] = completion
    if last is not None:
        status["lastFailure"] = last
    if shown is not None:
        status["progress"] = shown
    return status


def carried_failure(name: str, previous: PreviousStatus) -> LastFailure | None:
    """The previous status's `lastFailure`, where no pod is read (docs/status.md)."""
    return read_last_failure(name, previous.written.get("lastFailure"))


def created(
    name: str, created_at: datetime | None, previous: PreviousStatus
) -> list[cond.Condition]:
    """Previous conditions with `Created` ensured, stamped with the job's creation."""
    return cond.set_condition(
        previous.conditions,
        ConditionType.CREATED,
        status=True,
        reason=Reason.CREATED,
        message=f"MXJob {name} is created.",
        time=_stamp(created_at),
    )


def active_status(
    job: Job,
    previous: PreviousStatus,
    plans: list[SlotPlan],
    outcome: Outcome,
    start: datetime | None,
    last: LastFailure | None,
) -> JobStatus:
    """Status of a running (or just finished) job; `last`: its newest failure so far."""
    conditions = created(job.name, job.created, previous)
    if cond.is_true(conditions, ConditionType.SUSPENDED):
        conditions = cond.set_condition(
            conditions,
            ConditionType.SUSPENDED,
            status=False,
            reason=Reason.RESUMED,
            message=f"MXJob {job.name} is resumed.",
            time=_stamp(job.spec_changed),
        )
    # Created was ensured above; setting it again changes its message only while a replica
    # cannot start (the outcome names it).
    conditions = cond.set_condition(
        conditions,
        outcome.ctype,
        status=True,
        reason=outcome.reason,
        message=outcome.message,
        time=_stamp(outcome.time),
    )
    return _assemble(
        conditions,
        replica_statuses(job, plans),
        _stamp(start),
        _stamp(outcome.time) if outcome.finished else None,
        last,
        progress(job, plans, previous),
    )


def suspended_status(job: Job, previous: PreviousStatus) -> JobStatus:
    """Suspended=True, Running=False; no pods, so zero counts; startTime kept."""
    moment = _stamp(job.spec_changed)
    message = f"MXJob {job.name} is suspended."
    conditions = created(job.name, job.created, previous)
    if cond.find(conditions, ConditionType.RUNNING) is not None:
        conditions = cond.set_condition(
            conditions,
            ConditionType.RUNNING,
            status=False,
            reason=Reason.SUSPENDED,
            message=message,
            time=moment,
        )
    conditions = cond.set_condition(
        conditions,
        ConditionType.SUSPENDED,
        status=True,
        reason=Reason.SUSPENDED,
        message=message,
        time=moment,
    )
    return _assemble(
        conditions,
        replica_statuses(job, []),
        _stamp(previous.start),
        None,
        carried_failure(job.name, previous),
        carried_progress(previous),
    )


def invalid_status(
    name: str,
    previous: PreviousStatus,
    message: str,
    created_at: datetime | None,
    changed_at: datetime | None,
    pods: dict[Slot, list[ObservedPod]],
) -> JobStatus:
    """Failed with reason MXJobInvalidSpec, dated by the spec's change, counting the pods the
    hook keeps (their latest attempts). `completionTime` is set only once none of them may run
    any more: the job's work has ended then, at the latest of the spec's change and their ends,
    and only then may the TTL component count from it (docs/run-policy.md)."""
    conditions = created(name, created_at, previous)
    conditions = cond.set_condition(
        conditions,
        ConditionType.FAILED,
        status=True,
        reason=Reason.INVALID_SPEC,
        message=message,
        time=_stamp(changed_at),
    )
    latest_attempts = [attempts[-1] for attempts in pods.values() if attempts]
    running = any(p.phase not in FINISHED_PHASES for p in latest_attempts)
    ended = latest(changed_at, *(p.last_event for ps in pods.values() for p in ps))
    return _kept(name, previous, conditions, pods, None if running else _stamp(ended))


def held_status(
    name: str,
    previous: PreviousStatus,
    words: str,
    created_at: datetime | None,
    pods: dict[Slot, list[ObservedPod]],
) -> JobStatus:
    """A job the hook holds as it is (docs/security.md#the-answer-budget): its conditions as
    written, the latest one's message extended by `held: <words>`, counting the pods the hook
    keeps. The words are taken off every condition read (`conditions.clean`), so the next sync
    that does not hold the job writes the status it would have written without the hold."""
    conditions = created(name, created_at, previous)
    return holding(_kept(name, previous, conditions, pods, None), words)


def holding(status: JobStatus, words: str) -> JobStatus:
    """A status whose latest condition's message says why the job is held (`held: <words>`)."""
    *before, last = status["conditions"]
    message = cond.held(last.get("message", ""), words)
    return {**status, "conditions": [*before, {**last, "message": message}]}


def _kept(
    name: str,
    previous: PreviousStatus,
    conditions: list[cond.Condition],
    pods: dict[Slot, list[ObservedPod]],
    completion: str | None,
) -> JobStatus:
    """The status of a job whose observed children are kept as they are: its start and last
    failure as written, its replicas counted from the pods kept."""
    return _assemble(
        conditions,
        _kept_counts(name, previous, pods),
        _stamp(previous.start),
        completion,
        carried_failure(name, previous),
        carried_progress(previous),
    )


def _kept_counts(
    name: str, previous: PreviousStatus, pods: dict[Slot, list[ObservedPod]]
) -> dict[str, ReplicaStatus]:
    """Per type of the observed pods (or of the last status): the latest attempts running,
    succeeded and failed; restarts as the last status counted them."""
    written = previous.written.get("replicaStatuses")
    counted = written if isinstance(written, dict) else {}
    statuses: dict[str, ReplicaStatus] = {}
    for rtype in ReplicaType:
        latest_pods = [a[-1] for slot, a in pods.items() if slot.rtype is rtype and a]
        if latest_pods or rtype.value in counted:
            restarts = _counted_restarts(counted.get(rtype.value))
            statuses[rtype.value] = _replica_status(name, rtype, latest_pods, restarts)
    return statuses


def _counted_restarts(written: object) -> int:
    """The restarts a written replica status counted; 0 where it says nothing readable."""
    restarts = written.get("restarts") if isinstance(written, dict) else None
    return restarts if isinstance(restarts, int) and restarts >= 0 else 0

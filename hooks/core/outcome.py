"""Where an active job stands (docs/status.md, docs/restarts.md, docs/run-policy.md): succeeded,
failed, restarting, running or created.

Every outcome carries the moment of the child event that caused it, never the wall clock; only
the deadline compares with `now`, and its moment is `startTime + activeDeadlineSeconds`.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.core.api import ConditionType, JobMode, Reason, ReplicaType, SuccessPolicy
from hooks.core.job import Job
from hooks.core.naming import MAX_ATTEMPT
from hooks.core.observed import PodPhase
from hooks.core.restarts import SlotPlan, describe_exit, replica_words
from hooks.core.runs import RunRecord, Step
from hooks.core.timestamps import format_time, latest


@dataclass(frozen=True)
class Outcome:
    """The condition an active job should show now, with its reason, message and moment."""

    ctype: ConditionType
    reason: Reason
    message: str
    time: datetime | None

    @property
    def finished(self) -> bool:
        return self.ctype in (ConditionType.SUCCEEDED, ConditionType.FAILED)


def decide(
    job: Job,
    plans: list[SlotPlan],
    start: datetime | None,
    now: datetime,
    restart: RunRecord | None = None,
    step: Step = Step.CREATING,
) -> Outcome:
    """The outcome of an active, valid, unsuspended job from its slot plans and the whole-job
    restart under way, if any, at its step."""
    name = job.name
    deciding = deciding_types(job)
    done = [p.current for p in plans if p.slot.rtype in deciding]
    if done and all(pod is not None and pod.phase is PodPhase.SUCCEEDED for pod in done):
        moment = latest(*(pod.finished or pod.last_event for pod in done if pod is not None))
        return Outcome(
            ConditionType.SUCCEEDED,
            Reason.SUCCEEDED,
            f"MXJob {name} is successfully completed.",
            moment,
        )
    fatal = next((p for p in plans if p.fatal is not None), None)
    if fatal is not None and fatal.fatal is not None:
        pod = fatal.fatal
        policy = job.spec.replicas[fatal.slot.rtype].restart_policy
        return Outcome(
            ConditionType.FAILED,
            Reason.FAILED,
            f"MXJob {name} has failed: {replica_words(fatal.slot, pod)} {describe_exit(pod)}, "
            f"which restartPolicy {policy.value} does not retry.",
            pod.finished or pod.last_event,
        )
    limit = job.spec.run_policy.backoff_limit
    restarts = sum(p.restarts for p in plans)
    if limit is not None and restarts > limit:
        return Outcome(
            ConditionType.FAILED,
            Reason.BACKOFF_LIMIT,
            f"MXJob {name} has failed: {restarts} restarts exceed backoffLimit {limit}"
            f"{_latest_failure(plans)}.",
            latest(*(p.current.last_event for p in plans if p.current is not None)),
        )
    deadline = deadline_at(job, start)
    if deadline is not None and now >= deadline:
        seconds = job.spec.run_policy.active_deadline_seconds
        return Outcome(
            ConditionType.FAILED,
            Reason.DEADLINE,
            f"MXJob {name} has failed: it was active longer than activeDeadlineSeconds "
            f"({seconds}s) since {format_time(start) if start else 'its start'}.",
            deadline,
        )
    if restart is not None and restart.attempt > MAX_ATTEMPT:
        return Outcome(
            ConditionType.FAILED,
            Reason.FAILED,
            f"MXJob {name} has failed: no attempt names are left for a whole-job restart "
            f"({restart.cause})",
            restart.moment,
        )
    if restart is not None:
        message = restart.message(step)
        return Outcome(ConditionType.RESTARTING, Reason.RESTARTING, message, restart.moment)
    restarting = [p for p in plans if p.restarting and p.current is not None]
    if restarting:
        first = restarting[0]
        more = f" and {len(restarting) - 1} more" if len(restarting) > 1 else ""
        return Outcome(
            ConditionType.RESTARTING,
            Reason.RESTARTING,
            f"MXJob {name} is restarting: {replica_words(first.slot, first.current)}"
            f" {_restart_words(first)}{more}.",
            latest(*(p.current.last_event for p in restarting if p.current is not None)),
        )
    active = [p.current for p in plans if p.current is not None and p.current.active]
    if active:
        return Outcome(
            ConditionType.RUNNING,
            Reason.RUNNING,
            f"MXJob {name} is running.",
            latest(*(pod.started or pod.last_event for pod in active)),
        )
    return Outcome(ConditionType.CREATED, Reason.CREATED, f"MXJob {name} is created.", job.created)


def deciding_types(job: Job) -> tuple[ReplicaType, ...]:
    """Replica types whose success is the job's success (docs/status.md)."""
    if job.spec.mode is JobMode.TUNE:
        return (ReplicaType.TUNER,)
    if (
        ReplicaType.SCHEDULER in job.spec.replicas
        and job.spec.success_policy is SuccessPolicy.DEFAULT
    ):
        return (ReplicaType.SCHEDULER, ReplicaType.WORKER)
    return (ReplicaType.WORKER,)


def _restart_words(plan: SlotPlan) -> str:
    if plan.create_attempt and plan.current is not None:
        return f"{describe_exit(plan.current)}; starting attempt {plan.create_attempt}"
    return "is starting again"


def _latest_failure(plans: list[SlotPlan]) -> str:
    failed = [p for p in plans if p.current is not None and p.restarts > 0]
    if not failed:
        return ""
    last = max(failed, key=lambda p: p.restarts)
    return f" (latest: {replica_words(last.slot, last.current)} with {last.restarts} restarts)"


def deadline_at(job: Job, start: datetime | None) -> datetime | None:
    """`startTime + activeDeadlineSeconds`, when both are known."""
    seconds = job.spec.run_policy.active_deadline_seconds
    if start is None or seconds is None:
        return None
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:  # a start near year 9999: the deadline is beyond any date
        return None

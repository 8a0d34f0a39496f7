"""Where an active job stands (docs/status.md, docs/restarts.md, docs/run-policy.md): succeeded,
failed, restarting, running or created, decided by ordered rules, the first that applies.

Every outcome carries the moment of the child event that caused it, never the wall clock; only
the deadline and an onStartFailure wait compare with `now`, and their moments are
`startTime + activeDeadlineSeconds` and the pod's creation + `afterSeconds`.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hooks.core.api import ConditionType, JobMode, Reason, ReplicaType, SuccessPolicy
from hooks.core.conditions import extended
from hooks.core.failure_policy import Action, start_deadline
from hooks.core.job import Job
from hooks.core.naming import MAX_ATTEMPT
from hooks.core.observed import ObservedPod, PodPhase
from hooks.core.restart.runs import RunPlan
from hooks.core.restart.slots import SlotPlan, describe_exit, replica_words
from hooks.core.timestamps import format_time, latest


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The condition an active job should show now, with its reason, message and moment."""

    ctype: ConditionType
    reason: Reason
    message: str
    time: datetime | None

    @property
    def finished(self) -> bool:
        return self.ctype in (ConditionType.SUCCEEDED, ConditionType.FAILED)


@dataclass(frozen=True)
class _Facts:
    """What the rules read: the job, its run plan on this sync, its start and the clock."""

    job: Job
    run: RunPlan
    start: datetime | None
    now: datetime

    @property
    def plans(self) -> list[SlotPlan]:
        return self.run.plans


def _succeeded(facts: _Facts) -> Outcome | None:
    """Every replica of the deciding types succeeded (docs/status.md)."""
    deciding = deciding_types(facts.job)
    done = [p.current for p in facts.plans if p.slot.rtype in deciding]
    if not done or any(pod is None or pod.phase is not PodPhase.SUCCEEDED for pod in done):
        return None
    return Outcome(
        ctype=ConditionType.SUCCEEDED,
        reason=Reason.SUCCEEDED,
        message=f"MXJob {facts.job.name} is successfully completed.",
        time=latest(*(pod.finished or pod.last_event for pod in done if pod is not None)),
    )


def _failed(facts: _Facts, reason: Reason, why: str, time: datetime | None) -> Outcome:
    """Failed for `reason`: the message is `MXJob <name> has failed: <why>`."""
    return Outcome(
        ctype=ConditionType.FAILED,
        reason=reason,
        message=f"MXJob {facts.job.name} has failed: {why}",
        time=time,
    )


def _failed_for_good(facts: _Facts) -> Outcome | None:
    """A pod failed in a way its restartPolicy does not retry (docs/restarts.md)."""
    plan = next((p for p in facts.plans if p.fatal is not None), None)
    if plan is None or plan.fatal is None:
        return None
    pod = plan.fatal
    policy = facts.job.spec.replicas[plan.slot.rtype].restart_policy
    what = f"{replica_words(plan.slot, pod)} {describe_exit(pod)}"
    verdict = plan.verdict
    rule = verdict.by() if verdict and verdict.rule and verdict.action is Action.FAIL_JOB else None
    why = f"{what}, which {rule or f'restartPolicy {policy.value}'} does not retry."
    return _failed(facts, Reason.FAILED, why, pod.failed_at)


def _could_not_start(facts: _Facts) -> Outcome | None:
    """A pod that cannot start has waited as long as a failurePolicy rule with onStartFailure
    allows (docs/restarts.md#failure-policy); the moment is its creation plus that wait."""
    rules = facts.job.spec.run_policy.failure_rules
    for plan in facts.plans:
        pod = plan.current
        found = None if pod is None else start_deadline(rules, plan.slot.rtype, pod)
        if pod is None or found is None or facts.now < found[1]:
            continue
        words, moment = found
        waited = f"{(moment - pod.created).total_seconds():.0f}" if pod.created else "?"
        why = (
            f"{replica_words(plan.slot, pod)} could not start for {waited}s ({pod.blocked}),"
            f" longer than {words} (FailJob) waits."
        )
        return _failed(facts, Reason.FAILED, why, moment)
    return None


def _backoff_exceeded(facts: _Facts) -> Outcome | None:
    """More restarts than runPolicy.backoffLimit (docs/run-policy.md)."""
    limit = facts.job.spec.run_policy.backoff_limit
    restarts = sum(p.restarts for p in facts.plans)
    if limit is None or restarts <= limit:
        return None
    why = f"{restarts} restarts exceed backoffLimit {limit}{_latest_failure(facts.plans)}."
    moment = latest(*(p.current.last_event for p in facts.plans if p.current is not None))
    return _failed(facts, Reason.BACKOFF_LIMIT, why, moment)


def _deadline_exceeded(facts: _Facts) -> Outcome | None:
    """Active past startTime + activeDeadlineSeconds, at exactly that moment."""
    deadline = deadline_at(facts.job, facts.start)
    if deadline is None or facts.now < deadline:
        return None
    seconds = facts.job.spec.run_policy.active_deadline_seconds
    since = format_time(facts.start) if facts.start else "its start"
    why = f"it was active longer than activeDeadlineSeconds ({seconds}s) since {since}."
    return _failed(facts, Reason.DEADLINE, why, deadline)


def _stalled(facts: _Facts) -> Outcome | None:
    """The run made no progress for progressDeadlineSeconds and an onStall rule says FailJob
    (judged, and a restart planned, with the run: hooks/core/restart/runs.py)."""
    found = facts.run.stalled
    if found is None or found.verdict.action is not Action.FAIL_JOB:
        return None
    why = f"{found.clock.words()}, which {found.verdict.by()} does not retry."
    return _failed(facts, Reason.STALLED, why, found.moment)


def _out_of_attempt_names(facts: _Facts) -> Outcome | None:
    """A whole-job restart would need an attempt past the last name `-r<N>` allows."""
    restart = facts.run.restart
    if restart is None or restart.attempt <= MAX_ATTEMPT:
        return None
    why = f"no attempt names are left for a whole-job restart ({restart.cause})"
    return _failed(facts, Reason.FAILED, why, restart.moment)


def _restarting_whole_job(facts: _Facts) -> Outcome | None:
    """A whole-job restart under way, at its step (docs/restarts.md)."""
    restart = facts.run.restart
    if restart is None:
        return None
    return Outcome(
        ctype=ConditionType.RESTARTING,
        reason=Reason.RESTARTING,
        message=restart.message(facts.run.step),
        time=restart.moment,
    )


def _restarting_replicas(facts: _Facts) -> Outcome | None:
    """Replacements of single replicas on their way."""
    restarting = [p for p in facts.plans if p.restarting and p.current is not None]
    if not restarting:
        return None
    first = restarting[0]
    more = f" and {len(restarting) - 1} more" if len(restarting) > 1 else ""
    return Outcome(
        ctype=ConditionType.RESTARTING,
        reason=Reason.RESTARTING,
        message=f"MXJob {facts.job.name} is restarting: "
        f"{replica_words(first.slot, first.current)} {_restart_words(first)}{more}.",
        # The replaced attempt's end: the same whether or not the replacement is observed yet,
        # so a sync from a stale parent (which stamps the condition afresh) gives the moment
        # the previous sync gave.
        time=latest(*(pod.last_event for p in restarting if (pod := _replaced(p) or p.current))),
    )


def _replaced(plan: SlotPlan) -> ObservedPod | None:
    """The attempt a restarting slot replaces: the current one when its replacement is created
    now, else the failed one kept beside the observed replacement (`plan_slot`)."""
    if plan.create_attempt:
        return plan.current
    return plan.keep[0] if len(plan.keep) > 1 else None


def _running(facts: _Facts) -> Outcome | None:
    """At least one pod runs."""
    active = [p.current for p in facts.plans if p.current is not None and p.current.active]
    if not active:
        return None
    return Outcome(
        ctype=ConditionType.RUNNING,
        reason=Reason.RUNNING,
        message=f"MXJob {facts.job.name} is running.",
        time=latest(*(pod.started or pod.last_event for pod in active)),
    )


#: The rules in the order they are asked; the first that applies decides.
RULES: tuple[Callable[[_Facts], Outcome | None], ...] = (
    _succeeded,
    _failed_for_good,
    _could_not_start,
    _backoff_exceeded,
    _deadline_exceeded,
    _stalled,
    _out_of_attempt_names,
    _restarting_whole_job,
    _restarting_replicas,
    _running,
)


def decide(
    job: Job, run: RunPlan, start: datetime | None, now: datetime, waiting: str | None = None
) -> Outcome:
    """The outcome of an active, valid, unsuspended job: the first rule that applies, else
    Created; while it is not finished, the message also says why an edit of the spec does not
    restart the run yet (edits in a row, docs/restarts.md), and what it waits for (`waiting`:
    its gang scheduler or queue) or else names the replicas that cannot start."""
    facts = _Facts(job, run, start, now)
    outcome = next((o for o in map(lambda rule: rule(facts), RULES) if o is not None), None)
    if outcome is None:
        outcome = Outcome(
            ctype=ConditionType.CREATED,
            reason=Reason.CREATED,
            message=f"MXJob {job.name} is created.",
            time=job.created,
        )
    if outcome.finished:
        return outcome
    if run.waits is not None:
        outcome = _extended(outcome, run.waits.words)
    if waiting:
        return _extended(outcome, waiting)
    return _naming_blocked(outcome, facts.plans)


def _extended(outcome: Outcome, words: str) -> Outcome:
    """The outcome, its message extended by `words`, ending in one full stop."""
    return replace(outcome, message=extended(outcome.message, words))


def _naming_blocked(outcome: Outcome, plans: list[SlotPlan]) -> Outcome:
    """The outcome, its message extended by the first replica that cannot start and why."""
    blocked = [p for p in plans if p.current is not None and p.current.blocked]
    if not blocked:
        return outcome
    first, pod = blocked[0], blocked[0].current
    more = f" (and {len(blocked) - 1} more replicas)" if len(blocked) > 1 else ""
    words = f"{replica_words(first.slot, pod)} cannot start{more}: {pod.blocked if pod else ''}"
    return _extended(outcome, words)


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
    failed = _replaced(plan)
    if plan.create_attempt and failed is not None:
        return f"{describe_exit(failed, plan.verdict)}; starting attempt {plan.create_attempt}"
    if failed is None:
        return "is starting again"
    return f"is starting again after pod {failed.name} {describe_exit(failed)}"


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

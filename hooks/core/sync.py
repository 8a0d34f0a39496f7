"""The hook: one sync request in, the desired children and status out (docs/api.md,
docs/run-policy.md). It dispatches: it reads the records once, at the door (the parent's last
status, the result record; the run record where a run goes on), and picks the job's branch.

    read and default the spec → validate → observe children → plan the run and each slot (its
    gates read in the parent status) → decide the job's outcome → list the children
    (hooks/core/desired.py) → build the status

`now` is a parameter; it is read only to compare with moments the children and the spec give:
the activeDeadlineSeconds, when a pod is lost with its node, when an onStartFailure wait runs
out, when a run's wait before an edit restarts it ends, and when a run's progress deadline runs
out. The status never holds it.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Required, TypedDict, cast

from hooks.core import budget, desired, retention, status
from hooks.core.api import CleanPodPolicy, Reason
from hooks.core.build.claims import claim_waits
from hooks.core.build.configmaps import desired_config, desired_result
from hooks.core.failure_policy import start_deadline
from hooks.core.failures import last_failure
from hooks.core.job import Job
from hooks.core.naming import Slot, result_name
from hooks.core.observed import ObservedPod, lost_at
from hooks.core.outcome import deadline_at, decide
from hooks.core.previous import PreviousStatus, recorded_status
from hooks.core.request import SyncRequest
from hooks.core.restart import resize, runs, stall
from hooks.core.spec import Problem, load
from hooks.core.status import JobStatus
from hooks.core.validation import validate


class SyncAnswer(TypedDict, total=False):
    """The body of a sync answer (docs/http.md): exactly these keys."""

    status: Required[JobStatus]
    children: Required[list[dict[str, Any]]]
    resyncAfterSeconds: float


@dataclass(frozen=True)
class SyncResponse:
    """What Metacontroller applies: the parent's status and the complete list of children."""

    status: JobStatus
    children: list[dict[str, Any]]
    resync_after_seconds: float | None = None
    invalid: list[Problem] = field(default_factory=list)
    #: Why an accepted job is held as it is (its answer over the budget), if it is.
    held: list[Problem] = field(default_factory=list)

    def to_json(self) -> SyncAnswer:
        """Exactly the keys of docs/http.md: v2 hooks unmarshal strictly."""
        body: SyncAnswer = {"status": self.status, "children": self.children}
        if self.resync_after_seconds is not None:
            body["resyncAfterSeconds"] = self.resync_after_seconds
        return body


def sync(
    request: SyncRequest,
    now: datetime,
    max_answer_bytes: int = budget.DEFAULT,
    room: int | None = None,
) -> SyncResponse:
    """Decide the desired state of one MXJob, by the first state it is in: managed by another
    controller (left alone), invalid, finished, over the answer budget `max_answer_bytes`
    (refused, or held once accepted), suspended, active. `room`: the bytes the next request may
    grow by before the body limit (this request's size from it), when known."""
    if request.managed_elsewhere:
        return SyncResponse(cast(JobStatus, request.previous.written), retention.keep_all(request))
    record = recorded_status(request.config_maps.get(result_name(request.name)))
    job, problems = _read_job(request)
    if job is None:
        return _invalid(request, problems, record)
    if request.previous.terminal or record is not None:
        return _finished(job, request, record)
    too_large = budget.over(job, max_answer_bytes)
    if too_large is not None:
        return _over_budget(job, request, too_large)
    if job.spec.run_policy.suspend:
        return _suspended(job, request)
    return _active(job, request, now, room)


def _read_job(request: SyncRequest) -> tuple[Job | None, list[Problem]]:
    """The job of a valid spec, or None and the problems."""
    spec, problems = load(request.parent.get("spec"))
    if spec is None:
        return None, problems
    job = Job(
        name=request.name,
        namespace=request.namespace,
        spec=spec,
        gang=request.gang,
        created=request.created,
        spec_changed=request.spec_changed,
        queue=request.queue,
    )
    problems = validate(request.name, spec) + job.scheduling.problems(spec)
    return (None, problems) if problems else (job, [])


def _over_budget(job: Job, request: SyncRequest, words: str) -> SyncResponse:
    """A job whose answer is over the budget: nothing is built from its templates (the budget
    keeps the hook's memory). One the hook never took on is refused (Failed, nothing created);
    one it did, whose pods may run, is never failed: a setting lowered since, or an edit, must
    not fail a job that was accepted (docs/security.md#the-answer-budget). It may be suspended
    (that answer is its config alone); else it is held: every child kept as it is (their echo
    is no larger than the request already read), the latest condition saying why, until the
    job fits again."""
    if not request.pods and not request.previous.conditions:
        return _invalid(request, [budget.refused(words)], None)
    if job.spec.run_policy.suspend:
        return _suspended(job, request)
    held = budget.held(words)
    new_status = status.held_status(
        request.name, request.previous, held.rule, request.created, request.pods
    )
    return SyncResponse(new_status, retention.keep_all(request), held=[held])


def _invalid(
    request: SyncRequest, problems: list[Problem], record: PreviousStatus | None
) -> SyncResponse:
    """Failed with MXJobInvalidSpec; every observed child is kept, nothing is created. A job
    that had already finished for another reason keeps its status: a spec this hook refuses
    (one training-operator ran, say: docs/migration.md) does not rewrite a finished job's
    history."""
    ended = record if record is not None else request.previous
    if ended.terminal and ended.failed_reason != Reason.INVALID_SPEC:
        return SyncResponse(status.frozen(ended), retention.keep_all(request), invalid=problems)
    message = f"MXJob {request.name} has an invalid spec: " + "; ".join(map(str, problems))
    return _refused(request, message, problems)


def _refused(request: SyncRequest, message: str, problems: list[Problem]) -> SyncResponse:
    """A job this hook refused to run: every child kept as it is, the status counting the pods
    it keeps, finished (for TTL) only once none of them runs any more (docs/run-policy.md)."""
    new_status = status.invalid_status(
        request.name,
        request.previous,
        message,
        request.created,
        request.spec_changed,
        request.pods,
    )
    return SyncResponse(new_status, retention.keep_all(request), invalid=problems)


def _suspended(job: Job, request: SyncRequest) -> SyncResponse:
    """Suspended: no pods, no Services; only the config ConfigMap and the checkpoint claim
    (if made) stay."""
    return SyncResponse(
        status.suspended_status(job, request.previous), desired.suspended(job, request)
    )


def _finished(job: Job, request: SyncRequest, record: PreviousStatus | None) -> SyncResponse:
    """A finished job: its status frozen; cleanup only once the parent status shows it."""
    previous = request.previous
    if record is not None and not previous.terminal:
        # Stale parent cache: the record says finished, so restore it and touch nothing.
        return SyncResponse(status.frozen(record), retention.keep_all(request))
    final = status.frozen(previous)
    reason = previous.failed_reason
    if reason == Reason.INVALID_SPEC:
        # The job never ran under this controller's decisions, even if its spec is valid now:
        # keep what the user has, still counting the pods it keeps.
        return _refused(request, previous.failed_message or "", [])
    policy = job.spec.run_policy.clean_pod_policy
    if reason == Reason.DEADLINE:
        policy = CleanPodPolicy.ALL  # docs/run-policy.md: past the deadline, every pod goes
    result = desired_result(job, final) if record is None else None
    return SyncResponse(final, desired.finished(request, policy, result))


def _active(job: Job, request: SyncRequest, now: datetime, room: int | None) -> SyncResponse:
    """A valid, unsuspended, unfinished job: plan its run, decide, list its children; none
    created when they would not come back within the `room` left under the body limit."""
    previous, pods = request.previous, request.pods
    record, record_child = runs.observed_record(job, request.config_maps)
    names = runs.run_names(job, record, pods, request.config_maps)
    config = desired_config(job, names)
    resized = resize.change(job, request.config_maps.get(names.config), config["data"])
    plan = runs.plan_run(job, pods, record, now, previous, resized=resized)
    start = status.start_time(previous, pods, queued=job.queue is not None)
    waits = claim_waits(job, request.claim) or job.scheduling.waits(
        job.name, job.spec, request.pod_group, _current(plan)
    )
    outcome = decide(job, plan, start, now, waits)
    last = last_failure(status.carried_failure(job.name, previous), pods)
    new_status = status.active_status(job, previous, plan.plans, outcome, start, last)
    if outcome.finished:
        # Record the decision; nothing is deleted until the parent status shows it
        # (docs/run-policy.md). Nothing else is made, as `_finished` makes nothing else.
        return SyncResponse(new_status, desired.recording(request, desired_result(job, new_status)))
    children = desired.of_run(job, request, plan, config, names, record_child, room)
    if children.crowded is not None:
        new_status = status.holding(new_status, children.crowded)
    order = runs.in_place_order(plan, record, go=children.admitted)
    if order is not None:
        new_status = {**new_status, "inPlaceRestart": order}
    return SyncResponse(new_status, children.listed, _resync(job, start, plan, pods, now))


def _resync(
    job: Job,
    start: datetime | None,
    plan: runs.RunPlan,
    pods: dict[Slot, list[ObservedPod]],
    now: datetime,
) -> float | None:
    """Seconds until the next moment this job's answer changes with the clock alone: its
    deadline, a terminating pod counting as lost, a pod that cannot start failing the job, the
    end of a run's wait before an edit restarts it, its progress deadline (so a silent job is
    judged though nothing it does calls the hook)."""
    rules = job.spec.run_policy.failure_rules
    waits = (start_deadline(rules, p.slot.rtype, p) for p in _current(plan))
    watched = stall.clock(job, plan.plans)
    moments = [
        watched.due if watched is not None else None,
        deadline_at(job, start),
        *(lost_at(p) for attempts in pods.values() for p in attempts),
        *(found[1] for found in waits if found is not None),
        plan.waits.until if plan.waits is not None else None,
    ]
    ahead = [m for m in moments if m is not None and m > now]
    if not ahead:
        return None
    return max(1.0, math.ceil((min(ahead) - now).total_seconds()))


def _current(plan: runs.RunPlan) -> list[ObservedPod]:
    return [p.current for p in plan.plans if p.current is not None]

"""The hook: one sync request in, the desired children and status out (docs/api.md,
docs/run-policy.md).

    read and default the spec → validate → observe children → plan the run and each slot →
    decide the job's outcome → list the children → build the status

`now` is a parameter; it is read only to compare with moments the children and the spec give:
the activeDeadlineSeconds, when a pod is lost with its node, when an onStartFailure wait runs
out, when a run's wait before an edit restarts it ends, and when a run's progress deadline runs
out. The status never holds it.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Required, TypedDict, cast

from hooks.core import budget, retention, status
from hooks.core.api import CleanPodPolicy, Reason
from hooks.core.build.claims import claim_waits, desired_claim
from hooks.core.build.configmaps import desired_config, desired_result, recorded_status
from hooks.core.build.pods import PodMaker
from hooks.core.build.services import ServiceMaker, same_service
from hooks.core.children import Child, ConfigMap, PodGroup
from hooks.core.failure_policy import start_deadline
from hooks.core.failures import last_failure
from hooks.core.fields import too_deep
from hooks.core.job import Job
from hooks.core.naming import RunNames, Slot, is_config_map_name, result_name
from hooks.core.observed import ObservedPod, lost_at
from hooks.core.outcome import deadline_at, decide
from hooks.core.previous import PreviousStatus
from hooks.core.request import CLAIM, CONFIG_MAP, POD, SERVICE, SyncRequest
from hooks.core.restart import resize, runs, stall
from hooks.core.restart.slots import SlotPlan
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
    children = [desired_config(job), *_kept_claim(request)]
    return SyncResponse(status.suspended_status(job, request.previous), children)


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
    kept = [*retention.after_cleanup(request, policy), *_kept_claim(request)]
    if record is None:
        kept.append(desired_result(job, final))
    return SyncResponse(final, _unique(kept))


def _active(job: Job, request: SyncRequest, now: datetime, room: int | None) -> SyncResponse:
    """A valid, unsuspended, unfinished job: plan its run, decide, list its children; none
    created when they would not come back within the `room` left under the body limit."""
    previous, pods = request.previous, request.pods
    found = runs.observed_record(job, request.config_maps)
    names = _run_names(job, request, found[0])
    config = desired_config(job, names)
    observed_config = request.config_maps.get(names.config)
    plan = runs.plan_run(
        job,
        pods,
        found[0],
        now,
        own_until=previous.suspended_until,
        resized=resize.change(job, observed_config, config["data"]),
    )
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
        kept = [c for c in retention.keep_all(request) if not _is_result(job, c)]
        return SyncResponse(new_status, [*kept, desired_result(job, new_status)])
    # While an edit waits to restart the run, nothing is made: a pod would be made from the
    # edited spec, not from the cluster its run started with (docs/restarts.md#edits-in-a-row).
    creating = (
        plan.waits is None
        and runs.may_create_run(previous, plan.restart, old=plan.old_alive)
        and _claimed(job, request)
    )
    listed, admitted = _run_children(job, request, plan, config, names, found, creating=creating)
    crowded = _crowded(request, listed, room) if creating else None
    if crowded is not None:
        # What this answer creates would come back over the body limit, and every sync from
        # then on would be refused (413): nothing is created until there is room.
        listed, admitted = _run_children(job, request, plan, config, names, found, creating=False)
        new_status = status.holding(new_status, crowded)
    order = runs.in_place_order(plan, found[0], previous, go=admitted)
    if order is not None:
        new_status = {**new_status, "inPlaceRestart": order}
    return SyncResponse(new_status, listed, _resync(job, start, plan, pods, now))


def _run_children(
    job: Job,
    request: SyncRequest,
    plan: runs.RunPlan,
    config: dict[str, Any],
    names: RunNames,
    found: tuple[runs.RunRecord | None, ConfigMap | None],
    *,
    creating: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """The children of an unfinished job's answer: its run's, its run record (`found`: as read,
    and observed), and the pods and configs of an older run or of slots the spec no longer has
    while they must stay; and whether the run's new pods are admitted (made, or released in
    place)."""
    record, record_child = found
    keeps_old = not runs.may_delete_old_run(request.previous, record, plan.plans)
    # Between runs, once the parent status shows the restart past its record (as for deleting
    # the old run's pods: docs/run-policy.md#stale-cache-safety), or with no restart at all.
    replacing = plan.between_runs and (plan.restart is None or not keeps_old)
    listed, admitted = _active_children(
        job, request, plan, config, names, creating=creating, replacing=replacing
    )
    listed.extend(_claim(job, request))
    if plan.fresh is not None:
        listed.append(runs.record_config_map(job, plan.fresh))
    elif record_child is not None:
        listed.append(retention.as_observed(CONFIG_MAP, record_child))
    if plan.fresh is not None or plan.waits is not None:
        # The run's pods of slots the spec no longer has go with the rest of the run.
        listed.extend(_echoed(request, plan.extra))
    if keeps_old:
        listed.extend(_echoed(request, plan.old))
    else:
        # In place, the older run's running pods restart where they are.
        listed.extend(_echoed(request, plan.movable))
    if keeps_old or runs.restarts_in_place(job.spec):
        # A pod that restarts in place reads the config of the run it was made in again.
        listed.extend(_older_configs(job, request, names.config))
    return listed, admitted


def _claimed(job: Job, request: SyncRequest) -> bool:
    """Whether the job's checkpoint claim, if it asks for one, is its own child: nothing else
    is made before (no pod may mount a claim of that name that is not the job's)."""
    return job.spec.checkpoint is None or request.claim is not None


def _claim(job: Job, request: SyncRequest) -> list[dict[str, Any]]:
    """The checkpoint claim: as observed once made (it outlives restarts, resizes and edits of
    the template, or of the spec that drop it: the checkpoints are the user's), else made
    when the spec asks for one."""
    kept = _kept_claim(request)
    if kept or job.spec.checkpoint is None:
        return kept
    return [desired_claim(job, job.spec.checkpoint)]


def _kept_claim(request: SyncRequest) -> list[dict[str, Any]]:
    """The observed checkpoint claim, listed as it is, if there is one."""
    claim = request.claim
    return [] if claim is None else [retention.as_observed(CLAIM, claim)]


def _crowded(request: SyncRequest, listed: list[dict[str, Any]], room: int | None) -> str | None:
    """Why the children an answer creates (none observed by kind and name) leave no `room`
    under the body limit once Metacontroller sends them back, if they do
    (docs/security.md#the-answer-budget). The job's own share of what comes back is in
    budget.RETURNED already, so the room counts from what its observed children take: a job
    within the budget always has room for its first pods, however large its spec (one nested
    too deep to be measured gets no room back)."""
    if room is None:
        return None
    observed = {
        (key.partition(".")[0], name) for key, group in request.children.items() for name in group
    }
    made = budget.encoded(child for child in listed if _key(child) not in observed)
    if budget.crowded(made, room) is None:
        return None
    own = 0 if too_deep(request.parent) is not None else budget.encoded([request.parent])
    return budget.crowded(made, room + own)


def _run_names(job: Job, request: SyncRequest, record: runs.RunRecord | None) -> RunNames:
    """The names the pods of the newest observed run reach (resize.run_names): this version's,
    or those of a run an earlier version began."""
    run = runs.current_run(record, request.pods)
    shared = record is not None and record.run == run and not record.own_config
    names = resize.run_names(job, run, shared_config=shared, config_maps=request.config_maps)
    group = runs.group_run(record, run)
    return names if group == run else replace(names, group=group)


def _older_configs(job: Job, request: SyncRequest, current: str) -> list[dict[str, Any]]:
    """The config ConfigMaps of older runs, as observed: kept as long as the older run's pods
    are, since a container the kubelet starts again in place reads its ConfigMap again."""
    return [
        retention.as_observed(CONFIG_MAP, child)
        for name, child in sorted(request.config_maps.items())
        if name != current and is_config_map_name(job.name, name)
    ]


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


def _echoed(request: SyncRequest, pods: Iterable[ObservedPod]) -> list[dict[str, Any]]:
    """Observed pods listed as they are (kept, never changed): pods of an older run, or of
    slots the spec no longer has, which the hook may no longer be able to make. A pod lost with
    its node is left out: it is being deleted already and Metacontroller skips children pending
    deletion, so leaving it out changes nothing in the cluster and keeps every answer the same
    whichever run the lost pod is counted in."""
    observed = request.group(POD)
    return [retention.as_observed(POD, observed[p.name]) for p in pods if not p.lost]


def _kept_by(maker: PodMaker, plan: SlotPlan) -> list[dict[str, Any]]:
    """The slot's observed pods of the current run listed as their desired selves (kept, never
    changed): a replacement with its rejoin wait, a first attempt without."""
    return [
        maker.pod(p.slot, p.attempt, p.restarts_before, p.run, waits=p.attempt > plan.first)
        for p in plan.keep
        if not p.lost
    ]


def _active_children(
    job: Job,
    request: SyncRequest,
    plan: runs.RunPlan,
    config: dict[str, Any],
    names: RunNames,
    *,
    creating: bool,
    replacing: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """Pods kept or created per slot, a Service per slot, the ConfigMap, the PodGroup; what does
    not exist yet is made only when `creating` (no restart step is waiting to be seen); and
    whether new pods are admitted.

    While `replacing` (between runs: no pod of the current run observed, no older one to
    keep), a config ConfigMap, PodGroup or Service that differs from what the run needs is left
    out, so Metacontroller deletes it (children are never updated in place), and no pod is made
    until it is listed again, new: a resized job's run reads its new cluster, waits as a gang
    of its new size, and its Services select only its own pods (docs/restarts.md#resizing).
    While the run has pods they stay as they are."""
    run = plan.plans[0].run if plan.plans else 0
    pods, services = PodMaker(job, names), ServiceMaker(job, run, names)
    shared = _shared(job, services, config)
    wanted = [services.service(p.slot) for p in plan.plans]
    desired = [*shared, *(s for s in wanted if s is not None)]
    left_out = _left_out(job, request, desired, creating=creating, replacing=replacing)
    replaced = any(reason == _STALE for reason in left_out.values())
    admit = creating and not replaced and job.scheduling.admits_new_pods(request.pod_group)
    # Only a pod made while its run has pods may register with a ps-lite Scheduler that has
    # started the job; the run's first pods never can (docs/restarts.md#rejoining-ps-lite).
    waits = not plan.between_runs
    result = [child for child in shared if _key(child) not in left_out]
    for slot_plan, service in zip(plan.plans, wanted, strict=True):
        result.extend(_slot_children(pods, slot_plan, admit=admit, waits=waits))
        if service is not None and _key(service) not in left_out:
            result.append(service)
    return result, admit


def _slot_children(
    pods: PodMaker, plan: SlotPlan, *, admit: bool, waits: bool
) -> list[dict[str, Any]]:
    """A slot's pods: those it keeps, and the one it creates when new pods are admitted."""
    found = _kept_by(pods, plan)
    if plan.create_attempt is not None and admit:
        found.append(
            pods.pod(
                plan.slot, plan.create_attempt, plan.create_restarts_before, plan.run, waits=waits
            )
        )
    return found


def _shared(job: Job, services: ServiceMaker, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's children that belong to no slot: the config ConfigMap, the gang's PodGroup
    and, with one Service per job, that Service."""
    shared: list[dict[str, Any]] = [config]
    group = job.scheduling.group(job.name, job.namespace, job.spec)
    if group is not None:
        shared.append(group)
    job_service = services.job_service()
    if job_service is not None:
        shared.append(job_service)
    return shared


_STALE, _NOT_YET = "stale", "not yet"


def _key(child: dict[str, Any]) -> tuple[str, str]:
    return str(child["kind"]), str(child["metadata"]["name"])


def _left_out(
    job: Job,
    request: SyncRequest,
    desired: list[dict[str, Any]],
    *,
    creating: bool,
    replacing: bool,
) -> dict[tuple[str, str], str]:
    """The desired config ConfigMap, PodGroup and Services not listed now, and why: not made
    yet while nothing may be created, or observed different while `replacing`. Observed ones
    are compared only then: a running job's answer reads none of them."""
    if creating and not replacing:
        return {}
    found: dict[tuple[str, str], str] = {}
    services = request.group(SERVICE)
    for child in desired:
        kind, name = _key(child)
        seen: Child | None
        if kind == "ConfigMap":
            seen = request.config_maps.get(name)
        elif kind == "PodGroup":
            seen = request.pod_group
        else:
            seen = services.get(name)
        if seen is None:
            if not creating:
                found[kind, name] = _NOT_YET
        elif replacing and not _same(job, child, seen):
            found[kind, name] = _STALE
    return found


def _same(job: Job, desired: dict[str, Any], observed: Child) -> bool:
    """Whether an observed config ConfigMap, PodGroup or Service is what the run needs."""
    if isinstance(observed, ConfigMap):
        return bool(observed.data == desired["data"])
    if isinstance(observed, PodGroup):
        return job.scheduling.same_group(desired, observed)
    return same_service(desired, observed)


def _is_result(job: Job, child: dict[str, Any]) -> bool:
    return bool(child["kind"] == "ConfigMap" and child["metadata"]["name"] == result_name(job.name))


def _unique(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One child per kind and name, first listing wins."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for child in listed:
        seen.setdefault((str(child["kind"]), str(child["metadata"]["name"])), child)
    return list(seen.values())

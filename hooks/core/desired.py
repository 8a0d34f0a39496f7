"""The desired children of an answer, keyed by (kind, name), as Crossplane's function SDK keys
desired resources: what a job's run lists, kept or made, and what a suspended or finished job
keeps (docs/run-policy.md, docs/restarts.md).

Metacontroller deletes every observed child an answer does not list and creates every listed
one it does not observe (children are never updated in place), so the list is the decision;
a kept child the hook need not rebuild is listed as observed (hooks/core/retention.py).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hooks.core import budget, retention
from hooks.core.api import CleanPodPolicy
from hooks.core.build.claims import desired_claim
from hooks.core.build.configmaps import desired_config
from hooks.core.build.pods import PodMaker
from hooks.core.build.services import ServiceMaker, same_service
from hooks.core.children import Child, ConfigMap, PodGroup
from hooks.core.fields import too_deep
from hooks.core.job import Job
from hooks.core.naming import RunNames, is_config_map_name
from hooks.core.observed import ObservedPod
from hooks.core.request import CLAIM, CONFIG_MAP, POD, SERVICE, SyncRequest
from hooks.core.restart import runs
from hooks.core.restart.slots import SlotPlan

#: A child's key in an answer, which lists one child of each: its kind and name.
Key = tuple[str, str]


@dataclass(frozen=True)
class RunChildren:
    """An unfinished job's children, whether its run's new pods are admitted (made, or
    released in place), and why nothing is created, when what would be leaves no room."""

    listed: list[dict[str, Any]]
    admitted: bool
    crowded: str | None = None


def of_run(
    job: Job,
    request: SyncRequest,
    plan: runs.RunPlan,
    config: dict[str, Any],
    names: RunNames,
    record: ConfigMap | None,
    room: int | None,
) -> RunChildren:
    """The children of an unfinished job's answer (`_run_children`; `record`: its observed run
    record), made only once the plan's gates and the checkpoint claim let them be; none made
    when they would not come back within the `room` left under the body limit: every sync from
    then on would be refused (413), so nothing is created until there is room."""
    creating = plan.creating and _claimed(job, request)
    listed, admitted = _run_children(job, request, plan, config, names, record, creating=creating)
    crowded = _crowded(request, listed, room) if creating else None
    if crowded is None:
        return RunChildren(listed, admitted)
    listed, admitted = _run_children(job, request, plan, config, names, record, creating=False)
    return RunChildren(listed, admitted, crowded)


def suspended(job: Job, request: SyncRequest) -> list[dict[str, Any]]:
    """A suspended job's children: no pods, no Services; only the config ConfigMap and the
    checkpoint claim (if made) stay."""
    return [desired_config(job), *_kept_claim(request)]


def recording(request: SyncRequest, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer that records a job's end: every observed child kept as it is, and `result`,
    its result record (nothing is deleted until the parent status shows it: docs/run-policy.md)."""
    key = _key(result)
    return [*(c for c in retention.keep_all(request) if _key(c) != key), result]


def finished(
    request: SyncRequest, policy: CleanPodPolicy, result: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """A finished job's children: those cleanup under `policy` keeps, the checkpoint claim and,
    when it is to be made, `result`, its result record; one per kind and name."""
    kept = [*retention.after_cleanup(request, policy), *_kept_claim(request)]
    if result is not None:
        kept.append(result)
    return _unique(kept)


def _run_children(
    job: Job,
    request: SyncRequest,
    plan: runs.RunPlan,
    config: dict[str, Any],
    names: RunNames,
    record: ConfigMap | None,
    *,
    creating: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """The children of an unfinished job's answer: its run's, its run record (made now, or as
    observed), and the pods and configs of an older run or of slots the spec no longer has
    while they must stay; and whether the run's new pods are admitted (made, or released in
    place)."""
    listed, admitted = _active_children(job, request, plan, config, names, creating=creating)
    listed.extend(_claim(job, request))
    if plan.fresh is not None:
        listed.append(runs.record_config_map(job, plan.fresh))
    elif record is not None:
        listed.append(retention.as_observed(CONFIG_MAP, record))
    if plan.fresh is not None or plan.waits is not None:
        # The run's pods of slots the spec no longer has go with the rest of the run.
        listed.extend(_echoed(request, plan.extra))
    if plan.keeps_old:
        listed.extend(_echoed(request, plan.old))
    else:
        # In place, the older run's running pods restart where they are.
        listed.extend(_echoed(request, plan.movable))
    if plan.keeps_old or runs.restarts_in_place(job.spec):
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


def _older_configs(job: Job, request: SyncRequest, current: str) -> list[dict[str, Any]]:
    """The config ConfigMaps of older runs, as observed: kept as long as the older run's pods
    are, since a container the kubelet starts again in place reads its ConfigMap again."""
    return [
        retention.as_observed(CONFIG_MAP, child)
        for name, child in sorted(request.config_maps.items())
        if name != current and is_config_map_name(job.name, name)
    ]


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
) -> tuple[list[dict[str, Any]], bool]:
    """Pods kept or created per slot, a Service per slot, the ConfigMap, the PodGroup; what does
    not exist yet is made only when `creating` (no restart step is waiting to be seen); and
    whether new pods are admitted.

    While the plan is `replacing` (between runs: no pod of the current run observed, no older
    one to keep), a config ConfigMap, PodGroup or Service that differs from what the run needs
    is left out, so Metacontroller deletes it (children are never updated in place), and no pod
    is made until it is listed again, new: a resized job's run reads its new cluster, waits as a
    gang of its new size, and its Services select only its own pods
    (docs/restarts.md#resizing). While the run has pods they stay as they are."""
    run = plan.plans[0].run if plan.plans else 0
    pods, services = PodMaker(job, names), ServiceMaker(job, run, names)
    shared = _shared(job, services, config)
    wanted = [services.service(p.slot) for p in plan.plans]
    desired = [*shared, *(s for s in wanted if s is not None)]
    left_out = _left_out(job, request, desired, creating=creating, replacing=plan.replacing)
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


def _key(child: dict[str, Any]) -> Key:
    """A desired child's key."""
    return str(child["kind"]), str(child["metadata"]["name"])


def _left_out(
    job: Job,
    request: SyncRequest,
    desired: list[dict[str, Any]],
    *,
    creating: bool,
    replacing: bool,
) -> dict[Key, str]:
    """The desired config ConfigMap, PodGroup and Services not listed now, and why: not made
    yet while nothing may be created, or observed different while `replacing`. Observed ones
    are compared only then: a running job's answer reads none of them."""
    if creating and not replacing:
        return {}
    found: dict[Key, str] = {}
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


def _unique(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One child per kind and name, first listing wins."""
    seen: dict[Key, dict[str, Any]] = {}
    for child in listed:
        seen.setdefault(_key(child), child)
    return list(seen.values())

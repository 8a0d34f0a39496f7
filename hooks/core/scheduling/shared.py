"""What more than one scheduler reads of a job (docs/scheduling.md): the gang's size and the
resources it needs, a pod's requests, the PodGroup both gang schedulers take, the replica types
a topology places together, and the words of a gang that is not all bound."""

from decimal import Decimal
from typing import Any

from hooks.core import quantity
from hooks.core.api import MODE_TYPES, ReplicaType
from hooks.core.children import GroupSpec, PodGroup, spec_of
from hooks.core.fields import dig_dict
from hooks.core.labels import job_labels
from hooks.core.observed import FINISHED_PHASES, ObservedPod, quoted
from hooks.core.spec import JobSpec, Problem, Topology


def min_member(spec: JobSpec) -> int:
    """Pods the gang scheduler must place together: `minAvailable`, else every replica."""
    return spec.run_policy.scheduling.min_available or spec.total_replicas


def min_resources(spec: JobSpec, members: int) -> dict[str, str]:
    """What the first `members` pods (Scheduler, Servers, then Workers or Tuners) request, as
    training-operator computes it: the gang scheduler can then hold back a gang that cannot fit
    before any of its pods exists. Empty when no request is given or one cannot be read."""
    total: dict[str, Decimal] = {}
    left = members
    for replica in spec.replicas.values():
        count = min(left, replica.replicas)
        left -= count
        pod = pod_requests(replica.template.get("spec", {}))
        if pod is None:
            return {}
        for name, amount in pod.items():
            total[name] = total.get(name, Decimal(0)) + amount * count
    return {name: quantity.render(amount) for name, amount in sorted(total.items()) if amount}


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Decimal] | None:
    """A pod's effective requests: its containers' sum, or an init container's if larger (a
    limit stands in for a missing request, as the API server defaults it); None if unreadable."""
    containers = [_requests(c) for c in pod_spec.get("containers", [])]
    inits = [_requests(c) for c in pod_spec.get("initContainers", [])]
    total: dict[str, Decimal] = {}
    for requests in containers:
        if requests is None:
            return None
        for name, amount in requests.items():
            total[name] = total.get(name, Decimal(0)) + amount
    for requests in inits:
        if requests is None:
            return None
        for name, amount in requests.items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return total


def _requests(container: dict[str, Any]) -> dict[str, Decimal] | None:
    resources = dig_dict(container, "resources")
    merged = {**dig_dict(resources, "limits"), **dig_dict(resources, "requests")}
    parsed = {name: quantity.parse(value) for name, value in merged.items()}
    if any(v is None for v in parsed.values()):
        return None
    return {name: v for name, v in parsed.items() if v is not None}


def pod_group(
    api_version: str, name: str, namespace: str, spec: JobSpec, own: dict[str, Any]
) -> dict[str, Any]:
    """The job's PodGroup, named after it: `minMember` is `minAvailable` or every replica,
    `minResources` the policy's or what the gang requests, then the scheduler's `own` fields."""
    members = min_member(spec)
    group_spec: dict[str, Any] = {"minMember": members}
    needs = spec.run_policy.scheduling.min_resources or min_resources(spec, members)
    if needs:
        group_spec["minResources"] = needs
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": job_labels(name)},
        "spec": {**group_spec, **own},
    }


def same_members(desired: dict[str, Any], observed: PodGroup) -> bool:
    """Whether an observed PodGroup asks for as many pods as the desired one: the one field a
    resize changes. Only that is compared, as a scheduler's webhook may default others."""
    spec = spec_of(observed, GroupSpec)
    return spec is not None and spec.min_member == desired["spec"]["minMember"]


def together(spec: JobSpec) -> tuple[ReplicaType, ...]:
    """The job's replica types placed in one domain, in canonical order: those the topology
    names, by default the mode's second and third (Servers and Workers, TunerServers and the
    Tuner)."""
    topology = spec.run_policy.scheduling.topology
    if topology is None:
        return ()
    named = topology.replica_types or frozenset(MODE_TYPES[spec.mode][1:])
    return tuple(t for t in spec.replicas if t in named and spec.count(t) > 0)


def types_problems(spec: JobSpec, topology: Topology) -> list[Problem]:
    """Why the topology's replica types cannot be placed by any scheduler: types of another
    mode, or none of the job's."""
    allowed = MODE_TYPES[spec.mode]
    path = f"{topology.path}.replicaTypes"
    named = [t for t in ReplicaType if t in (topology.replica_types or allowed[1:])]
    wrong = [
        Problem(path, f"{t.value} is not a replica type of jobMode {spec.mode.value}")
        for t in named
        if t not in allowed
    ]
    if wrong:
        return wrong
    if not together(spec):
        listed = ", ".join(t.value for t in named)
        return [Problem(path, f"names no replica type this job has pods of ({listed})")]
    return []


def alive(pods: list[ObservedPod]) -> list[ObservedPod]:
    """The pods that still count: neither finished nor going."""
    return [p for p in pods if p.phase not in FINISHED_PHASES and not p.terminating]


def unbound(
    spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod], scheduler: str
) -> str | None:
    """Why a gang whose pods exist is not all bound, if it is not: how many of them its
    scheduler (the one a pod names, else `scheduler`) has bound, and why the first waiting
    pod is blocked, else the group's newest condition."""
    living = alive(pods)
    bound = sum(1 for p in living if p.node)
    if not living or bound == len(living):
        return None
    named = next((p.scheduler for p in living if p.scheduler), scheduler)
    words = f"waiting for its gang: {named} has bound {bound} of {min_member(spec)} pods"
    blocked = next((p.blocked for p in living if p.blocked), None)
    return with_condition(words, group) if blocked is None else f"{words}; {blocked}"


def with_condition(words: str, group: PodGroup | None) -> str:
    """The words, with the PodGroup's newest condition and its message where it has one."""
    conditions = group.status.conditions if group is not None else []
    if not conditions:
        return words
    latest = conditions[-1]
    reason = latest.reason or latest.type
    return quoted(f"{words}; {reason}", latest.message) if reason else words

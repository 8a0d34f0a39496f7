"""Placement by topology (docs/scheduling.md#topology): `schedulingPolicy.topology` said once,
in each scheduler's own words.

Every step of a parameter-server job is Worker-Server traffic, so the replica types it names
(by default Servers and Workers; the Scheduler only brokers membership) must land in one domain
of the topology level, a node label (a block, a rack). Two schedulers can place a whole gang
so:

- **Kueue** (topology-aware scheduling, v0.17.0, for plain Pod groups): a PodSet is the pods of
  one role, named by the annotation `kueue.x-k8s.io/role-hash` (its webhook keeps one a pod
  already has, as its LeaderWorkerSet and StatefulSet integrations set it); a PodSet asks for one
  domain with `podset-required-topology` or `podset-preferred-topology`. Its placement puts
  several PodSets in one domain only as a PodSet group (`podset-group-name`) of exactly two,
  one of a single pod (a leader and its workers: `findLeaderAndWorkers` in
  `pkg/cache/scheduler/tas_flavor_snapshot.go`). So the types placed together form one PodSet
  when their pods ask the same resources and nodes (Kueue counts a PodSet as so many copies of
  one pod), else a pair whose one side has a single pod; anything else cannot be said to it.
- **Volcano** (v1.14's API): the PodGroup's `networkTopology`, whose `highestTierName` names a
  tier of HyperNodes; its label discovery names each tier after the node label it was made from.
  It places the whole gang in one domain, the Scheduler too.

The default scheduler and scheduler-plugins' coscheduling place pods one by one: a job they
alone schedule cannot ask for a domain, and is refused rather than placed anyhow.
"""

import json

from hooks.core.api import MODE_TYPES, ReplicaType, TopologyMode
from hooks.core.gang import Gang, pod_requests
from hooks.core.queueing import Queue
from hooks.core.spec import JobSpec, Problem, Topology

ROLE_ANNOTATION = "kueue.x-k8s.io/role-hash"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"
#: Names the label that holds a pod's index in its PodSet, for Kueue's rank-ordered placement.
INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
_KUEUE_WORDS = {
    TopologyMode.REQUIRED: REQUIRED_ANNOTATION,
    TopologyMode.PREFERRED: PREFERRED_ANNOTATION,
}
#: The longest `networkTopology.highestTierName` Volcano's PodGroup CRD takes (v1.15.1).
VOLCANO_TIER_MAX = 253
#: What of a pod template decides where its pods may go, beside the resources they ask.
_PLACED_BY = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priorityClassName")


def together(spec: JobSpec) -> tuple[ReplicaType, ...]:
    """The job's replica types placed in one domain, in canonical order: those the topology
    names, by default the mode's second and third (Servers and Workers, TunerServers and the
    Tuner)."""
    topology = spec.run_policy.scheduling.topology
    if topology is None:
        return ()
    named = topology.replica_types or frozenset(MODE_TYPES[spec.mode][1:])
    return tuple(t for t in spec.replicas if t in named and spec.count(t) > 0)


def _shape(spec: JobSpec, rtype: ReplicaType) -> str:
    """What decides where a type's pods may go and what they take there, comparable."""
    pod = spec.replicas[rtype].template["spec"]
    requests = pod_requests(pod)
    shown = {k: str(v) for k, v in sorted(requests.items())} if requests is not None else None
    return json.dumps([shown, [pod.get(k) for k in _PLACED_BY]], sort_keys=True)


def _shared(spec: JobSpec, types: tuple[ReplicaType, ...]) -> bool:
    """Whether the types' pods can be one Kueue PodSet: the same requests and node rules."""
    return len({_shape(spec, t) for t in types}) == 1


def _pair(spec: JobSpec, types: tuple[ReplicaType, ...]) -> bool:
    """Whether the types form a Kueue PodSet group: two, one of them a single pod."""
    return len(types) == 2 and min(spec.count(t) for t in types) == 1


def pod_set(spec: JobSpec, rtype: ReplicaType) -> str:
    """The Kueue PodSet (role) of a type's pods: the type's name, or the names of the types
    placed together as one PodSet, joined."""
    types = together(spec)
    if rtype in types and len(types) > 1 and _shared(spec, types):
        return "-".join(t.short for t in types)
    return rtype.short


def kueue_annotations(spec: JobSpec, rtype: ReplicaType, index_label: str) -> dict[str, str]:
    """The annotations a queued pod of this type carries: its PodSet and, for a type placed
    with others, the domain its PodSet asks for (a pair of PodSets also their group); a PodSet
    of one type has its pods' index read from `index_label`, so Kueue places them by rank."""
    ours = {ROLE_ANNOTATION: pod_set(spec, rtype)}
    topology = spec.run_policy.scheduling.topology
    types = together(spec)
    if topology is None or rtype not in types:
        return ours
    ours[_KUEUE_WORDS[topology.mode]] = topology.level
    if len(types) > 1 and not _shared(spec, types):
        ours[GROUP_ANNOTATION] = "-".join(t.short for t in types)
    elif len(types) == 1:
        ours[INDEX_LABEL_ANNOTATION] = index_label
    return ours


def problems(spec: JobSpec, gang: Gang | None, queue: Queue | None) -> list[Problem]:
    """Why the topology cannot be honoured as written: types of another mode or none of the
    job's, no scheduler that places by topology, or types Kueue cannot place together."""
    topology = spec.run_policy.scheduling.topology
    if topology is None:
        return []
    found = _types_problems(spec, topology)
    if found:
        return found
    if queue is None and gang is not Gang.VOLCANO:
        who = "scheduler-plugins' coscheduling" if gang else "the default scheduler"
        return [
            Problem(
                topology.path,
                f"{who} places pods one by one and cannot keep them in one domain: queue the job"
                " with Kueue (label kueue.x-k8s.io/queue-name) or run it with the Volcano install",
            )
        ]
    if gang is Gang.VOLCANO and len(topology.level) > VOLCANO_TIER_MAX:
        return [
            Problem(
                f"{topology.path}.level",
                f"Volcano's highestTierName takes at most {VOLCANO_TIER_MAX} characters",
            )
        ]
    types = together(spec)
    if queue is not None and len(types) > 1 and not _shared(spec, types) and not _pair(spec, types):
        sizes = " and ".join(f"{t.value} ({spec.count(t)} pods)" for t in types)
        return [
            Problem(
                f"{topology.path}.replicaTypes",
                f"Kueue places replica types in one domain only as one pod set, whose pods ask"
                f" the same resources and nodes, or as two pod sets of which one is a single pod:"
                f" {sizes} ask differently",
            )
        ]
    return []


def _types_problems(spec: JobSpec, topology: Topology) -> list[Problem]:
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

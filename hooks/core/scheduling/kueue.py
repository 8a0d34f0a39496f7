"""Kueue admission (docs/scheduling.md#kueue): the pods of each run of an MXJob labelled with a
Kueue queue form one plain Pod group, which Kueue admits as one Workload.

Kueue has no MXJob integration and cannot suspend a job it does not know, so the hook uses the
one it has for pods made by any controller: every pod carries the queue, the group's name and
its size; Kueue's webhook gates each pod until the group is admitted as a whole.

One group per run, marked not retriable as a group: Kueue then ends a group's Workload (and
gives its quota back) once none of its pods is active any more. Otherwise it would wait for
every pod to succeed, which the Servers of an MXTrain job never do, and hold the quota of a
finished job. A Worker replaced inside a run still joins the run's group.

Topology (docs/scheduling.md#topology; topology-aware scheduling, v0.17.0, for plain Pod
groups): a PodSet is the pods of one role, named by the annotation `kueue.x-k8s.io/role-hash`
(its webhook keeps one a pod already has, as its LeaderWorkerSet and StatefulSet integrations
set it); a PodSet asks for one domain with `podset-required-topology` or
`podset-preferred-topology`. Its placement puts several PodSets in one domain only as a PodSet
group (`podset-group-name`) of exactly two, one of a single pod (a leader and its workers:
`findLeaderAndWorkers` in `pkg/cache/scheduler/tas_flavor_snapshot.go`). So the types placed
together form one PodSet when their pods ask the same resources and nodes (Kueue counts a
PodSet as so many copies of one pod), else a pair whose one side has a single pod; anything
else cannot be said to it.
"""

import json
from dataclasses import dataclass
from typing import Any

from hooks.core.api import LABEL_REPLICA_INDEX, ReplicaType, TopologyMode
from hooks.core.children import PodGroup
from hooks.core.fields import dig_dict
from hooks.core.naming import run_record_name
from hooks.core.observed import ObservedPod
from hooks.core.scheduling import shared
from hooks.core.scheduling.protocol import Groupless, PodMarks
from hooks.core.spec import JobSpec, Problem

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_SIZE_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
#: The scheduling gate Kueue's webhook puts on a pod until its Workload is admitted.
ADMISSION_GATE = "kueue.x-k8s.io/admission"
ROLE_ANNOTATION = "kueue.x-k8s.io/role-hash"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
POD_SET_GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"
#: Names the label that holds a pod's index in its PodSet, for Kueue's rank-ordered placement.
INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
_TOPOLOGY_WORDS = {
    TopologyMode.REQUIRED: REQUIRED_ANNOTATION,
    TopologyMode.PREFERRED: PREFERRED_ANNOTATION,
}
#: What of a pod template decides where its pods may go, beside the resources they ask.
_PLACED_BY = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priorityClassName")


@dataclass(frozen=True)
class Queue:
    """The Kueue LocalQueue an MXJob asks for, and its WorkloadPriorityClass if any."""

    name: str
    priority_class: str | None = None


def read_queue(parent: dict[str, Any]) -> Queue | None:
    """The queue named by the MXJob's `kueue.x-k8s.io/queue-name` label, if it has one."""
    labels = dig_dict(parent, "metadata", "labels")
    name = labels.get(QUEUE_LABEL)
    if not isinstance(name, str) or not name:
        return None
    priority = labels.get(PRIORITY_LABEL)
    return Queue(name, priority if isinstance(priority, str) and priority else None)


def queue_group(job: str, run: int) -> str:
    """The Pod group (and Kueue Workload) name of one run: the run record's name, which the
    name rules already keep within 63 characters."""
    return run_record_name(job, run)


@dataclass(frozen=True)
class Kueue(Groupless):
    """Admission through the job's queue: no group child of the hook's (Kueue makes the
    Workload), the Pod group's labels and annotations on every pod."""

    queue: Queue
    name = "Kueue"
    places_by_topology = True

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """The queue, the run's group and its size, and the pod's PodSet."""
        labels = {QUEUE_LABEL: self.queue.name, GROUP_LABEL: queue_group(name, run)}
        if self.queue.priority_class:
            labels[PRIORITY_LABEL] = self.queue.priority_class
        annotations = {
            GROUP_SIZE_ANNOTATION: str(spec.total_replicas),
            RETRIABLE_ANNOTATION: "false",
        }
        return PodMarks(labels, {**annotations, **pod_set_annotations(spec, rtype)})

    def problems(self, spec: JobSpec) -> list[Problem]:
        """Replica types placed together that are neither one PodSet nor a PodSet group."""
        topology = spec.run_policy.scheduling.topology
        types = shared.together(spec)
        if topology is None or len(types) < 2 or _one_pod_set(spec, types) or _pair(spec, types):
            return []
        sizes = " and ".join(f"{t.value} ({spec.count(t)} pods)" for t in types)
        return [
            Problem(
                f"{topology.path}.replicaTypes",
                f"Kueue places replica types in one domain only as one pod set, whose pods ask"
                f" the same resources and nodes, or as two pod sets of which one is a single pod:"
                f" {sizes} ask differently",
            )
        ]

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """Its admission: how many pods its gate holds, and the Workload they wait for."""
        gated = [p for p in shared.alive(pods) if ADMISSION_GATE in p.gates]
        if not gated:
            return None
        return (
            f"queued by Kueue in LocalQueue {self.queue.name}: {len(gated)} of "
            f"{spec.total_replicas} pods wait for the Workload "
            f"{queue_group(name, gated[0].run)} to be admitted"
        )


def pod_set(spec: JobSpec, rtype: ReplicaType) -> str:
    """The Kueue PodSet (role) of a type's pods: the type's name, or the names of the types
    placed together as one PodSet, joined."""
    types = shared.together(spec)
    if rtype in types and len(types) > 1 and _one_pod_set(spec, types):
        return "-".join(t.short for t in types)
    return rtype.short


def pod_set_annotations(spec: JobSpec, rtype: ReplicaType) -> dict[str, str]:
    """The annotations a queued pod of this type carries: its PodSet and, for a type placed
    with others, the domain its PodSet asks for (a pair of PodSets also their group); a PodSet
    of one type has its pods' index read from the replica-index label, so Kueue places them by
    rank."""
    ours = {ROLE_ANNOTATION: pod_set(spec, rtype)}
    topology = spec.run_policy.scheduling.topology
    types = shared.together(spec)
    if topology is None or rtype not in types:
        return ours
    ours[_TOPOLOGY_WORDS[topology.mode]] = topology.level
    if len(types) > 1 and not _one_pod_set(spec, types):
        ours[POD_SET_GROUP_ANNOTATION] = "-".join(t.short for t in types)
    elif len(types) == 1:
        ours[INDEX_LABEL_ANNOTATION] = LABEL_REPLICA_INDEX
    return ours


def _shape(spec: JobSpec, rtype: ReplicaType) -> str:
    """What decides where a type's pods may go and what they take there, comparable."""
    pod = spec.replicas[rtype].template["spec"]
    requests = shared.pod_requests(pod)
    shown = {k: str(v) for k, v in sorted(requests.items())} if requests is not None else None
    return json.dumps([shown, [pod.get(k) for k in _PLACED_BY]], sort_keys=True)


def _one_pod_set(spec: JobSpec, types: tuple[ReplicaType, ...]) -> bool:
    """Whether the types' pods can be one Kueue PodSet: the same requests and node rules."""
    return len({_shape(spec, t) for t in types}) == 1


def _pair(spec: JobSpec, types: tuple[ReplicaType, ...]) -> bool:
    """Whether the types form a Kueue PodSet group: two, one of them a single pod."""
    return len(types) == 2 and min(spec.count(t) for t in types) == 1

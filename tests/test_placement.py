"""Table tests for docs/scheduling.md#topology: which replica types are placed together, the
Kueue PodSets and annotations they get, Volcano's networkTopology, and what is refused."""

from typing import Any

import pytest

from hooks.core.api import ReplicaType
from hooks.core.gang import Gang, pod_group
from hooks.core.placement import kueue_annotations, pod_set, problems, together
from hooks.core.queueing import Queue
from hooks.core.spec import JobSpec, load
from tests.builders import mxjob, replica

INDEX = "training.kubeflow.org/replica-index"
QUEUE = Queue("team-a")
CPU = {"requests": {"cpu": "1"}}
GPU = {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}
S, P, W = ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER


def spec_of(
    topology: dict[str, Any] | None, replicas: dict[str, Any] | None = None, **kw: Any
) -> JobSpec:
    policy = {"schedulingPolicy": {"topology": topology}} if topology is not None else None
    job = mxjob(replicas=replicas, run_policy=policy, **kw)
    spec, found = load(job["spec"])
    assert spec is not None, found
    return spec


BLOCK = {"level": "example.com/block"}
TUNE = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}


@pytest.mark.parametrize(
    ("topology", "replicas", "mode", "placed"),
    [
        (None, None, None, ()),
        (BLOCK, None, None, (P, W)),
        ({**BLOCK, "replicaTypes": ["worker"]}, None, None, (W,)),
        ({**BLOCK, "replicaTypes": ["Scheduler", "Server", "Worker"]}, None, None, (S, P, W)),
        # A worker-only job: the Workers alone.
        (BLOCK, {"Worker": replica(4)}, None, (W,)),
        (
            BLOCK,
            TUNE,
            "MXTune",
            (ReplicaType.TUNER_SERVER, ReplicaType.TUNER),
        ),
    ],
)
def test_the_types_placed_together(
    topology: Any, replicas: Any, mode: str | None, placed: tuple[ReplicaType, ...]
) -> None:
    assert together(spec_of(topology, replicas, mode=mode)) == placed


SAME = {
    "Scheduler": replica(1),
    "Server": replica(2, resources=CPU),
    "Worker": replica(3, resources=CPU),
}
PAIR = {
    "Scheduler": replica(1),
    "Server": replica(1, resources=CPU),
    "Worker": replica(3, resources=GPU),
}
APART = {
    "Scheduler": replica(1),
    "Server": replica(2, resources=CPU),
    "Worker": replica(3, resources=GPU),
}


def tolerating(count: int) -> dict[str, Any]:
    """A CPU replica whose pods tolerate a taint: they may go where the others may not."""
    spec = replica(count, resources=CPU)
    spec["template"]["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    return spec


@pytest.mark.parametrize(
    ("topology", "replicas", "rtype", "annotations"),
    [
        # Every queued pod names its PodSet: a replacement with the rejoin wait stays in it.
        (None, SAME, W, {"kueue.x-k8s.io/role-hash": "worker"}),
        (BLOCK, SAME, S, {"kueue.x-k8s.io/role-hash": "scheduler"}),
        (
            BLOCK,
            SAME,
            W,
            {
                "kueue.x-k8s.io/role-hash": "server-worker",
                "kueue.x-k8s.io/podset-required-topology": "example.com/block",
            },
        ),
        (
            {**BLOCK, "mode": "Preferred"},
            PAIR,
            P,
            {
                "kueue.x-k8s.io/role-hash": "server",
                "kueue.x-k8s.io/podset-preferred-topology": "example.com/block",
                "kueue.x-k8s.io/podset-group-name": "server-worker",
            },
        ),
        (
            {**BLOCK, "replicaTypes": ["Worker"]},
            APART,
            W,
            {
                "kueue.x-k8s.io/role-hash": "worker",
                "kueue.x-k8s.io/podset-required-topology": "example.com/block",
                "kueue.x-k8s.io/pod-group-pod-index-label": INDEX,
            },
        ),
        # Different node rules are different PodSets too (Kueue filters nodes per PodSet).
        (
            {**BLOCK, "replicaTypes": ["Server", "Worker"]},
            {**SAME, "Server": replica(1, resources=CPU), "Worker": tolerating(3)},
            W,
            {
                "kueue.x-k8s.io/role-hash": "worker",
                "kueue.x-k8s.io/podset-required-topology": "example.com/block",
                "kueue.x-k8s.io/podset-group-name": "server-worker",
            },
        ),
    ],
)
def test_kueue_annotations(
    topology: Any, replicas: Any, rtype: ReplicaType, annotations: dict[str, str]
) -> None:
    spec = spec_of(topology, replicas)
    assert kueue_annotations(spec, rtype, INDEX) == annotations
    assert pod_set(spec, rtype) == annotations["kueue.x-k8s.io/role-hash"]


@pytest.mark.parametrize(
    ("topology", "replicas", "gang", "queue", "found"),
    [
        (None, SAME, None, None, []),
        (BLOCK, SAME, None, QUEUE, []),
        (BLOCK, PAIR, None, QUEUE, []),
        (BLOCK, SAME, Gang.VOLCANO, None, []),
        # Volcano places the whole gang: Servers and Workers asking differently are fine.
        (BLOCK, APART, Gang.VOLCANO, None, []),
        (
            BLOCK,
            APART,
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: Kueue places replica types"
                " in one domain only as one pod set, whose pods ask the same resources and nodes,"
                " or as two pod sets of which one is a single pod: Server (2 pods) and Worker"
                " (3 pods) ask differently"
            ],
        ),
        (
            BLOCK,
            SAME,
            None,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology: the default scheduler places pods one"
                " by one and cannot keep them in one domain: queue the job with Kueue (label"
                " kueue.x-k8s.io/queue-name) or run it with the Volcano install"
            ],
        ),
        (
            BLOCK,
            SAME,
            Gang.SCHEDULER_PLUGINS,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology: scheduler-plugins' coscheduling places"
                " pods one by one and cannot keep them in one domain: queue the job with Kueue"
                " (label kueue.x-k8s.io/queue-name) or run it with the Volcano install"
            ],
        ),
        (BLOCK, SAME, Gang.SCHEDULER_PLUGINS, QUEUE, []),
        (
            {"level": "a" * 250 + ".io/block"},
            SAME,
            Gang.VOLCANO,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology.level: Volcano's highestTierName takes"
                " at most 253 characters"
            ],
        ),
        (
            {**BLOCK, "replicaTypes": ["Tuner"]},
            SAME,
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: Tuner is not a replica"
                " type of jobMode MXTrain"
            ],
        ),
        (
            {**BLOCK, "replicaTypes": ["Server"]},
            {"Worker": replica(2)},
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: names no replica type this"
                " job has pods of (Server)"
            ],
        ),
    ],
)
def test_what_is_refused(
    topology: Any, replicas: Any, gang: Gang | None, queue: Queue | None, found: list[str]
) -> None:
    assert [str(p) for p in problems(spec_of(topology, replicas), gang, queue)] == found


@pytest.mark.parametrize(
    ("topology", "problem"),
    [
        ({"mode": "Required"}, "topology.level: is required"),
        ({"level": "Example.com/Block"}, "topology.level: must be a node label key"),
        ({"level": "a/b/c"}, "topology.level: must be a node label key"),
        ({**BLOCK, "mode": "Strict"}, "topology.mode: must be one of Required, Preferred"),
        ({**BLOCK, "replicaTypes": ["Master"]}, "topology.replicaTypes[0]: must be one of"),
    ],
)
def test_a_topology_that_cannot_be_read_names_its_field(
    topology: dict[str, Any], problem: str
) -> None:
    job = mxjob(run_policy={"schedulingPolicy": {"topology": topology}})
    spec, found = load(job["spec"])
    assert spec is None
    assert any(problem in str(p) for p in found), found


@pytest.mark.parametrize(
    ("mode", "volcano"),
    [("Required", "hard"), ("Preferred", "soft")],
)
def test_volcano_is_asked_for_one_domain_of_the_level(mode: str, volcano: str) -> None:
    spec = spec_of({**BLOCK, "mode": mode})
    group = pod_group(Gang.VOLCANO, "mnist", "default", spec)
    assert group["spec"]["networkTopology"] == {
        "mode": volcano,
        "highestTierName": "example.com/block",
    }
    assert "networkTopology" not in pod_group(Gang.SCHEDULER_PLUGINS, "m", "d", spec)["spec"]

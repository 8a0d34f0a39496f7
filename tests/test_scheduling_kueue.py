"""Table tests of Kueue (docs/scheduling.md#kueue, #topology): what it says of a small job, the
PodSet and topology annotations of each queued pod, and why a queued job waits."""

from typing import Any

import pytest

from hooks.core.api import ReplicaType
from hooks.core.observed import PodPhase
from hooks.core.scheduling.kueue import Kueue, Queue, pod_set, pod_set_annotations, read_queue
from hooks.core.scheduling.protocol import PodMarks
from tests.builders import mxjob, observed_pod, read_spec, replica
from tests.test_scheduling import APART, BLOCK, CPU, PAIR, SAME, spec_of

INDEX = "training.kubeflow.org/replica-index"
GATE = frozenset({"kueue.x-k8s.io/admission"})
P, W = ReplicaType.SERVER, ReplicaType.WORKER


def test_what_kueue_says_of_a_small_job() -> None:
    """No group of the hook's; each pod in its run's Pod group, of the job's size; its PodSet
    named by its type; nothing refused; nothing waited for while no pod is gated."""
    kueue, spec = Kueue(Queue("team-a", "low")), read_spec()
    assert kueue.group("mnist", "default", spec) is None
    assert kueue.admits_new_pods(None)
    assert kueue.marks("mnist", spec, W, 1) == PodMarks(
        labels={
            "kueue.x-k8s.io/queue-name": "team-a",
            "kueue.x-k8s.io/pod-group-name": "mnist-mxjob-run-1",
            "kueue.x-k8s.io/priority-class": "low",
        },
        annotations={
            "kueue.x-k8s.io/pod-group-total-count": "6",
            "kueue.x-k8s.io/retriable-in-group": "false",
            "kueue.x-k8s.io/role-hash": "worker",
        },
    )
    assert kueue.problems(spec) == []
    assert kueue.waits("mnist", spec, None, [observed_pod()]) is None


@pytest.mark.parametrize(
    ("labels", "queue"),
    [
        ({}, None),
        ({"kueue.x-k8s.io/queue-name": ""}, None),
        ({"kueue.x-k8s.io/queue-name": "team-a"}, Queue("team-a")),
        (
            {"kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/priority-class": "low"},
            Queue("team-a", "low"),
        ),
    ],
)
def test_the_queue_is_read_from_the_jobs_label(labels: dict[str, str], queue: Queue | None) -> None:
    job = mxjob()
    job["metadata"]["labels"] = labels
    assert read_queue(job) == queue


@pytest.mark.parametrize(
    ("pods", "words"),
    [
        ([], None),
        ([observed_pod()], None),
        (
            [observed_pod(gates=GATE, run=2), observed_pod(gates=GATE, run=2)],
            "queued by Kueue in LocalQueue team-a: 2 of 6 pods wait for the Workload"
            " mnist-mxjob-run-2 to be admitted",
        ),
        # A gated pod on its way out is no longer waited for.
        ([observed_pod(gates=GATE, terminating=True)], None),
        ([observed_pod(gates=GATE, phase=PodPhase.FAILED)], None),
    ],
)
def test_why_a_queued_job_waits(pods: list[Any], words: str | None) -> None:
    assert Kueue(Queue("team-a")).waits("mnist", read_spec(), None, pods) == words


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
        (BLOCK, SAME, ReplicaType.SCHEDULER, {"kueue.x-k8s.io/role-hash": "scheduler"}),
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
def test_pod_set_annotations(
    topology: Any, replicas: Any, rtype: ReplicaType, annotations: dict[str, str]
) -> None:
    spec = spec_of(topology, replicas)
    assert pod_set_annotations(spec, rtype) == annotations
    assert pod_set(spec, rtype) == annotations["kueue.x-k8s.io/role-hash"]

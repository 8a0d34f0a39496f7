"""Table tests of Volcano (docs/scheduling.md#volcano, #topology): what it says of a small job,
its PodGroup's own fields, when it lets the pods be made, its topology words and why a job
waits for it."""

from typing import Any

import msgspec
import pytest

from hooks.core.api import ReplicaType
from hooks.core.children import Condition, GroupStatus, Meta, PodGroup
from hooks.core.scheduling.protocol import PodMarks
from hooks.core.scheduling.volcano import Volcano
from tests.builders import observed_pod, read_spec
from tests.test_scheduling import BLOCK, spec_of

LABELS = {
    "training.kubeflow.org/job-name": "mnist",
    "training.kubeflow.org/operator-name": "mxjob-controller",
}


def group(phase: str | None = None, *conditions: Condition, members: int = 6) -> PodGroup:
    """The job's PodGroup as observed: its phase, conditions and minMember."""
    return PodGroup(
        metadata=Meta(name="mnist"),
        spec=msgspec.Raw(msgspec.json.encode({"minMember": members})),
        status=GroupStatus(phase=phase, conditions=list(conditions)),
    )


def test_what_volcano_says_of_a_small_job() -> None:
    """A PodGroup with the policy's queue and priority class; its scheduler and the group and
    task annotations on every pod; nothing refused."""
    policy = {"schedulingPolicy": {"queue": "training", "priorityClass": "high"}}
    spec = read_spec(run_policy=policy)
    volcano = Volcano()
    assert volcano.group("mnist", "default", spec) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": "default", "labels": LABELS},
        "spec": {"minMember": 6, "queue": "training", "priorityClassName": "high"},
    }
    assert volcano.marks("mnist", spec, ReplicaType.WORKER, 1) == PodMarks(
        annotations={"scheduling.k8s.io/group-name": "mnist", "volcano.sh/task-spec": "worker"},
        spec={"schedulerName": "volcano"},
    )
    assert volcano.problems(spec) == []


@pytest.mark.parametrize(
    ("observed", "admits"),
    [(None, False), (group(), False), (group("Pending"), False), (group("Inqueue"), True)],
)
def test_pods_are_made_once_the_group_has_left_pending(
    observed: PodGroup | None, admits: bool
) -> None:
    assert Volcano().admits_new_pods(observed) is admits


def test_a_resized_gang_is_another_group() -> None:
    desired = Volcano().group("mnist", "default", read_spec())
    assert Volcano().same_group(desired, group("Running", members=6))
    assert not Volcano().same_group(desired, group("Running", members=4))


FULL = Condition(type="Unschedulable", reason="NotEnoughResources", message="3/0 tasks")


@pytest.mark.parametrize(
    ("observed", "pods", "words"),
    [
        (None, [], "waiting for Volcano to admit PodGroup mnist (6 pods; phase not seen yet)"),
        (
            group("Pending", FULL),
            [],
            "waiting for Volcano to admit PodGroup mnist (6 pods; phase Pending);"
            " NotEnoughResources: 3/0 tasks",
        ),
        (group("Inqueue"), [], None),
        (group("Running"), [observed_pod(node="n1")], None),
        (
            group("Inqueue"),
            [observed_pod(node="n1"), observed_pod(), observed_pod(blocked="Unschedulable: x")],
            "waiting for its gang: volcano has bound 1 of 6 pods; Unschedulable: x",
        ),
    ],
)
def test_why_a_job_waits_for_volcano(
    observed: PodGroup | None, pods: list[Any], words: str | None
) -> None:
    assert Volcano().waits("mnist", read_spec(), observed, pods) == words


@pytest.mark.parametrize(
    ("mode", "volcano"),
    [("Required", "hard"), ("Preferred", "soft")],
)
def test_volcano_is_asked_for_one_domain_of_the_level(mode: str, volcano: str) -> None:
    spec = spec_of({**BLOCK, "mode": mode})
    found = Volcano().group("mnist", "default", spec)
    assert found["spec"]["networkTopology"] == {
        "mode": volcano,
        "highestTierName": "example.com/block",
    }

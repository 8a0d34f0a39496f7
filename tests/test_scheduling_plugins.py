"""Table tests of scheduler-plugins' coscheduling (docs/scheduling.md#scheduler-plugins): what
it says of a small job, and why a job waits for it."""

from typing import Any

import pytest

from hooks.core.api import ReplicaType
from hooks.core.scheduling.protocol import PodMarks
from hooks.core.scheduling.scheduler_plugins import SchedulerPlugins
from tests.builders import observed_pod, read_spec
from tests.test_scheduling import BLOCK, spec_of


def test_what_coscheduling_says_of_a_small_job() -> None:
    """A PodGroup with its timeout and no topology; its group label on every pod, and its
    scheduler on those whose template names none; pods made at once."""
    policy = {"schedulingPolicy": {"scheduleTimeoutSeconds": 60, "queue": "training"}}
    spec = read_spec(run_policy=policy)
    plugins = SchedulerPlugins()
    found = plugins.group("mnist", "default", spec)
    assert found["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert found["spec"] == {"minMember": 6, "scheduleTimeoutSeconds": 60}
    assert plugins.marks("mnist", spec, ReplicaType.SERVER, 0) == PodMarks(
        labels={"scheduling.x-k8s.io/pod-group": "mnist"},
        defaults={"schedulerName": "scheduler-plugins-scheduler"},
    )
    assert plugins.admits_new_pods(None)
    assert plugins.problems(spec) == []
    assert not plugins.places_by_topology
    assert "networkTopology" not in plugins.group("m", "d", spec_of(BLOCK))["spec"]


@pytest.mark.parametrize(
    ("pods", "words"),
    [
        ([], None),
        ([observed_pod(node="n1")], None),
        (
            [observed_pod(node="n1"), observed_pod(scheduler="mine")],
            "waiting for its gang: mine has bound 1 of 6 pods",
        ),
        (
            [observed_pod(blocked="Unschedulable: 0/3 nodes are available")],
            "waiting for its gang: scheduler-plugins-scheduler has bound 0 of 6 pods;"
            " Unschedulable: 0/3 nodes are available",
        ),
    ],
)
def test_why_a_job_waits_for_coscheduling(pods: list[Any], words: str | None) -> None:
    assert SchedulerPlugins().waits("mnist", read_spec(), None, pods) == words

"""Table tests of the limits that keep every sync bounded (found by the fuzz tier)."""

from typing import Any

import pytest

from hooks.core.fields import MAX_DEPTH
from hooks.core.naming import parse_pod_name
from hooks.core.spec import MAX_REPLICAS, load
from tests.builders import mxjob, replica, request, run, running


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("spec_change", "path", "rule"),
    [
        (
            {"mxReplicaSpecs": {"Worker": replica(MAX_REPLICAS + 1)}},
            "spec.mxReplicaSpecs.Worker.replicas",
            "must be from 0 to 10000, got 10001",
        ),
        (
            {"runPolicy": {"activeDeadlineSeconds": 2**31}},
            "spec.runPolicy.activeDeadlineSeconds",
            "must be from 1 to 2147483647, got 2147483648",
        ),
        (
            {"backoffLimit": -1},
            "spec.backoffLimit",
            "must be from 0 to 2147483647, got -1",
        ),
        (
            {"mxReplicaSpecs": {"Worker": replica(1, args=nested(MAX_DEPTH))}},
            "spec.mxReplicaSpecs.Worker.template.spec.containers[0].args[0][0][0][0][0]…",
            f"nests deeper than {MAX_DEPTH} levels",
        ),
    ],
)
def test_limits_are_problems_naming_the_field(
    spec_change: dict[str, Any], path: str, rule: str
) -> None:
    spec = mxjob()["spec"] | spec_change
    loaded, problems = load(spec)
    assert loaded is None
    assert [(p.path, p.rule) for p in problems] == [(path, rule)]


def test_largest_allowed_job_loads() -> None:
    spec = mxjob(replicas={"Worker": replica(MAX_REPLICAS)})["spec"]
    loaded, problems = load(spec)
    assert problems == [] and loaded is not None and loaded.total_replicas == MAX_REPLICAS


@pytest.mark.parametrize(
    "name", ["mnist-worker-" + "9" * 4301, "mnist-worker-0-r" + "9" * 4301, "mnist-worker-0-r10000"]
)
def test_pod_names_beyond_the_limits_are_not_ours(name: str) -> None:
    assert parse_pod_name("mnist", name) is None


def test_deadline_beyond_the_last_date_is_never_reached() -> None:
    body = request(mxjob(replicas={"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 60}))
    pod = next(c for c in run(body).children if c["kind"] == "Pod")
    observed = running(pod)
    observed["metadata"]["creationTimestamp"] = "9999-12-31T23:59:30Z"
    response = run(request(body["parent"], [observed]))
    assert response.resync_after_seconds is None
    assert response.status["conditions"][-1]["type"] == "Running"

"""What the API server itself refuses (CRD schema and CEL rules) and what only the hook
can catch: an object that slips past the schema gets MXJobInvalidSpec and no pods."""

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import replica
from tests.e2e.conftest import REPO, Cluster, controllers, wait_for
from tests.e2e.test_lifecycle import job

BAD = sorted((REPO / "tests" / "bad_examples").glob("*.yaml"))
CRD = (REPO / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml").read_text()


def expectation(path: Path) -> tuple[str, str]:
    """The field path and message a bad example's `# expect:` line names."""
    line = next(x for x in path.read_text().splitlines() if x.startswith("# expect:"))
    field, _, message = line.removeprefix("# expect:").strip().partition(": ")
    return field, message


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_example_is_refused_by_the_api_server(cluster: Cluster, path: Path) -> None:
    proc = cluster.apply(path.read_text(), check=False)
    assert proc.returncode != 0, f"{path.name} was accepted"
    field, message = expectation(path)
    if message in CRD:  # a CEL rule: the user sees our message verbatim
        assert message in proc.stderr, proc.stderr
    else:  # an OpenAPI rule: the API server names the field
        leaf = re.split(r"[.\[]", field)[-1]
        assert leaf in proc.stderr, proc.stderr


def test_object_that_slips_past_the_schema_fails_with_invalid_spec(cluster: Cluster) -> None:
    obj = job("e2e-slip", {"Worker": replica(1)})
    obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = "A=1"
    cluster.apply(yaml.safe_dump(obj))
    _, reason, message = cluster.wait_condition("e2e-slip", "Failed", 60)
    assert reason == "MXJobInvalidSpec"
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].env" in message
    wait_for("a settled status", lambda: cluster.status("e2e-slip").get("conditions"), 10)
    assert cluster.pods("e2e-slip") == {} and cluster.services("e2e-slip") == {}


QUOTA_NAMESPACE = "e2e-quota"
#: What each mxnet container asks for and may use.
RESOURCES = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}


@pytest.fixture(scope="module")
def quota(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A namespace with a compute ResourceQuota and no LimitRange, and the real
    resource-quota controller that keeps its usage (the API server refuses a pod under a quota
    whose status it has not filled in)."""
    cluster.kubectl("create", "namespace", QUOTA_NAMESPACE)
    hard = {
        f"{kind}.{name}": "20" if name == "cpu" else "20Gi"
        for kind in ("requests", "limits")
        for name in ("cpu", "memory")
    }
    obj = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": QUOTA_NAMESPACE},
        "spec": {"hard": hard},
    }
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    log = tmp_path_factory.mktemp("quota") / "kube-controller-manager.log"
    try:
        with controllers(cluster.stack, log, "resourcequota-controller"):
            wait_for("the quota's status", lambda: _quota_status(cluster).get("hard"), 60)
            yield QUOTA_NAMESPACE
    finally:
        cluster.kubectl("delete", "namespace", QUOTA_NAMESPACE, "--wait=false", check=False)


def _quota_status(cluster: Cluster) -> dict[str, Any]:
    proc = cluster.kubectl("get", "resourcequota", "compute", "-n", QUOTA_NAMESPACE, "-o", "json")
    return dict(json.loads(proc.stdout).get("status") or {})


def test_a_compute_quota_admits_every_pod_of_a_ps_lite_job(cluster: Cluster, quota: str) -> None:
    """Under a ResourceQuota on CPU and memory every container must declare them; a replaced
    Worker's rejoin wait (an init container the hook adds) declares the mxnet container's, so
    the API server admits every pod and the pod asks for no more than before
    (docs/restarts.md)."""
    name = "e2e-quota"
    obj = job(name, {t: replica(1, "ExitCode") for t in ("Scheduler", "Server", "Worker")})
    for rspec in obj["spec"]["mxReplicaSpecs"].values():
        rspec["template"]["spec"]["containers"][0]["resources"] = RESOURCES
    cluster.kubectl("apply", "-n", quota, "-f", "-", stdin=json.dumps(obj))

    def pods(count: int) -> dict[str, Any] | None:
        proc = cluster.kubectl(
            "get", "pods", "-n", quota, "-l", f"training.kubeflow.org/job-name={name}",
            "-o", "json",
        )  # fmt: skip
        found = {p["metadata"]["name"]: p for p in json.loads(proc.stdout)["items"]}
        return found if len(found) == count else None

    made = wait_for("the Scheduler's, the Server's and the Worker's pod", lambda: pods(3), 60)
    assert "initContainers" not in made[f"{name}-worker-0"]["spec"], "a first pod waits"
    wait_for(
        "3 pods' CPU requests counted once each",
        lambda: (_quota_status(cluster).get("used") or {}).get("requests.cpu") == "300m",
        60,
    )
    cluster.stack.terminate_pod(quota, f"{name}-worker-0", 137)
    made = wait_for("the Worker's replacement", lambda: pods(4), 60)
    (wait,) = made[f"{name}-worker-0-r1"]["spec"]["initContainers"]
    assert wait["name"] == "mxjob-rejoin-wait" and wait["resources"] == RESOURCES
    print(f"\nquota usage with the job's 3 pods: {_quota_status(cluster)['used']}")
    cluster.kubectl("delete", "mxjob", name, "-n", quota, "--wait=false")

"""Gang scheduling on a real API server: the PodGroup CRDs of Volcano and scheduler-plugins are
installed, the CompositeController is switched to each gang variant in turn, and the PodGroups
the hook asks for become real API objects (docs/run-policy.md)."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml

from tests.builders import replica
from tests.e2e.conftest import REPO, Cluster, wait_for
from tests.e2e.test_lifecycle import job
from testsupport.server import local_controller

SCHEMAS = REPO / "tests" / "schemas"
GANG = {"minAvailable": 3, "queue": "training", "scheduleTimeoutSeconds": 120}


@contextmanager
def gang_controller(cluster: Cluster, port: int, api_version: str, crd: str) -> Iterator[None]:
    """Install a PodGroup CRD and make PodGroups children; restore the plain controller after."""
    cluster.kubectl("apply", "-f", str(SCHEMAS / crd))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    plain = local_controller(port)
    controller = yaml.safe_load(plain)
    rule = {
        "apiVersion": api_version,
        "resource": "podgroups",
        "updateStrategy": {"method": "OnDelete"},
    }
    controller["spec"]["childResources"].append(rule)
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(controller))
    try:
        yield
    finally:
        cluster.kubectl("apply", "-f", "-", stdin=plain)


def podgroup(cluster: Cluster, kind: str, name: str) -> dict[str, Any] | None:
    return cluster.get(kind, name)


def test_volcano_podgroup_gates_pods_until_inqueue(cluster: Cluster, hook_port: int) -> None:
    kind = "podgroups.scheduling.volcano.sh"
    with gang_controller(
        cluster, hook_port, "scheduling.volcano.sh/v1beta1", "volcano-podgroup.yaml"
    ):
        cluster.apply(job("e2e-volcano", {"Worker": replica(3)}, schedulingPolicy=GANG))
        group = wait_for("Volcano PodGroup", lambda: podgroup(cluster, kind, "e2e-volcano"), 90)
        assert group["spec"]["minMember"] == 3
        assert group["spec"]["queue"] == "training"
        assert cluster.pods("e2e-volcano") == {}, "pods created while the PodGroup is Pending"
        # Volcano's PodGroup CRD has no status subresource: the status is part of the object.
        patch = '{"status":{"phase":"Inqueue"}}'
        cluster.kubectl("patch", kind, "e2e-volcano", "-n", "default", "--type=merge", "-p", patch)
        pods = cluster.wait_pods("e2e-volcano", {f"e2e-volcano-worker-{i}" for i in range(3)})
        for pod in pods.values():
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "e2e-volcano"
            assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
        cluster.delete("mxjob", "e2e-volcano")
        wait_for("PodGroup collected", lambda: podgroup(cluster, kind, "e2e-volcano") is None, 90)


def test_scheduler_plugins_podgroup_and_pod_labels(cluster: Cluster, hook_port: int) -> None:
    kind = "podgroups.scheduling.x-k8s.io"
    with gang_controller(
        cluster, hook_port, "scheduling.x-k8s.io/v1alpha1", "scheduler-plugins-podgroup.yaml"
    ):
        cluster.apply(job("e2e-plugins", {"Worker": replica(3)}, schedulingPolicy=GANG))
        group = wait_for("PodGroup", lambda: podgroup(cluster, kind, "e2e-plugins"), 90)
        assert group["spec"]["minMember"] == 3
        assert group["spec"]["scheduleTimeoutSeconds"] == 120
        pods = cluster.wait_pods("e2e-plugins", {f"e2e-plugins-worker-{i}" for i in range(3)})
        for pod in pods.values():
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "e2e-plugins"
        cluster.wait_condition("e2e-plugins", "Running")
        cluster.delete("mxjob", "e2e-plugins")

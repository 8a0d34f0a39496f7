"""The real-node tier: a real kubelet runs real MXNet and TVM processes.

One session-wide `NodeStack` (tools/cluster/node.py): control plane with RBAC enforced, one node
in its own network namespace, Metacontroller v4.17.2 and the project installed in the cluster
from locally built images exactly as the README tells users (`kubectl apply -k
manifests/overlays/standard`). The workloads in `workloads/` reach the pods through a ConfigMap.

Skipped with a one-line reason where the machine cannot run a node (not root, not Linux, no
Go), unless E2E=required (CI sets it).
"""

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE, REPO, Cluster, wait_for

WORKLOADS = Path(__file__).parent / "workloads"
WORKLOADS_CONFIGMAP = "mxjob-workloads"


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tools.cluster.node import NodeStack, unavailable_reason  # noqa: PLC0415

    reason = unavailable_reason()
    if reason:
        if os.environ.get("E2E") == "required":
            pytest.fail(f"real-node tier required but unavailable: {reason}")
        pytest.skip(f"real-node tier skipped: {reason}")
    from tools.cluster import hoststate  # noqa: PLC0415

    sysctls = hoststate.read_sysctls()
    stack = NodeStack(
        run_dir=tmp_path_factory.mktemp("node"), log=lambda line: print(line, flush=True)
    )
    try:
        stack.start()
        stack.install_in_cluster(REPO)
        stack.kubectl(
            "create",
            "configmap",
            WORKLOADS_CONFIGMAP,
            "-n",
            NAMESPACE,
            *(f"--from-file={f}" for f in sorted(WORKLOADS.glob("*.py"))),
        )
        yield stack
    finally:
        stack.stop(remove=True)
    # Left as found: the namespace (with its iptables and bridge) gone, the kubelet's sysctls
    # back unless another stack (a playground) still holds them.
    assert not Path(f"/run/netns/{stack.netns}").exists()
    if not hoststate.holders():
        assert hoststate.read_sysctls() == sysctls


class Node(Cluster):
    """Cluster helpers plus what only a real node can do: logs, images, killing a process."""

    def image(self, name: str) -> str:
        return str(self.stack.images[name])

    def logs(self, pod: str) -> str:
        return str(self.kubectl("logs", "-n", NAMESPACE, pod, check=False).stdout)

    def wait_log(self, pod: str, text: str, timeout: float = 90) -> None:
        wait_for(f"{text!r} in the log of {pod}", lambda: text in self.logs(pod), timeout)

    def kill(self, pod: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the mxnet container's main process from the host, as the OOM killer would."""
        obj = self.get("pod", pod)
        assert obj is not None, pod
        (status,) = [s for s in obj["status"]["containerStatuses"] if s["name"] == "mxnet"]
        container_id = status["containerID"].split("://", 1)[1]
        state = subprocess.run(
            ["runc", f"--root={self.stack.run_dir / 'runc' / 'k8s.io'}", "state", container_id],
            capture_output=True,
            text=True,
            check=True,
        )
        os.kill(int(json.loads(state.stdout)["pid"]), sig)


@pytest.fixture(scope="session")
def cluster(node: Any) -> Node:
    return Node(node)


@pytest.fixture(autouse=True)
def _no_jobs_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every MXJob a test made is deleted after it, passed or failed, so tests stay apart."""
    yield
    if "cluster" in request.fixturenames:
        node = request.getfixturevalue("node")
        node.kubectl("delete", "mxjob", "--all", "-n", NAMESPACE, "--wait=false", check=False)


def replica(
    image: str,
    replicas: int = 1,
    policy: str = "Never",
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A replica spec running a workload script (default: train.py) from the ConfigMap."""
    container: dict[str, Any] = {
        "name": "mxnet",
        "image": image,
        "command": command or ["python", "/workloads/train.py"],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "volumeMounts": [{"name": "workloads", "mountPath": "/workloads"}],
    }
    return {
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {
            "spec": {
                "terminationGracePeriodSeconds": 5,
                "containers": [container],
                "volumes": [{"name": "workloads", "configMap": {"name": WORKLOADS_CONFIGMAP}}],
            }
        },
    }


def mxjob(name: str, replicas: dict[str, dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"mxReplicaSpecs": replicas, **spec},
    }

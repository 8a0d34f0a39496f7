"""The real-node tier: a real kubelet runs real MXNet and TVM processes.

One session-wide stack given a `RealNode` (tools/cluster/real_node.py): control plane with RBAC
enforced, one node in its own network namespace, Metacontroller v4.17.2 and the project
installed in the cluster from locally built images exactly as the README tells users (`kubectl
apply -k manifests/overlays/standard`).
The workloads in `workloads/` reach the pods through a ConfigMap; every process of a job first
checks that its MX_CONFIG and DMLC_* variables agree (`checked`).

Skipped with a one-line reason where the machine cannot run a node (not root, not Linux, no
Go), unless E2E=required (CI sets it).
"""

import itertools
import json
import os
import signal
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE, REPO, Cluster, wait_for
from tests.required import unavailable
from testsupport.status_order import backwards

WORKLOADS = Path(__file__).parent / "workloads"
WORKLOADS_CONFIGMAP = "mxjob-workloads"


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tools.cluster.real_node import RealNode, unavailable_reason  # noqa: PLC0415
    from tools.cluster.stack import Stack  # noqa: PLC0415

    reason = unavailable_reason()
    if reason:
        unavailable(f"real-node tier: {reason}")
    from tools.cluster import hoststate  # noqa: PLC0415

    reuse = os.environ.get("MXJOB_NODE_RUN")
    if reuse:  # a stack started for the session (`make up TIER=node`, `make test`'s lanes)
        running = Stack.load(Path(reuse), log=lambda line: print(line, flush=True))
        assert running and isinstance(running.node, RealNode) and running.is_running(), (
            f"no node stack in {reuse}"
        )
        if NAMESPACE != "default":  # one of several sessions sharing the stack
            running.kubectl("create", "namespace", NAMESPACE, check=False)
            running.wait_default_serviceaccount(NAMESPACE)
        running.kubectl("delete", "configmap", WORKLOADS_CONFIGMAP, "-n", NAMESPACE,
                        "--ignore-not-found")  # fmt: skip
        _create_workloads(running)
        yield running
        running.disown()
        return
    # The values before any stack changed them: unknown if another stack holds them now.
    sysctls = None if hoststate.holders() else hoststate.read_sysctls()
    real = RealNode()
    stack = Stack(
        run_dir=tmp_path_factory.mktemp("node"), log=lambda line: print(line, flush=True), node=real
    )
    try:
        stack.start()
        real.install_in_cluster(REPO)
        _create_workloads(stack)
        yield stack
    finally:
        stack.stop(remove=True)
    # Left as found: stop raises if the namespace (with its iptables and veth) is still there
    # (checked under the slot lock: another run may take the freed slot right after); the
    # kubelet's sysctls back unless another stack (a playground, another run) held them at the
    # start or now.
    if sysctls is not None and not hoststate.holders():
        assert hoststate.read_sysctls() == sysctls


def _create_workloads(stack: Any) -> None:
    stack.kubectl(
        "create",
        "configmap",
        WORKLOADS_CONFIGMAP,
        "-n",
        NAMESPACE,
        *(f"--from-file={f}" for f in sorted(WORKLOADS.glob("*.py"))),
    )


class Node(Cluster):
    """Cluster helpers plus what only a real node can do: logs, images, killing a process."""

    def image(self, name: str) -> str:
        return str(self.stack.node.images[name])

    def logs(self, pod: str) -> str:
        return str(self.kubectl("logs", "-n", NAMESPACE, pod, check=False).stdout)

    def stamped_log(self, pod: str) -> list[tuple[datetime, str]]:
        """The pod's log line by line, each with when the container runtime received it
        (`kubectl logs --timestamps`)."""
        out = str(self.kubectl("logs", "-n", NAMESPACE, pod, "--timestamps", check=False).stdout)
        split = (line.partition(" ") for line in out.splitlines())
        return [
            (datetime.fromisoformat(stamp.replace("Z", "+00:00")), text) for stamp, _, text in split
        ]

    def wait_log(self, pod: str, text: str, timeout: float = 90) -> None:
        wait_for(f"{text!r} in the log of {pod}", lambda: text in self.logs(pod), timeout)

    def pid(self, pod: str, timeout: float = 60) -> int:
        """The host pid of the mxnet container's main process (from runc, not the API), once the
        container runs: a pod just bound may still be pulling or creating it."""

        def running() -> str | None:
            obj = self.get("pod", pod) or {}
            statuses = obj.get("status", {}).get("containerStatuses", [])
            ids = [
                s["containerID"]
                for s in statuses
                if s["name"] == "mxnet" and "running" in s.get("state", {}) and s.get("containerID")
            ]
            return ids[0] if ids else None

        container = wait_for(f"the mxnet container of {pod} running", running, timeout)
        return int(self.stack.node.container_pid(container))

    def kill(self, pod: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the mxnet container's main process from the host, as the OOM killer would."""
        os.kill(self.pid(pod), sig)

    @staticmethod
    def finish(pid: int) -> None:
        """Let a WAITING container (by host pid) exit 0: its flag file written from the host,
        so it works while the API server is down too."""
        Path(f"/proc/{pid}/root/tmp/done").touch()

    def children(self, job: str) -> dict[str, dict[str, str]]:
        """The job's children by kind, name -> uid: a uid that changes is a child made again."""
        selector = f"training.kubeflow.org/job-name={job}"
        return {
            kind: {o["metadata"]["name"]: o["metadata"]["uid"] for o in self.list(kind, selector)}
            for kind in ("pods", "services", "configmaps")
        }

    def wait_rollout(self, namespace: str, kind_name: str, timeout: float = 180) -> None:
        """`kubectl rollout status` for up to `timeout` seconds (the process is given longer:
        with the client's default of 60 s, a cold run's slow hook pod cut the wait to 60)."""
        self.stack.kubectl(
            "rollout", "status", "-n", namespace, kind_name, f"--timeout={timeout:.0f}s",
            timeout=timeout + 30,
        )  # fmt: skip

    def get_in(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        proc = self.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def running_pids(self, job: str, count: int) -> dict[str, int]:
        """Once `count` pods of the job run: their host pids, by pod name."""

        def probe() -> dict[str, int] | None:
            pods = self.pods(job)
            running = [n for n, p in pods.items() if p["status"].get("phase") == "Running"]
            return {n: self.pid(n) for n in running} if len(running) == count else None

        return wait_for(f"{count} running pods of {job}", probe, 120)

    def stop_metacontroller(self) -> str:
        """Delete Metacontroller's pod and wait until it is gone (its StatefulSet then makes a
        new one); the old pod's uid."""
        old = self.get_in("metacontroller", "pod", "metacontroller-0")
        assert old is not None
        self.kubectl("delete", "pod", "-n", "metacontroller", "metacontroller-0", "--wait=true")
        return str(old["metadata"]["uid"])

    def wait_metacontroller(self, old_uid: str) -> None:
        """Until a new Metacontroller pod (not `old_uid`) is Ready."""

        def ready() -> bool:
            pod = self.get_in("metacontroller", "pod", "metacontroller-0") or {}
            conditions = pod.get("status", {}).get("conditions", [])
            return pod.get("metadata", {}).get("uid") not in (None, old_uid) and any(
                c["type"] == "Ready" and c["status"] == "True" for c in conditions
            )

        wait_for("a new Metacontroller pod Ready", ready, 120)

    def hook_pods(self, *, terminating: bool = False) -> list[str]:
        """Names of the hook's pods that are not being deleted (with `terminating`, also those
        that are: they serve through their preStop pause while no other pod is ready)."""
        proc = self.kubectl("get", "pods", "-n", HOOK_NAMESPACE, "-l", HOOK_SELECTOR, "-o", "json")
        items = json.loads(proc.stdout)["items"]
        return [
            p["metadata"]["name"]
            for p in items
            if terminating or "deletionTimestamp" not in p["metadata"]
        ]

    def scale_hook(self, replicas: int) -> None:
        self.kubectl(
            "scale", "-n", HOOK_NAMESPACE, "deployment/mxjob-hook", f"--replicas={replicas}"
        )


#: The hook's namespace and pod labels (manifests/hook), and its replicas as installed.
HOOK_NAMESPACE = "mxjob-system"
HOOK_SELECTOR = "app.kubernetes.io/name=mxjob-hook"
HOOK_REPLICAS = 2
#: A container that runs until `Node.finish` writes its flag file, then exits 0: cheap, and a
#: test decides when a replica succeeds, even while a component is down.
WAITING = ["sh", "-c", "until [ -e /tmp/done ]; do sleep 0.2; done"]


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


def checked(command: list[str]) -> list[str]:
    """`command`, run only once `workloads/cluster_check.py` found the process's MX_CONFIG and
    DMLC_* variables in agreement (it exits 3 otherwise), in the same process (`exec`)."""
    return ["sh", "-c", 'python /workloads/cluster_check.py && exec "$@"', "checked", *command]


def replica(
    image: str,
    replicas: int = 1,
    policy: str = "Never",
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A replica spec running a workload script (default: train.py) from the ConfigMap, each
    process checked first (`checked`)."""
    container: dict[str, Any] = {
        "name": "mxnet",
        "image": image,
        "command": checked(command or ["python", "/workloads/train.py"]),
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


def waiting_job(cluster: Node, name: str, workers: int = 2) -> dict[str, Any]:
    """A worker-only job of WAITING containers: it succeeds once the test finishes each one."""
    image = cluster.image("mxjob-base")
    return mxjob(name, {"Worker": replica(image, replicas=workers, command=WAITING)})


class StatusRecorder:
    """Polls a job's status in a thread while a fault happens; `check()` asserts that no status
    went backwards (see `backwards`). Polls that fail (API server down) are skipped."""

    def __init__(self, cluster: Node, job: str) -> None:
        self.cluster, self.job = cluster, job
        self.seen: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            status = self.cluster.status(self.job)
            if status and (not self.seen or status != self.seen[-1]):
                self.seen.append(status)
            self._stop.wait(0.3)

    def __enter__(self) -> "StatusRecorder":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def check(self) -> int:
        """Every recorded status against the one before; the number of distinct statuses."""
        for before, after in itertools.pairwise(self.seen):
            problem = backwards(before, after)
            assert problem is None, f"{self.job}: {problem}\nbefore: {before}\nafter: {after}"
        return len(self.seen)


@pytest.fixture
def hook_restored(cluster: Node) -> Iterator[Node]:
    """For tests that scale or kill the hook: afterwards it has its replicas again, all ready."""
    try:
        yield cluster
    finally:
        cluster.scale_hook(HOOK_REPLICAS)
        cluster.wait_rollout(HOOK_NAMESPACE, "deployment/mxjob-hook")


@pytest.fixture
def metacontroller_restored(cluster: Node) -> Iterator[Node]:
    """For tests that kill Metacontroller: afterwards its StatefulSet is ready again."""
    try:
        yield cluster
    finally:
        cluster.wait_rollout("metacontroller", "statefulset/metacontroller")

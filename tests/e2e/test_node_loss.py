"""Lost nodes on the KWOK tier (docs/restarts.md, "Lost nodes"): a node stops heartbeating, the
real node-lifecycle and taint-eviction controllers taint it and evict its pods, which then stay
Terminating for ever (no kubelet confirms their end). The hook must not wait for them.

KWOK renews the Lease of every node it has managed, even once it no longer manages it, so the
node to lose is one the test keeps alive itself (`Heartbeat`: a Ready status and a Lease renewed
every 2 s, as a kubelet does; its pods are started by patching their status, as the kubelet
reports them) and stops keeping alive. Three KWOK nodes take the rest. A second
kube-controller-manager runs only the two node controllers, for these tests alone (the tier's
own runs neither), with a 10 s grace period; the job's pods tolerate the unreachable taint for
2 s (the DefaultTolerationSeconds admission plugin would give them 300 s) and prefer the node
to lose. Each test prints its timeline.
"""

import functools
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import mxjob, replica
from tests.e2e.conftest import NAMESPACE, Cluster, controllers, wait_for
from tools.cluster import kwok

POOL = "mxjob-e2e/pool"
DOOMED = "mxjob-e2e/doomed"
SPARES = [f"kwok-spare-{i}" for i in range(3)]
LOST = "lost-node"
#: The address of the pod on the node to lose, as its kubelet would report it.
LOST_POD_IP = "10.250.0.99"
TOLERATE = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}
    for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
]


class Heartbeat:
    """A node with no kubelet whose Ready status and Lease the test renews, until `stop()`."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster, self.name = cluster, name
        self._stop = threading.Event()
        node = kwok.node(name)
        node["metadata"]["annotations"] = {}  # not KWOK's: nothing renews it but this
        node["metadata"]["labels"].update({POOL: "node-loss", DOOMED: "true"})
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps(node))
        self.beat()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def beat(self) -> None:
        now = datetime.now(UTC)
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "lastHeartbeatTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        status = {"status": {"conditions": [ready]}}
        self.cluster.kubectl(
            "patch", "node", self.name, "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": "kube-node-lease"},
            "spec": {
                "holderIdentity": self.name,
                "leaseDurationSeconds": 10,
                "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }
        self.cluster.kubectl("apply", "-f", "-", stdin=json.dumps(lease))

    def _run(self) -> None:
        while not self._stop.wait(2):
            self.beat()

    def stop(self) -> None:
        """The node is lost: no heartbeat from now on."""
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def node_controllers(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """KWOK nodes for these tests, and the node-lifecycle, taint-eviction and EndpointSlice
    controllers; afterwards the nodes are gone again."""
    stack = cluster.stack
    nodes = [kwok.node(name) for name in SPARES]
    for node in nodes:
        node["metadata"]["labels"][POOL] = "node-loss"
    listed = {"apiVersion": "v1", "kind": "List", "items": nodes}
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(listed))
    log = tmp_path_factory.mktemp("node-lifecycle") / "kube-controller-manager.log"
    names = "node-lifecycle-controller,taint-eviction-controller,endpointslice-controller"
    flags = ("--node-monitor-grace-period=10s", "--node-monitor-period=1s")
    try:
        with controllers(stack, log, names, *flags):
            for name in SPARES:
                wait_for(f"node {name} Ready", functools.partial(_is_ready, cluster, name), 60)
            yield
    finally:
        cluster.kubectl("delete", "node", *SPARES, LOST, "--wait=false", check=False)


@pytest.fixture
def doomed(cluster: Cluster, node_controllers: None) -> Iterator[Heartbeat]:
    """The node to lose, Ready until the test stops its heartbeat; deleted after the test."""
    heartbeat = Heartbeat(cluster, LOST)
    wait_for(f"node {LOST} Ready", functools.partial(_is_ready, cluster, LOST), 60)
    try:
        yield heartbeat
    finally:
        heartbeat.stop()
        cluster.kubectl("delete", "node", LOST, "--wait=true", check=False)
        cluster.kubectl(
            "delete", "pods", "-n", NAMESPACE, f"--field-selector=spec.nodeName={LOST}",
            "--force", "--grace-period=0", check=False,
        )  # fmt: skip


def _is_ready(cluster: Cluster, node: str) -> bool:
    obj = json.loads(cluster.kubectl("get", "node", node, "-o", "json").stdout)
    conditions = obj["status"].get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _job(name: str, replicas: dict[str, Any], **run_policy: Any) -> dict[str, Any]:
    """Pods on the test's nodes, the node to lose preferred, one pod per node, gone 1 s after a
    deletion (where a kubelet answers), 2 s of tolerance for an unreachable node."""
    obj = mxjob(name=name, replicas=replicas, run_policy=run_policy or None)
    obj["metadata"] = {"name": name}
    one_per_node = {
        "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": name}},
        "topologyKey": "kubernetes.io/hostname",
    }
    prefer_doomed = {
        "weight": 100,
        "preference": {"matchExpressions": [{"key": DOOMED, "operator": "Exists"}]},
    }
    for rspec in obj["spec"]["mxReplicaSpecs"].values():
        pod = rspec["template"]["spec"]
        pod["nodeSelector"] = {POOL: "node-loss"}
        pod["tolerations"] = TOLERATE
        pod["terminationGracePeriodSeconds"] = 1
        pod["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [one_per_node]},
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [prefer_doomed]},
        }
    return obj


def _start_on_doomed_node(cluster: Cluster, job: str) -> str:
    """Report the job's pod on the node to lose Running, as its kubelet would; its name."""

    def scheduled() -> str | None:
        on = [n for n, p in cluster.pods(job).items() if p["spec"].get("nodeName") == LOST]
        return on[0] if on else None

    name = wait_for(f"a pod of {job} on {LOST}", scheduled, 60)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "status": {
            "phase": "Running",
            "podIP": LOST_POD_IP,
            "podIPs": [{"ip": LOST_POD_IP}],
            "startTime": now,
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "mxnet",
                    "image": "mxjob/mxnet:gpu",
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": now}},
                }
            ],
        }
    }
    cluster.kubectl(
        "patch", "pod", name, "-n", NAMESPACE, "--subresource=status", "--type=merge",
        "-p", json.dumps(status),
    )  # fmt: skip
    return name


def _running(cluster: Cluster, job: str, count: int) -> dict[str, dict[str, Any]]:
    def probe() -> dict[str, dict[str, Any]] | None:
        pods = cluster.pods(job)
        up = {
            n: p
            for n, p in pods.items()
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        }
        return up if len(up) >= count else None

    return wait_for(f"{count} running pods of {job}", probe, 120)


class Timeline:
    """Seconds since the node was lost, per event; printed for the docs."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.events: list[str] = []

    def mark(self, what: str) -> None:
        self.events.append(f"{what} +{time.monotonic() - self.start:.1f}s")

    def __str__(self) -> str:
        return ", ".join(self.events)


def _lose(cluster: Cluster, doomed: Heartbeat, pod: str) -> tuple[Timeline, dict[str, Any]]:
    """Stop the node's heartbeat; wait until it is NotReady and `pod` evicted; the evicted
    pod."""
    timeline = Timeline()
    doomed.stop()
    wait_for(f"{LOST} not Ready", lambda: not _is_ready(cluster, LOST), 60)
    timeline.mark("node NotReady")

    def evicted() -> dict[str, Any] | None:
        obj = cluster.get("pod", pod) or {}
        return obj if obj.get("metadata", {}).get("deletionTimestamp") else None

    old = wait_for(f"{pod} evicted", evicted, 60)
    timeline.mark("pod evicted (Terminating, DisruptionTarget)")
    conditions = {c["type"]: c for c in old["status"].get("conditions", [])}
    assert conditions["DisruptionTarget"]["status"] == "True", conditions
    return timeline, old


def test_a_worker_on_a_lost_node_is_replaced_beside_its_terminating_pod(
    cluster: Cluster, doomed: Heartbeat
) -> None:
    cluster.apply(_job("e2e-lost-worker", {"Worker": replica(2, "ExitCode")}, backoffLimit=0))
    lost_pod = _start_on_doomed_node(cluster, "e2e-lost-worker")
    _running(cluster, "e2e-lost-worker", 2)
    timeline, old = _lose(cluster, doomed, lost_pod)
    print(f"\nDisruptionTarget: {old['status']['conditions']}")
    replacement = f"{lost_pod}-r1"
    cluster.wait_pods("e2e-lost-worker", {replacement})
    timeline.mark(f"{replacement} listed")
    up = _running(cluster, "e2e-lost-worker", 2)
    timeline.mark("replacement running")
    assert replacement in up
    assert up[replacement]["spec"]["nodeName"] != LOST
    still = cluster.get("pod", lost_pod)
    assert still is not None and still["metadata"].get("deletionTimestamp"), "old pod gone?"
    for pod in up:
        cluster.stack.terminate_pod(NAMESPACE, pod, 0)
    cluster.wait_condition("e2e-lost-worker", "Succeeded")
    timeline.mark("Succeeded")
    status = cluster.status("e2e-lost-worker")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 0, status
    print(f"\nworker on a lost node (KWOK): {timeline}")
    cluster.delete("mxjob", "e2e-lost-worker")


def test_a_whole_job_restart_does_not_wait_for_a_lost_server(
    cluster: Cluster, doomed: Heartbeat
) -> None:
    """The Server alone may use the node to lose; its loss restarts the whole job, which must
    go on without the pod that stays Terminating, and not count the restart."""
    replicas = {
        "Scheduler": replica(1, "ExitCode"),
        "Server": replica(1, "ExitCode"),
        "Worker": replica(1, "ExitCode"),
    }
    spec = _job("e2e-lost-server", replicas, backoffLimit=0)
    avoid = {"key": DOOMED, "operator": "DoesNotExist"}
    for rtype in ("Scheduler", "Worker"):
        affinity = spec["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"]["affinity"]
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [avoid]}]
            }
        }
    cluster.apply(spec)
    lost_pod = _start_on_doomed_node(cluster, "e2e-lost-server")
    assert lost_pod == "e2e-lost-server-server-0", lost_pod
    _running(cluster, "e2e-lost-server", 3)
    timeline, _ = _lose(cluster, doomed, lost_pod)
    _, _, message = cluster.wait_condition("e2e-lost-server", "Restarting", timeout=60)
    timeline.mark("Restarting")
    assert "Server replica 0" in message and "whole job" in message, message

    def next_run() -> dict[str, dict[str, Any]] | None:
        pods = cluster.pods("e2e-lost-server")
        run1 = {
            n: p
            for n, p in pods.items()
            if p["metadata"].get("annotations", {}).get("mxjob.kubeflow.org/run") == "1"
            and p["status"].get("phase") == "Running"
        }
        return run1 if len(run1) == 3 else None

    run1 = wait_for("every replica of run 1 running", next_run, 120)
    timeline.mark("run 1 running")
    old = cluster.get("pod", lost_pod)
    assert old is not None and old["metadata"].get("deletionTimestamp"), "lost pod not kept?"
    for pod in run1:
        cluster.stack.terminate_pod(NAMESPACE, pod, 0)
    cluster.wait_condition("e2e-lost-server", "Succeeded")
    timeline.mark("Succeeded")
    status = cluster.status("e2e-lost-server")
    assert sum(s["restarts"] for s in status["replicaStatuses"].values()) == 0, status
    print(f"\nserver on a lost node (KWOK): {timeline}")
    cluster.delete("mxjob", "e2e-lost-server")


def _endpoints(cluster: Cluster, service: str) -> set[str]:
    """The addresses the EndpointSlices of a Service list (what DNS answers for a headless
    Service that publishes not-ready addresses, as the job's do)."""
    slices = cluster.list("endpointslices", f"kubernetes.io/service-name={service}")
    return {a for s in slices for e in s.get("endpoints") or [] for a in e["addresses"]}


def test_a_lost_scheduler_is_never_in_the_new_runs_endpoints(
    cluster: Cluster, doomed: Heartbeat
) -> None:
    """The Scheduler's pod stays Terminating on its lost node; after the whole-job restart, its
    Service (the address every process of run 1 dials) lists run 1's Scheduler alone, never the
    old one, though the old pod still matches the job, type and index (docs/restarts.md)."""
    name = "e2e-lost-scheduler"
    replicas = {t: replica(1, "ExitCode") for t in ("Scheduler", "Server", "Worker")}
    spec = _job(name, replicas, backoffLimit=0)
    avoid = {"key": DOOMED, "operator": "DoesNotExist"}
    for rtype in ("Server", "Worker"):
        affinity = spec["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"]["affinity"]
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [avoid]}]
            }
        }
    cluster.apply(spec)
    lost_pod = _start_on_doomed_node(cluster, name)
    assert lost_pod == f"{name}-scheduler-0", lost_pod
    _running(cluster, name, 3)
    service = f"{name}-scheduler-0"
    wait_for("the Scheduler in its endpoints", lambda: _endpoints(cluster, service), 60)
    assert _endpoints(cluster, service) == {LOST_POD_IP}
    timeline, _ = _lose(cluster, doomed, lost_pod)

    def run1_scheduler() -> str | None:
        pod = cluster.get("pod", f"{name}-scheduler-0-r1") or {}
        return str(pod["status"]["podIP"]) if pod.get("status", {}).get("podIP") else None

    address = wait_for("run 1's Scheduler with an address", run1_scheduler, 120)
    timeline.mark("run 1's Scheduler running")
    wait_for(
        "the Scheduler's endpoints: run 1's pod alone",
        lambda: _endpoints(cluster, service) == {address},
        60,
    )
    timeline.mark("endpoints: run 1's Scheduler alone")
    old = cluster.get("pod", lost_pod)
    assert old is not None and old["metadata"].get("deletionTimestamp"), "lost pod not kept?"
    print(f"\nscheduler on a lost node, its Service (KWOK): {timeline}")
    cluster.delete("mxjob", name)

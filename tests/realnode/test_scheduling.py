"""Gang scheduling and queue admission with real MXNet processes on the real node
(docs/scheduling.md).

The project is switched to the install variant as users apply it (`kubectl apply -k
manifests/overlays/volcano` or `.../scheduler-plugins`, in-cluster Metacontroller and hook),
with the gang scheduler running beside the node's control plane as a second scheduler
(tools/cluster/schedulers.py); Kueue likewise, its webhooks included. Pods request CPU sized to
what the node has free, so whether a gang fits is known: a gang asking 1.5 times the free CPU
waits, whole, while a real training gang beside it is bound, has a Worker SIGKILLed and
replaced through the gang scheduler, and succeeds; a real training job preempted by Kueue
restarts whole, uncounted, once admitted again and succeeds.
"""

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from hooks.core import quantity
from hooks.core.scheduling.shared import pod_requests
from tests.e2e.conftest import REPO, wait_for
from tests.e2e.test_kueue import QUEUE, queue_objects, workload, workload_condition
from tests.realnode.conftest import WAITING, Node, mxjob, replica
from tools.cluster import schedulers
from tools.cluster.stack import Stack

pytestmark = pytest.mark.alone(
    "switches the project's install variant and starts gang schedulers and Kueue"
)

FINISHED = "finished 30 rounds"
ROUNDS = {"ROUNDS": "30", "ROUND_SECONDS": "0.5"}


@dataclass(frozen=True)
class Variant:
    """An install variant with its gang scheduler."""

    overlay: str
    role: str
    podgroups: str
    scheduler_name: str
    start: Callable[[Stack], AbstractContextManager[None]]


VARIANTS = [
    Variant(
        "volcano",
        "mxjob-metacontroller-volcano",
        "podgroups.scheduling.volcano.sh",
        "volcano",
        lambda stack: schedulers.volcano(stack, "kubernetes.io/os:linux"),
    ),
    Variant(
        "scheduler-plugins",
        "mxjob-metacontroller-scheduler-plugins",
        "podgroups.scheduling.x-k8s.io",
        schedulers.PLUGINS_SCHEDULER,
        schedulers.scheduler_plugins,
    ),
]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda v: v.overlay)
def variant(request: pytest.FixtureRequest, cluster: Node) -> Iterator[Variant]:
    """The gang scheduler running and the project installed as that variant; the standard
    variant again afterwards (its CompositeController back, the variant's role gone)."""
    chosen: Variant = request.param
    with chosen.start(cluster.stack):
        cluster.stack.node.install_variant(REPO, chosen.overlay)
        try:
            yield chosen
        finally:
            cluster.stack.node.install_variant(REPO, "standard")
            cluster.kubectl("delete", "clusterrole", chosen.role, "--ignore-not-found")


def node_cpu(cluster: Node) -> tuple[Decimal, Decimal]:
    """The node's allocatable CPU, and that less what its unfinished pods request."""
    (node,) = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    allocatable = quantity.parse(node["status"]["allocatable"]["cpu"]) or Decimal(0)
    free = allocatable
    pods = json.loads(cluster.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    for pod in pods:
        if pod["status"].get("phase") not in ("Succeeded", "Failed"):
            free -= (pod_requests(pod["spec"]) or {}).get("cpu", Decimal(0))
    return allocatable, free


def millis(cpu: Decimal) -> str:
    return f"{int(cpu * 1000)}m"


def sized(spec: dict[str, Any], cpu: Decimal) -> dict[str, Any]:
    """The replica spec with its container asking for `cpu`."""
    spec["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": millis(cpu)}}
    return spec


def training(cluster: Node, name: str, cpu: Decimal, policy: str = "ExitCode") -> dict[str, Any]:
    """A real dist_sync job (Scheduler, Server, 2 Workers), each pod asking for `cpu`."""
    image = cluster.image("mxjob-mxnet")
    return mxjob(
        name,
        {
            "Scheduler": sized(replica(image, policy=policy, env=ROUNDS), cpu),
            "Server": sized(replica(image, policy=policy, env=ROUNDS), cpu),
            "Worker": sized(replica(image, replicas=2, policy=policy, env=ROUNDS), cpu),
        },
    )


def blocker(cluster: Node, name: str, workers: int, cpu: Decimal) -> dict[str, Any]:
    """Worker-only job of WAITING containers, each asking for `cpu`."""
    image = cluster.image("mxjob-base")
    return mxjob(name, {"Worker": sized(replica(image, replicas=workers, command=WAITING), cpu)})


def live(cluster: Node, name: str) -> dict[str, dict[str, Any]]:
    return {
        pod: obj
        for pod, obj in cluster.pods(name).items()
        if obj["status"].get("phase") not in ("Succeeded", "Failed")
        and not obj["metadata"].get("deletionTimestamp")
    }


def all_bound(cluster: Node, name: str, count: int) -> dict[str, dict[str, Any]] | None:
    pods = live(cluster, name)
    return (
        pods
        if len(pods) == count and all(p["spec"].get("nodeName") for p in pods.values())
        else None
    )


def saying(cluster: Node, name: str, words: str) -> str | None:
    """The message of the job's latest condition once it contains `words`."""
    found = cluster.condition(name)
    return found[2] if found and words in found[2] else None


def test_a_real_gang_is_bound_whole_beside_one_that_waits_and_its_worker_is_replaced(
    cluster: Node, variant: Variant
) -> None:
    allocatable, free = node_cpu(cluster)
    big, name = f"{variant.overlay}-too-big", f"{variant.overlay}-train"
    # More than is free, and more than Volcano's enqueue admits (1.2 times the allocatable less
    # what is requested: its overcommit plugin's default), so the gang that cannot fit holds
    # back nothing the training gang needs. Once 1.5 times what is free: once installed
    # components requested more (free 0.73 of 2 CPU), Volcano enqueued it, and the training
    # gang waited behind it.
    cluster.apply(blocker(cluster, big, 2, (free + allocatable / 2) / 2))
    waiting = wait_for("the waiting message", lambda: saying(cluster, big, "waiting"))
    applied = time.monotonic()
    cluster.apply(training(cluster, name, free / 5))  # four pods: 0.8 of what is free
    bound = wait_for("the training gang bound", lambda: all_bound(cluster, name, 4), 60)
    took = time.monotonic() - applied
    assert {p["spec"]["schedulerName"] for p in bound.values()} == {variant.scheduler_name}
    assert not any(p["spec"].get("nodeName") for p in cluster.pods(big).values())
    group = cluster.get(variant.podgroups, name)
    assert group is not None and group["spec"]["minMember"] == 4, group
    got = cluster.kubectl("get", "mxjob", big, "-o", "wide").stdout
    settled = saying(cluster, big, "waiting") or waiting
    print(
        f"\n{variant.overlay}: apply to all 4 pods bound {took:.1f}s (free CPU {free});"
        f" the gang that cannot fit says: {settled}\n{got}"
    )
    cluster.wait_log(f"{name}-worker-1", "round 5 ok", timeout=180)
    killed = time.monotonic()
    cluster.kill(f"{name}-worker-1")
    replacement = wait_for(
        "the replacement bound",
        lambda: (
            (live(cluster, name).get(f"{name}-worker-1-r1") or {}).get("spec", {}).get("nodeName")
        ),
        60,
    )
    assert replacement
    pod = cluster.pods(name)[f"{name}-worker-1-r1"]
    assert pod["spec"]["schedulerName"] == variant.scheduler_name
    cluster.wait_condition(name, "Succeeded", timeout=240)
    for worker in (f"{name}-worker-0", f"{name}-worker-1-r1"):
        assert FINISHED in cluster.logs(worker), cluster.logs(worker)
    assert not any(p["spec"].get("nodeName") for p in cluster.pods(big).values())
    print(f"{variant.overlay}: Worker SIGKILL to Succeeded {time.monotonic() - killed:.1f}s")
    cluster.delete("mxjob", big)


@pytest.fixture
def kueue(cluster: Node) -> Iterator[None]:
    """Kueue with a ClusterQueue of 1 CPU; gone again afterwards."""
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": queue_objects("1")})
    with schedulers.kueue(cluster.stack):
        cluster.kubectl("apply", "-f", "-", stdin=listed)
        try:
            yield
        finally:
            cluster.kubectl("delete", "mxjob", "--all", "--wait=true", check=False)
            cluster.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=listed, check=False)


def queued(obj: dict[str, Any], priority: str) -> dict[str, Any]:
    obj["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": QUEUE,
        "kueue.x-k8s.io/priority-class": priority,
    }
    return obj


def test_real_training_preempted_by_kueue_restarts_whole_uncounted_and_succeeds(
    cluster: Node, kueue: None
) -> None:
    low, high = "kueue-train", "kueue-urgent"
    job = queued(training(cluster, low, Decimal("0.15"), policy="Never"), "mxjob-low")
    job["spec"]["runPolicy"] = {"backoffLimit": 0}  # a counted failure would end it
    cluster.apply(job)
    wait_for(f"{low} bound", lambda: all_bound(cluster, low, 4), 90)
    cluster.wait_log(f"{low}-worker-0", "round 3 ok", timeout=180)
    cluster.apply(queued(blocker(cluster, high, 2, Decimal("0.3")), "mxjob-high"))
    preempted = time.monotonic()
    restarting = cluster.wait_condition(low, "Restarting", 60)
    assert "Kueue" in restarting[2] and "not counted" in restarting[2], restarting
    wait_for(f"{high} bound", lambda: all_bound(cluster, high, 2), 90)
    queued_words = wait_for(f"{low} queued again", lambda: saying(cluster, low, "queued by"))
    print(f"\nkueue: the preempted job says {queued_words}")
    for pod in live(cluster, high):
        cluster.finish(cluster.pid(pod))
    cluster.wait_condition(high, "Succeeded", timeout=90)
    again = wait_for(f"{low} admitted again", lambda: all_bound(cluster, low, 4), 90)
    assert all(
        p["metadata"]["annotations"]["mxjob.kubeflow.org/run"] == "1" for p in again.values()
    )
    cluster.wait_condition(low, "Succeeded", timeout=240)
    workers = [p for p in again if "-worker-" in p]
    for worker in workers:
        log = cluster.logs(worker)
        assert FINISHED in log and "starts at round 0" in log, log
    status = cluster.status(low)
    assert all(not s.get("restarts") for s in status["replicaStatuses"].values()), status
    print(f"kueue: preemption to the job Succeeded {time.monotonic() - preempted:.1f}s")


def test_a_queued_job_restarts_in_place_within_its_admitted_workload(
    cluster: Node, kueue: None
) -> None:
    """restartStrategy InPlace under Kueue (docs/restarts.md#in-place): the Server SIGKILLed
    mid-training; the Scheduler and the Workers restart in place (same pod UID and IP), the
    Server alone is made again and joins run 0's Pod group, whose Workload stays admitted (no
    Workload of run 1), and the real training runs again to Succeeded."""
    name = "kueue-inplace"
    job = queued(training(cluster, name, Decimal("0.1")), "mxjob-low")
    job["spec"]["runPolicy"] = {"restartStrategy": "InPlace"}
    cluster.apply(job)
    before = wait_for(f"{name} running", lambda: running_at(cluster, name), 120)
    cluster.wait_log(f"{name}-worker-0", "round 3 ok", timeout=120)
    killed = time.monotonic()
    cluster.kill(f"{name}-server-0")
    after = wait_for("run 1 running", lambda: running_at(cluster, name, f"{name}-server-0-r1"), 120)
    print(f"\nkueue in place: every pod running again {time.monotonic() - killed:.1f}s after")
    kept = {pod for pod in before if pod != f"{name}-server-0"}
    assert {pod: after[pod] for pod in kept} == {pod: before[pod] for pod in kept}
    assert set(after) == kept | {f"{name}-server-0-r1"}
    group = cluster.get("pod", f"{name}-server-0-r1") or {}
    assert group["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == workload(name, 0)
    admitted = workload_condition(cluster, workload(name, 0), "Admitted")
    assert admitted.get("status") == "True", admitted
    assert cluster.get("workloads.kueue.x-k8s.io", workload(name, 1)) is None
    cluster.wait_condition(name, "Succeeded", timeout=180)
    for worker in (f"{name}-worker-0", f"{name}-worker-1"):
        assert FINISHED in cluster.logs(worker)
    status = cluster.status(name)
    assert status["replicaStatuses"]["Server"]["restarts"] == 1, status["replicaStatuses"]


def running_at(
    cluster: Node, name: str, among: str | None = None
) -> dict[str, tuple[str, str]] | None:
    """The job's pods (UID, IP) once all four run their mxnet container (`among` them)."""
    found = {
        pod: (obj["metadata"]["uid"], obj["status"].get("podIP", ""))
        for pod, obj in live(cluster, name).items()
        if any(
            c["name"] == "mxnet" and "running" in c.get("state", {})
            for c in obj["status"].get("containerStatuses", [])
        )
    }
    return found if len(found) == 4 and (among is None or among in found) else None

"""Queue admission by a real Kueue (tools/cluster/schedulers.py: its manager with the plain Pod
integration and its webhooks) on the KWOK tier (docs/scheduling.md#kueue).

An MXJob labelled `kueue.x-k8s.io/queue-name` has its pods made one Pod group; Kueue's webhook
gates every pod and admits the group as one Workload against a ClusterQueue of 4 CPUs. Proven:
a job beyond the quota runs nothing and says it is queued, and starts once quota is there; of two
jobs the second waits for the first; a job preempted by a higher-priority one restarts whole once
admitted again, uncounted, and succeeds; a replaced Worker keeps the admission and leaks no quota;
`runPolicy.managedBy` naming another controller makes the hook leave the job alone.
"""

import json
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from tests.builders import replica
from tests.e2e.conftest import Cluster, wait_for
from tests.e2e.test_lifecycle import job
from tools.cluster import schedulers

QUEUE = "mxjob-queue"
CLUSTER_QUEUE = "mxjob-cluster-queue"
QUOTA = "4"
GATE = "kueue.x-k8s.io/admission"


#: The size of a pod's Pod group, as the hook writes it for Kueue.
GROUP_SIZE = "kueue.x-k8s.io/pod-group-total-count"


def queue_objects(quota: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "mxjob-flavor"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "mxjob-flavor",
                                "resources": [{"name": "cpu", "nominalQuota": quota}],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": QUEUE, "namespace": "default"},
            "spec": {"clusterQueue": CLUSTER_QUEUE},
        },
        *(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            for name, value in (("mxjob-low", 100), ("mxjob-high", 1000))
        ),
    ]


def set_quota(cluster: Cluster, quota: str) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": queue_objects(quota)}
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(listed))


@pytest.fixture(scope="module")
def kueue(cluster: Cluster) -> Iterator[None]:
    """Kueue running, with a LocalQueue over a ClusterQueue of QUOTA CPUs (preempting lower
    priorities) and two WorkloadPriorityClasses; all of it gone again afterwards."""
    with schedulers.kueue(cluster.stack):
        set_quota(cluster, QUOTA)
        try:
            yield
        finally:
            listed = {"apiVersion": "v1", "kind": "List", "items": queue_objects(QUOTA)}
            cluster.kubectl(
                "delete", "-f", "-", "--ignore-not-found", "--wait=false",
                stdin=json.dumps(listed), check=False,
            )  # fmt: skip


def queued_job(
    name: str, replicas: dict[str, Any], priority: str | None = None, **run_policy: Any
) -> dict[str, Any]:
    obj = job(name, replicas, **run_policy)
    labels = {"kueue.x-k8s.io/queue-name": QUEUE}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    obj["metadata"]["labels"] = labels
    return obj


def cpus(count: int, cpu: str, policy: str | None = None) -> dict[str, Any]:
    return replica(count, policy, resources={"requests": {"cpu": cpu}})


def live(cluster: Cluster, name: str) -> dict[str, dict[str, Any]]:
    return {
        pod: obj
        for pod, obj in cluster.pods(name).items()
        if obj["status"].get("phase") not in ("Succeeded", "Failed")
        and not obj["metadata"].get("deletionTimestamp")
    }


def gated(cluster: Cluster, name: str, count: int) -> dict[str, dict[str, Any]] | None:
    """The job's `count` live pods once every one is held by Kueue's gate and unbound."""
    pods = live(cluster, name)
    held = all(
        GATE in {g["name"] for g in p["spec"].get("schedulingGates", [])}
        and not p["spec"].get("nodeName")
        for p in pods.values()
    )
    return pods if len(pods) == count and held else None


def running(cluster: Cluster, name: str, count: int) -> dict[str, dict[str, Any]] | None:
    pods = live(cluster, name)
    up = all(p["status"].get("phase") == "Running" for p in pods.values())
    return pods if len(pods) == count and up else None


def queued_message(cluster: Cluster, name: str, queue: str = QUEUE) -> str | None:
    found = cluster.condition(name)
    return found[2] if found and f"queued by Kueue in LocalQueue {queue}" in found[2] else None


def workload(name: str, run: int = 0) -> str:
    """The Workload (Pod group) of one run of a job."""
    return f"{name}-mxjob-run-{run}"


def workloads(cluster: Cluster, name: str) -> list[str]:
    proc = cluster.kubectl("get", "workloads.kueue.x-k8s.io", "-n", "default", "-o", "name")
    return [w for w in proc.stdout.split() if w.split("/")[-1].startswith(workload(name, 0)[:-1])]


def workload_condition(cluster: Cluster, name: str, ctype: str) -> dict[str, Any]:
    workload = cluster.get("workloads.kueue.x-k8s.io", name) or {}
    conditions = workload.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == ctype), {})


def cpu_in_use(cluster: Cluster) -> str:
    queue = cluster.get("clusterqueues.kueue.x-k8s.io", CLUSTER_QUEUE) or {}
    for flavor in queue.get("status", {}).get("flavorsUsage", []):
        for resource in flavor.get("resources", []):
            if resource["name"] == "cpu":
                return str(resource.get("total", "0"))
    return "0"


def finish(cluster: Cluster, pods: list[str], code: int = 0) -> None:
    for pod in pods:
        cluster.stack.terminate_pod("default", pod, code)


def gone(cluster: Cluster, name: str) -> bool:
    """No pod and no Workload of the job is left."""
    return not cluster.pods(name) and not workloads(cluster, name)


def leftovers(cluster: Cluster, name: str) -> dict[str, Any]:
    """What is left of a deleted job that should be gone: its pods and Workloads, with what
    holds them (finalizers, gates, phase, conditions)."""
    pods = {
        pod: {
            "finalizers": obj["metadata"].get("finalizers"),
            "deleting": obj["metadata"].get("deletionTimestamp"),
            "gates": obj["spec"].get("schedulingGates"),
            "phase": obj["status"].get("phase"),
        }
        for pod, obj in cluster.pods(name).items()
    }
    found = {}
    for w in workloads(cluster, name):
        obj = cluster.get("workloads.kueue.x-k8s.io", w.split("/")[-1]) or {}
        found[w] = {
            "finalizers": obj.get("metadata", {}).get("finalizers"),
            "deleting": obj.get("metadata", {}).get("deletionTimestamp"),
            "conditions": obj.get("status", {}).get("conditions"),
        }
    return {"pods": pods, "workloads": found}


def remove(cluster: Cluster, *names: str) -> None:
    """Delete the jobs, and wait until their pods and Workloads are gone and the quota is
    free again: nothing of a finished or deleted job holds quota."""
    for name in names:
        cluster.delete("mxjob", name)
    for name in names:
        cluster.wait_gone("mxjob", name)
        try:
            wait_for(f"{name}'s pods gone", partial(gone, cluster, name), 60)
        except pytest.fail.Exception:
            print(f"left of {name}:", json.dumps(leftovers(cluster, name), indent=1))
            raise
    wait_for("the quota free", lambda: cpu_in_use(cluster) == "0", 60)


def test_a_job_beyond_its_quota_runs_nothing_and_starts_once_quota_is_there(
    cluster: Cluster, kueue: None
) -> None:
    name = "kueue-big"
    cluster.apply(queued_job(name, {"Worker": cpus(3, "2")}))  # 6 CPUs, the quota is 4
    words = wait_for("the queued message", lambda: queued_message(cluster, name), 60)
    wait_for("three gated pods", lambda: gated(cluster, name, 3), 60)
    time.sleep(5)
    assert gated(cluster, name, 3), "a pod of a job beyond its quota was let through"
    reserved = workload_condition(cluster, workload(name), "QuotaReserved")
    print(f"kueue, a job beyond its quota: {cluster.condition(name)}; Workload: {reserved}")
    assert "waiting for the Workload" in words or "wait for the Workload" in words
    raised = time.monotonic()
    set_quota(cluster, "6")
    try:
        wait_for("all three pods running", lambda: running(cluster, name, 3), 60)
        print(f"kueue: quota raised to all 3 pods running in {time.monotonic() - raised:.1f}s")
        finish(cluster, [f"{name}-worker-{i}" for i in range(3)])
        cluster.wait_condition(name, "Succeeded")
    finally:
        set_quota(cluster, QUOTA)
    remove(cluster, name)


def test_of_two_jobs_the_second_waits_for_the_first(cluster: Cluster, kueue: None) -> None:
    first, second = "kueue-first", "kueue-second"
    cluster.apply(queued_job(first, {"Worker": cpus(2, "2")}))
    wait_for(f"{first} running", lambda: running(cluster, first, 2), 60)
    cluster.apply(queued_job(second, {"Worker": cpus(2, "1")}))
    wait_for(f"{second} queued", lambda: queued_message(cluster, second), 60)
    assert gated(cluster, second, 2)
    ended = time.monotonic()
    finish(cluster, [f"{first}-worker-{i}" for i in range(2)])
    wait_for(f"{second} running", lambda: running(cluster, second, 2), 60)
    print(f"kueue: first job ended to second running in {time.monotonic() - ended:.1f}s")
    finish(cluster, [f"{second}-worker-{i}" for i in range(2)])
    cluster.wait_condition(second, "Succeeded")
    assert cluster.condition(first)[0] == "Succeeded"  # type: ignore[index]
    remove(cluster, first, second)


def test_a_preempted_job_restarts_whole_uncounted_and_succeeds(
    cluster: Cluster, kueue: None
) -> None:
    low, high = "kueue-low", "kueue-high"
    replicas = {"Scheduler": cpus(1, "1"), "Server": cpus(1, "1"), "Worker": cpus(2, "1")}
    # backoffLimit 0 and restartPolicy Never: a preemption counted as a failure would end it.
    cluster.apply(queued_job(low, replicas, priority="mxjob-low", backoffLimit=0))
    wait_for(f"{low} running", lambda: running(cluster, low, 4), 60)
    cluster.apply(queued_job(high, {"Worker": cpus(2, "2")}, priority="mxjob-high"))
    restarting = cluster.wait_condition(low, "Restarting", 60)
    print(f"kueue, the preempted job: {restarting}")
    assert "Kueue" in restarting[2] and "not counted" in restarting[2]
    wait_for(f"{high} running", lambda: running(cluster, high, 2), 60)
    wait_for(f"{low}'s next run queued", lambda: gated(cluster, low, 4), 60)
    finish(cluster, [f"{high}-worker-{i}" for i in range(2)])
    cluster.wait_condition(high, "Succeeded")
    again = wait_for(f"{low} running again", lambda: running(cluster, low, 4), 90)
    assert f"{low}-scheduler-0" not in again, "the preempted run's pods came back"
    finish(cluster, [p for p in again if "-server-" not in p])
    cluster.wait_condition(low, "Succeeded")
    status = cluster.status(low)
    assert all(not s.get("failed") for s in status["replicaStatuses"].values()), status
    remove(cluster, low, high)


def test_a_replaced_worker_keeps_the_admission_and_leaks_no_quota(
    cluster: Cluster, kueue: None
) -> None:
    name = "kueue-replaced"
    replicas = {
        "Scheduler": cpus(1, "1", "ExitCode"),
        "Server": cpus(1, "1", "ExitCode"),
        "Worker": cpus(2, "1", "ExitCode"),
    }
    cluster.apply(queued_job(name, replicas))
    wait_for(f"{name} running", lambda: running(cluster, name, 4), 60)
    wait_for("4 CPUs in use", lambda: cpu_in_use(cluster) == "4", 30)
    admitted = cluster.get("workloads.kueue.x-k8s.io", workload(name)) or {}
    finish(cluster, [f"{name}-worker-1"], 137)
    pods = wait_for("the replacement running", lambda: running(cluster, name, 4), 60)
    assert f"{name}-worker-1-r1" in pods
    still = cluster.get("workloads.kueue.x-k8s.io", workload(name)) or {}
    assert still["metadata"]["uid"] == admitted["metadata"]["uid"], "a new Workload was made"
    assert workload_condition(cluster, workload(name), "Admitted").get("status") == "True"
    evictions = still["status"].get("schedulingStats", {}).get("evictions", [])
    assert not evictions, f"the replacement cost the admission: {evictions}"
    time.sleep(2)
    assert cpu_in_use(cluster) == "4", "the replacement took quota of its own"
    finish(cluster, [f"{name}-scheduler-0", f"{name}-worker-0", f"{name}-worker-1-r1"])
    cluster.wait_condition(name, "Succeeded")
    remove(cluster, name)


def test_a_resized_job_is_admitted_again_as_a_whole_at_its_new_size(
    cluster: Cluster, kueue: None
) -> None:
    """Worker replicas edited from 1 to 2 on a running queued job: its run ends, and the new run
    at the new size is a new Pod group of 4, admitted as a whole (docs/restarts.md#resizing)."""
    name = "kueue-resized"
    replicas = {"Scheduler": cpus(1, "1"), "Server": cpus(1, "1"), "Worker": cpus(1, "1")}
    cluster.apply(queued_job(name, replicas))
    wait_for(f"{name} running", lambda: running(cluster, name, 3), 60)
    patch = '{"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 2}}}}'
    cluster.kubectl("patch", "mxjob", name, "-n", "default", "--type=merge", "-p", patch)
    _, _, words = cluster.wait_condition(name, "Restarting", 60)
    assert "resized from 1 to 2 Workers" in words, words
    again = wait_for(f"{name}'s run 1 running", lambda: running(cluster, name, 4), 90)
    assert all(p.endswith("-r1") for p in again), again
    group = {
        p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] for p in again.values()
    }
    assert group == {"4"}, group
    assert workload_condition(cluster, workload(name, 1), "Admitted").get("status") == "True"
    wait_for("4 CPUs in use, none kept by run 0", lambda: cpu_in_use(cluster) == "4", 30)
    status = cluster.status(name)
    assert sum(s["restarts"] for s in status["replicaStatuses"].values()) == 0, status
    remove(cluster, name)


def test_a_job_managed_by_another_controller_is_left_alone(cluster: Cluster) -> None:
    foreign, ours = "managed-elsewhere", "managed-here"
    cluster.apply(job(foreign, {"Worker": replica(2)}, managedBy="kueue.x-k8s.io/multikueue"))
    cluster.apply(job(ours, {"Worker": replica(2)}, managedBy="kubeflow.org/training-operator"))
    cluster.wait_pods(ours, {f"{ours}-worker-{i}" for i in range(2)})
    cluster.wait_condition(ours, "Running")
    time.sleep(3)
    assert cluster.pods(foreign) == {}
    assert cluster.services(foreign) == {}
    # Metacontroller itself stamps observedGeneration on every parent it syncs; nothing else.
    assert set(cluster.status(foreign)) <= {"observedGeneration"}, cluster.status(foreign)
    for name in (foreign, ours):
        cluster.delete("mxjob", name)
        cluster.wait_gone("mxjob", name)


# --- Topology-aware scheduling (docs/scheduling.md#topology) ------------------------------------

BLOCK, RACK = "example.com/block", "example.com/rack"
TAS_POOL = "tas"
TAS_QUEUE = "mxjob-tas"
#: The TAS pool's taint, tolerated by the job's own pod templates: Kueue v0.17's
#: TASReplaceNodeOnNodeTaints checks a node's taints against the Workload's pod sets, which are
#: the pods as made (without the flavor's tolerations), and without this fails a pending
#: replacement and evicts the job from the "unhealthy" node (docs/scheduling.md#topology).
TAS_TOLERATION = {"key": schedulers.POOL_LABEL, "operator": "Exists", "effect": "NoSchedule"}
#: Four 2-CPU KWOK nodes, one per rack, two racks per block: a block holds 4 CPUs.
TAS_NODES = {
    "tas-0": ("b0", "r0"),
    "tas-1": ("b0", "r1"),
    "tas-2": ("b1", "r2"),
    "tas-3": ("b1", "r3"),
}


def tas_objects() -> list[dict[str, Any]]:
    """A Topology of blocks, racks and hosts, a flavor on the TAS pool's nodes using it, and a
    ClusterQueue of every CPU there with its LocalQueue."""
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "mxjob-topology"},
            "spec": {
                "levels": [
                    {"nodeLabel": BLOCK},
                    {"nodeLabel": RACK},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "mxjob-tas-flavor"},
            "spec": {
                "nodeLabels": {schedulers.POOL_LABEL: TAS_POOL},
                "topologyName": "mxjob-topology",
                "tolerations": [TAS_TOLERATION],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "mxjob-tas-cluster-queue"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "mxjob-tas-flavor",
                                "resources": [{"name": "cpu", "nominalQuota": "8"}],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": TAS_QUEUE, "namespace": "default"},
            "spec": {"clusterQueue": "mxjob-tas-cluster-queue"},
        },
    ]


@pytest.fixture(scope="module")
def topology(cluster: Cluster, kueue: None) -> Iterator[None]:
    """The TAS pool's nodes (tainted: only these tests' pods land there) and its queue."""
    listed = json.loads(schedulers.nodes(list(TAS_NODES), TAS_POOL, "2"))
    for node in listed["items"]:
        block, rack = TAS_NODES[node["metadata"]["name"]]
        node["metadata"]["labels"].update({BLOCK: block, RACK: rack})
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(listed))
    objects = {"apiVersion": "v1", "kind": "List", "items": tas_objects()}
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(objects))
    try:
        yield
    finally:
        cluster.kubectl(
            "delete", "-f", "-", "--ignore-not-found", "--wait=false",
            stdin=json.dumps(objects), check=False,
        )  # fmt: skip
        cluster.kubectl("delete", "node", *TAS_NODES, "--wait=false", check=False)


def placed_job(name: str, replicas: dict[str, Any], mode: str = "Required") -> dict[str, Any]:
    """A job in the TAS queue whose Servers and Workers must (or should) share a block."""
    obj = job(name, replicas, schedulingPolicy={"topology": {"level": BLOCK, "mode": mode}})
    for spec in obj["spec"]["mxReplicaSpecs"].values():
        spec["template"]["spec"]["tolerations"] = [TAS_TOLERATION]
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": TAS_QUEUE}
    return obj


def blocks(cluster: Cluster, pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The block each Server and Worker pod runs in."""
    return {
        name: TAS_NODES[pod["spec"]["nodeName"]][0]
        for name, pod in pods.items()
        if "-server-" in name or "-worker-" in name
    }


def test_a_job_that_fits_a_block_runs_in_one_block_and_so_do_its_replacements(
    cluster: Cluster, topology: None
) -> None:
    """Kueue's TAS places the Servers and Workers (3 CPUs: more than a node) in one block; a
    replaced Worker lands in the job's block, and a whole-job restart is placed whole again."""
    name = "tas-fits"
    replicas = {
        "Scheduler": cpus(1, "500m", "ExitCode"),
        "Server": cpus(1, "1", "ExitCode"),
        "Worker": cpus(2, "1", "ExitCode"),
    }
    applied = time.monotonic()
    cluster.apply(placed_job(name, replicas))
    pods = wait_for(f"{name} running", lambda: running(cluster, name, 4), 60)
    took = time.monotonic() - applied
    first = blocks(cluster, pods)
    assert len(set(first.values())) == 1, first
    assert len({p["spec"]["nodeName"] for n, p in pods.items() if n in first}) == 2, pods
    finish(cluster, [f"{name}-worker-1"], 137)
    pods = wait_for("the replacement running", lambda: running(cluster, name, 4), 60)
    replaced = blocks(cluster, pods)
    assert f"{name}-worker-1-r1" in replaced and set(replaced.values()) == set(first.values())
    finish(cluster, [f"{name}-server-0"], 137)

    def next_run() -> dict[str, dict[str, Any]] | None:
        found = running(cluster, name, 4)
        run = [
            p["metadata"]["labels"].get("mxjob.kubeflow.org/run") for p in (found or {}).values()
        ]
        return found if found and set(run) == {"1"} else None

    again = blocks(cluster, wait_for(f"{name}'s run 1 running", next_run, 90))
    assert len(set(again.values())) == 1, again
    print(
        f"kueue TAS: {name} running in block {set(first.values())} {took:.1f}s after apply;"
        f" replacement in {replaced[f'{name}-worker-1-r1']}; run 1 in {set(again.values())}"
    )
    remove(cluster, name)


def test_a_job_too_big_for_a_block_waits_when_required_and_spreads_when_preferred(
    cluster: Cluster, topology: None
) -> None:
    """5 CPUs of Servers and Workers, a block holds 4: required, Kueue admits nothing and says
    the topology does not fit; preferred, it runs across both blocks."""
    required, preferred = "tas-required", "tas-preferred"
    replicas = {"Scheduler": cpus(1, "500m"), "Server": cpus(1, "1"), "Worker": cpus(4, "1")}
    cluster.apply(placed_job(required, replicas))
    wait_for(f"{required} queued", lambda: queued_message(cluster, required, TAS_QUEUE), 60)

    def refused() -> str | None:
        found = workload_condition(cluster, workload(required), "QuotaReserved")
        words = str(found.get("message", ""))
        return words if found.get("status") == "False" and "topology" in words else None

    why = wait_for("Kueue's word on the required job", refused, 60)
    cluster.apply(placed_job(preferred, replicas, mode="Preferred"))
    pods = wait_for(f"{preferred} running", lambda: running(cluster, preferred, 6), 60)
    spread = blocks(cluster, pods)
    assert set(spread.values()) == {"b0", "b1"}, spread
    assert gated(cluster, required, 6), "a pod of the job that cannot fit was let through"
    print(f"kueue TAS: {required} waits ({why}); {preferred} spread over {spread}")
    # Never admitted, its deleted pods wait in Kueue's group for replacements ("Some Failed pods
    # need replacement") with their finalizers on; deleting the Workload lets them go
    # (docs/scheduling.md#topology).
    cluster.delete("mxjob", required)
    cluster.wait_gone("mxjob", required)
    cluster.delete("workloads.kueue.x-k8s.io", workload(required))
    remove(cluster, required, preferred)

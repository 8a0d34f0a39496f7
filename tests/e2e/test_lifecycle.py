"""MXJobs on a real control plane: children, lifecycle, restarts, invalid specs, garbage
collection, server-side validation of every child, and no hot loop (issue: prove it)."""

import functools
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.core.request import parse_request
from hooks.core.sync import sync
from tests.builders import NOW, mxjob, replica, request
from tests.e2e.conftest import REPO, Cluster, Watch, wait_for
from testsupport.kubelet_env import resolve

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def job(name: str, replicas: dict[str, Any], **run_policy: Any) -> dict[str, Any]:
    obj = mxjob(name=name, replicas=replicas, run_policy=run_policy or None)
    obj["metadata"] = {"name": name}
    return obj


def example_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "MXJob"]


def _all_services(cluster: Cluster, job: str, wanted: set[str]) -> dict[str, dict[str, Any]] | None:
    services = cluster.services(job)
    return services if set(services) >= wanted else None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_accepted_and_children_appear(cluster: Cluster, path: Path) -> None:
    for doc in example_docs(path):
        name = doc["metadata"]["name"]
        cluster.delete("mxjob", name)
        cluster.wait_gone("mxjob", name)
        cluster.apply(doc)
        parent = cluster.get("mxjob", name) or doc
        want = sync(parse_request(request(parent)), NOW)
        claims = [
            c["metadata"]["name"] for c in want.children if c["kind"] == "PersistentVolumeClaim"
        ]
        if claims:  # nothing else is made before the claim is observed (restarts.md#checkpoints)
            made = wait_for(
                "the checkpoint claim", functools.partial(cluster.get, "pvc", claims[0])
            )
            want = sync(parse_request(request(parent, [made])), NOW)
        pods_wanted = {c["metadata"]["name"]: c for c in want.children if c["kind"] == "Pod"}
        # One per replica, or one for the job under serviceMode PerJob.
        services_wanted = {c["metadata"]["name"] for c in want.children if c["kind"] == "Service"}
        if doc["spec"].get("runPolicy", {}).get("suspend"):
            cluster.wait_condition(name, "Suspended")
            assert cluster.pods(name) == {}
            continue
        if "schedulingPolicy" in doc["spec"].get("runPolicy", {}) and not pods_wanted:
            continue  # a gang job waits for its PodGroup; covered by the gang tests
        pods = cluster.wait_pods(name, set(pods_wanted))
        # Metacontroller creates a sync's children kind after kind: Services may follow pods.
        services = wait_for(
            f"{name}'s services", functools.partial(_all_services, cluster, name, services_wanted)
        )
        assert set(pods) == set(pods_wanted)
        assert set(services) == services_wanted
        config_maps = {
            c["metadata"]["name"]: c
            for c in cluster.list("configmaps", f"training.kubeflow.org/job-name={name}")
        }
        for pod_name, pod in pods.items():
            desired = pods_wanted[pod_name]
            assert pod["metadata"]["labels"].items() >= desired["metadata"]["labels"].items()
            for got_c, want_c in zip(
                pod["spec"]["containers"], desired["spec"]["containers"], strict=True
            ):
                assert resolve(pod, got_c, config_maps) == resolve(desired, want_c, config_maps)
                assert got_c["ports"] == [
                    {**p, "protocol": p.get("protocol", "TCP")} for p in want_c["ports"]
                ]
        for svc in services.values():
            assert svc["spec"]["clusterIP"] == "None"
        cluster.delete("mxjob", name)


def _finish(cluster: Cluster, name: str, pods: list[str], code: int) -> None:
    for pod in pods:
        cluster.stack.terminate_pod("default", pod, code)


def test_mxtrain_with_scheduler_runs_and_succeeds(cluster: Cluster) -> None:
    cluster.apply(
        job("e2e-dist", {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)})
    )
    cluster.wait_condition("e2e-dist", "Running")
    status = cluster.get("mxjob", "e2e-dist")["status"]  # type: ignore[index]
    assert status["replicaStatuses"]["Worker"]["active"] == 2
    _finish(
        cluster, "e2e-dist", ["e2e-dist-scheduler-0", "e2e-dist-worker-0", "e2e-dist-worker-1"], 0
    )
    cluster.wait_condition("e2e-dist", "Succeeded")
    # cleanPodPolicy Running (default): the still-running Server goes, finished pods stay.
    wait_for("server removed", lambda: "e2e-dist-server-0" not in cluster.pods("e2e-dist"), 60)
    assert set(cluster.pods("e2e-dist")) == {
        "e2e-dist-scheduler-0",
        "e2e-dist-worker-0",
        "e2e-dist-worker-1",
    }
    status = cluster.get("mxjob", "e2e-dist")["status"]  # type: ignore[index]
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert status["completionTime"] and status["startTime"]


def test_worker_only_job_succeeds(cluster: Cluster) -> None:
    cluster.apply(job("e2e-workers", {"Worker": replica(3)}))
    cluster.wait_condition("e2e-workers", "Running")
    _finish(cluster, "e2e-workers", [f"e2e-workers-worker-{i}" for i in range(3)], 0)
    cluster.wait_condition("e2e-workers", "Succeeded")


def test_mxtune_succeeds_when_the_tuner_succeeds(cluster: Cluster) -> None:
    tune = job(
        "e2e-tune", {"TunerTracker": replica(1), "TunerServer": replica(1), "Tuner": replica(1)}
    )
    tune["spec"]["jobMode"] = "MXTune"
    cluster.apply(tune)
    cluster.wait_condition("e2e-tune", "Running")
    _finish(cluster, "e2e-tune", ["e2e-tune-tuner-0"], 0)
    cluster.wait_condition("e2e-tune", "Succeeded")


def test_retryable_exit_is_replaced_then_recovers_and_permanent_exit_fails(
    cluster: Cluster,
) -> None:
    cluster.apply(job("e2e-retry", {"Worker": replica(2, "ExitCode")}, backoffLimit=3))
    cluster.wait_condition("e2e-retry", "Running")
    cluster.stack.terminate_pod("default", "e2e-retry-worker-1", 137)
    wait_for("replacement pod", lambda: "e2e-retry-worker-1-r1" in cluster.pods("e2e-retry"), 60)
    cluster.wait_condition("e2e-retry", "Running")
    wait_for(
        "restarts counted",
        lambda: cluster.status("e2e-retry")["replicaStatuses"]["Worker"]["restarts"] == 1,
    )
    cluster.stack.terminate_pod("default", "e2e-retry-worker-0", 1)
    _, reason, message = cluster.wait_condition("e2e-retry", "Failed")
    assert reason == "MXJobFailed"
    assert "Worker replica 0" in message and "code 1" in message


def test_backoff_limit_is_honoured(cluster: Cluster) -> None:
    cluster.apply(job("e2e-backoff", {"Worker": replica(1, "ExitCode")}, backoffLimit=1))
    cluster.wait_condition("e2e-backoff", "Running")
    cluster.stack.terminate_pod("default", "e2e-backoff-worker-0", 143)
    wait_for("replacement", lambda: "e2e-backoff-worker-0-r1" in cluster.pods("e2e-backoff"), 60)
    wait_for(
        "replacement running",
        lambda: (
            cluster.pods("e2e-backoff")["e2e-backoff-worker-0-r1"]["status"].get("phase")
            == "Running"
        ),
        60,
    )
    cluster.stack.terminate_pod("default", "e2e-backoff-worker-0-r1", 143)
    _, reason, _ = cluster.wait_condition("e2e-backoff", "Failed")
    assert reason == "BackoffLimitExceeded"
    assert "e2e-backoff-worker-0-r2" not in cluster.pods("e2e-backoff")


def test_server_killed_restarts_the_whole_job_once(cluster: Cluster) -> None:
    """docs/restarts.md: a Server cannot be replaced alone; every pod goes, run 1 comes with new
    names."""
    replicas = {
        "Scheduler": replica(1, "ExitCode"),
        "Server": replica(1, "ExitCode"),
        "Worker": replica(2, "ExitCode"),
    }
    cluster.apply(job("e2e-whole", replicas, backoffLimit=2))
    cluster.wait_condition("e2e-whole", "Running")
    # Restarting may last one status write on fake nodes (run 1 runs at once): watch for it.
    watch = Watch(cluster, "mxjob", "e2e-whole")
    cluster.stack.terminate_pod("default", "e2e-whole-server-0", 137)
    run1 = {
        "e2e-whole-scheduler-0-r1",
        "e2e-whole-server-0-r1",
        "e2e-whole-worker-0-r1",
        "e2e-whole-worker-1-r1",
    }
    wait_for("run 1 alone", lambda: set(cluster.pods("e2e-whole")) == run1, 120)
    cluster.wait_condition("e2e-whole", "Running", 120)
    restarting = [
        c["message"]
        for version in watch.stop()
        for c in version.get("status", {}).get("conditions", [])[-1:]
        if c["type"] == "Restarting"
    ]
    assert restarting, "the job never showed Restarting"
    assert "Server replica 0" in restarting[0] and "restarting the whole job" in restarting[0]
    status = cluster.status("e2e-whole")
    assert status["replicaStatuses"]["Server"]["restarts"] == 1
    assert sum(r["restarts"] for r in status["replicaStatuses"].values()) == 1


def test_a_job_named_like_another_jobs_replica_takes_none_of_its_services(
    cluster: Cluster,
) -> None:
    """docs/environment.md#services: job e2e-clash-scheduler-0, one Service per job, applied
    first, then job e2e-clash, a Service per replica, in one namespace: each has its own
    Services, and e2e-clash's Scheduler Service selects e2e-clash's pods. The first one's
    Service was named after it, so it owned `e2e-clash-scheduler-0`, and e2e-clash's Workers
    resolved their Scheduler to the other job's pods."""
    replicas = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(1)}
    first = job("e2e-clash-scheduler-0", replicas)
    first["spec"]["serviceMode"] = "PerJob"
    cluster.apply(first)
    wanted = {"e2e-clash-scheduler-0-mxjob"}
    wait_for(
        "its one Service",
        functools.partial(_all_services, cluster, first["metadata"]["name"], wanted),
    )
    cluster.apply(job("e2e-clash", replicas))
    slots = {f"e2e-clash-{t}-0" for t in ("scheduler", "server", "worker")}
    services = wait_for(
        "e2e-clash's Services", functools.partial(_all_services, cluster, "e2e-clash", slots)
    )
    assert set(services) == slots
    scheduler = services["e2e-clash-scheduler-0"]
    assert scheduler["spec"]["selector"]["training.kubeflow.org/job-name"] == "e2e-clash"
    assert set(cluster.services("e2e-clash-scheduler-0")) == wanted
    for name in ("e2e-clash", "e2e-clash-scheduler-0"):
        cluster.delete("mxjob", name)


def test_deleting_a_job_collects_its_children(cluster: Cluster) -> None:
    cluster.apply(job("e2e-gc", {"Worker": replica(2)}))
    wait_for("pods", lambda: len(cluster.pods("e2e-gc")) == 2, 60)
    cluster.delete("mxjob", "e2e-gc")
    wait_for(
        "pods collected", lambda: not cluster.pods("e2e-gc") and not cluster.services("e2e-gc"), 90
    )


def test_every_generated_child_passes_server_side_dry_run(cluster: Cluster) -> None:
    replicas = {"Scheduler": replica(1), "Server": replica(2), "Worker": replica(2)}
    body = request(job("e2e-dry", replicas))
    body["parent"]["metadata"].update(
        namespace="default", uid="dry-run-uid", creationTimestamp="2026-01-01T00:00:00Z"
    )
    for child in sync(parse_request(body), NOW).children:
        proc = cluster.kubectl(
            "apply",
            "--dry-run=server",
            "-n",
            "default",
            "-f",
            "-",
            stdin=json.dumps(child),
            check=False,
        )
        assert proc.returncode == 0, f"{child['kind']} {child['metadata']['name']}: {proc.stderr}"


def test_quiet_job_is_not_rewritten(cluster: Cluster) -> None:
    cluster.apply(job("e2e-quiet", {"Worker": replica(2)}))
    cluster.wait_condition("e2e-quiet", "Running")
    time.sleep(3)
    before = cluster.get("mxjob", "e2e-quiet")["metadata"]["resourceVersion"]  # type: ignore[index]
    time.sleep(10)
    after = cluster.get("mxjob", "e2e-quiet")["metadata"]["resourceVersion"]  # type: ignore[index]
    assert before == after, "the job's status keeps changing: Metacontroller would loop"

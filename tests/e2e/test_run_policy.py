"""docs/run-policy.md on a real control plane: deadline, suspend/resume, cleanPodPolicy, TTL
deletion."""

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.builders import replica
from tests.e2e.conftest import Cluster, wait_for
from tests.e2e.test_lifecycle import job


def state(cluster: Cluster, name: str) -> str:
    return (cluster.condition(name) or ("",))[0]


def set_suspend(cluster: Cluster, name: str, *, suspend: bool) -> None:
    patch = {"spec": {"runPolicy": {"suspend": suspend}}}
    cluster.kubectl(
        "patch", "mxjob", name, "-n", "default", "--type=merge", "-p", json.dumps(patch)
    )


def test_active_deadline_fails_the_job_and_removes_every_pod(cluster: Cluster) -> None:
    cluster.apply(job("e2e-deadline", {"Worker": replica(2)}, activeDeadlineSeconds=5))
    wait_for("pods", lambda: len(cluster.pods("e2e-deadline")) == 2, 60)
    _, reason, _ = cluster.wait_condition("e2e-deadline", "Failed")
    assert reason == "DeadlineExceeded"
    wait_for("every pod removed", lambda: not cluster.pods("e2e-deadline"), 60)


def test_suspend_removes_pods_and_resume_brings_them_back(cluster: Cluster) -> None:
    cluster.apply(job("e2e-suspend", {"Worker": replica(2)}))
    cluster.wait_condition("e2e-suspend", "Running")
    set_suspend(cluster, "e2e-suspend", suspend=True)
    cluster.wait_condition("e2e-suspend", "Suspended")
    wait_for(
        "no pods",
        lambda: not cluster.pods("e2e-suspend") and not cluster.services("e2e-suspend"),
        60,
    )
    set_suspend(cluster, "e2e-suspend", suspend=False)
    wait_for("pods back", lambda: len(cluster.pods("e2e-suspend")) == 2, 60)
    cluster.wait_condition("e2e-suspend", "Running")
    obj: Any = cluster.get("mxjob", "e2e-suspend")
    suspended = next(c for c in obj["status"]["conditions"] if c["type"] == "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("False", "MXJobResumed")


def _run_to_success(cluster: Cluster, name: str, policy: str) -> None:
    cluster.apply(
        job(
            name,
            {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(1)},
            cleanPodPolicy=policy,
        )
    )
    wait_for("Running", lambda: state(cluster, name) == "Running", 90)
    for pod in (f"{name}-scheduler-0", f"{name}-worker-0"):
        cluster.stack.terminate_pod("default", pod, 0)
    wait_for("Succeeded", lambda: state(cluster, name) == "Succeeded", 60)


def test_clean_pod_policy_all_removes_every_pod(cluster: Cluster) -> None:
    _run_to_success(cluster, "e2e-clean-all", "All")
    wait_for(
        "no pods",
        lambda: not cluster.pods("e2e-clean-all") and not cluster.services("e2e-clean-all"),
        60,
    )


def test_clean_pod_policy_none_keeps_every_pod(cluster: Cluster) -> None:
    _run_to_success(cluster, "e2e-clean-none", "None")
    wait_for("a settled status", lambda: cluster.get("mxjob", "e2e-clean-none"), 10)
    assert len(cluster.pods("e2e-clean-none")) == 3
    assert len(cluster.services("e2e-clean-none")) == 3


# The local stack's kubeconfig skips TLS verification of its throw-away serving certificate.
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_ttl_component_deletes_a_finished_job(cluster: Cluster) -> None:
    from mxjob.ttl.controller import connect, run_once  # noqa: PLC0415

    _run_to_success(cluster, "e2e-ttl", "Running")
    cluster.apply(job("e2e-ttl-running", {"Worker": replica(1)}, ttlSecondsAfterFinished=0))
    cluster.kubectl(
        "patch",
        "mxjob",
        "e2e-ttl",
        "-n",
        "default",
        "--type=merge",
        "-p",
        '{"spec":{"runPolicy":{"ttlSecondsAfterFinished":0}}}',
    )
    api = connect(str(cluster.stack.kubeconfig))
    sweep = run_once(api, datetime.now(UTC), namespace="default")
    deleted = {ref.name for ref in sweep.deleted}
    assert "e2e-ttl" in deleted
    assert "e2e-ttl-running" not in deleted
    wait_for(
        "job and pods gone",
        lambda: cluster.get("mxjob", "e2e-ttl") is None and not cluster.pods("e2e-ttl"),
        60,
    )


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_ttl_component_keeps_a_refused_job_while_its_pods_run(cluster: Cluster) -> None:
    """A running job edited into a spec the hook refuses keeps its pods, and so the TTL component
    keeps the job: refused, it has no completionTime until its last pod has ended; the TTL then
    counts from that moment (docs/run-policy.md#ttlsecondsafterfinished)."""
    from mxjob.ttl.controller import connect, run_once  # noqa: PLC0415

    name = "e2e-ttl-refused"
    cluster.apply(job(name, {"Worker": replica(1)}, ttlSecondsAfterFinished=3600))
    cluster.wait_condition(name, "Running")
    stored = cluster.get("mxjob", name) or {}
    containers = stored["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    containers[0]["env"] = "A=1"  # past the schema, refused by the hook (test_admission.py)
    patch = {
        "spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {"containers": containers}}}}}
    }
    cluster.kubectl(
        "patch", "mxjob", name, "-n", "default", "--type=merge", "-p", json.dumps(patch)
    )
    _, reason, _ = cluster.wait_condition(name, "Failed")
    assert reason == "MXJobInvalidSpec"
    api = connect(str(cluster.stack.kubeconfig))
    later = datetime.now(UTC) + timedelta(hours=2)
    status = cluster.status(name)
    assert "completionTime" not in status and status["replicaStatuses"]["Worker"]["active"] == 1
    sweep = run_once(api, later, namespace="default")
    assert name not in {ref.name for ref in sweep.deleted}
    assert len(cluster.pods(name)) == 1 and cluster.get("mxjob", name) is not None
    cluster.stack.terminate_pod("default", f"{name}-worker-0", 0)
    wait_for("a completionTime", lambda: cluster.status(name).get("completionTime"), 60)
    sweep = run_once(api, later, namespace="default")
    assert name in {ref.name for ref in sweep.deleted}
    cluster.wait_gone("mxjob", name)


def test_a_template_edit_reaches_only_the_pods_made_after_it(cluster: Cluster) -> None:
    """An image edited on a running job changes no running pod and restarts nothing; a Worker
    replaced afterwards runs the new image (docs/restarts.md#resizing)."""
    name = "e2e-template-edit"
    cluster.apply(job(name, {"Worker": replica(2, "ExitCode")}))
    cluster.wait_condition(name, "Running")
    before = {n: p["metadata"]["uid"] for n, p in cluster.pods(name).items()}
    patch = [
        {
            "op": "replace",
            "path": "/spec/mxReplicaSpecs/Worker/template/spec/containers/0/image",
            "value": "mxjob/mxnet:gpu-fixed",
        }
    ]
    cluster.kubectl("patch", "mxjob", name, "-n", "default", "--type=json", "-p", json.dumps(patch))

    def seen() -> bool:
        obj = cluster.get("mxjob", name) or {}
        generation = obj.get("metadata", {}).get("generation")
        return (
            generation is not None and obj.get("status", {}).get("observedGeneration") == generation
        )

    wait_for("the edit synced", seen, 60)
    pods = cluster.pods(name)
    assert {n: p["metadata"]["uid"] for n, p in pods.items()} == before
    assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"mxjob/mxnet:gpu"}
    assert state(cluster, name) == "Running"
    cluster.stack.terminate_pod("default", f"{name}-worker-1", 137)
    replaced = cluster.wait_pods(name, {f"{name}-worker-1-r1"})[f"{name}-worker-1-r1"]
    assert replaced["spec"]["containers"][0]["image"] == "mxjob/mxnet:gpu-fixed"
    cluster.delete("mxjob", name)


RUN = "mxjob.kubeflow.org/run"


def _workers(cluster: Cluster, name: str, count: int) -> None:
    patch = {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": count}}}}
    cluster.kubectl(
        "patch", "mxjob", name, "-n", "default", "--type=merge", "-p", json.dumps(patch)
    )


def _run(cluster: Cluster, name: str, run: str, count: int) -> list[dict[str, Any]] | None:
    """The pods of one run, once there are `count`."""
    pods = [p for p in cluster.pods(name).values() if p["metadata"]["labels"].get(RUN) == run]
    return pods if len(pods) == count else None


def _created(pod: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(pod["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def test_an_edit_of_a_run_an_edit_started_waits_and_says_until_when(cluster: Cluster) -> None:
    """Workers 1 -> 2 restarts the job at once (run 1); 2 -> 1 a few seconds into run 1 waits
    until run 1 has run 30 s, the condition saying until when, and Metacontroller syncs the job
    again then (resyncAfterSeconds): run 2 is made at 1 Worker, not before
    (docs/restarts.md#edits-in-a-row)."""
    name = "e2e-edits"
    replicas = {r: replica(1, "ExitCode") for r in ("Scheduler", "Server", "Worker")}
    cluster.apply(job(name, replicas))
    cluster.wait_condition(name, "Running")
    _workers(cluster, name, 2)
    run_one = wait_for("run 1 at 2 Workers", lambda: _run(cluster, name, "1", 4), 90)
    _workers(cluster, name, 1)  # at once: the wait runs from run 1's first pod

    def waiting() -> str | None:
        message = (cluster.condition(name) or ("", "", ""))[2]
        return message if "restarts the whole job at" in message else None

    message = wait_for("the edit's wait in the condition", waiting, 60)
    found = re.search(r"restarts the whole job at (\S+Z):", message)
    assert found is not None, message
    until = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
    assert until == min(map(_created, run_one)) + timedelta(seconds=30), message
    run_two = wait_for("run 2 at 1 Worker", lambda: _run(cluster, name, "2", 3), 120)
    late = (min(map(_created, run_two)) - until).total_seconds()
    assert late >= 0, (until, run_two)
    print(f"\nedits in a row: run 2 made {late:.0f}s after run 1's 30 s wait ended")
    status = cluster.status(name)
    assert sum(s.get("restarts", 0) for s in status["replicaStatuses"].values()) == 0, status
    cluster.delete("mxjob", name)

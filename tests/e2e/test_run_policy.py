"""docs/run-policy.md on a real control plane: deadline, suspend/resume, cleanPodPolicy, TTL
deletion."""

import json
from datetime import UTC, datetime
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
    from ttl.controller import connect, run_once  # noqa: PLC0415

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

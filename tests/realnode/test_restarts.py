"""Restarts proven with real processes: a killed MXNet process, and what the job does about it.

Each test prints the measured times (kill → replacement running → job Succeeded), so a run's
log carries the figures the docs quote.
"""

import time
from typing import Any

from tests.e2e.conftest import wait_for
from tests.realnode.conftest import Node, mxjob, replica

ROUNDS = {"ROUNDS": "30", "ROUND_SECONDS": "0.5"}


def exit_code_job(cluster: Node, name: str, **spec: Any) -> dict[str, Any]:
    image = cluster.image("mxjob-mxnet")
    return mxjob(
        name,
        {
            "Scheduler": replica(image, policy="ExitCode", env=ROUNDS),
            "Server": replica(image, policy="ExitCode", env=ROUNDS),
            "Worker": replica(image, replicas=2, policy="ExitCode", env=ROUNDS),
        },
        **spec,
    )


def test_killed_worker_is_replaced_and_every_worker_finishes(cluster: Node) -> None:
    cluster.apply(exit_code_job(cluster, "phoenix"))
    cluster.wait_log("phoenix-worker-1", "round 5 ok", timeout=180)
    killed = time.monotonic()
    cluster.kill("phoenix-worker-1")
    pods = cluster.wait_pods("phoenix", {"phoenix-worker-1-r1"})
    assert pods["phoenix-worker-1"]["status"]["phase"] == "Failed"
    cluster.wait_log("phoenix-worker-1-r1", "starts at round", timeout=120)
    rejoined = time.monotonic() - killed
    cluster.wait_condition("phoenix", "Succeeded", timeout=180)
    done = time.monotonic() - killed
    for pod in ("phoenix-worker-0", "phoenix-worker-1-r1"):
        assert "finished 30 rounds" in cluster.logs(pod), cluster.logs(pod)
    status = cluster.status("phoenix")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 1
    print(
        f"\nworker SIGKILL: replacement joined after {rejoined:.1f}s, Succeeded after {done:.1f}s"
    )
    cluster.delete("mxjob", "phoenix")


def test_backoff_limit_zero_fails_the_job_on_the_first_kill(cluster: Node) -> None:
    cluster.apply(exit_code_job(cluster, "fragile", runPolicy={"backoffLimit": 0}))
    cluster.wait_log("fragile-worker-0", "round 2 ok", timeout=180)
    cluster.kill("fragile-worker-0")
    _, reason, message = cluster.wait_condition("fragile", "Failed", timeout=120)
    assert reason == "BackoffLimitExceeded", message
    # Failed jobs clean up Running pods (cleanPodPolicy Running): nothing keeps training.
    wait_for(
        "no pod left running",
        lambda: all(p["status"]["phase"] != "Running" for p in cluster.pods("fragile").values()),
        90,
    )
    cluster.delete("mxjob", "fragile")


def test_killed_server_restarts_the_whole_job_once(cluster: Node) -> None:
    cluster.apply(exit_code_job(cluster, "reborn"))
    cluster.wait_log("reborn-worker-0", "round 5 ok", timeout=180)
    killed = time.monotonic()
    cluster.kill("reborn-server-0")
    _, _, message = cluster.wait_condition("reborn", "Restarting", timeout=60)
    assert "Server replica 0" in message
    assert "restarting the whole job" in message

    def next_run() -> dict[str, Any] | None:
        pods = cluster.pods("reborn")
        run = {
            name: pod
            for name, pod in pods.items()
            if pod["metadata"].get("annotations", {}).get("mxjob.kubeflow.org/run") == "1"
        }
        return run if len(run) == 4 and len(pods) == 4 else None

    run = wait_for("every replica of run 1, and nothing of run 0", next_run, 180)
    recreated = time.monotonic() - killed
    cluster.wait_condition("reborn", "Succeeded", timeout=180)
    done = time.monotonic() - killed
    workers = [name for name in run if "-worker-" in name]
    assert len(workers) == 2
    for pod in workers:
        log = cluster.logs(pod)
        assert "starts at round 0" in log, log
        assert "finished 30 rounds" in log, log
    status = cluster.status("reborn")
    restarts = sum(s.get("restarts", 0) for s in status["replicaStatuses"].values())
    assert restarts == 1, status["replicaStatuses"]
    print(f"\nserver SIGKILL: next run created after {recreated:.1f}s, Succeeded after {done:.1f}s")

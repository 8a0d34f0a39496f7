"""Restarts proven with real processes: a killed MXNet process, and what the job does about it.

Each test prints the measured times (kill → replacement running → job Succeeded), so a run's
log carries the figures the docs quote.
"""

import time
from datetime import datetime, timedelta
from typing import Any

from tests.e2e.conftest import NAMESPACE, Watch, wait_for
from tests.realnode.conftest import Node, mxjob, replica

ROUNDS = {"ROUNDS": "30", "ROUND_SECONDS": "0.5"}
#: The label a pod of run 1 and later carries (docs/restarts.md#whole-job-restarts).
RUN_LABEL = "mxjob.kubeflow.org/run"


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


def cluster_checked(cluster: Node, pod: str) -> str:
    """The line the cluster check wrote first in the pod's log (workloads/cluster_check.py): that
    MX_CONFIG and DMLC_* agree, or what differs (and the process exited 3)."""

    def line() -> str | None:
        said = [ln for ln in cluster.logs(pod).splitlines() if ln.startswith("cluster check")]
        return said[0] if said else None

    return wait_for(f"the cluster check in the log of {pod}", line, 120)


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


def test_deleted_worker_rejoins_after_ps_lite_declared_it_dead(cluster: Node) -> None:
    """`kubectl delete pod` of a running Worker under ExitCode, the case that hung for ever when
    the new process came up inside ps-lite's heartbeat timeout: its rejoin wait holds the new
    process back until timeout + 3 s after the old one ended, it joins, the job succeeds."""
    cluster.apply(exit_code_job(cluster, "lazarus"))
    cluster.wait_log("lazarus-worker-1", "round 5 ok", timeout=180)
    old_uid = (cluster.get("pod", "lazarus-worker-1") or {})["metadata"]["uid"]
    watch = Watch(cluster, "pod", "lazarus-worker-1")
    deleted = time.monotonic()
    cluster.kubectl("delete", "pod", "-n", NAMESPACE, "lazarus-worker-1", "--wait=false")
    cluster.wait_condition("lazarus", "Succeeded", timeout=240)
    done = time.monotonic() - deleted
    versions = watch.stop()
    finished = [
        s["state"]["terminated"]["finishedAt"]
        for version in versions
        if version["metadata"]["uid"] == old_uid
        for s in version.get("status", {}).get("containerStatuses", [])
        if s["name"] == "mxnet" and "terminated" in s["state"]
    ]
    assert finished, "the watch never saw the deleted Worker's container end"
    # The hook lists `-r1` if it saw the old pod Failed, or the same name again if the pod was
    # gone first (docs/restarts.md): either way one new pod, and it waited before it started.
    pods = cluster.pods("lazarus")
    (new,) = [
        p
        for name, p in pods.items()
        if name.startswith("lazarus-worker-1") and p["metadata"]["uid"] != old_uid
    ]
    name = new["metadata"]["name"]
    (main,) = new["status"]["containerStatuses"]
    (wait,) = new["status"]["initContainerStatuses"]
    assert wait["name"] == "mxjob-rejoin-wait" and wait["state"]["terminated"]["exitCode"] == 0
    started = _time(main["state"]["terminated"]["startedAt"])
    assert started >= _time(finished[-1]) + timedelta(seconds=5), (finished[-1], started)
    log = cluster.logs(name)
    assert "finished 30 rounds" in log, log
    assert "finished 30 rounds" in cluster.logs("lazarus-worker-0")
    attempt = new["metadata"]["annotations"]["mxjob.kubeflow.org/attempt"]
    assert f"this process is run 0, attempt {attempt}" in log, log
    status = cluster.status("lazarus")
    print(
        f"\nworker deleted: old container finished {finished[-1]}, new pod {name} (attempt"
        f" {attempt}) process started {started:%X}, Succeeded {done:.1f}s after the delete;"
        f" restarts counted {status['replicaStatuses']['Worker']['restarts']}"
    )
    cluster.delete("mxjob", "lazarus")


def test_a_running_job_resized_restarts_at_the_new_size_and_every_worker_finishes(
    cluster: Node,
) -> None:
    """`Worker.replicas` edited from 2 to 3 while a real MXNet job trains: a whole-job restart,
    not counted, into a run where every process was started with 3 Workers (ps-lite fixes the
    membership at start: a Worker added beside the old ones would fail the job), in its
    DMLC_* variables and in its MX_CONFIG alike (each process's cluster check, which read 2
    Workers in MX_CONFIG before each run had a config of its own); all 3 Workers finish their
    rounds, each pulling the sum of 3 pushes (docs/restarts.md#resizing)."""
    cluster.apply(exit_code_job(cluster, "grown"))
    cluster.wait_log("grown-worker-1", "round 5 ok", timeout=180)
    edited = time.monotonic()
    patch = '{"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3}}}}'
    cluster.kubectl("patch", "mxjob", "grown", "-n", NAMESPACE, "--type=merge", "-p", patch)
    _, _, message = cluster.wait_condition("grown", "Restarting", timeout=60)
    assert "resized from 2 to 3 Workers" in message, message

    def next_run() -> set[str] | None:
        pods = cluster.pods("grown")
        run = {n for n, p in pods.items() if p["metadata"]["labels"].get(RUN_LABEL) == "1"}
        return run if len(run) == 5 and len(pods) == 5 else None

    run = wait_for("every replica of run 1 at the new size, nothing of run 0", next_run, 180)
    recreated = time.monotonic() - edited
    for pod in sorted(run):  # before the Server goes with the job's cleanup
        role, index, _ = pod.removeprefix("grown-").split("-")
        agreed = f"MX_CONFIG agrees with DMLC_*: 1 scheduler, 1 server, 3 worker ({role} {index})"
        assert cluster_checked(cluster, pod) == f"cluster check: {agreed}"
    cluster.wait_condition("grown", "Succeeded", timeout=240)
    done = time.monotonic() - edited
    workers = sorted(n for n in run if "-worker-" in n)
    assert len(workers) == 3, run
    for pod in workers:
        log = cluster.logs(pod)
        assert "/3 (dist_sync) starts at round 0" in log, log
        assert "pulled the sum of 3 pushes" in log and "finished 30 rounds" in log, log
    status = cluster.status("grown")
    assert sum(s.get("restarts", 0) for s in status["replicaStatuses"].values()) == 0, status
    print(
        f"\nresized 2 -> 3 Workers: run 1 made {recreated:.1f}s after the edit,"
        f" Succeeded {done:.1f}s after it"
    )
    cluster.delete("mxjob", "grown")


def test_kubectl_delete_pod_under_never_fails_the_job_at_its_deletion(cluster: Node) -> None:
    """`kubectl delete pod` of a training Worker under restartPolicy Never, with its grace
    period (MXNet ignores SIGTERM: the pod ends 5 s later) and with `--grace-period=1`: both
    jobs fail, saying the Worker was deleted, dated by the deletion, not by the container's end,
    and no Worker is made again (docs/restarts.md#deleted-pods)."""
    image = cluster.image("mxjob-mxnet")
    jobs = {"deleted-slow": [], "deleted-fast": ["--grace-period=1"]}
    for name in jobs:
        cluster.apply(
            mxjob(
                name,
                {
                    "Scheduler": replica(image, env=ROUNDS),
                    "Server": replica(image, env=ROUNDS),
                    "Worker": replica(image, replicas=2, env=ROUNDS),
                },
            )
        )
    for name, flags in jobs.items():
        pod = f"{name}-worker-1"
        cluster.wait_log(pod, "round 3 ok", timeout=180)
        old = (cluster.get("pod", pod) or {})["metadata"]["uid"]
        watch = Watch(cluster, "pod", pod)
        cluster.kubectl("delete", "pod", "-n", NAMESPACE, pod, "--wait=false", *flags)
        _, reason, message = cluster.wait_condition(name, "Failed", timeout=120)
        versions = watch.stop()
        assert reason == "MXJobFailed"
        assert f"Worker replica 1 (pod {pod}) was deleted, which restartPolicy Never" in message
        meta = next(v["metadata"] for v in versions if v["metadata"].get("deletionTimestamp"))
        asked = _time(meta["deletionTimestamp"]) - timedelta(
            seconds=meta["deletionGracePeriodSeconds"]
        )
        failed = next(c for c in cluster.status(name)["conditions"] if c["type"] == "Failed")
        assert _time(failed["lastTransitionTime"]) == asked, (failed, meta)
        again = [
            p for n, p in cluster.pods(name).items()
            if n.startswith(pod) and p["metadata"]["uid"] != old
        ]  # fmt: skip
        assert again == [], again
        print(f"\n{name}: Failed as deleted at {asked:%X} ({' '.join(flags) or 'grace 5 s'})")
        cluster.delete("mxjob", name)


def test_the_kubelet_restarts_a_failed_container_inside_the_rejoin_wait(cluster: Node) -> None:
    """Why ps-lite jobs get pod restartPolicy Never (docs/restarts.md): measured, the kubelet
    restarts a failed container in place sooner than finishedAt + 2 s + 3 s, the moment a
    replaced Worker may register. Prints the gaps of the first restarts."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "in-place", "namespace": NAMESPACE},
        "spec": {
            "restartPolicy": "OnFailure",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "fails",
                    "image": cluster.image("mxjob-base"),
                    "command": ["sh", "-c", "sleep 2; exit 1"],
                }
            ],
        },
    }
    cluster.apply(pod)
    wait_for("the pod", lambda: cluster.get("pod", "in-place"), 30)
    watch = Watch(cluster, "pod", "in-place")
    try:
        wait_for(
            "two restarts in place",
            lambda: _restarts(cluster.get("pod", "in-place") or {}) >= 2,
            120,
        )
    finally:
        versions = watch.stop()
        cluster.kubectl("delete", "pod", "in-place", "-n", NAMESPACE, "--wait=false")
    gaps: dict[int, float] = {}
    for version in versions:
        for status in version.get("status", {}).get("containerStatuses", []):
            ended = status.get("lastState", {}).get("terminated", {}).get("finishedAt")
            started = status.get("state", {}).get("running", {}).get("startedAt")
            if ended and started:
                gap = (_time(started) - _time(ended)).total_seconds()
                gaps.setdefault(status["restartCount"], gap)
    print(f"\nkubelet in-place restarts: seconds from exit to the next start by restart: {gaps}")
    assert 1 in gaps, versions
    assert gaps[1] < 5, gaps


def _restarts(pod: dict[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod.get("status", {}).get("containerStatuses", []))


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

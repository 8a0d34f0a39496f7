"""Progress and the stall watchdog with real MXNet 1.9.1 processes (docs/status.md#progress,
docs/run-policy.md#progressdeadlineseconds): a stock `Module.fit` script with Speedometer
(workloads/fit.py), read by the progress component the install runs; a Server or a Worker
stopped with SIGSTOP from the host, which no process of the job notices.

Each test prints what it measured (first Speedometer line to the status, last report to the
restart), so a run's log carries the figures the docs quote.
"""

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from hooks.core.public import ANNOTATION_PROGRESS
from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import Node, mxjob, replica

MXJOB = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "mxjob"
FIT = ["python", "/workloads/fit.py"]
#: The progress component's pass interval (the install's PROGRESS_INTERVAL_SECONDS).
INTERVAL = 10
#: The progress deadline of these jobs: between two reports (their startup, which takes far
#: longer under the CI's load, is not judged: no firstProgressDeadlineSeconds).
DEADLINE = 30
#: Metacontroller's resync of every MXJob (metacontroller/base/compositecontroller.yaml).
RESYNC_SECONDS = 60
#: Four epochs of 40 batches of at least 0.2 s: about 8 s an epoch, a report every second. Not
#: 10 s an epoch: the component's passes (every 10 s) then fell, epoch after epoch, just after
#: an epoch's end, whose line is the newest for the 2.5 s before the next batch line.
EPOCHS = {"MXJOB_EPOCHS": "4", "BATCHES": "40", "FREQUENT": "5", "BATCH_SECONDS": "0.2"}


def fit_job(cluster: Node, name: str, **run_policy: Any) -> dict[str, Any]:
    """Scheduler, Server and two Workers running fit.py in dist_sync, with a progress
    deadline of DEADLINE seconds."""
    image = cluster.image("mxjob-mxnet")
    return mxjob(
        name,
        {
            "Scheduler": replica(image, command=FIT, env=EPOCHS),
            "Server": replica(image, command=FIT, env=EPOCHS),
            "Worker": replica(image, replicas=2, command=FIT, env=EPOCHS),
        },
        runPolicy={"progressDeadlineSeconds": DEADLINE, **run_policy},
    )


def progress(cluster: Node, job: str) -> dict[str, Any]:
    return dict(cluster.status(job).get("progress") or {})


def first_report(cluster: Node, pod: str) -> datetime:
    """When the kubelet received the first Speedometer line of the pod's log."""
    for stamp, text in cluster.stamped_log(pod):
        if "Speed:" in text:
            return stamp
    raise AssertionError(f"no Speedometer line in the log of {pod}")


@dataclass
class Seen:
    """When the test first saw a Worker's progress annotation and the job's status.progress."""

    noted: datetime | None = None
    shown: datetime | None = None
    batch: int | None = None


def watch_first_report(cluster: Node, job: str, timeout: float) -> Seen:
    """Poll the job's Worker pods and its status until status.progress shows a batch, noting
    when each step of the path first showed the report (component -> pod -> hook -> status)."""
    seen = Seen()

    def shown() -> bool:
        if seen.noted is None:
            pods = cluster.pods(job)
            notes = [
                (p["metadata"].get("annotations") or {}).get(ANNOTATION_PROGRESS, "")
                for name, p in pods.items()
                if "-worker-" in name
            ]
            if any('"report"' in note for note in notes):
                seen.noted = datetime.now().astimezone()
        seen.batch = progress(cluster, job).get("batch")
        if seen.batch is not None:
            seen.shown = datetime.now().astimezone()
            seen.noted = seen.noted or seen.shown
        return seen.batch is not None

    wait_for("a batch in the status", shown, timeout)
    return seen


def test_progress_shows_in_kubectl_get_and_mxjob_describe(cluster: Node) -> None:
    cluster.apply(fit_job(cluster, "shown"))
    # A bound on liveness, not a goal (the lag is printed): warm run 24 (2026-12-07) passed 120 s
    # with no report shown, beside an in-place restart whose MXNet took 50 s to start.
    seen = watch_first_report(cluster, "shown", 300)
    assert seen.noted is not None and seen.shown is not None
    started = max(
        datetime.fromisoformat(c["state"]["running"]["startedAt"].replace("Z", "+00:00"))
        for p in cluster.pods("shown").values()
        for c in p["status"]["containerStatuses"]
        if "running" in c["state"]
    )
    first = min(first_report(cluster, f"shown-worker-{i}") for i in (0, 1))
    lag = (seen.shown - first).total_seconds()
    print(
        f"\nlast replica running to the first Speedometer line: "
        f"{(first - started).total_seconds():.1f}s; that line to the pod's note: "
        f"{(seen.noted - first).total_seconds():.1f}s, to status.progress: {lag:.1f}s "
        f"(batch {seen.batch})"
    )
    if lag > 2 * INTERVAL:  # past issue 38's aim: say where the time went
        passes = cluster.kubectl(
            "logs", "-n", "mxjob-system", "deploy/mxjob-progress", "--timestamps",
            "--since=3m", check=False,
        ).stdout  # fmt: skip
        print("the progress component's last passes:\n" + passes[-6000:])
    listed = cluster.kubectl("get", "mxjob", "shown", "-n", NAMESPACE).stdout.splitlines()
    head, row = listed[0].split(), listed[1].split()
    columns = dict(zip(head, row, strict=True))
    assert columns["EPOCH"].isdigit() and columns["BATCH"].isdigit(), listed
    assert float(columns["SPEED"]) > 0, listed
    described = subprocess.run(
        [str(MXJOB), "describe", "shown", "-n", NAMESPACE],
        env={**os.environ, "KUBECONFIG": str(cluster.stack.kubeconfig)},
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "Progress:    epoch " in described and " samples/s" in described, described
    # Before Metacontroller's resync could have brought it: the pod's note, not the resync,
    # carries the report into the status. Issue 38 aimed at two pass intervals (20 s), which
    # loaded warm runs met at 3.4-7.7 s but twice missed at 29 s (the note in 9-10 s, then the
    # sync 20 s behind): as a bound that is a timed assertion, which flakes on a shared
    # machine; the lag is printed above and kept in docs/testing.md instead.
    assert lag < RESYNC_SECONDS, f"status.progress came {lag:.1f}s after the first report"
    cluster.wait_condition("shown", "Succeeded", timeout=240)
    final = progress(cluster, "shown")  # MXJOB_EPOCHS 4: the percent done is shown
    assert 0 <= final["percent"] <= 100 and final["replicaType"] == "Worker", final
    cluster.delete("mxjob", "shown")


def _stalled(cluster: Node, job: str, pod: str) -> None:
    """Stop `pod`'s process after the first epoch ended; the job is restarted whole within
    DEADLINE + 15 s of its last report, and succeeds on its next run."""
    cluster.apply(fit_job(cluster, job))
    wait_for("the first epoch done", lambda: progress(cluster, job).get("epoch", 0) >= 1, 180)
    pid = cluster.pid(pod)
    os.kill(pid, signal.SIGSTOP)
    try:
        _, _, message = cluster.wait_condition(job, "Restarting", timeout=DEADLINE + 90)
        decided = datetime.now().astimezone()
        stamp = progress(cluster, job)["lastReportTime"]
        last = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    finally:
        os.kill(pid, signal.SIGCONT)  # whatever happened, leave no stopped process behind
    assert f"no progress from any Worker for {DEADLINE} s" in message, message
    took = (decided - last).total_seconds()
    print(f"\n{pod} stopped: restarted {took:.1f}s after the last report (deadline {DEADLINE}s)")
    assert took <= DEADLINE + 15, message
    cluster.wait_condition(job, "Succeeded", timeout=300)
    status = cluster.status(job)
    assert status["replicaStatuses"]["Worker"]["restarts"] == 1, status
    cluster.delete("mxjob", job)


def test_a_stopped_server_is_seen_and_the_job_restarted_whole(cluster: Node) -> None:
    _stalled(cluster, "frozen-server", "frozen-server-server-0")


def test_a_stopped_worker_is_seen_and_the_job_restarted_whole(cluster: Node) -> None:
    _stalled(cluster, "frozen-worker", "frozen-worker-worker-1")


def test_a_stall_fails_the_job_under_an_onstall_rule(cluster: Node) -> None:
    rules = {"rules": [{"name": "hung", "action": "FailJob", "onStall": {}}]}
    cluster.apply(fit_job(cluster, "hung", failurePolicy=rules))

    def reported() -> str | None:
        if progress(cluster, "hung").get("epoch") is not None:
            return "reported"
        found = cluster.condition("hung")
        return f"ended first: {found}" if found and found[0] in ("Succeeded", "Failed") else None

    assert wait_for("a report", reported, 180) == "reported"
    pid = cluster.pid("hung-server-0")
    os.kill(pid, signal.SIGSTOP)
    try:
        _, reason, message = cluster.wait_condition("hung", "Failed", timeout=DEADLINE + 90)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert reason == "ProgressDeadlineExceeded", message
    assert "no progress from any Worker" in message and 'rule "hung"' in message, message
    cluster.delete("mxjob", "hung")


#: Healthy single-Worker jobs, a few at a time, each under a 60 s deadline (300 s to its first
#: report).
HEALTHY, AT_ONCE = 20, 5


def test_healthy_jobs_are_never_called_stalled(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    env = {"KVSTORE": "local", "MXJOB_EPOCHS": "1", "BATCHES": "20", "BATCH_SECONDS": "0.1"}

    def one(index: int) -> str:
        name = f"healthy-{index}"
        job = mxjob(
            name,
            {"Worker": replica(image, command=FIT, env=env)},
            runPolicy={"progressDeadlineSeconds": 60, "firstProgressDeadlineSeconds": 300},
        )
        cluster.apply(job)

        def ended() -> tuple[str, str, str] | None:
            found = cluster.condition(name)
            return found if found is not None and found[0] in ("Succeeded", "Failed") else None

        kind, reason, _ = wait_for(f"{name} finished", ended, 300)
        conditions = cluster.status(name).get("conditions", [])
        cluster.delete("mxjob", name)
        said = [c["message"] for c in conditions if "no progress" in c.get("message", "")]
        return f"{name}: {kind} {reason}" + (f" STALLED: {said}" if said else "")

    began = time.monotonic()
    with ThreadPoolExecutor(AT_ONCE) as pool:
        results = list(pool.map(one, range(HEALTHY)))
    stalled = [r for r in results if "STALLED" in r or "Succeeded" not in r]
    print(
        f"\n{HEALTHY} healthy runs, {AT_ONCE} at a time, deadline 60s: {len(stalled)} stalled or"
        f" failed, in {time.monotonic() - began:.0f}s"
    )
    assert stalled == [], results

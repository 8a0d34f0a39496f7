"""Whole-job restarts in place on the real node (docs/restarts.md#in-place), with the install's
restarter component: a killed Server restarts the job; the Scheduler's and the Workers' pods
restart where they are (same UID and IP), the failed Server's pod is made again, and the job
runs again."""

import time

from tests.e2e.conftest import wait_for
from tests.realnode.conftest import WAITING, Node, mxjob, replica


def test_a_killed_server_restarts_the_others_in_place(cluster: Node) -> None:
    image = cluster.image("mxjob-base")

    def each(n: int = 1) -> dict:
        return replica(image, replicas=n, policy="ExitCode", command=WAITING)

    job = mxjob(
        "inplace",
        {"Scheduler": each(), "Server": each(), "Worker": each(2)},
        runPolicy={"restartStrategy": "InPlace"},
    )
    cluster.apply(job)
    before = wait_for("four pods running", lambda: _running(cluster, 4), 180)
    began = time.monotonic()
    cluster.kill("inplace-server-0")
    after = wait_for(
        "run 1 running",
        lambda: (r := _running(cluster, 4)) and "inplace-server-0-r1" in r and r,
        180,
    )
    took = time.monotonic() - began
    print(f"\nin place: every pod running again {took:.1f}s after the kill")
    for name in ("inplace-scheduler-0", "inplace-worker-0", "inplace-worker-1"):
        assert after[name] == before[name], name
    # The order goes from the status with the first sync that sees every pod run.
    status = wait_for(
        "the restart over",
        lambda: (s := cluster.status("inplace")) and "inPlaceRestart" not in s and s,
        60,
    )
    assert status["replicaStatuses"]["Server"]["restarts"] == 1, status
    assert status["conditions"][-1]["type"] == "Running", status["conditions"][-1]


def _running(cluster: Node, count: int) -> dict[str, tuple[str, str]] | None:
    """The job's running pods (uid, IP) once `count` run their mxnet container."""
    pods = cluster.pods("inplace")
    found = {
        name: (p["metadata"]["uid"], p["status"].get("podIP", ""))
        for name, p in pods.items()
        if any(
            c["name"] == "mxnet" and "running" in c.get("state", {})
            for c in p["status"].get("containerStatuses", [])
        )
    }
    return found if len(found) == count else None

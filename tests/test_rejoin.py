"""Rejoin harness (docs/testing.md, docs/restarts.md "Rejoining ps-lite"): real MXNet 1.9.1
processes with the hook's environment, on a cluster as fast as one can be
(`testsupport/process_cluster.py`: every pod the hook lists starts at once). Workers, Servers
and the Scheduler are SIGKILLed in the middle of `dist_sync` training, more than 20 times in
all; every job must succeed with every round's value checked, and no job may hang.

A control shows the harness can fail: the same kill with the pods' rejoin wait skipped.
"""

import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.required import unavailable
from testsupport.jobs import mxjob
from testsupport.process_cluster import ProcessCluster, free_port, run_job
from tools.cluster import mxnet_env
from tools.cluster.build import default_cache_dir

TRAIN = Path(__file__).parent / "realnode" / "workloads" / "train.py"
ROUNDS = {"ROUNDS": "40", "ROUND_SECONDS": "0.1"}
#: (rounds since the previous kill, slot) for each job: Workers replaced alone; Servers and the
#: Scheduler restart the whole job.
KILLS: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "workers-exitcode": (
        "ExitCode",
        [(3, "worker-1"), (3, "worker-0"), (3, "worker-1"), (3, "worker-0")] * 2,
    ),
    "workers-onfailure": (
        "OnFailure",
        [(3, "worker-0"), (3, "worker-1"), (3, "worker-0"), (3, "worker-1"), (3, "worker-1")],
    ),
    "every-role": (
        "ExitCode",
        [
            (3, "server-0"),
            (3, "worker-1"),
            (3, "scheduler-0"),
            (3, "worker-0"),
            (3, "server-0"),
            (3, "worker-1"),
            (3, "scheduler-0"),
            (3, "worker-0"),
            (3, "worker-1"),
        ],
    ),
}
REJOINED: list[float] = []


@pytest.fixture(scope="module")
def python() -> Path:
    found = mxnet_env.python(default_cache_dir())
    if found is None:
        reason = "no MXNet environment: run `python -m tools.cluster prepare` (make test does)"
        unavailable(reason)
    return found


def job(name: str, policy: str) -> dict[str, Any]:
    port = free_port()
    replica: dict[str, Any] = {
        "restartPolicy": policy,
        "template": {
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "mxnet",
                        "image": "mxjob-mxnet",
                        "command": ["python", str(TRAIN)],
                        "env": [{"name": k, "value": v} for k, v in ROUNDS.items()],
                        "ports": [{"name": "mxjob-port", "containerPort": port}],
                    }
                ],
            }
        },
    }
    replicas = {"Scheduler": replica, "Server": replica, "Worker": {**replica, "replicas": 2}}
    spec = mxjob(name=name, replicas={k: {"replicas": 1, **v} for k, v in replicas.items()})
    spec["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return spec


@pytest.mark.parametrize("case", sorted(KILLS))
def test_killed_processes_rejoin_and_the_job_succeeds(
    case: str, python: Path, tmp_path: Path
) -> None:
    policy, kills = KILLS[case]
    named = [(after, f"{case}-{slot}") for after, slot in kills]
    cluster = ProcessCluster(job(case, policy), python, tmp_path)
    outcome = run_job(cluster, named)
    logs = {p.name: p.read_text(errors="replace")[-2000:] for p in sorted(tmp_path.glob("*.log"))}
    assert not outcome.hung, f"{case} hung after killing {outcome.killed}: {logs}"
    assert outcome.condition == "Succeeded", (outcome, cluster.job["status"], logs)
    assert len(outcome.killed) == len(kills), outcome
    REJOINED.extend(outcome.rejoined)
    print(f"\n{case}: killed {outcome.killed}; rejoined after {outcome.rejoined}")


def test_the_harness_kills_every_role_more_than_20_times() -> None:
    """Runs after the jobs (pytest keeps file order): the kills planned, and the figure the
    docs quote once the jobs ran (kill to the first round of a process made after it)."""
    kills = [slot for _, plan in KILLS.values() for _, slot in plan]
    assert len(kills) >= 20
    assert {slot.rsplit("-", 1)[0] for slot in kills} == {"worker", "server", "scheduler"}
    if REJOINED:
        print(
            f"\nrejoin harness: {len(REJOINED)} kills, 0 hangs; kill to the next completed round:"
            f" min {min(REJOINED):.1f}s, median {statistics.median(REJOINED):.1f}s,"
            f" max {max(REJOINED):.1f}s"
        )


def test_control_without_the_rejoin_wait_a_replacement_hangs_the_job(
    python: Path, tmp_path: Path
) -> None:
    """The same kill with the pods' init containers skipped: the replacement registers
    before ps-lite has declared its predecessor dead, is dropped, and the job hangs."""
    cluster = ProcessCluster(job("control", "ExitCode"), python, tmp_path, bypass_wait=True)
    outcome = run_job(cluster, [(3, "control-worker-1")], hang_after=20, timeout=120)
    assert outcome.killed == ["control-worker-1"]
    assert outcome.hung, f"the control did not hang: {outcome}"

"""Rejoin harness (docs/testing.md, docs/restarts.md "Rejoining ps-lite"): real MXNet 1.9.1
processes with the hook's environment, on a cluster as fast as one can be
(`testsupport/process_cluster.py`: every pod the hook lists starts at once). Workers, Servers
and the Scheduler are SIGKILLed in the middle of `dist_sync` training, more than 20 times in
all; every job must succeed with every round's value checked, and no job may hang.

A control shows the harness can fail: the same kill with the pods' rejoin wait skipped.
"""

import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.required import unavailable
from testsupport.jobs import mxjob
from testsupport.process_cluster import ALONE, WHOLE_JOB, ProcessCluster, run_job
from tools.cluster import mxnet_env
from tools.cluster.build import default_cache_dir
from tools.ports import free_port

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
ROLE = re.compile(r"-(worker|server|scheduler)-[0-9]+(-r[0-9]+)?$")
#: What the jobs above did: every kill made, and how the job recovered from it, in how long.
KILLED: list[str] = []
RECOVERED: list[tuple[str, float]] = []


@pytest.fixture(scope="module")
def python() -> Path:
    found = mxnet_env.python(default_cache_dir())
    if found is None:
        reason = "no MXNet environment: run `python -m tools.cluster prepare` (make test does)"
        unavailable(reason)
    return found


def job(name: str, policy: str, env: dict[str, str] | None = None) -> dict[str, Any]:
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
                        "env": [
                            {"name": k, "value": v} for k, v in {**ROUNDS, **(env or {})}.items()
                        ],
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
    assert len(outcome.recovered) == len(kills), outcome
    KILLED.extend(outcome.killed)
    RECOVERED.extend(outcome.recovered)
    print(f"\n{case}: killed {outcome.killed}; recovered {outcome.recovered}")


def test_the_harness_killed_every_role_more_than_20_times() -> None:
    """Runs after the jobs (pytest keeps file order): what they did, not what they planned:
    at least 20 processes killed, of every role, each followed by training again, and the
    figures the docs quote (kill to the first round of a process made after it) for Workers
    rejoining alone and for whole-job restarts apart."""
    assert len(KILLED) >= 20, KILLED
    roles = {found[1] for n in KILLED if (found := ROLE.search(n))}
    assert roles == {"worker", "server", "scheduler"}, KILLED
    assert len(RECOVERED) == len(KILLED)
    lines = [f"rejoin harness: {len(KILLED)} kills, 0 hangs"]
    for kind in (ALONE, WHOLE_JOB):
        seconds = [s for k, s in RECOVERED if k == kind]
        assert seconds, f"no kill ended in {kind}: {RECOVERED}"
        lines.append(
            f"{kind}: {len(seconds)}, kill to the next completed round min {min(seconds):.1f}s,"
            f" median {statistics.median(seconds):.1f}s, max {max(seconds):.1f}s"
        )
    print("\n" + "; ".join(lines))


def test_control_without_the_rejoin_wait_a_replacement_hangs_the_job(
    python: Path, tmp_path: Path
) -> None:
    """The same kill with the pods' init containers skipped: the replacement registers
    before ps-lite has declared its predecessor dead, is dropped, and the job hangs. Its
    heartbeat timeout is 10 s, not 2, so that the replacement registers too early however long
    a loaded machine takes to start it (with 2 s, it once came 2.9 s after the kill, in time)."""
    slow = {"PS_HEARTBEAT_TIMEOUT": "10"}
    cluster = ProcessCluster(job("control", "ExitCode", slow), python, tmp_path, bypass_wait=True)
    outcome = run_job(cluster, [(3, "control-worker-1")], hang_after=20, timeout=120)
    assert outcome.killed == ["control-worker-1"]
    assert outcome.hung, f"the control did not hang: {outcome}"

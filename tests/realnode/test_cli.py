"""`mxjob submit --logs` and `mxjob logs` with a real kubelet and real MXNet (docs/cli.md): a
Worker raises an exception, the hook replaces it, and one command follows every replica's log
through the replacement to the job's end; the restart's message and Event quote the exception."""

import json
import os
import subprocess
import time
from pathlib import Path

from tests.e2e.conftest import MXJOB, NAMESPACE, wait_for
from tests.realnode.conftest import Node, mxjob, replica
from tests.realnode.test_events import job_events

EXCEPTION = "FloatingPointError: loss is nan at round 4"


def test_submit_follows_every_log_through_a_worker_replacement(
    cluster: Node, tmp_path: Path
) -> None:
    image = cluster.image("mxjob-mxnet")
    env = {"ROUNDS": "16", "ROUND_SECONDS": "0.3"}
    raising = {**env, "RAISE_IN": "relay-worker-1", "RAISE_AT_ROUND": "4"}
    job = mxjob(
        "relay",
        {
            "Scheduler": replica(image, env=env),
            "Server": replica(image, env=env),
            # OnFailure: the hook replaces a Worker that exits 1 (after the rejoin wait).
            "Worker": replica(image, replicas=2, policy="OnFailure", env=raising),
        },
    )
    path = tmp_path / "relay.json"
    path.write_text(json.dumps(job))
    started = time.monotonic()
    submitted = subprocess.run(
        [str(MXJOB), "submit", "-f", str(path), "--logs", "--timeout", "5m"],
        env={**os.environ, "KUBECONFIG": str(cluster.stack.kubeconfig)},
        capture_output=True, text=True, timeout=420, check=False,
    )  # fmt: skip
    took = time.monotonic() - started
    lines = submitted.stdout.splitlines()
    assert submitted.returncode == 0, (submitted.stdout[-3000:], submitted.stderr)
    assert lines[0] == f"mxjob/relay created in namespace {NAMESPACE}"
    assert lines[-1] == "mxjob/relay Succeeded"
    by_replica: dict[str, list[str]] = {}
    for line in lines[1:-1]:
        label, bar, text = line.partition(" | ")
        assert bar, line  # every log line carries its replica
        by_replica.setdefault(label.strip(), []).append(text)
    assert set(by_replica) >= {"worker-0", "worker-1", "worker-1-r1"}, set(by_replica)
    assert by_replica["worker-1"][-1] == EXCEPTION, by_replica["worker-1"][-5:]
    assert any("finished 16 rounds" in t for t in by_replica["worker-1-r1"])
    assert any("this process is run 0, attempt 1" in t for t in by_replica["worker-1-r1"])
    assert any("finished 16 rounds" in t for t in by_replica["worker-0"])

    status = cluster.status("relay")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 1
    assert status["lastFailure"]["pod"] == "relay-worker-1"
    assert status["lastFailure"]["message"].splitlines()[-1] == EXCEPTION
    restarts = wait_for(
        "the MXJobRestarting Event",
        lambda: [e for e in job_events(cluster, "relay") if e["reason"] == "MXJobRestarting"],
        60,
    )
    assert f'saying "{EXCEPTION}"' in restarts[0]["message"], restarts

    # Afterwards, without -f: the pods that still exist, the failed attempt among them.
    one = cluster.mxjob("logs", "relay", "--replica", "worker-1")
    assert one.returncode == 0, one.stderr
    labels = {line.split(" | ")[0].strip() for line in one.stdout.splitlines()}
    assert labels == {"worker-1", "worker-1-r1"}, labels
    assert f"worker-1    | {EXCEPTION}" in one.stdout
    every = cluster.mxjob("logs", "relay")
    assert {line.split(" | ")[0].strip() for line in every.stdout.splitlines()} >= {
        "worker-0",
        "worker-1",
        "worker-1-r1",
    }
    print(f"\ncli: submit --logs followed relay to Succeeded in {took:.1f}s, {len(lines)} lines")
    cluster.delete("mxjob", "relay")

"""`make bench-system`: one large MXJob through the whole system, on the KWOK tier.

A real kube-apiserver, controller-manager, scheduler and Metacontroller v4.17.2 (tools/cluster,
pods made Running at once by KWOK) and the hook under gunicorn (2 sync workers, as the
Deployment runs it) with the production CompositeController pointed at loopback. It applies one
job of `--replicas` replicas (1 Scheduler, 1 Server, the rest Workers) and reports:

- wall time from the MXJob's creation to its last pod Running (from the pods' own Ready
  transition times, so the polling interval does not blur it) and to the job's Running condition;
- the syncs the hook answered (by outcome, 304s included) and their request bytes;
- CPU seconds of the hook (gunicorn master and workers), Metacontroller and kube-apiserver over
  the same interval, and their ratios;
- then, with the job quiet, `--quiet` seconds of Metacontroller's periodic resyncs: how many
  were answered 304 from its ETag cache (hooks/etag.py) instead of decided again.

The numbers for docs/performance.md come from this run. About 3-5 minutes (once the stack's
binaries are built; a cold build takes ~25 minutes and prints its progress).

    python -m bench.system [--replicas 1000] [--quiet 130]
"""

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from testsupport.server import ROOT, Server, local_controller, serve
from tools.cluster.kwok_node import KwokNode
from tools.cluster.stack import Stack

NAMESPACE = "default"
JOB = "bench-system"
_TICK = os.sysconf("SC_CLK_TCK")


def job_manifest(replicas: int) -> dict[str, Any]:
    """A job of `replicas` pods without resource requests (KWOK nodes never run them)."""

    def replica(count: int) -> dict[str, Any]:
        container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1", "command": ["python"]}
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": {
                "Scheduler": replica(1),
                "Server": replica(1),
                "Worker": replica(replicas - 2),
            },
        },
    }


def cpu_seconds(pids: Iterable[int]) -> float:
    """User plus system CPU time of live processes, from /proc/<pid>/stat."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / _TICK


def hook_syncs(metrics: str) -> tuple[Counter[str], float]:
    """`mxjob_hook_syncs_total` by outcome and the request bytes summed, from /metrics text."""
    outcomes: Counter[str] = Counter()
    request_bytes = 0.0
    for line in metrics.splitlines():
        if line.startswith("mxjob_hook_syncs_total{"):
            labels, value = line.rsplit(" ", 1)
            outcome = labels.split('outcome="', 1)[1].split('"', 1)[0]
            outcomes[outcome] += int(float(value))
        elif line.startswith("mxjob_hook_request_bytes_sum"):
            request_bytes += float(line.rsplit(" ", 1)[1])
    return outcomes, request_bytes


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Run:
    """The stack, the hook and the CPU counters of one measurement."""

    def __init__(self, stack: Stack, hook: Server) -> None:
        self.stack = stack
        self.hook = hook
        self.hook_pids = [hook.pid, *hook.worker_pids()]

    def metrics(self) -> str:
        """The hook's /metrics text, every worker counted."""
        return self.hook.call("GET", "/metrics")[1].decode()

    def cpu(self) -> dict[str, float]:
        return {
            "hook": cpu_seconds(self.hook_pids),
            "metacontroller": cpu_seconds([self.stack.pids["metacontroller"]]),
            "kube-apiserver": cpu_seconds([self.stack.pids["kube-apiserver"]]),
        }

    def get(self, *args: str) -> Any:
        out = self.stack.kubectl("get", *args, "-n", NAMESPACE, "-o", "json", timeout=120)
        return json.loads(out.stdout)

    def running_pods(self) -> int:
        out = self.stack.kubectl(
            "get", "pods", "-n", NAMESPACE, "--field-selector=status.phase=Running",
            "-l", f"training.kubeflow.org/job-name={JOB}", "-o", "name", timeout=120,
        )  # fmt: skip
        return len(out.stdout.split())


def measure_creation(
    run: Run, replicas: int, manifest: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Apply the job (`manifest`, else `job_manifest`) and wait until every pod and the job are
    Running."""
    syncs_before, _ = hook_syncs(run.metrics())
    cpu_before = run.cpu()
    applied = manifest if manifest is not None else job_manifest(replicas)
    run.stack.kubectl("apply", "-f", "-", input=json.dumps(applied))
    deadline = time.monotonic() + 900
    while run.running_pods() < replicas:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{JOB}: not every pod Running after 900 s")
        time.sleep(3)
    while True:
        job = run.get("mxjob", JOB)
        conditions = job.get("status", {}).get("conditions", [])
        if conditions and conditions[-1]["type"] == "Running":
            break
        time.sleep(1)
    time.sleep(5)  # the syncs the last status write triggers
    cpu_after = run.cpu()
    syncs_after, request_bytes = hook_syncs(run.metrics())
    pods = run.get("pods", "-l", f"training.kubeflow.org/job-name={JOB}")["items"]
    created = _time(job["metadata"]["creationTimestamp"])
    ready = max(
        _time(c["lastTransitionTime"])
        for p in pods
        for c in p["status"].get("conditions", [])
        if c["type"] == "Ready"
    )
    return {
        "pods": len(pods),
        "all_running_s": (ready - created).total_seconds(),
        "job_running_s": (_time(conditions[-1]["lastTransitionTime"]) - created).total_seconds(),
        "syncs": dict(syncs_after - syncs_before),
        "request_mb": request_bytes / 1e6,
        "cpu_s": {k: cpu_after[k] - cpu_before[k] for k in cpu_after},
    }


def measure_quiet(run: Run, seconds: float) -> dict[str, Any]:
    """Leave the job alone: Metacontroller's resyncs, and how many the ETag cache answered."""
    before, _ = hook_syncs(run.metrics())
    cpu_before = run.cpu()
    time.sleep(seconds)
    after, _ = hook_syncs(run.metrics())
    cpu_after = run.cpu()
    return {
        "seconds": seconds,
        "syncs": dict(after - before),
        "cpu_s": {k: cpu_after[k] - cpu_before[k] for k in cpu_after},
    }


def report(replicas: int, created: dict[str, Any], quiet: dict[str, Any]) -> str:
    cpu = created["cpu_s"]
    syncs = sum(created["syncs"].values())
    quiet_syncs = sum(quiet["syncs"].values())
    lines = [
        f"## Whole system: one {replicas}-replica MXJob on the KWOK tier "
        f"({datetime.now().date()}, Metacontroller v4.17.2, QPS 100, hook 2 workers)",
        "",
        f"- all {created['pods']} pods Running {created['all_running_s']:.0f} s after the "
        f"MXJob was created; job Running condition at {created['job_running_s']:.0f} s",
        f"- {syncs} syncs answered ({_outcomes(created['syncs'])}), "
        f"{created['request_mb']:.0f} MB of requests",
        "- CPU seconds: hook {hook:.1f}, Metacontroller {metacontroller:.1f}, "
        "kube-apiserver {kube-apiserver:.1f}".format(**cpu),
        "- hook CPU / Metacontroller CPU: {:.2f}; hook CPU / kube-apiserver CPU: {:.2f}".format(
            cpu["hook"] / max(cpu["metacontroller"], 1e-9),
            cpu["hook"] / max(cpu["kube-apiserver"], 1e-9),
        ),
        f"- quiet job, {quiet['seconds']:.0f} s: {quiet_syncs} syncs "
        f"({_outcomes(quiet['syncs'])}); hook CPU {quiet['cpu_s']['hook']:.2f} s",
    ]
    return "\n".join(lines)


def _outcomes(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--quiet", type=float, default=130, help="seconds of a quiet job")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-system-") as tmp:
        stack = Stack(
            run_dir=Path(tmp), node=KwokNode(count=2), log=lambda line: print(line, flush=True)
        )
        stack.start()
        try:
            stack.install_project(ROOT, hook_cmd="")
            with serve(workers=2) as server:
                stack.kubectl("apply", "-f", "-", input=local_controller(server.port))
                run = Run(stack, server)
                created = measure_creation(run, args.replicas)
                quiet = measure_quiet(run, args.quiet)
        finally:
            stack.stop(remove=True)
    print(report(args.replicas, created, quiet))
    print(json.dumps({"created": created, "quiet": quiet}, indent=1))


if __name__ == "__main__":
    main()

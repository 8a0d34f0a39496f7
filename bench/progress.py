"""`make bench-progress`: what the progress component costs with 200 running jobs, on the KWOK
tier (docs/performance.md#the-progress-component).

A KWOK stack whose fake kubelet serves a log for every pod's `mxnet` container
(`KwokNode.serve_logs`: one CRI-format file to which a Speedometer line is appended every second,
so every Worker has moved on every pass: the most the component writes), the hook under
gunicorn (2 workers) with the production CompositeController pointed at loopback. It applies
`--jobs` MXJobs of a Scheduler, a Server and 2 Workers with a progress deadline and, once every
pod runs, measures two windows of `--seconds` each:

- without the component: the CPU seconds of kube-apiserver, Metacontroller and the hook;
- with the component (`python -m mxjob.progress`, a pass every 10 s, as installed): the same, and
  the component's own CPU seconds, peak RSS, passes and their API calls per second (lists, log
  reads, patches), from its pass log lines.

    python -m bench.progress [--jobs 200] [--seconds 120]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.system import NAMESPACE, Run, cpu_seconds
from testsupport.server import ROOT, local_controller, serve
from tools.cluster.kwok_node import KwokNode
from tools.cluster.stack import Stack


def job_manifest(name: str) -> dict[str, Any]:
    """Scheduler, Server and 2 Workers (KWOK runs no container), a 300 s progress deadline."""

    def replica(count: int) -> dict[str, Any]:
        container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1", "command": ["python"]}
        return {"replicas": count, "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "mxReplicaSpecs": {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)},
            "runPolicy": {"progressDeadlineSeconds": 300},
        },
    }


def write_log(path: Path, stop: threading.Event) -> None:
    """Append a Speedometer line (CRI log format) every second until `stop`."""
    batch = 0
    with path.open("a") as log:
        while not stop.is_set():
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            log.write(
                f"{stamp} stderr F INFO:root:Epoch[0] Batch [{batch}]\tSpeed: 1000.00 samples/sec\n"
            )
            log.flush()
            batch += 10
            stop.wait(1)


def running_pods(run: Run) -> int:
    out = run.stack.kubectl(
        "get", "pods", "-n", NAMESPACE, "--field-selector=status.phase=Running", "-o", "name",
        timeout=120,
    )  # fmt: skip
    return len(out.stdout.split())


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def window(run: Run, seconds: float, pid: int | None = None) -> dict[str, Any]:
    """CPU seconds of the stack's processes (and of `pid`) over `seconds`; `pid`'s peak RSS."""
    before = run.cpu()
    own = cpu_seconds([pid]) if pid else 0.0
    peak = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pid:
            peak = max(peak, rss_kib(pid))
        time.sleep(1)
    after = run.cpu()
    found: dict[str, Any] = {k: after[k] - before[k] for k in after}
    if pid:
        found["progress"] = cpu_seconds([pid]) - own
        found["progress_peak_rss_mib"] = peak / 1024
    return found


def passes(log: Path) -> list[dict[str, Any]]:
    """The component's `pass done` lines (JSON logs)."""
    found = []
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("action") == "pass":
            found.append(entry)
    return found


def measure(stack: Stack, run: Run, args: argparse.Namespace, tmp: Path) -> str:
    """Apply the jobs, wait until every pod runs, then the two windows; the report."""
    items = [job_manifest(f"progress-{i}") for i in range(args.jobs)]
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    stack.kubectl("apply", "-f", "-", input=listed, timeout=300)
    while running_pods(run) < 4 * args.jobs:
        time.sleep(3)
    time.sleep(10)
    without = window(run, args.seconds)
    component_log = tmp / "progress.log"
    with component_log.open("w") as out:
        component = subprocess.Popen(
            [sys.executable, "-m", "mxjob.progress", f"--kubeconfig={stack.kubeconfig}"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "PROGRESS_INTERVAL_SECONDS": "10", "LOG_LEVEL": "info"},
        )  # fmt: skip
        try:
            with_component = window(run, args.seconds, component.pid)
        finally:
            component.send_signal(signal.SIGTERM)
            component.wait(60)
    jobs = json.loads(stack.kubectl("get", "mxjobs", "-n", NAMESPACE, "-o", "json").stdout)
    noted = sum(1 for job in jobs["items"] if (job.get("status") or {}).get("progress"))
    return report(args, without, with_component, passes(component_log), noted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-progress-") as tmp:
        logs, stop = Path(tmp) / "mxnet.log", threading.Event()
        logs.touch()
        threading.Thread(target=write_log, args=(logs, stop), daemon=True).start()
        stack = Stack(
            run_dir=Path(tmp) / "stack", node=KwokNode(count=2, serve_logs=logs),
            log=lambda line: print(line, flush=True),
        )  # fmt: skip
        stack.start()
        try:
            stack.install_project(ROOT, hook_cmd="")
            with serve(workers=2) as server:
                stack.kubectl("apply", "-f", "-", input=local_controller(server.port))
                text = measure(stack, Run(stack, server), args, Path(tmp))
        finally:
            stop.set()
            stack.stop(remove=True)
    print(text)


def report(
    args: argparse.Namespace,
    without: dict[str, Any],
    with_component: dict[str, Any],
    done: list[dict[str, Any]],
    noted: int,
) -> str:
    seconds = args.seconds
    reads = sum(p["read"] for p in done)
    patches = sum(p["patched"] for p in done)
    errors = sum(p["errors"] for p in done)
    # Each pass lists MXJobs and pods (one page each below 500 objects).
    lists = 2 * len(done)
    lines = [
        f"## The progress component with {args.jobs} running jobs ({4 * args.jobs} pods, "
        f"{2 * args.jobs} Workers) on the KWOK tier ({datetime.now().date()})",
        "",
        f"- {len(done)} passes in {seconds:.0f} s; {reads} log reads, {patches} patches, "
        f"{lists} lists, {errors} errors: {(reads + patches + lists) / seconds:.1f} API calls/s",
        f"- jobs showing status.progress at the end: {noted} of {args.jobs}",
        "- the component: {progress:.1f} CPU s ({cores:.3f} cores), peak RSS "
        "{progress_peak_rss_mib:.0f} MiB".format(
            cores=with_component["progress"] / seconds, **with_component
        ),
        "| process | CPU s without | CPU s with | added (cores) |",
        "|---|---|---|---|",
    ]
    for name in ("kube-apiserver", "metacontroller", "hook"):
        added = (with_component[name] - without[name]) / seconds
        lines.append(
            f"| {name} | {without[name]:.1f} | {with_component[name]:.1f} | {added:+.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()

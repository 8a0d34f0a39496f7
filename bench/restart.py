"""`make bench-restart`: a 1000-replica MXJob's whole-job restart, Recreate and then InPlace, on
the KWOK tier (docs/restarts.md#in-place).

The stack of `make bench-system` (real kube-apiserver, controller-manager, scheduler and
Metacontroller v4.17.2; the hook under gunicorn on the host), with the restarter component on
the host too for InPlace. Per strategy: the job of bench/system.py (restartPolicy ExitCode) is
created and runs; its Server's pod is deleted, which restarts the whole job at once
(docs/restarts.md#deleted-pods); the figure is the time from that deletion to the moment every
pod of run 1 is Running. KWOK runs no containers: under InPlace its stages
(tools/cluster/kwok.py, IN_PLACE_STAGES) hold a pod whose restart annotation changed and release
it when its go annotation follows, as the real node's kubelet does; what the kubelet and the
processes take is the real node's figure (tests/realnode/test_checkpoint.py), not this one.

    python -m bench.restart [--replicas 1000]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.system import JOB, NAMESPACE, Run, job_manifest, measure_creation
from testsupport.restarter_log import patch_kind
from testsupport.server import ROOT, local_controller, serve
from tools.cluster.kwok_node import KwokNode
from tools.cluster.stack import Stack

STRATEGIES = ("Recreate", "InPlace")
#: How long one restart may take before the run gives up.
TIMEOUT_SECONDS = 900


def restarting(replicas: int, strategy: str) -> dict[str, Any]:
    """bench/system.py's job, a Server's failure restarting the whole job, by `strategy`."""
    manifest = job_manifest(replicas)
    for spec in manifest["spec"]["mxReplicaSpecs"].values():
        spec["restartPolicy"] = "ExitCode"
    manifest["spec"]["runPolicy"] = {"restartStrategy": strategy}
    return manifest


def measure_restart(run: Run, replicas: int) -> dict[str, Any]:
    """Delete the Server's pod; the seconds until every pod of run 1 runs, the pods kept, and
    when each step was first seen (polled about once a second, so each within about 2 s)."""
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in _pods(run)}
    began = time.monotonic()
    run.stack.kubectl("delete", "pod", f"{JOB}-server-0", "-n", NAMESPACE, "--wait=false")
    steps: dict[str, float] = {}
    while True:
        pods = _pods(run)
        order = run.get("mxjob", JOB).get("status", {}).get("inPlaceRestart")
        seen = time.monotonic() - began
        for step in _steps(pods, order, replicas):
            steps.setdefault(step, seen)
        if "run 1 all Running" in steps:
            break
        if seen > TIMEOUT_SECONDS:
            raise TimeoutError(f"{JOB}: run 1 not running after {TIMEOUT_SECONDS} s: {steps}")
        time.sleep(1)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    kept = sum(1 for name, uid in after.items() if uids.get(name) == uid)
    return {"seconds": steps["run 1 all Running"], "pods_kept": kept, "steps": steps}


def _steps(pods: list[dict[str, Any]], order: dict[str, Any] | None, replicas: int) -> list[str]:
    """The steps of the restart this look shows reached."""
    notes = [p["metadata"].get("annotations", {}) for p in pods]
    run1 = [p for p in pods if p["metadata"].get("labels", {}).get("mxjob.kubeflow.org/run") == "1"]
    found = {
        "order out": order is not None,
        "go out": bool(order and order.get("go")),
        "every pod asked to restart": sum(n.get("mxjob.kubeflow.org/restart") == "1" for n in notes)
        >= replicas - 1,
        "every pod held": sum(p["status"].get("phase") == "Pending" for p in pods) >= replicas - 1,
        "run 1 all Running": len(run1) == replicas
        and all(p["status"].get("phase") == "Running" for p in run1),
    }
    return [step for step, reached in found.items() if reached]


def _pods(run: Run) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = run.get("pods", "-l", f"training.kubeflow.org/job-name={JOB}")[
        "items"
    ]
    return [p for p in found if not p["metadata"].get("deletionTimestamp")]


def measure(strategy: str, replicas: int) -> dict[str, Any]:
    """One stack, one job of `strategy`: its creation and its restart, and the restarter's
    patches (its log, at info, in a file of its own: the run directory goes with the stack)."""
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-restart-") as tmp:
        stack = Stack(
            run_dir=Path(tmp), node=KwokNode(count=2), log=lambda line: print(line, flush=True)
        )
        stack.start()
        restarter = None
        with tempfile.TemporaryFile() as log:
            try:
                stack.install_project(ROOT, hook_cmd="")
                if strategy == "InPlace":
                    restarter = subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "mxjob.restarter",
                            "--kubeconfig",
                            str(stack.kubeconfig),
                        ],
                        cwd=ROOT,
                        stderr=log,
                        env={
                            "LOG_LEVEL": "info",
                            "PATH": "/usr/bin:/bin",
                            "PYTHONWARNINGS": "ignore",
                        },  # the stack's loopback certificate
                    )
                with serve(workers=2) as server:
                    stack.kubectl("apply", "-f", "-", input=local_controller(server.port))
                    run = Run(stack, server)
                    manifest = restarting(replicas, strategy)
                    created = measure_creation(run, replicas, manifest)
                    restarted = measure_restart(run, replicas)
            finally:
                if restarter is not None:
                    restarter.terminate()
                    restarter.wait(timeout=40)
                stack.stop(remove=True)
            log.seek(0)
            patches = patches_logged(log.read().decode(errors="replace"))
    return {"created_s": created["all_running_s"], **restarted, "patches": patches}


def patches_logged(log: str) -> dict[str, int]:
    """The restarter's pod patches by what they wrote (the order, go, a nudge alone), from its
    JSON log lines (any other line skipped); none for a strategy that ran no restarter."""
    counts: dict[str, int] = {}
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        what = patch_kind(entry) if isinstance(entry, dict) else None
        if what is not None:
            counts[what] = counts.get(what, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--strategy", choices=STRATEGIES, action="append", help="default: both")
    args = parser.parse_args()
    found = {strategy: measure(strategy, args.replicas) for strategy in args.strategy or STRATEGIES}
    print(f"## A {args.replicas}-replica job's whole-job restart on the KWOK tier")
    print()
    print("| strategy | created, all Running | Server deleted -> run 1 all Running | pods kept |")
    print("|---|---|---|---|")
    for strategy, figures in found.items():
        print(
            f"| {strategy} | {figures['created_s']:.1f} s | {figures['seconds']:.1f} s "
            f"| {figures['pods_kept']} |"
        )
    for strategy, figures in found.items():
        steps = ", ".join(f"{step} {at:.0f} s" for step, at in figures["steps"].items())
        print(f"\n{strategy}, after the deletion: {steps}")
        if figures["patches"]:
            print(f"{strategy}, the restarter's pod patches: {figures['patches']}")
    if len(found) == len(STRATEGIES):
        ratio = found["InPlace"]["seconds"] / max(found["Recreate"]["seconds"], 1e-9)
        print(f"\nInPlace / Recreate: {ratio:.2f}")
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()

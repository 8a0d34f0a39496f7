"""`make bench-first-round`: apply → first training round of a real MXNet job on the real node,
its Workers started as the hook starts them now (a run's first pods at once) and as it did
before (every Worker pod first slept in the rejoin wait, 5 s with ps-lite's default heartbeat
timeout; docs/restarts.md#which-pods-wait).

The "before" pods are today's with the old wait put back as the template's own init container
(`sleep 5` in the job's image, the command the hook used to add), so both variants run on the
same stack, image and hook, in turn. One real-node stack (tools/cluster/real_node.py), the real-node
tier's `train.py` job (bench/compare/realnode.py: Scheduler, Server, two Workers, `dist_sync`).
The figure is the later of the two Workers' `round 0 ok` log lines (the container runtime's
timestamps) after `kubectl apply`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.compare.realnode import NAMESPACE, WORKLOADS, Node, job, until
from tools.cluster.real_node import RealNode
from tools.cluster.stack import Stack

REPO = Path(__file__).resolve().parents[1]
#: The rejoin wait every Worker pod had before issue 31, with the default heartbeat timeout.
OLD_WAIT = 5


def with_old_wait(obj: dict[str, Any], image: str) -> dict[str, Any]:
    """The job with the old rejoin wait before each Worker's mxnet container."""
    worker = obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["initContainers"] = [
        {"name": "old-rejoin-wait", "image": image, "command": ["sleep", str(OLD_WAIT)]}
    ]
    return obj


def first_round(node: Node, pod: str) -> float | None:
    """When the pod's log shows round 0 done (the runtime's timestamp), or None yet."""
    for line in node.kubectl("logs", "--timestamps", "-n", NAMESPACE, pod).splitlines():
        stamp, _, text = line.partition(" ")
        if "round 0 ok" in text:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return None


def measure(node: Node, name: str, obj: dict[str, Any]) -> float | None:
    """Seconds from apply to the later Worker's first round, None if not within 180 s."""
    applied = time.time()
    node.kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    workers = [f"{name}-worker-{i}" for i in range(2)]
    rounds: dict[str, float | None] = {}

    def trained() -> bool:
        rounds.update({w: first_round(node, w) for w in workers})
        return all(rounds.values())

    done = until(trained, 180)
    node.kubectl("delete", "mxjob", name, "-n", NAMESPACE, "--wait=true")
    until(lambda: not node.pods(name), 120)
    return max(t for t in rounds.values() if t) - applied if done else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_round")
    parser.add_argument("--runs", type=int, default=3, help="jobs of each variant, in turn")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    seconds: dict[str, list[float | None]] = {"now": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="first-round-") as run:
        real = RealNode()
        stack = Stack(run_dir=Path(run) / "node", log=log, node=real)
        try:
            stack.start()
            real.install_in_cluster(REPO)
            files = [f"--from-file={f}" for f in sorted(WORKLOADS.glob("*.py"))]
            stack.kubectl("create", "configmap", "mxjob-workloads", "-n", NAMESPACE, *files)
            node, image = Node(stack, real), str((real.images or {})["mxjob-mxnet"])
            for i in range(args.runs):
                for variant in ("before", "now"):
                    name = f"first-{variant}-{i}"
                    obj = job(name, image)
                    if variant == "before":
                        obj = with_old_wait(obj, image)
                    took = measure(node, name, obj)
                    log(f"{name}: {'never' if took is None else f'{took:.1f} s'}")
                    seconds[variant].append(took)
        finally:
            stack.stop(remove=True)
    print("| Workers | apply → first round of both Workers (each run) | median |")
    print("|---|---|---|")
    for variant, label in (("before", f"every one waits {OLD_WAIT} s"), ("now", "start at once")):
        got = [s for s in seconds[variant] if s is not None]
        each = ", ".join("never" if s is None else f"{s:.1f} s" for s in seconds[variant])
        median = f"{statistics.median(got):.1f} s" if got else "none"
        print(f"| {label} | {each} | {median} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

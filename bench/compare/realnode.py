"""`make compare-node`: real MXNet 1.9.1 on the real node under each controller in turn, a Worker
and then a Server SIGKILLed mid-training (docs/comparison.md#real-mxnet-on-the-real-node).

One node stack (tools/cluster/real_node.py) with the project installed as users install it; the same
`dist_sync` job file (Scheduler, Server, two Workers, `restartPolicy: ExitCode`, the real-node
tier's `train.py`, 30 rounds of 0.5 s) runs first under mxjob, then under training-operator
(mxjob's CompositeController deleted, the operator's CRD in place, its manager out of cluster,
as tests/realnode/test_migration.py runs it). After round 5 of a Worker, the test kills the
chosen process from the host as the OOM killer would, and waits up to `LIMIT` seconds for the
job's outcome: what each controller made of it, and whether training finished.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.cluster import build
from tools.cluster import training_operator as operator
from tools.cluster.real_node import RealNode
from tools.cluster.stack import Stack

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "realnode" / "workloads"
NAMESPACE = "default"
#: How long a job may take after the kill before it counts as never finishing.
LIMIT = 240.0
FINISHED = "finished 30 rounds"


@dataclass(frozen=True)
class Outcome:
    controller: str
    victim: str
    condition: str
    seconds: float | None
    pods: list[str]
    finished: int


def job(name: str, image: str) -> dict[str, Any]:
    def spec(replicas: int) -> dict[str, Any]:
        container = {
            "name": "mxnet",
            "image": image,
            "command": ["python", "/workloads/train.py"],
            "env": [{"name": "ROUNDS", "value": "30"}, {"name": "ROUND_SECONDS", "value": "0.5"}],
            "volumeMounts": [{"name": "workloads", "mountPath": "/workloads"}],
        }
        return {
            "replicas": replicas,
            "restartPolicy": "ExitCode",
            "template": {
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container],
                    "volumes": [{"name": "workloads", "configMap": {"name": "mxjob-workloads"}}],
                }
            },
        }

    replicas = {"Scheduler": spec(1), "Server": spec(1), "Worker": spec(2)}
    metadata = {"name": name, "namespace": NAMESPACE}
    spec_ = {"jobMode": "MXTrain", "mxReplicaSpecs": replicas}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": metadata, "spec": spec_}


class Node:
    """kubectl and the host's view of the node's containers."""

    def __init__(self, stack: Stack, real: RealNode) -> None:
        self.stack, self.real = stack, real

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return str(self.stack.kubectl(*args, input=stdin, check=False).stdout)

    def pods(self, name: str) -> dict[str, Any]:
        out = self.kubectl(
            "get", "pods", "-n", NAMESPACE, "-o", "json",
            "-l", f"training.kubeflow.org/job-name={name}",
        )  # fmt: skip
        return {p["metadata"]["name"]: p for p in json.loads(out or '{"items": []}')["items"]}

    def condition(self, name: str) -> str:
        out = self.kubectl("get", "mxjob", name, "-n", NAMESPACE, "-o", "json")
        conditions = (json.loads(out or "{}").get("status") or {}).get("conditions") or []
        true = [c["type"] for c in conditions if c.get("status") == "True"]
        return true[-1] if true else "none"

    def kill(self, pod: str) -> None:
        """SIGKILL the mxnet container's main process, found with runc, not the API."""
        status = self.pods(pod.rsplit("-", 2)[0])[pod]["status"]
        (container,) = [s for s in status["containerStatuses"] if s["name"] == "mxnet"]
        os.kill(self.real.container_pid(container["containerID"]), signal.SIGKILL)


def until(probe: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(0.5)
    return False


def play(node: Node, controller: str, victim: str, image: str) -> Outcome:
    """Run the job, kill its `victim` (a replica type) after Worker 1's round 5, wait."""
    name = f"{controller[:2]}-{victim}"
    node.kubectl("apply", "-f", "-", stdin=json.dumps(job(name, image)))
    started = until(
        lambda: "round 5 ok" in node.kubectl("logs", "-n", NAMESPACE, f"{name}-worker-1"), 180
    )
    if not started:
        return Outcome(controller, victim, "never trained", None, sorted(node.pods(name)), 0)
    node.kill(f"{name}-{victim}-0")
    killed = time.monotonic()
    ended = until(lambda: node.condition(name) in ("Succeeded", "Failed"), LIMIT)
    seconds = time.monotonic() - killed if ended else None
    pods = sorted(node.pods(name))
    logs = [node.kubectl("logs", "-n", NAMESPACE, p) for p in pods if "-worker-" in p]
    outcome = Outcome(
        controller, victim, node.condition(name), seconds, pods, sum(FINISHED in t for t in logs)
    )
    node.kubectl("delete", "mxjob", name, "-n", NAMESPACE, "--wait=true")
    until(lambda: not node.pods(name), 120)
    return outcome


@contextmanager
def old_operator(node: Node, version: str) -> Iterator[None]:
    """training-operator owns MXJobs: mxjob's CompositeController gone, the operator's CRD."""
    stack = node.stack
    node.kubectl("delete", "compositecontroller", "mxjob-controller", "--ignore-not-found")
    node.kubectl("replace", "-f", str(operator.crd(stack, version)))
    with (
        operator.installed(stack, version, ["mxjob"]) as release,
        operator.manager(stack, release, ["mxjob"]),
    ):
        yield


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| killed | controller | outcome | kill → outcome | pods at the end | Workers that "
        "finished 30 rounds |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        took = f"{o.seconds:.1f} s" if o.seconds is not None else f"none in {LIMIT:.0f} s"
        rows.append(
            f"| {o.victim} | {o.controller} | {o.condition} | {took} | {', '.join(o.pods)} |"
            f" {o.finished} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare.realnode")
    parser.add_argument("--training-operator", default="v1.8.1")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    # The operator's release once, into the test cache (the node's own components: `start`).
    build.build_all(
        build.default_cache_dir(), log, (build.TRAINING_OPERATORS[args.training_operator],)
    )
    with tempfile.TemporaryDirectory(prefix="compare-node-") as run:
        real = RealNode()
        stack = Stack(run_dir=Path(run) / "node", log=log, node=real)
        try:
            stack.start()
            real.install_in_cluster(REPO)
            files = [f"--from-file={f}" for f in sorted(WORKLOADS.glob("*.py"))]
            stack.kubectl("create", "configmap", "mxjob-workloads", "-n", NAMESPACE, *files)
            node, image = Node(stack, real), str((real.images or {})["mxjob-mxnet"])
            outcomes = [play(node, "mxjob", victim, image) for victim in ("worker", "server")]
            with old_operator(node, args.training_operator):
                outcomes += [
                    play(node, f"training-operator {args.training_operator}", victim, image)
                    for victim in ("worker", "server")
                ]
        finally:
            stack.stop(remove=True)
    print(table(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

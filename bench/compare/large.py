"""The large job: 1000 replicas (1 Scheduler, 1 Server, the rest Workers) from `kubectl apply`
to every pod Running and to the job's Running condition, with the objects and API requests it
took to write and the CPU time, as `make bench-system` measures mxjob alone (bench/system.py);
for mxjob with each `serviceMode` (docs/environment.md#services)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from bench.compare.controllers import Controller
from bench.compare.observe import Watcher
from bench.system import job_manifest
from tools.cluster.stack import Stack

NAME = "large"
_SERVER_REQUESTS = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<n>\S+)$")


@dataclass
class Large:
    """What one controller took to run the large job."""

    replicas: int
    #: The job's `spec.serviceMode` (training-operator knows only its per-replica Services).
    services: str
    #: Seconds from the apply to the last pod Running and to the Running condition (None:
    #: not within the timeout).
    all_running: float | None
    job_running: float | None
    #: The controller's own API requests by method, and the API server's requests (every
    #: client: the controller, the scheduler binding pods, KWOK writing their status) by verb.
    controller_requests: dict[str, int]
    server_requests: dict[str, int]
    #: CPU seconds by component of the controller over the same time.
    cpu: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON values (the raw results `make compare` writes)."""
        return asdict(self)


def server_requests(stack: Stack) -> Counter[str]:
    """`apiserver_request_total` summed by verb (watches left out: they are long-lived)."""
    counts: Counter[str] = Counter()
    for line in stack.kubectl("get", "--raw", "/metrics", timeout=60).stdout.splitlines():
        found = _SERVER_REQUESTS.match(line)
        if found:
            verb = re.search(r'verb="([A-Z]+)"', found["labels"])
            if verb and verb.group(1) != "WATCH":
                counts[verb.group(1)] += int(float(found["n"]))
    return counts


def measure(
    stack: Stack,
    controller: Controller,
    replicas: int,
    services: str = "PerReplica",
    timeout: float = 600,
) -> Large:
    """Apply the job, wait for every pod and the job to be Running, then delete it (and wait
    until its pods are gone, so the next measurement starts on an empty cluster)."""
    job = job_manifest(replicas)
    job["metadata"]["name"] = NAME
    if services != "PerReplica":
        job["spec"]["serviceMode"] = services
    with Watcher(stack, NAME) as watch:
        slots = [("scheduler", 0), ("server", 0), *(("worker", i) for i in range(replicas - 2))]
        cpu, client, server = controller.cpu(), controller.requests(), server_requests(stack)
        start = time.monotonic()
        up: list[float] = []  # when every pod was first seen Running

        def done() -> bool:
            if not up and watch.running(slots):
                up.append(time.monotonic())
            return bool(up) and watch.condition() == "Running"

        stack.kubectl("apply", "-f", "-", input=json.dumps(job))
        watch.wait(done, timeout)
        all_running = up[0] - start if up else None
        seen = [c.at for c in watch.changes if c.ctype == "Running"]
        job_running = seen[0] - start if seen else None
        watch.quiet(3.0, 30.0)  # the status writes the last pods start
        cpu_after = controller.cpu()
        client_after, server_after = controller.requests(), server_requests(stack)
    stack.kubectl("delete", "mxjob", NAME, "--cascade=foreground", timeout=timeout)
    return Large(
        replicas=replicas,
        services=services,
        all_running=all_running,
        job_running=job_running,
        controller_requests=dict(client_after - client),
        server_requests=dict(server_after - server),
        cpu={k: cpu_after[k] - cpu[k] for k in cpu_after},
    )

"""Many jobs at once: 200 MXJobs of 4 replicas (1 Scheduler, 1 Server, 2 Workers) applied in
one `kubectl apply`, from then until every pod Running and every job's Running condition, with
the API requests and CPU time the controller spent; for mxjob with each `serviceMode`."""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from typing import Any, Self

from bench.compare.controllers import Controller
from bench.compare.large import server_requests
from bench.compare.observe import JOB_LABEL, NAMESPACE, Watcher, latest_condition
from bench.system import job_manifest
from tools.cluster.stack import Stack

PREFIX = "many-"


@dataclass
class Many:
    """What one controller took to run the jobs."""

    jobs: int
    replicas: int
    services: str
    #: Seconds from the apply to the last pod Running and to the last job's Running condition.
    all_running: float | None
    jobs_running: float | None
    controller_requests: dict[str, int]
    server_requests: dict[str, int]
    cpu: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Fleet(Watcher):
    """The pods and conditions of every job named PREFIX…, through the same two watches."""

    running_pods: set[str] = field(default_factory=set)
    running_jobs: dict[str, float] = field(default_factory=dict)

    def __enter__(self) -> Self:
        selector = urllib.parse.quote(JOB_LABEL)
        base = f"namespaces/{NAMESPACE}"
        try:
            self._watch(f"/api/v1/{base}/pods?labelSelector={selector}", self._on_member)
            self._watch(f"/apis/kubeflow.org/v1/{base}/mxjobs?limit=500", self._on_each_job)
        except BaseException:
            self.close()
            raise
        return self

    def _on_member(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if not name.startswith(PREFIX):
            return
        if kind != "DELETED" and obj.get("status", {}).get("phase") == "Running":
            self.running_pods.add(name)
        else:
            self.running_pods.discard(name)

    def _on_each_job(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        latest = latest_condition(obj.get("status") or {})
        if name.startswith(PREFIX) and kind != "DELETED" and latest and latest[0] == "Running":
            self.running_jobs.setdefault(name, time.monotonic())


def manifests(jobs: int, replicas: int, services: str) -> dict[str, Any]:
    """The jobs as one List, for one `kubectl apply`."""
    items = []
    for i in range(jobs):
        job = job_manifest(replicas)
        job["metadata"]["name"] = f"{PREFIX}{i}"
        if services != "PerReplica":
            job["spec"]["serviceMode"] = services
        items.append(job)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def measure(
    stack: Stack,
    controller: Controller,
    jobs: int = 200,
    replicas: int = 4,
    services: str = "PerReplica",
    timeout: float = 900,
) -> Many:
    """Apply every job at once, wait for all of them and their pods to be Running, then delete
    them and wait until their pods are gone."""
    listed = manifests(jobs, replicas, services)
    with Fleet(stack, "") as fleet:
        cpu, client, server = controller.cpu(), controller.requests(), server_requests(stack)
        start = time.monotonic()
        up: list[float] = []

        def done() -> bool:
            if not up and len(fleet.running_pods) >= jobs * replicas:
                up.append(time.monotonic())
            return bool(up) and len(fleet.running_jobs) >= jobs

        stack.kubectl("apply", "-f", "-", input=json.dumps(listed), timeout=300)
        fleet.wait(done, timeout)
        seen = sorted(fleet.running_jobs.values())
        jobs_running = seen[-1] - start if len(seen) >= jobs else None
        fleet.quiet(3.0, 30.0)
        cpu_after = controller.cpu()
        client_after, server_after = controller.requests(), server_requests(stack)
    names = [item["metadata"]["name"] for item in listed["items"]]
    stack.kubectl("delete", "mxjob", *names, "--cascade=foreground", timeout=timeout)
    return Many(
        jobs=jobs,
        replicas=replicas,
        services=services,
        all_running=up[0] - start if up else None,
        jobs_running=jobs_running,
        controller_requests=dict(client_after - client),
        server_requests=dict(server_after - server),
        cpu={k: cpu_after[k] - cpu[k] for k in cpu_after},
    )

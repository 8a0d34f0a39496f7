"""The answer budget through a real Metacontroller (docs/security.md#the-answer-budget).

A hook of this module's own (gunicorn as `make run` serves it, one worker) with a 256 KiB body
limit, so the budget's edge takes a few dozen pods; the CompositeController points at it for the
module and back at the session's hook afterwards. Pods get a real kubelet's status
(testsupport/kubelet_status.py; KWOK's own has a few fields only), so what Metacontroller sends
back is what a cluster sends. The module's hook is restarted on the same port with other
settings, as `helm upgrade` replaces the hook's pods.
"""

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hooks.core import budget
from hooks.core.job import Job
from hooks.core.request import parse_request
from hooks.core.spec import load
from tests.builders import request
from tests.e2e.conftest import NAMESPACE, Cluster, wait_for
from testsupport.kubelet_status import status_patch
from testsupport.server import Server, local_controller, serve
from tools.ports import free_port

#: The module's hook's body limit: its answer budget is this over budget.RETURNED (42.7 KiB).
BODY = 256 * 1024
LIMIT = BODY // budget.RETURNED
Json = dict[str, Any]


class Hook:
    """The module's hook on a fixed port, restarted with other settings by `restart`; every
    line it logged, across restarts, in `lines()`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._logged: list[Json] = []
        self._running: contextlib.ExitStack | None = None
        self._server: Server | None = None

    def start(self, **settings: str) -> None:
        env = {
            "PORT": str(self.port),
            "MXJOB_MAX_BODY_BYTES": str(BODY),
            "MXJOB_MEMORY_LIMIT_BYTES": "",
            "MXJOB_MAX_ANSWER_BYTES": "",
            **settings,
        }
        self._running = contextlib.ExitStack()
        self._server = self._running.enter_context(serve(workers=1, env=env))

    def stop(self) -> None:
        if self._server is not None and self._running is not None:
            self._logged += self._server.log_lines()
            self._running.close()
        self._server = self._running = None

    def restart(self, **settings: str) -> None:
        self.stop()
        self.start(**settings)

    def lines(self) -> list[Json]:
        return self._logged + (self._server.log_lines() if self._server is not None else [])

    def syncs(self, job: str) -> list[Json]:
        return [
            line for line in self.lines() if line.get("hook") == "sync" and line.get("name") == job
        ]


#: The module's jobs, deleted after it.
JOBS = ("e2e-edge", "e2e-edge-alone", "e2e-halved")


@pytest.fixture(scope="module")
def hook(cluster: Cluster, hook_port: int) -> Iterator[Hook]:
    """The module's hook, and the CompositeController calling it (the session's hook again
    afterwards, the module's jobs deleted)."""
    ours = Hook(free_port())
    ours.start()
    try:
        cluster.kubectl("apply", "-f", "-", stdin=local_controller(ours.port))
        yield ours
    finally:
        for name in JOBS:
            cluster.delete("mxjob", name)
        cluster.kubectl("apply", "-f", "-", stdin=local_controller(hook_port))
        ours.stop()


def template(padding: int) -> Json:
    """A pod template as users write one: an image, a command, resources."""
    container = {
        "name": "mxnet",
        "image": "registry.example.com/ml/mxnet:1.9.1-cpu",
        "command": ["python"],
        "args": ["train_mnist.py", "--num-epochs=10", "--kv-store=dist_sync", "x" * padding],
        "workingDir": "/incubator-mxnet/example/image-classification",
        "resources": {
            "requests": {"cpu": "250m", "memory": "512Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
    }
    return {"spec": {"containers": [container]}}


def mxjob(name: str, workers: int, padding: int = 0, *, ps_lite: bool = True) -> Json:
    """A job of `workers` Workers under ExitCode, with a Scheduler and a Server (ps-lite: one
    Worker replaced at a time) or alone (every Worker may be replaced at once)."""
    types = {"Scheduler": 1, "Server": 1} if ps_lite else {}
    specs = {
        rtype: {"replicas": count, "restartPolicy": "ExitCode", "template": template(padding)}
        for rtype, count in {**types, "Worker": workers}.items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": specs},
    }


def estimate(job: Json) -> int:
    """The hook's estimate of the job's largest answer."""
    read = parse_request(request(job))
    spec, problems = load(job["spec"])
    assert spec is not None, problems
    return sum(budget.estimate(Job(read.name, read.namespace, spec, None, None, None)).values())


def at_edge(make: Callable[[int, int], Json], limit: int) -> Json:
    """The largest job `make(workers, padding)` whose estimate is within `limit`: the most
    Workers, then the longest padding."""
    workers = 1
    while estimate(make(workers + 1, 0)) <= limit:
        workers += 1
    low, high = 0, 4096
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (
            (middle, high) if estimate(make(workers, middle)) <= limit else (low, middle - 1)
        )
    job = make(workers, low)
    assert limit - 64 <= estimate(job) <= limit
    return job


def kubelet(cluster: Cluster, pod: Json, exit_code: int | None = None) -> None:
    """Give a pod the status a real kubelet writes: running, or ended with `exit_code` and a
    2 KiB termination message (FallbackToLogsOnError's most)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    patch = status_patch(pod, now, exit_code=exit_code)
    name = pod["metadata"]["name"]
    cluster.kubectl(
        "patch", "pod", name, "-n", NAMESPACE, "--subresource=status", "--type=merge",
        "-p", json.dumps(patch),
    )  # fmt: skip


def running(cluster: Cluster, job: str, count: int) -> dict[str, Json]:
    """Wait until `count` pods of the job run (KWOK's status), then give each a kubelet's."""

    def started() -> dict[str, Json] | None:
        pods = cluster.pods(job)
        alive = {n: p for n, p in pods.items() if p["status"].get("phase") == "Running"}
        return alive if len(alive) == count else None

    pods = wait_for(f"{count} pods of {job} running", started, 90)
    for pod in pods.values():
        if "containerID" not in json.dumps(pod["status"]):
            kubelet(cluster, pod)
    return pods


def settled(hook: Hook, job: str, quiet: float = 3.0) -> list[Json]:
    """The job's sync lines once no new one came for `quiet` seconds."""
    seen, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        now = len(hook.syncs(job))
        if now != seen:
            seen, since = now, time.monotonic()
        time.sleep(0.3)
    return hook.syncs(job)


def touch(cluster: Cluster, job: str) -> None:
    """An edit of the job's metadata, which makes Metacontroller sync it now."""
    moment = str(time.monotonic_ns())
    cluster.kubectl(
        "annotate", "mxjob", job, "-n", NAMESPACE, f"e2e/touched={moment}", "--overwrite"
    )


def message(cluster: Cluster, job: str) -> str:
    found = cluster.condition(job)
    return found[2] if found else ""


def test_a_job_at_the_budgets_edge_goes_through_metacontroller_without_a_413(
    cluster: Cluster, hook: Hook
) -> None:
    """Two jobs whose estimate is within 64 bytes of the budget: one of 1 Scheduler, 1 Server
    and Workers, at its largest answer when running; one of Workers alone, at its largest
    when every Worker has failed (137) and runs again beside its failed pod. Every request
    Metacontroller sends back, with a kubelet's status on every pod, is answered (no 413), and
    nothing is held for want of room."""
    steady = at_edge(lambda w, p: mxjob("e2e-edge", w, p), LIMIT)
    workers = steady["spec"]["mxReplicaSpecs"]["Worker"]["replicas"]
    cluster.apply(steady)
    running(cluster, "e2e-edge", workers + 2)
    touch(cluster, "e2e-edge")
    edge = settled(hook, "e2e-edge")

    alone = at_edge(lambda w, p: mxjob("e2e-edge-alone", w, p, ps_lite=False), LIMIT)
    count = alone["spec"]["mxReplicaSpecs"]["Worker"]["replicas"]
    cluster.apply(alone)
    for pod in running(cluster, "e2e-edge-alone", count).values():
        kubelet(cluster, pod, exit_code=137)
    running(cluster, "e2e-edge-alone", count)
    touch(cluster, "e2e-edge-alone")
    replaced = settled(hook, "e2e-edge-alone")

    assert len(cluster.pods("e2e-edge-alone")) == 2 * count
    for job in ("e2e-edge", "e2e-edge-alone"):
        assert "; held: " not in message(cluster, job), message(cluster, job)
    # Answered is 200, or 304 when Metacontroller's ETag cache holds the answer (a resync of a
    # body already answered, as a loaded cold run's slower test gives time for): no 4xx or 5xx.
    refused = [line for line in hook.lines() if line.get("status", 200) not in (200, 304)]
    assert refused == [], refused[:3]
    for name, lines in (("running", edge), ("every Worker replaced", replaced)):
        largest = max(lines, key=lambda line: line["request_bytes"])
        answer = max(line["response_bytes"] for line in lines)
        print(
            f"{name}: estimate {estimate(steady if lines is edge else alone)} B of a "
            f"{LIMIT} B budget; largest answer {answer} B; largest request "
            f"{largest['request_bytes']} B of the {BODY} B body limit "
            f"({largest['request_bytes'] / answer:.2f} times the answer)"
        )
        assert largest["request_bytes"] <= BODY


def test_a_running_job_is_held_by_a_halved_budget_and_runs_on_once_it_is_put_back(
    cluster: Cluster, hook: Hook
) -> None:
    """The issue's `helm upgrade`: the hook restarted with half the budget under a running job.
    Before, it was Failed for good (MXJobInvalidSpec) and its pods left unmanaged. Now it is
    held: every pod kept, a failed Worker not replaced, the status saying why; put back, the
    replacement is made and the words go."""
    job = at_edge(lambda w, p: mxjob("e2e-halved", w, p), LIMIT * 3 // 4)
    workers = job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"]
    cluster.apply(job)
    before = running(cluster, "e2e-halved", workers + 2)
    cluster.wait_condition("e2e-halved", "Running")
    try:
        hook.restart(MXJOB_MAX_ANSWER_BYTES=str(LIMIT // 2))
        touch(cluster, "e2e-halved")
        wait_for("held", lambda: "; held: " in message(cluster, "e2e-halved"), 60)
        failed = before["e2e-halved-worker-0"]
        kubelet(cluster, failed, exit_code=137)
        settled(hook, "e2e-halved")
        found = cluster.condition("e2e-halved")
        assert found is not None and found[0] == "Running", found
        assert "(MXJOB_MAX_ANSWER_BYTES): every child is kept as it is" in found[2]
        pods = cluster.pods("e2e-halved")
        assert {n: p["metadata"]["uid"] for n, p in pods.items()} == {
            n: p["metadata"]["uid"] for n, p in before.items()
        }
    finally:
        hook.restart()
    touch(cluster, "e2e-halved")
    wait_for("the replacement", lambda: "e2e-halved-worker-0-r1" in cluster.pods("e2e-halved"), 60)
    wait_for("no longer held", lambda: "; held: " not in message(cluster, "e2e-halved"), 60)
    obj: Any = cluster.get("mxjob", "e2e-halved")
    assert not any(c["type"] == "Failed" for c in obj["status"]["conditions"])

"""The progress component's pass (mxjob/progress/collector.py) against a recording stand-in for the
API: what it lists, which Workers it reads (bounded per job), what it patches, and that one
job's unreadable log stops nothing else. Against a real API server and kubelet:
tests/e2e/test_progress.py (the policy, the hook), tests/realnode/test_progress.py (real logs)."""

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client

from hooks.core.api import ANNOTATION_PROGRESS
from hooks.core.progress import read_noted
from mxjob.progress import collector
from mxjob.progress.notes import Deadlines

NOW = datetime.now(UTC)


def pod(job_uid: str, name: str, index: int, *, owner_kind: str = "MXJob") -> dict[str, Any]:
    """A running Worker pod as the API server lists it (the fields a pass reads)."""
    owner = {"apiVersion": "kubeflow.org/v1", "kind": owner_kind, "name": "j", "uid": job_uid}
    started = (NOW - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {"training.kubeflow.org/replica-index": str(index)},
            "ownerReferences": [{**owner, "controller": True}],
        },
        "status": {
            "containerStatuses": [{"name": "mxnet", "state": {"running": {"startedAt": started}}}]
        },
    }


class Response:
    """What a call with `_preload_content=False` returns: the body's bytes."""

    def __init__(self, body: object) -> None:
        self.data = json.dumps(body).encode()


class Core:
    """The CoreV1Api calls a pass makes, recorded; logs by pod name (an exception: unreadable)."""

    def __init__(self, pods: list[dict[str, Any]], logs: dict[str, str | Exception]) -> None:
        self.pods, self.logs = pods, logs
        self.read: list[str] = []
        self.patched: dict[str, dict[str, Any]] = {}

    def list_pod_for_all_namespaces(self, **kwargs: Any) -> Response:
        assert kwargs["label_selector"] == collector.WORKERS
        assert kwargs["field_selector"] == collector.RUNNING
        return Response({"items": self.pods, "metadata": {}})

    def read_namespaced_pod_log(self, name: str, namespace: str, **kwargs: Any) -> str:
        assert kwargs["limit_bytes"] == collector.LIMIT_BYTES
        assert kwargs["tail_lines"] == collector.TAIL_LINES and kwargs["timestamps"] is True
        self.read.append(name)
        found = self.logs.get(name, "")
        if isinstance(found, Exception):
            raise found
        return found

    def patch_namespaced_pod(self, name: str, namespace: str, body: Any, **_: Any) -> None:
        self.patched[name] = body


def line(seconds_ago: float, text: str) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%S.000000001Z ") + text


def fast() -> collector.Pace:
    return collector.Pace(1e9, threading.Event())


def test_a_job_reads_at_most_its_first_workers_and_notes_what_moved() -> None:
    pods = [pod("big", f"big-worker-{i}", i) for i in reversed(range(12))]
    core = Core(pods, {"big-worker-3": line(5, "Epoch[1] Batch [40-60]\tSpeed: 99.50 samples/sec")})
    found = collector.running_workers(core)  # type: ignore[arg-type]
    assert [p.worker.name for p in found["big"]] == [f"big-worker-{i}" for i in range(8)]
    done = collector.Pass()
    collector.note_job(core, found["big"], collector.JobInfo(), fast(), done)  # type: ignore[arg-type]
    assert core.read == [f"big-worker-{i}" for i in range(8)]
    assert list(core.patched) == ["big-worker-3"]
    noted = read_noted(core.patched["big-worker-3"]["metadata"]["annotations"][ANNOTATION_PROGRESS])
    assert noted.report is not None and (noted.report.epoch, noted.report.batch) == (1, 60)
    assert (done.read, done.patched, done.errors) == (8, 1, 0)


def test_only_pods_an_mxjob_controls_are_read() -> None:
    deleting = pod("z", "z-worker-0", 0)
    deleting["metadata"]["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    pods = [pod("x", "x-worker-0", 0), pod("y", "y-worker-0", 0, owner_kind="PyTorchJob")]
    found = collector.running_workers(Core([*pods, deleting], {}))  # type: ignore[arg-type]
    assert list(found) == ["x"]


def test_an_unreadable_log_is_counted_and_no_stall_is_confirmed_without_it() -> None:
    core = Core([pod("s", "s-worker-0", 0), pod("s", "s-worker-1", 1)], {})
    pods = collector.running_workers(core)["s"]  # type: ignore[arg-type]
    core.logs = {"s-worker-1": client.ApiException(status=502)}
    done = collector.Pass()
    collector.note_job(core, pods, collector.JobInfo(deadlines=Deadlines(first=60)), fast(), done)  # type: ignore[arg-type]
    # Past its 60 s first-report deadline (the Workers started 30 minutes ago), but Worker 1 was
    # not read: no look is noted.
    assert core.patched == {} and (done.read, done.errors) == (1, 1)
    core.logs = {}
    collector.note_job(core, pods, collector.JobInfo(deadlines=Deadlines(first=60)), fast(), done)  # type: ignore[arg-type]
    (name,) = core.patched
    noted = read_noted(core.patched[name]["metadata"]["annotations"][ANNOTATION_PROGRESS])
    assert name == "s-worker-0" and noted.report is None and noted.seen_at is not None


def test_a_job_is_read_for_its_deadline_and_skipped_once_finished() -> None:
    running = {"metadata": {"uid": "a"}, "spec": {"runPolicy": {"progressDeadlineSeconds": 300}}}
    inline = {"metadata": {"uid": "b"}, "spec": {"firstProgressDeadlineSeconds": 45}}
    done = {
        "metadata": {"uid": "c"},
        "spec": {},
        "status": {"conditions": [{"type": "Succeeded", "status": "True"}]},
    }
    odd = {"metadata": {"uid": "d"}, "spec": {"runPolicy": {"progressDeadlineSeconds": True}}}
    assert collector.job_info(running) == ("a", collector.JobInfo(deadlines=Deadlines(300)))
    assert collector.job_info(inline) == ("b", collector.JobInfo(deadlines=Deadlines(first=45)))
    assert collector.job_info(done) == ("c", collector.JobInfo(finished=True))
    assert collector.job_info(odd) == ("d", collector.JobInfo())
    assert collector.job_info({"metadata": {}}) is None

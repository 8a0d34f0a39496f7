"""The progress loop: each pass lists every MXJob (its progress deadline, whether it finished)
and every running Worker pod, reads the newest lines of each Worker's log, and patches on the
pod only the annotation that changed (progress/notes.py decides what).

Bounded per pass and per job (docs/security.md#the-progress-component): a job's Workers read
are its lowest-indexed WORKERS_PER_JOB; a read asks the kubelet for the last TAIL_LINES lines,
at most LIMIT_BYTES, and gives up after READ_TIMEOUT_SECONDS; reads are paced to
READS_PER_SECOND over all jobs. A job whose log cannot be read (a kubelet that does not answer)
is logged and skipped: it stops no other job's pass, and without every Worker read no stall is
confirmed for it.
"""

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from component.kube import PAGE_SIZE, REQUEST_TIMEOUT_SECONDS, list_jobs
from hooks.core.public import (
    ANNOTATION_PROGRESS,
    KIND,
    MXNET_CONTAINER,
    TERMINAL,
    dig,
    encode_noted,
    read_noted,
)
from progress.notes import Worker, noted_after

LOG = logging.getLogger("progress")
WORKERS = "training.kubeflow.org/replica-type=worker"
INDEX_LABEL = "training.kubeflow.org/replica-index"
RUNNING = "status.phase=Running"
#: A log read: the newest lines, cut at this many bytes, given up after this many seconds.
TAIL_LINES = 200
LIMIT_BYTES = 64 * 1024
READ_TIMEOUT_SECONDS = 5
#: Workers of one job read per pass at most: its lowest indexes (each logs the same epochs).
WORKERS_PER_JOB = 8
#: Log reads per second at most, over every job.
READS_PER_SECOND = 20.0
#: The smallest progressDeadlineSeconds the API takes; a smaller value read is no deadline.
MIN_DEADLINE = 30


@dataclass(frozen=True)
class JobInfo:
    """What a pass needs of an MXJob: its progress deadline and whether it has finished."""

    deadline: int | None
    finished: bool


@dataclass
class Pass:
    """What one pass did: logs read, pods patched, reads or patches that failed."""

    read: int = 0
    patched: int = 0
    errors: int = 0
    jobs: int = 0


@dataclass
class Pace:
    """Spaces calls `1 / rate` seconds apart (a stop ends the wait)."""

    rate: float
    stop: threading.Event = field(default_factory=threading.Event)
    _next: float = 0.0

    def wait(self) -> None:
        now = time.monotonic()
        if self._next > now:
            self.stop.wait(self._next - now)
        self._next = max(now, self._next) + 1 / self.rate


def job_info(job: object) -> tuple[str, JobInfo] | None:
    """An MXJob's uid and what a pass needs of it."""
    uid = dig(job, "metadata", "uid")
    if not isinstance(uid, str):
        return None
    deadline = dig(job, "spec", "runPolicy", "progressDeadlineSeconds")
    if deadline is None:
        deadline = dig(job, "spec", "progressDeadlineSeconds")
    valid = (
        isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= MIN_DEADLINE
    )
    conditions = dig(job, "status", "conditions")
    finished = isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("type") in TERMINAL and c.get("status") == "True"
        for c in conditions
    )
    return uid, JobInfo(deadline if valid else None, finished)


def _owner(pod: client.V1Pod) -> str | None:
    """The uid of the MXJob that controls the pod, if one does."""
    for ref in pod.metadata.owner_references or []:
        if ref.controller and ref.kind == KIND and ref.api_version.startswith("kubeflow.org/"):
            return str(ref.uid)
    return None


def _index(pod: client.V1Pod) -> int:
    text = (pod.metadata.labels or {}).get(INDEX_LABEL, "")
    return int(text) if text.isascii() and text.isdigit() and len(text) < 8 else 0


def running_workers(core: client.CoreV1Api) -> dict[str, list[client.V1Pod]]:
    """Every running Worker pod an MXJob controls, by the job's uid, lowest index first, at
    most WORKERS_PER_JOB of each; listed a page at a time."""
    found: dict[str, list[client.V1Pod]] = {}
    for pod in _pages(core):
        owner = _owner(pod)
        if owner is not None and pod.metadata.deletion_timestamp is None:
            found.setdefault(owner, []).append(pod)
    return {uid: sorted(pods, key=_index)[:WORKERS_PER_JOB] for uid, pods in found.items()}


def _pages(core: client.CoreV1Api) -> Iterator[client.V1Pod]:
    token: str | None = None
    while True:
        page = core.list_pod_for_all_namespaces(
            label_selector=WORKERS, field_selector=RUNNING, limit=PAGE_SIZE, _continue=token,
            _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
        yield from page.items or []
        token = page.metadata._continue
        if not token:
            return


def _started(pod: client.V1Pod) -> datetime | None:
    """When its mxnet container started running."""
    for status in (pod.status.container_statuses or []) if pod.status else []:
        if status.name == MXNET_CONTAINER and status.state and status.state.running:
            started: Any = status.state.running.started_at
            return started.astimezone(UTC).replace(microsecond=0) if started else None
    return None


def _worker(pod: client.V1Pod) -> Worker:
    annotations = pod.metadata.annotations or {}
    return Worker(
        pod.metadata.name, _started(pod), read_noted(annotations.get(ANNOTATION_PROGRESS))
    )


def _read(core: client.CoreV1Api, pod: client.V1Pod) -> list[str]:
    text = core.read_namespaced_pod_log(
        pod.metadata.name, pod.metadata.namespace, container=MXNET_CONTAINER, timestamps=True,
        tail_lines=TAIL_LINES, limit_bytes=LIMIT_BYTES, _request_timeout=READ_TIMEOUT_SECONDS,
    )  # fmt: skip
    return str(text).splitlines()


def note_job(
    core: client.CoreV1Api, pods: list[client.V1Pod], info: JobInfo, pace: Pace, done: Pass
) -> None:
    """Read one job's Workers and patch what changed; a read or patch that fails is logged
    and counted, and stops nothing else."""
    workers = [_worker(pod) for pod in pods]
    logs: dict[str, list[str]] = {}
    for pod in pods:
        pace.wait()
        try:
            logs[pod.metadata.name] = _read(core, pod)
            done.read += 1
        except Exception:
            done.errors += 1
            LOG.warning("could not read a Worker's log", extra={"fields": _where(pod, "error")})
    namespace = pods[0].metadata.namespace
    for name, noted in noted_after(workers, logs, info.deadline, datetime.now(UTC)).items():
        body = {"metadata": {"annotations": {ANNOTATION_PROGRESS: encode_noted(noted)}}}
        try:
            core.patch_namespaced_pod(
                name, namespace, body, _request_timeout=REQUEST_TIMEOUT_SECONDS
            )
            done.patched += 1
        except Exception:
            done.errors += 1
            fields = {"action": "error", "namespace": namespace, "pod": name}
            LOG.warning("could not note a Worker's progress", extra={"fields": fields})


def _where(pod: client.V1Pod, action: str) -> dict[str, str]:
    return {"action": action, "namespace": pod.metadata.namespace, "pod": pod.metadata.name}


def run_once(api: client.ApiClient, pace: Pace) -> Pass:
    """One pass over every unfinished MXJob with running Workers."""
    core = client.CoreV1Api(api)
    jobs = dict(
        found for job in list_jobs(client.CustomObjectsApi(api)) if (found := job_info(job))
    )
    done = Pass()
    for uid, pods in running_workers(core).items():
        info = jobs.get(uid)
        if info is None or info.finished or pace.stop.is_set():
            continue
        done.jobs += 1
        note_job(core, pods, info, pace, done)
    return done


def log_pass(done: Pass) -> None:
    LOG.info(
        "pass done",
        extra={"fields": {"action": "pass", "jobs": done.jobs, "read": done.read,
                          "patched": done.patched, "errors": done.errors}},
    )  # fmt: skip


def run(api: client.ApiClient, interval: float, stop: threading.Event) -> None:
    """A pass every `interval` seconds (at once when a pass took longer) until `stop` is set."""
    pace = Pace(READS_PER_SECOND, stop)
    while not stop.is_set():
        began = time.monotonic()
        try:
            log_pass(run_once(api, pace))
        except Exception:
            LOG.exception("pass failed", extra={"fields": {"action": "error"}})
        stop.wait(max(0.0, interval - (time.monotonic() - began)))

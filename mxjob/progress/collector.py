"""The progress loop: each pass lists every MXJob (its progress deadline, whether it finished)
and every running Worker pod, reads the newest lines of each Worker's log, and patches on the
pod only the annotation that changed (mxjob/progress/notes.py decides what).

Bounded per pass and per job (docs/security.md#the-progress-component): a job's Workers read
are its lowest-indexed WORKERS_PER_JOB; a read asks the kubelet for the last TAIL_LINES lines,
at most LIMIT_BYTES, and gives up after READ_TIMEOUT_SECONDS; reads are paced to
READS_PER_SECOND over all jobs. A job whose log cannot be read (a kubelet that does not answer)
is logged and skipped: it stops no other job's pass, and without every Worker read no stall is
confirmed for it.
"""

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from hooks.core.public import (
    ANNOTATION_PROGRESS,
    GROUP,
    KIND,
    MXNET_CONTAINER,
    TERMINAL,
    VERSION,
    dig,
    dig_list,
    encode_noted,
    named,
    parse_time,
    read_noted,
)
from mxjob.component.kube import PAGE_SIZE, REQUEST_TIMEOUT_SECONDS, list_jobs
from mxjob.progress.notes import Deadlines, Worker, noted_after

LOG = logging.getLogger("progress")
WORKERS = "training.kubeflow.org/replica-type=worker"
INDEX_LABEL = "training.kubeflow.org/replica-index"
RUNNING = "status.phase=Running"
MXJOB_VERSION = f"{GROUP}/{VERSION}"
#: A log read: the newest lines, cut at this many bytes, given up after this many seconds.
TAIL_LINES = 200
LIMIT_BYTES = 64 * 1024
READ_TIMEOUT_SECONDS = 5
#: Workers of one job read per pass at most: its lowest indexes (each logs the same epochs).
WORKERS_PER_JOB = 8
#: Log reads per second at most, over every job.
READS_PER_SECOND = 50.0
#: The smallest progressDeadlineSeconds the API takes; a smaller value read is no deadline.
MIN_DEADLINE = 30


@dataclass(frozen=True, kw_only=True)
class JobInfo:
    """What a pass needs of an MXJob: its progress deadlines and whether it has finished."""

    deadlines: Deadlines = field(default_factory=Deadlines)
    finished: bool = False


@dataclass
class Pass:
    """What one pass did: logs read, pods patched, reads or patches that failed; and the
    earliest moment after it at which a job's deadline runs out (look again then)."""

    read: int = 0
    patched: int = 0
    errors: int = 0
    jobs: int = 0
    due: datetime | None = None

    def look_again(self, due: datetime | None, now: datetime) -> None:
        if due is not None and due > now and (self.due is None or due < self.due):
            self.due = due


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
    deadlines = Deadlines(
        _seconds(job, "progressDeadlineSeconds"), _seconds(job, "firstProgressDeadlineSeconds")
    )
    conditions = dig(job, "status", "conditions")
    finished = isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("type") in TERMINAL and c.get("status") == "True"
        for c in conditions
    )
    return uid, JobInfo(deadlines=deadlines, finished=finished)


def _seconds(job: object, name: str) -> int | None:
    """A deadline of the run policy (or of its old inline layout) the API would take."""
    value = dig(job, "spec", "runPolicy", name)
    if value is None:
        value = dig(job, "spec", name)
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= MIN_DEADLINE
    return value if valid else None


@dataclass(frozen=True)
class Listed:
    """A running Worker pod as a pass reads it from the list: where it is, the MXJob that
    controls it (its uid), its index, and the Worker the notes are decided for."""

    namespace: str
    owner: str
    index: int
    worker: Worker


def listed(pod: object) -> Listed | None:
    """A listed pod (as JSON) that an MXJob controls and is not being deleted; else None."""
    name, namespace = dig(pod, "metadata", "name"), dig(pod, "metadata", "namespace")
    owner = _owner(dig(pod, "metadata", "ownerReferences"))
    if not (isinstance(name, str) and isinstance(namespace, str) and isinstance(owner, str)):
        return None
    if dig(pod, "metadata", "deletionTimestamp") is not None:
        return None
    text = dig(pod, "metadata", "labels", INDEX_LABEL)
    digits = isinstance(text, str) and text.isascii() and text.isdigit() and len(text) < 8
    index = int(text) if digits else 0
    note = dig(pod, "metadata", "annotations", ANNOTATION_PROGRESS)
    worker = Worker(name, _started(pod), read_noted(note if isinstance(note, str) else None))
    return Listed(namespace, owner, index, worker)


def _owner(owners: object) -> str | None:
    """The uid of the MXJob among a pod's owners that controls it, if one does."""
    for ref in owners if isinstance(owners, list) else []:
        controls = isinstance(ref, dict) and ref.get("controller") is True
        if controls and ref.get("kind") == KIND and ref.get("apiVersion") == MXJOB_VERSION:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else None
    return None


def _started(pod: object) -> datetime | None:
    """When its mxnet container started running."""
    mxnet = named(dig_list(pod, "status", "containerStatuses"), MXNET_CONTAINER)
    return parse_time(dig(mxnet, "state", "running", "startedAt"))


def running_workers(core: client.CoreV1Api) -> dict[str, list[Listed]]:
    """Every running Worker pod an MXJob controls, by the job's uid, lowest index first, at
    most WORKERS_PER_JOB of each; listed a page at a time."""
    found: dict[str, list[Listed]] = {}
    for pod in _pages(core):
        seen = listed(pod)
        if seen is not None:
            found.setdefault(seen.owner, []).append(seen)
    return {
        uid: sorted(pods, key=lambda p: (p.index, p.worker.name))[:WORKERS_PER_JOB]
        for uid, pods in found.items()
    }


def _pages(core: client.CoreV1Api) -> Iterator[object]:
    """Every running Worker pod, as JSON (no client models: a pass reads a few fields of
    hundreds of pods)."""
    token: str | None = None
    while True:
        # With _preload_content=False the client returns the HTTP response, not the model its
        # annotations name.
        response: Any = core.list_pod_for_all_namespaces(
            label_selector=WORKERS, field_selector=RUNNING, limit=PAGE_SIZE, _continue=token,
            _request_timeout=REQUEST_TIMEOUT_SECONDS, _preload_content=False,
        )  # fmt: skip
        page = json.loads(response.data)
        items = dig(page, "items")
        yield from items if isinstance(items, list) else []
        token = dig(page, "metadata", "continue")
        if not isinstance(token, str) or not token:
            return


def _read(core: client.CoreV1Api, pod: Listed) -> list[str]:
    text = core.read_namespaced_pod_log(
        pod.worker.name, pod.namespace, container=MXNET_CONTAINER, timestamps=True,
        tail_lines=TAIL_LINES, limit_bytes=LIMIT_BYTES, _request_timeout=READ_TIMEOUT_SECONDS,
    )  # fmt: skip
    return str(text).splitlines()


def note_job(
    core: client.CoreV1Api, pods: list[Listed], info: JobInfo, pace: Pace, done: Pass
) -> None:
    """Read one job's Workers and patch what changed; a read or patch that fails is logged
    and counted, and stops nothing else."""
    logs: dict[str, list[str]] = {}
    for pod in pods:
        pace.wait()
        try:
            logs[pod.worker.name] = _read(core, pod)
            done.read += 1
        except Exception:
            done.errors += 1
            LOG.warning("could not read a Worker's log", extra={"fields": _where(pod, "error")})
    workers = [pod.worker for pod in pods]
    namespace = pods[0].namespace
    now = datetime.now(UTC)
    notes = noted_after(workers, logs, info.deadlines, now)
    done.look_again(notes.due, now)
    for name, noted in notes.changed.items():
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


def _where(pod: Listed, action: str) -> dict[str, str]:
    return {"action": action, "namespace": pod.namespace, "pod": pod.worker.name}


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
    """A pass every `interval` seconds (at once when a pass took longer), sooner when a job's
    deadline runs out before (a second after it, at least a second apart), until `stop`."""
    pace = Pace(READS_PER_SECOND, stop)
    while not stop.is_set():
        began = time.monotonic()
        done = Pass()
        try:
            done = run_once(api, pace)
            log_pass(done)
        except Exception:
            LOG.exception("pass failed", extra={"fields": {"action": "error"}})
        stop.wait(next_wait(interval, time.monotonic() - began, done.due, datetime.now(UTC)))


def next_wait(interval: float, took: float, due: datetime | None, now: datetime) -> float:
    """Seconds to the next pass: the interval's rest, or to a second past `due` if sooner;
    never less than a second, so a job cannot make the loop spin."""
    wait = interval - took
    if due is not None:
        wait = min(wait, (due - now).total_seconds() + 1.0)
    return max(1.0, wait)

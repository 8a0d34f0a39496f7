"""`mxjob logs`: every replica's log at once, each line prefixed with its replica
(`worker-1 | …`); with `-f`, followed through restarts until the job has finished.

Following polls the job and its pods every `POLL_SECONDS` (two reads a second, for one user at
a terminal) and follows each pod from the moment its mxnet container has started: a
replacement `worker-1-r1`, the pods of a whole-job restart's next run, a container the kubelet
restarted in place (its new run's log, from its start). Each pod's log is streamed by a thread
of its own into one queue; only the main thread writes, so lines never interleave.
"""

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from urllib3.exceptions import HTTPError

from hooks.core.public import clean, dig
from mxjob.jobs.api import Cluster, ClusterError
from mxjob.jobs.replicas import Replica, job_replicas, mxnet_status
from mxjob.jobs.view import Paint
from mxjob.jobs.waiting import Goal, verdict

POLL_SECONDS = 1.0
#: After the job has finished: how long pods that still run (a Server under cleanPodPolicy
#: None) are followed before `logs -f` ends.
LINGER_SECONDS = 5.0
#: Colours of the replicas' prefixes, in turn.
PALETTE = ("cyan", "yellow", "green", "magenta", "blue")
#: A pod's mxnet container has a log once it runs or has run.
_STARTED = ("running", "terminated")

Picked = Callable[[Replica], bool]


def started(pod: object) -> bool:
    """Whether the pod's mxnet container runs or has run (its log can be read)."""
    state = mxnet_status(pod).get("state")
    return isinstance(state, dict) and any(k in state for k in _STARTED)


def _restarts(pod: object) -> int:
    count = mxnet_status(pod).get("restartCount")
    return count if isinstance(count, int) else 0


def _lines(chunks: Any, remainder: bytearray) -> list[str]:
    """Whole lines of the bytes read so far, cleaned of what a terminal would interpret (the
    job's image writes them: hooks/core/quoting.py); a partial last line stays in `remainder`."""
    remainder.extend(chunks)
    *whole, rest = bytes(remainder).split(b"\n")
    remainder[:] = rest
    return [_line(line) for line in whole]


def _line(data: bytes) -> str:
    """One line of a log as it is printed."""
    return clean(data.decode(errors="replace"))


class Prefixes:
    """`worker-1 | `, padded to the longest label, each replica in a colour of its own."""

    def __init__(self, paint: Paint) -> None:
        self.paint, self.width, self.colours = paint, 0, dict[str, str]()

    def add(self, label: str) -> None:
        self.width = max(self.width, len(label))
        self.colours.setdefault(label, PALETTE[len(self.colours) % len(PALETTE)])

    def __call__(self, label: str) -> str:
        return self.paint(f"{label:<{self.width}} |", self.colours.get(label, ""))


def print_logs(cluster: Cluster, job: str, picked: Picked, out: TextIO, paint: Paint) -> int:
    """Every chosen pod's log, one after the other in the hook's order; pods whose container
    has not started are left out. The number of pods shown."""
    replicas = [(r, p) for r, p in job_replicas(job, cluster.pods(job)) if picked(r) and started(p)]
    prefixes = Prefixes(paint)
    for replica, _ in replicas:
        prefixes.add(replica.label)
    for replica, _ in replicas:
        response = cluster.log(replica.pod, follow=False)
        remainder = bytearray()
        try:
            for chunk in response.stream(65536):
                for line in _lines(chunk, remainder):
                    out.write(f"{prefixes(replica.label)} {line}\n")
            if remainder:
                out.write(f"{prefixes(replica.label)} {_line(bytes(remainder))}\n")
        finally:
            response.release_conn()
    out.flush()
    return len(replicas)


@dataclass
class _Follower:
    """One pod followed: its thread, how many lines of its container's current run were
    written, and the response being read (closed to stop it)."""

    replica: Replica
    restarts: int = 0
    written: int = 0
    done: bool = False
    response: Any = None
    thread: threading.Thread | None = None
    latest: dict[str, Any] = field(default_factory=dict)


class Following:
    """`logs -f` over one job: start a follower for each chosen pod once it has started, end
    when the job has finished (or is gone) and every follower has ended."""

    def __init__(self, cluster: Cluster, job: str, picked: Picked, out: TextIO, paint: Paint):
        self.cluster, self.job, self.picked, self.out = cluster, job, picked, out
        self.prefixes = Prefixes(paint)
        self.lines: queue.Queue[tuple[str, str]] = queue.Queue()
        self.followers: dict[str, _Follower] = {}
        self.stop = threading.Event()

    def run(self) -> dict[str, Any] | None:
        """Follow until the job has finished and its logs are drained; the job's last version
        (None if it is gone)."""
        finished_at: float | None = None
        job: dict[str, Any] | None = None
        while True:
            job = self.cluster.job(self.job)
            listed = set()
            for replica, pod in job_replicas(self.job, self.cluster.pods(self.job)):
                if self.picked(replica):
                    listed.add(replica.pod)
                    self._see(replica, pod)
            for name, follower in self.followers.items():
                if name not in listed:
                    follower.latest = {}  # deleted: nothing more to follow
            ended = job is None or verdict(self.job, job, Goal.SUCCEEDED) is not None
            if ended and finished_at is None:
                finished_at = time.monotonic()
            self._drain(POLL_SECONDS)
            busy = [f for f in self.followers.values() if not f.done]
            if finished_at is not None and (
                not busy or time.monotonic() - finished_at > LINGER_SECONDS
            ):
                self.close()
                self._drain(0)
                return job

    def _see(self, replica: Replica, pod: dict[str, Any]) -> None:
        follower = self.followers.get(replica.pod)
        if follower is None:
            if not started(pod):
                return
            follower = self.followers[replica.pod] = _Follower(replica, _restarts(pod))
            self.prefixes.add(replica.label)
        follower.latest = pod
        if follower.thread is None or (follower.done and _restarts(pod) > follower.restarts):
            if follower.done:  # restarted in place: its new run's log, from its start
                follower.restarts, follower.written, follower.done = _restarts(pod), 0, False
            follower.thread = threading.Thread(target=self._follow, args=(follower,), daemon=True)
            follower.thread.start()

    def _follow(self, follower: _Follower) -> None:
        """Stream one pod's log into the queue until its container's run ends; a stream that
        broke while it runs is read again, skipping the lines already written."""
        label = follower.replica.label
        while not self.stop.is_set():
            try:
                follower.response = self.cluster.log(follower.replica.pod, follow=True)
                skip, remainder = follower.written, bytearray()
                for chunk in follower.response.stream(4096):
                    for line in _lines(chunk, remainder):
                        if skip:
                            skip -= 1
                            continue
                        follower.written += 1
                        self.lines.put((label, line))
                if remainder and not skip:
                    follower.written += 1
                    self.lines.put((label, _line(bytes(remainder))))
            except (ClusterError, HTTPError, OSError, ValueError, AttributeError):
                pass  # not started yet, deleted, quiet past the read timeout, closed by `close`
            if self.stop.is_set() or not self._still_running(follower):
                break
            self.stop.wait(POLL_SECONDS)
        follower.done = True

    def _still_running(self, follower: _Follower) -> bool:
        """Whether the run of the container being followed goes on (its pod not ended, not
        deleted, not restarted since)."""
        pod = follower.latest
        state = mxnet_status(pod).get("state") or {}
        return (
            "running" in state
            and dig(pod, "metadata", "deletionTimestamp") is None
            and _restarts(pod) == follower.restarts
        )

    def _drain(self, seconds: float) -> None:
        """Write queued lines for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                label, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                self.out.flush()
                return
            self.out.write(f"{self.prefixes(label)} {line}\n")

    def close(self) -> None:
        """Stop every follower (their streams are closed)."""
        self.stop.set()
        for follower in self.followers.values():
            response = follower.response
            if response is not None and not follower.done:
                with contextlib.suppress(OSError):
                    response.close()
        for follower in self.followers.values():
            if follower.thread is not None:
                follower.thread.join(timeout=2)

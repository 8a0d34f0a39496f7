"""What a controller does with one job, seen through two API watches (the job, its pods).

Watches, not polls: nothing the comparison does adds list or get requests while a controller
works, so the API server's request counters of the large job are the controllers' and the
cluster's own, and every change is seen when it happens (times are this process's monotonic
clock at the event's arrival).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from tools.cluster.stack import Stack

NAMESPACE = "default"
JOB_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
TERMINAL = ("Succeeded", "Failed")


class PatchError(RuntimeError):
    """The API server refused a patch (404: the pod is gone)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Pod:
    """One pod of the job as last seen; `gone` once deleted from the API."""

    name: str
    uid: str
    rtype: str
    index: int
    phase: str
    seen: float
    deleting: bool = False
    gone: bool = False
    restarts: int = 0
    #: The pod's own `spec.restartPolicy`: what a kubelet does when its container exits.
    policy: str = "Always"
    #: When its phase or restart count last changed.
    changed: float = 0.0
    #: The pod as last seen.
    obj: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def live(self) -> bool:
        return not (self.deleting or self.gone)


@dataclass
class Change:
    """A change of the job's latest condition, and when it was seen."""

    at: float
    ctype: str
    reason: str
    message: str


@dataclass
class Watcher:
    """The job's conditions and pods, kept up to date by two watch threads until `close`."""

    stack: Stack
    job: str
    changes: list[Change] = field(default_factory=list)
    pods: dict[str, Pod] = field(default_factory=dict)
    last_event: float = field(default_factory=time.monotonic)
    status: dict[str, Any] = field(default_factory=dict)
    #: When the job's status was seen written with a new content (the controller's answers).
    writes: list[float] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _conns: list[http.client.HTTPSConnection] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _closed: bool = False

    def __enter__(self) -> Self:
        selector = urllib.parse.quote(f"{JOB_LABEL}={self.job}")
        name = urllib.parse.quote(f"metadata.name={self.job}")
        base = f"namespaces/{NAMESPACE}"
        try:
            self._watch(f"/api/v1/{base}/pods?labelSelector={selector}", self._on_pod)
            self._watch(f"/apis/kubeflow.org/v1/{base}/mxjobs?fieldSelector={name}", self._on_job)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        for conn in self._conns:
            with contextlib.suppress(OSError, AttributeError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
        for conn in self._conns:
            conn.close()

    # -- the watches ---------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPSConnection:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        address = urllib.parse.urlsplit(self.stack.server)
        return http.client.HTTPSConnection(str(address.hostname), address.port, context=ctx)

    def patch_status(self, pod: str, patch: dict[str, Any]) -> None:
        """A strategic merge patch of a pod's status, in-process: no kubectl to start, so the
        moment it is sent is the moment it lands, within milliseconds."""
        conn = self._connection()
        try:
            conn.request(
                "PATCH",
                f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/status",
                body=json.dumps(patch),
                headers={
                    "Authorization": f"Bearer {self.stack.token}",
                    "Content-Type": "application/strategic-merge-patch+json",
                },
            )
            answer = conn.getresponse()
            body = answer.read()
        finally:
            conn.close()
        if answer.status != 200:
            raise PatchError(f"pod {pod}: {answer.status} {body[:300]!r}", answer.status)

    def _watch(self, path: str, handle: Callable[[str, dict[str, Any]], None]) -> None:
        deadline = time.monotonic() + 30
        while True:  # a CRD just installed answers 429 until its storage is ready
            conn = self._connection()
            conn.request(
                "GET",
                f"{path}&watch=1&timeoutSeconds=7200",
                headers={"Authorization": f"Bearer {self.stack.token}"},
            )
            answer = conn.getresponse()
            if answer.status == 200:
                break
            problem = f"watch {path}: {answer.status} {answer.read()[:300]!r}"
            conn.close()
            if answer.status != 429 or time.monotonic() > deadline:
                raise RuntimeError(problem)
            time.sleep(0.5)
        self._conns.append(conn)
        thread = threading.Thread(target=self._read, args=(answer, handle), daemon=True)
        self._threads.append(thread)
        thread.start()

    def _read(
        self, answer: http.client.HTTPResponse, handle: Callable[[str, dict[str, Any]], None]
    ) -> None:
        with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
            while not self._closed:
                line = answer.readline()
                if not line:
                    return
                event = json.loads(line)
                with self._cond:
                    handle(event["type"], event["object"])
                    self.last_event = time.monotonic()
                    self._cond.notify_all()

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        meta, status = obj["metadata"], obj.get("status", {})
        labels = meta.get("labels", {})
        pod = self.pods.get(meta["uid"]) or Pod(
            name=meta["name"],
            uid=meta["uid"],
            rtype=str(labels.get(TYPE_LABEL, "")).lower(),
            index=int(labels.get(INDEX_LABEL, -1)),
            phase="",
            seen=time.monotonic(),
        )
        before = (pod.phase, pod.restarts)
        pod.phase = status.get("phase", "")
        pod.policy = obj.get("spec", {}).get("restartPolicy", "Always")
        pod.deleting = "deletionTimestamp" in meta
        pod.gone = kind == "DELETED"
        pod.restarts = sum(s.get("restartCount", 0) for s in status.get("containerStatuses", []))
        if (pod.phase, pod.restarts) != before:
            pod.changed = time.monotonic()
        pod.obj = obj
        self.pods[pod.uid] = pod

    def _on_job(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        status = obj.get("status") or {}
        if status != self.status:
            self.writes.append(time.monotonic())
        self.status = status
        latest = latest_condition(self.status)
        if latest is None:
            return
        ctype, reason, message = latest
        last = self.changes[-1] if self.changes else None
        if last is None or (last.ctype, last.reason) != (ctype, reason):
            self.changes.append(Change(time.monotonic(), ctype, reason, message))

    # -- questions -----------------------------------------------------------------------------

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until `predicate` (called with the watches paused) holds; False on timeout."""
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def quiet(self, seconds: float, limit: float) -> None:
        """Wait until nothing happened to the job or its pods for `seconds` since the call or
        the last event, whichever is later (at most `limit`): events of a change just sent may
        not have arrived yet."""
        start = time.monotonic()
        deadline = start + limit
        while time.monotonic() < deadline:
            with self._cond:
                idle = time.monotonic() - max(self.last_event, start)
            if idle >= seconds:
                return
            time.sleep(min(seconds - idle, max(deadline - time.monotonic(), 0)) + 0.01)

    def answered(self, since: float) -> float | None:
        """Seconds from `since` to the first status write after it (None: none yet)."""
        later = [t for t in self.writes if t > since]
        return later[0] - since if later else None

    def condition(self) -> str:
        """The latest true condition's type ('' while there is none)."""
        return self.changes[-1].ctype if self.changes else ""

    def finished(self) -> bool:
        return self.condition() in TERMINAL

    def live(self, rtype: str, index: int) -> Pod | None:
        """The newest live pod of a replica."""
        found = [p for p in self.pods.values() if (p.rtype, p.index) == (rtype, index) and p.live]
        return max(found, key=lambda p: p.seen) if found else None

    def running(self, slots: list[tuple[str, int]]) -> bool:
        """Every replica in `slots` has a live Running pod (one pass over the pods)."""
        up = {(p.rtype, p.index) for p in self.pods.values() if p.live and p.phase == "Running"}
        return all(slot in up for slot in slots)

    def left(self) -> Counter[str]:
        """The job's pods still in the API, by phase."""
        return Counter(p.phase for p in self.pods.values() if not p.gone)

    def replaced(self) -> int:
        """Pods made beyond the first of each replica."""
        return len(self.pods) - len({(p.rtype, p.index) for p in self.pods.values()})


def latest_condition(status: dict[str, Any]) -> tuple[str, str, str] | None:
    """The last condition whose status is True: (type, reason, message)."""
    true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
    if not true:
        return None
    last = true[-1]
    return str(last["type"]), str(last.get("reason", "")), str(last.get("message", ""))

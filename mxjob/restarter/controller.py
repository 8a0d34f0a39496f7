"""The restarter loop: watch MXJobs, and put the pods of each job whose status carries an
in-place restart order in step with it (mxjob/restarter/plan.py decides each patch).

A watch, not a poll: the order is on the restart's critical path. Each watch starts without a
resourceVersion, so the API server first sends every job as it is (the list), then every change;
a job is acted on as soon as an order of it that was not acted on comes. A watch lasts
`WATCH_SECONDS`, or `interval` while some job has an order; between the changes and after each
watch, every job with an order not acted on for `interval` is acted on again: a pod created
since, or a patch that lost a race, is in step within about `interval`. A job is forgotten when
a change shows it without an order or deleted, or when a whole watch did not list it.

An act lists the job's pods by its name label (a page at a time, never all held at once) and
patches those of this very job that differ, one JSON patch each, `MAX_PATCHES` at most: a job
with more out of step is put in step over several acts (each pod once), never left half done.
404 (the pod is gone) and 409 or 422 (its `test` failed: replaced since listed) are races,
logged at debug: the next act sees the pod as it is. Any other failure on a pod or a job is
logged with the job and counted, and the others go on.
"""

import heapq
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from hooks.core.public import GROUP, VERSION, dig
from mxjob.component.kube import (
    PAGE_SIZE,
    PLURAL,
    REQUEST_TIMEOUT_SECONDS,
    MXJobLister,
    list_jobs,
    paged,
)
from mxjob.restarter.plan import (
    NUDGE_SECONDS,
    Order,
    OrderError,
    Patch,
    Plan,
    controlled,
    order,
    plan,
    selector,
    waiting_since,
)

LOG = logging.getLogger("restarter")
#: How long a watch lasts while no job has an order (and SIGTERM is noticed at the latest).
WATCH_SECONDS = 30
#: The pods of one job patched per act at most (an act lists on past the pods in step).
MAX_PATCHES = 1000
#: Nudges (mxjob/restarter/plan.py) one job's act sends at most, to the pods waiting longest,
#: and only once its order is written to every pod (a pod whose patch keeps failing holds them
#: back too: its failure is logged each act): a stale downward API file is one pod's mishap,
#: while nudging every pod still at work doubled a 1000-pod job's writes (1640 nudges for 999
#: pods on the KWOK tier, bench/restart.py, the restart 68 s -> 105 s).
MAX_NUDGES = 10
#: Patches an act has in flight at once: one after another, a 1000-pod job's took 29 s on the
#: KWOK tier (bench/restart.py), twice per restart.
PARALLEL_PATCHES = 8
#: A race, not a failure: the pod is gone (404), or its `test` found it changed (409, 422).
RACES = frozenset({404, 409, 422})
#: Named, not guessed: the client may send a patch body as a merge patch otherwise.
JSON_PATCH = "application/json-patch+json"


class Pods(Protocol):
    """The calls of `kubernetes.client.CoreV1Api` the loop makes: list and patch pods."""

    # With _preload_content=False the client returns the HTTP response (its JSON in `.data`),
    # not the model its annotations name: pods are read as the API server sends them.
    def list_namespaced_pod(
        self,
        namespace: str,
        *,
        label_selector: str | None = None,
        limit: int | None = None,
        _continue: str | None = None,
        _preload_content: bool = True,
        _request_timeout: int | None = None,
    ) -> Any: ...

    def patch_namespaced_pod(
        self,
        name: str,
        namespace: str,
        body: Patch,
        *,
        _content_type: str | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...


class PassError(Exception):
    """A pass that failed on some jobs or pods: `python -m mxjob.restarter --once` exits 1."""


@dataclass
class Result:
    """What acts did: pods patched (of them, nudged: not acting on their `restart` or `go`
    NUDGE_SECONDS after it), patches that lost a race, failures (on a job or a pod), and jobs
    skipped for a malformed order."""

    patched: int = 0
    nudged: int = 0
    races: int = 0
    errors: int = 0
    skipped: int = 0

    def add(self, other: "Result") -> None:
        for name, count in asdict(other).items():
            setattr(self, name, getattr(self, name) + count)


def clients(api: client.ApiClient) -> tuple[MXJobLister, Pods]:
    """The two APIs the loop calls, through one client."""
    jobs: MXJobLister = client.CustomObjectsApi(api)
    pods: Pods = client.CoreV1Api(api)
    return jobs, pods


def run_once(
    jobs: MXJobLister,
    pods: Pods,
    namespace: str | None = None,
    wall: Callable[[], float] = time.time,
) -> Result:
    """One pass over a list of every MXJob (of `namespace`, or of all): act on each with an
    order. A failure on one job is logged and counted; one while listing propagates."""
    result = Result()
    for job in list_jobs(jobs, namespace):
        found = _order(job, result)
        if found is not None:
            result.add(act(pods, found, wall()))
    return result


def _order(job: object, result: Result) -> Order | None:
    """The job's order; None (logged and counted as skipped) for a malformed one."""
    try:
        return order(job)
    except OrderError as exc:
        result.skipped += 1
        fields = {"action": "skip", "namespace": dig(job, "metadata", "namespace"),
                  "name": dig(job, "metadata", "name"), "reason": str(exc)}  # fmt: skip
        LOG.warning("malformed in-place restart order: job skipped", extra={"fields": fields})
        return None


def act(pods: Pods, job: Order, now: float) -> Result:
    """Patch each pod of the job that is not in step with its order at `now` (Unix seconds:
    the nudge's moment). A failure on one pod is logged and counted and the others go on; one
    listing the pods is logged and counted."""
    result = Result()
    with ThreadPoolExecutor(PARALLEL_PATCHES, thread_name_prefix="patch") as pool:
        sent = [
            pool.submit(_patch, pods, job, name, planned)
            for name, planned in _planned(pods, job, now, result)
        ]
        for done in sent:
            result.add(done.result())
    return result


def _planned(pods: Pods, job: Order, now: float, result: Result) -> Iterator[tuple[str, Plan]]:
    """The plan of each pod of the job that is not in step, MAX_PATCHES at most; a listing
    that fails is logged and counted in `result`, and ends them. Nudges alone come last, and
    only when every pod had its order already: the MAX_NUDGES pods waiting longest."""
    tried = 0
    nudges: list[tuple[float, str, Plan]] = []  # a heap, the most recent wait on top
    listed = _pods(pods, job)
    while True:
        try:
            pod = next(listed, None)
        except Exception:
            result.errors += 1
            LOG.exception("could not list this job's pods", extra={"fields": _fields(job, "error")})
            return
        if pod is None:
            break
        if not controlled(pod, job):
            continue
        name = str(dig(pod, "metadata", "name"))
        planned = plan(pod, job, now)
        for key in planned.ahead:
            _log(logging.DEBUG, f"{key} kept: it names a later run", job, "ahead", pod=name)
        if not planned.patch:
            continue
        if planned.nudge:
            heapq.heappush(nudges, (-waiting_since(pod), name, planned))
            if len(nudges) > MAX_NUDGES:
                heapq.heappop(nudges)
            continue
        if tried == MAX_PATCHES:
            _log(logging.INFO, f"{MAX_PATCHES} pods patched: the next act goes on", job, "bound")
            return
        tried += 1
        yield name, planned
    if not tried:
        yield from ((name, planned) for _, name, planned in sorted(nudges, reverse=True))


def _pods(pods: Pods, job: Order) -> Iterator[object]:
    """The pods labelled with the job's name, as JSON, a page at a time."""

    def page(token: str | None) -> object:
        response = pods.list_namespaced_pod(
            job.namespace, label_selector=selector(job), limit=PAGE_SIZE, _continue=token,
            _preload_content=False, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
        return json.loads(response.data)

    return paged(page)


def _patch(pods: Pods, job: Order, name: str, planned: Plan) -> Result:
    """Send one pod's patch; what it did."""
    result = Result()
    try:
        pods.patch_namespaced_pod(
            name, job.namespace, planned.patch,
            _content_type=JSON_PATCH, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    except ApiException as exc:
        if exc.status not in RACES:
            _failed(job, name, result)
            return result
        result.races += 1
        _log(logging.DEBUG, "not patched: gone or changed since listed", job, "race", pod=name,
             reason=f"HTTP {exc.status} {exc.reason}")  # fmt: skip
        return result
    except Exception:
        _failed(job, name, result)
        return result
    result.patched += 1
    if planned.nudge:
        result.nudged += 1
        _log(logging.INFO, f"pod nudged: it has not acted on its order {NUDGE_SECONDS} s after it",
             job, "nudge", pod=name)  # fmt: skip
    else:
        _log(logging.INFO, f"pod in step with run {job.run}", job, "patch", pod=name,
             go=str(job.go))  # fmt: skip
    return result


def _failed(job: Order, pod: str, result: Result) -> None:
    result.errors += 1
    LOG.exception(
        "could not patch this pod; going on", extra={"fields": _fields(job, "error", pod=pod)}
    )


def _fields(job: Order | None, action: str, **more: str) -> dict[str, str]:
    fields = {"action": action}
    if job is not None:
        fields.update(namespace=job.namespace, name=job.name, uid=job.uid, run=str(job.run))
    return fields | more


def _log(level: int, message: str, job: Order | None, action: str, **more: str) -> None:
    LOG.log(level, message, extra={"fields": _fields(job, action, **more)})


def check(result: Result) -> None:
    """Log what a single pass did; raise `PassError` if it failed on any job or pod."""
    LOG.info("pass done", extra={"fields": {"action": "pass", **asdict(result)}})
    if result.errors:
        raise PassError(f"{result.errors} failure(s)")


@dataclass
class Ordered:
    """A job with an order, as the loop keeps it: the order, when it was last acted on, and the
    watch that last listed or changed it."""

    order: Order
    acted: float
    seen: int


@dataclass
class Watching:
    """What the loop keeps between watches: how many it started, and each job with an order,
    by uid."""

    watches: int = 0
    jobs: dict[str, Ordered] = field(default_factory=dict)


def run(
    jobs: MXJobLister,
    pods: Pods,
    interval: float,
    stop: threading.Event,
    namespace: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
) -> None:
    """Watch until `stop` is set; after a failed watch, wait `interval` and start again.
    `clock` times the intervals, `wall` gives the nudges' moments."""
    where = f"namespace {namespace}" if namespace else "all namespaces"
    _log(logging.INFO, f"started: watching {where}, again every {interval:g} s", None, "start")
    # `kubernetes.watch` has no type annotations (`kubernetes.client` has).
    watcher = watch.Watch()  # type: ignore[no-untyped-call]
    state = Watching()
    while not stop.is_set():
        long = not state.jobs
        seconds = WATCH_SECONDS if long else max(1, math.ceil(interval))
        state.watches += 1
        try:
            for change in _watch(watcher, jobs, namespace, seconds):
                _on_change(pods, change, state, clock(), wall)
                _again(pods, state, interval, clock, wall)
                # A long watch may wait its 30 s for the next change: a job with an order
                # wants its short ones (the next one lists every job again, so none is missed).
                if stop.is_set() or (long and state.jobs):
                    break
            else:
                _forget_unlisted(state)
        except Exception:
            LOG.exception("watch failed", extra={"fields": _fields(None, "error")})
            stop.wait(interval)
        _again(pods, state, interval, clock, wall)
    _log(logging.INFO, "stopped", None, "stop")


def _watch(
    watcher: Any, jobs: MXJobLister, namespace: str | None, seconds: int
) -> Iterator[dict[str, Any]]:
    """A watch of every MXJob (of `namespace`, or of all) for `seconds`: without a
    resourceVersion, so it sends every job as it is first, then each change."""
    options = {"timeout_seconds": seconds, "_request_timeout": seconds + REQUEST_TIMEOUT_SECONDS}
    stream: Iterator[dict[str, Any]]
    if namespace:
        call = jobs.list_namespaced_custom_object
        stream = watcher.stream(call, GROUP, VERSION, namespace, PLURAL, **options)
    else:
        stream = watcher.stream(jobs.list_cluster_custom_object, GROUP, VERSION, PLURAL, **options)
    return stream


def _on_change(
    pods: Pods, change: dict[str, Any], state: Watching, now: float, wall: Callable[[], float]
) -> None:
    """Act at once on a job listed, added or changed with an order it was not acted on for;
    forget one without an order, or deleted."""
    kind, job = change.get("type"), change.get("object")
    if kind not in ("ADDED", "MODIFIED", "DELETED"):
        return
    found = None if kind == "DELETED" else _order(job, Result())
    if found is None:
        state.jobs.pop(str(dig(job, "metadata", "uid")), None)
        return
    known = state.jobs.get(found.uid)
    if known is not None and known.order == found:
        known.seen = state.watches
        return
    state.jobs[found.uid] = Ordered(found, now, state.watches)
    act(pods, found, wall())


def _again(
    pods: Pods,
    state: Watching,
    interval: float,
    clock: Callable[[], float],
    wall: Callable[[], float],
) -> None:
    """Act again on each job with an order not acted on for `interval`."""
    for known in list(state.jobs.values()):
        now = clock()
        if now - known.acted >= interval:
            known.acted = now
            act(pods, known.order, wall())


def _forget_unlisted(state: Watching) -> None:
    """After a whole watch: forget the jobs its list did not have (deleted before it began)."""
    for uid in [uid for uid, known in state.jobs.items() if known.seen != state.watches]:
        del state.jobs[uid]

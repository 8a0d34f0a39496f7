"""The TTL loop: list MXJobs, judge each with `mxjob.ttl.expiry`, delete the expired ones safely.

Polling, not watching. Each pass is a fresh paginated list of every MXJob (or of one namespace),
and the loop sleeps until the earliest expiry it saw, but never longer than `interval`. A watch
would only add resourceVersion bookkeeping, 410-Gone relists, reconnects and a cache that can
drift; the cost of polling is one list per interval, and a job that finishes between passes is
deleted at most `interval` after it expires (a job seen finished is deleted on time).

A deletion is the one irreversible step, so it is guarded twice:
- a fresh GET just before deleting (the list may be stale), judged again, with the same uid
  as the listed job (a job re-created under the same name is judged on a later pass);
- the DELETE carries `preconditions` with the uid and resourceVersion of that GET, so the API
  server refuses (409) if the job was re-created or changed in between. The job's pods and
  services go by garbage collection (`propagationPolicy: Background`).
404 and 409 are expected races and only logged at debug. Any other failure on one job is logged
with the job and counted, and the pass goes on: one job the loop cannot read or delete never
stops the others' TTL.
"""

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hooks.core.public import GROUP, VERSION, dig, earliest
from mxjob.component.kube import PLURAL, REQUEST_TIMEOUT_SECONDS, MXJobLister, api_client, list_jobs
from mxjob.component.ref import JobRef, job_ref, log_fields
from mxjob.ttl.expiry import Action, Decision, decide

#: Shortest sleep between passes, so that a job expiring now does not spin the loop.
MIN_SLEEP_SECONDS = 1.0
HTTP_NOT_FOUND = 404
HTTP_CONFLICT = 409

LOG = logging.getLogger("ttl")
Clock = Callable[[], datetime]


class CustomObjects(MXJobLister, Protocol):
    """The calls of `kubernetes.client.CustomObjectsApi` the loop makes beyond listing."""

    def get_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        *,
        _request_timeout: int | None = None,
    ) -> object: ...

    def delete_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        *,
        body: client.V1DeleteOptions | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...


@dataclass
class Sweep:
    """What one pass did: the jobs it deleted, when to look again, how many calls failed."""

    deleted: list[JobRef] = field(default_factory=list)
    #: The earliest moment a job seen in this pass may need deleting; `None`: no such job.
    recheck_at: datetime | None = None
    errors: int = 0


def _utcnow() -> datetime:
    return datetime.now(UTC)


def connect(kubeconfig: str | None = None) -> CustomObjects:
    """The custom-objects API through `api_client(kubeconfig)`."""
    api: CustomObjects = client.CustomObjectsApi(api_client(kubeconfig))
    return api


def run_once(api: CustomObjects, now: datetime, namespace: str | None = None) -> Sweep:
    """One pass over every MXJob: delete those whose TTL has passed at `now`.

    `api` is a `kubernetes.client.CustomObjectsApi` (see `connect`). An error on one job,
    whatever it is, is logged and counted, and the pass goes on; an error while listing
    propagates.
    """
    sweep = Sweep()
    for job in list_jobs(api, namespace):
        ref = job_ref(job)
        if ref is None:
            _log(logging.WARNING, "skipped an MXJob without namespace, name or uid", None, "never")
            continue
        try:
            _judge(api, job, ref, now, sweep)
        except Exception:  # one job the loop cannot handle stops no other (docs/security.md)
            sweep.errors += 1
            fields = {"action": "error", "namespace": ref.namespace, "name": ref.name}
            LOG.exception("failed on this job; going on", extra={"fields": fields})
    return sweep


def _judge(api: CustomObjects, job: object, ref: JobRef, now: datetime, sweep: Sweep) -> None:
    decision = decide(job, now)
    if decision.action is Action.DELETE:
        _delete_if_still_expired(api, ref, now, sweep)
    else:
        _keep(ref, decision, sweep)


def _delete_if_still_expired(api: CustomObjects, ref: JobRef, now: datetime, sweep: Sweep) -> None:
    try:
        fresh = api.get_namespaced_custom_object(
            GROUP, VERSION, ref.namespace, PLURAL, ref.name,
            _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    except ApiException as exc:
        _api_error(exc, "reading it again before deleting", ref, sweep)
        return
    fresh_ref = job_ref(fresh)
    if fresh_ref != ref:
        _log(logging.DEBUG, "not deleted: re-created since listed", ref, "conflict")
        return
    decision = decide(fresh, now)
    if decision.action is not Action.DELETE:
        _keep(ref, decision, sweep)
        return
    options = client.V1DeleteOptions(
        propagation_policy="Background",
        preconditions=client.V1Preconditions(
            uid=ref.uid, resource_version=dig(fresh, "metadata", "resourceVersion")
        ),
    )
    try:
        api.delete_namespaced_custom_object(
            GROUP, VERSION, ref.namespace, PLURAL, ref.name,
            body=options, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    except ApiException as exc:
        if exc.status == HTTP_CONFLICT:
            # Changed or re-created since the GET: judge it again soon, from a fresh list.
            sweep.recheck_at = earliest(sweep.recheck_at, now)
        _api_error(exc, "deleting it", ref, sweep)
        return
    sweep.deleted.append(ref)
    _log(logging.INFO, "deleted: TTL after finishing has passed", ref, "delete", decision.reason)


def _api_error(exc: ApiException, doing: str, ref: JobRef, sweep: Sweep) -> None:
    if exc.status == HTTP_NOT_FOUND:
        _log(logging.DEBUG, f"not deleted: already gone when {doing}", ref, "gone")
    elif exc.status == HTTP_CONFLICT:
        _log(logging.DEBUG, f"not deleted: changed or re-created when {doing}", ref, "conflict")
    else:
        sweep.errors += 1
        reason = f"HTTP {exc.status} {exc.reason}"
        _log(logging.ERROR, f"failed {doing}", ref, "error", reason)


def _keep(ref: JobRef, decision: Decision, sweep: Sweep) -> None:
    """Log why a job stays (a warning if it could not be read) and when to look again."""
    level = logging.WARNING if decision.malformed else logging.DEBUG
    _log(level, f"kept: {decision.action.value}", ref, decision.action.value, decision.reason)
    if decision.action is Action.RECHECK:
        sweep.recheck_at = earliest(sweep.recheck_at, decision.at)


def _log(level: int, message: str, ref: JobRef | None, action: str, reason: str = "") -> None:
    LOG.log(level, message, extra={"fields": log_fields(ref, action, reason)})


def sleep_seconds(recheck_at: datetime | None, now: datetime, interval: float) -> float:
    """How long to wait before the next pass: until `recheck_at`, within [1 s, interval]."""
    if recheck_at is None:
        return interval
    return min(interval, max(MIN_SLEEP_SECONDS, (recheck_at - now).total_seconds()))


def run(
    api: CustomObjects,
    interval: float,
    stop: threading.Event,
    namespace: str | None = None,
    clock: Clock = _utcnow,
) -> None:
    """Pass after pass until `stop` is set; a failed pass is logged and retried next interval."""
    where = f"namespace {namespace}" if namespace else "all namespaces"
    _log(logging.INFO, f"started: every {interval:g} s, {where}", None, "start")
    while not stop.is_set():
        recheck_at = None
        try:
            sweep = run_once(api, clock(), namespace)
            recheck_at = sweep.recheck_at
        except Exception:
            LOG.exception("pass failed; retrying", extra={"fields": {"action": "error"}})
        stop.wait(sleep_seconds(recheck_at, clock(), interval))
    _log(logging.INFO, "stopped", None, "stop")

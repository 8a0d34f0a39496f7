"""The retention loop: list MXJobs, and for each one being deleted that holds `RETAIN_FINALIZER`,
release its checkpoint claim if it retains it, then remove the finalizer.

Polling, not watching, as the TTL loop does: a job waits for its finalizer at most `interval`,
and a pass is one list of every MXJob plus calls for the few jobs being deleted.

The order is the guarantee: the finalizer goes only once the claim is released, absent, not this
job's, or not retained; a release that fails keeps the finalizer, and the next pass tries again.
A claim is released only if an owner reference names this job's uid, with one JSON patch that
first tests the claim's uid; the finalizer's patch tests the job's uid and the finalizer's place.
404 (gone) and 409 or 422 (a failed `test`: changed since read) are expected races, logged at
debug; the job is judged again next pass. Any other failure on one job is logged with the job and
counted, and the pass goes on with the others.
"""

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hooks.core.public import GROUP, VERSION, claim_name
from mxjob.component.kube import PLURAL, REQUEST_TIMEOUT_SECONDS, MXJobLister, list_jobs
from mxjob.component.ref import log_fields
from mxjob.retention.release import (
    Patch,
    Pending,
    finalizer_patch,
    owned_by,
    pending,
    release_patch,
)

LOG = logging.getLogger("retention")
HTTP_NOT_FOUND = 404
#: A race, not a failure: the object is gone (404), or a `test` found it changed (409, 422).
RACES = frozenset({404, 409, 422})
#: Both patches are JSON patches. Named, not guessed: the client sends a custom object's list
#: body as a merge patch, which the API server refuses (400).
JSON_PATCH = "application/json-patch+json"


class Jobs(MXJobLister, Protocol):
    """The calls of `kubernetes.client.CustomObjectsApi` the loop makes beyond listing."""

    def patch_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Patch,
        *,
        _content_type: str | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...


class Claims(Protocol):
    """The calls of `kubernetes.client.CoreV1Api` the loop makes: read and patch one claim."""

    # With _preload_content=False the client returns the HTTP response (its JSON in `.data`),
    # not the model its annotations name: the claim is patched as the API server stores it.
    def read_namespaced_persistent_volume_claim(
        self,
        name: str,
        namespace: str,
        *,
        _preload_content: bool = True,
        _request_timeout: int | None = None,
    ) -> Any: ...

    def patch_namespaced_persistent_volume_claim(
        self,
        name: str,
        namespace: str,
        body: Patch,
        *,
        _content_type: str | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...


class PassError(Exception):
    """A pass that failed on some jobs: `python -m mxjob.retention --once` exits 1."""


@dataclass
class Result:
    """What one pass did: the jobs whose claim it released, those whose finalizer it removed,
    and how many jobs it failed on."""

    released: list[Pending] = field(default_factory=list)
    finalized: list[Pending] = field(default_factory=list)
    errors: int = 0


def clients(api: client.ApiClient) -> tuple[Jobs, Claims]:
    """The two APIs the loop calls, through one client."""
    jobs: Jobs = client.CustomObjectsApi(api)
    claims: Claims = client.CoreV1Api(api)
    return jobs, claims


def run_once(jobs: Jobs, claims: Claims, namespace: str | None = None) -> Result:
    """One pass over every MXJob (of `namespace`, or of all): settle each one being deleted that
    holds the finalizer. An error on one job is logged and counted; one while listing propagates."""
    result = Result()
    for listed in list_jobs(jobs, namespace):
        job = pending(listed)
        if job is None:
            continue
        try:
            _settle(jobs, claims, job, result)
        except Exception:  # one job the loop cannot settle stops no other
            result.errors += 1
            LOG.exception(
                "failed on this job; going on", extra={"fields": log_fields(job, "error")}
            )
    return result


def _settle(jobs: Jobs, claims: Claims, job: Pending, result: Result) -> None:
    """Release the claim of a job that retains it, then remove the finalizer: never the other
    way round, so that the garbage collector never sees the job gone with the claim still its."""
    if job.retains and not _release(claims, job, result):
        return
    try:
        jobs.patch_namespaced_custom_object(
            GROUP, VERSION, job.namespace, PLURAL, job.name, finalizer_patch(job),
            _content_type=JSON_PATCH, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    except ApiException as exc:
        _race(exc, job, "finalizer kept: the job is gone or changed since listed")
        return
    result.finalized.append(job)
    _log(logging.INFO, "finalizer removed: the job may go", job, "finalize")


def _release(claims: Claims, job: Pending, result: Result) -> bool:
    """Free the job's claim of it if the job owns it; whether the finalizer may go now."""
    name = claim_name(job.name)
    try:
        response = claims.read_namespaced_persistent_volume_claim(
            name, job.namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
    except ApiException as exc:
        if exc.status != HTTP_NOT_FOUND:
            raise
        _log(logging.DEBUG, f"no claim {name} to release", job, "absent")
        return True
    claim = json.loads(response.data)
    if not owned_by(claim, job.uid):
        _log(logging.DEBUG, f"claim {name} is not this job's: left as it is", job, "not-owned")
        return True
    try:
        claims.patch_namespaced_persistent_volume_claim(
            name, job.namespace, release_patch(claim, job.uid),
            _content_type=JSON_PATCH, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    except ApiException as exc:
        _race(exc, job, f"claim {name} not released: gone or changed since read")
        return False
    result.released.append(job)
    _log(logging.INFO, f"claim {name} released: it outlives the job", job, "release")
    return True


def _race(exc: ApiException, job: Pending, message: str) -> None:
    """Log an expected race at debug (the next pass judges the job again); raise anything else."""
    if exc.status not in RACES:
        raise exc
    _log(logging.DEBUG, message, job, "race", f"HTTP {exc.status} {exc.reason}")


def _log(level: int, message: str, job: Pending | None, action: str, reason: str = "") -> None:
    LOG.log(level, message, extra={"fields": log_fields(job, action, reason)})


def check(result: Result) -> None:
    """Log what a single pass did; raise `PassError` if it failed on any job."""
    fields = {"action": "pass", "released": len(result.released),
              "finalized": len(result.finalized), "errors": result.errors}  # fmt: skip
    LOG.info("pass done", extra={"fields": fields})
    if result.errors:
        raise PassError(f"failed on {result.errors} job(s)")


def run(
    jobs: Jobs,
    claims: Claims,
    interval: float,
    stop: threading.Event,
    namespace: str | None = None,
) -> None:
    """Pass after pass until `stop` is set; a failed pass is logged and retried next interval."""
    where = f"namespace {namespace}" if namespace else "all namespaces"
    _log(logging.INFO, f"started: every {interval:g} s, {where}", None, "start")
    while not stop.is_set():
        try:
            run_once(jobs, claims, namespace)
        except Exception:
            LOG.exception("pass failed; retrying", extra={"fields": log_fields(None, "error")})
        stop.wait(interval)
    _log(logging.INFO, "stopped", None, "stop")

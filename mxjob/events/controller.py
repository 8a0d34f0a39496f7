"""The Events loop: watch every MXJob and create the Events `mxjob.events.story` tells that were not
created yet.

A watch, not a poll: a Worker replaced in two seconds shows Restarting in one status write
only, which a poll every few seconds would miss. Each watch starts without a resourceVersion,
so the API server first sends every job as it is (the list), then every change; it ends after
`WATCH_SECONDS` and starts again. An Event's name says which transition it tells, so a create the
API server refuses as a duplicate (409) means it was told already (before a restart, or by
another replica) and is only remembered. Events are `core/v1` with `involvedObject` the MXJob
and `source.component: mxjob`, which is what `kubectl describe mxjob` lists. A job whose Events
cannot be told (an Event the API server refuses, a status nothing can read) is logged and skipped,
so it never stops the watch for the jobs after it.
"""

import logging
import threading
from datetime import UTC, datetime

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from hooks.core.public import GROUP, KIND, VERSION, dig
from mxjob.component.kube import PLURAL, REQUEST_TIMEOUT_SECONDS, list_jobs
from mxjob.events.story import RECENT, JobEvent, story

LOG = logging.getLogger("events")
COMPONENT = "mxjob"
HTTP_CONFLICT = 409
#: How long one watch lasts before the next starts (and SIGTERM is noticed at the latest).
WATCH_SECONDS = 30
#: Events known to exist: name -> the moment of the transition it tells.
Told = dict[str, datetime]


def tell(core: client.CoreV1Api, job: object, told: Told, now: datetime) -> int:
    """Create the job's Events not yet in `told`; how many were created. A job whose Events
    cannot be told (whatever fails) is logged and skipped: it stops no other job's."""
    try:
        return _tell(core, job, told, now)
    except Exception:
        fields = {"action": "error", "namespace": dig(job, "metadata", "namespace"),
                  "name": dig(job, "metadata", "name")}  # fmt: skip
        LOG.exception("could not tell this job's Events; going on", extra={"fields": fields})
        return 0


def _tell(core: client.CoreV1Api, job: object, told: Told, now: datetime) -> int:
    namespace, uid = dig(job, "metadata", "namespace"), dig(job, "metadata", "uid")
    created = 0
    for event in story(job, now):
        if event.name in told or not isinstance(namespace, str):
            continue
        if _create(core, job, namespace, str(uid), event):
            created += 1
        told[event.name] = event.time
    return created


def forget_old(told: Told, now: datetime) -> None:
    """Drop what no story tells any more, so `told` stays as large as the recent transitions."""
    for name in [n for n, moment in told.items() if now - moment > RECENT]:
        del told[name]


def run_once(api: client.ApiClient, told: Told, now: datetime) -> int:
    """One pass over a list of every MXJob; the number of Events created."""
    core = client.CoreV1Api(api)
    return sum(tell(core, job, told, now) for job in list_jobs(client.CustomObjectsApi(api)))


def log_created(count: int) -> None:
    LOG.info("pass done", extra={"fields": {"action": "pass", "created": count}})


def run(api: client.ApiClient, interval: float, stop: threading.Event) -> None:
    """Watch until `stop` is set; after a failed watch, wait `interval` seconds and start again."""
    core, custom, told = client.CoreV1Api(api), client.CustomObjectsApi(api), Told()
    while not stop.is_set():
        try:
            # `kubernetes.watch` has no type annotations (`kubernetes.client` has).
            stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                custom.list_cluster_custom_object, GROUP, VERSION, PLURAL,
                timeout_seconds=WATCH_SECONDS, _request_timeout=WATCH_SECONDS + 10,
            )  # fmt: skip
            for change in stream:
                if change.get("type") in ("ADDED", "MODIFIED"):
                    tell(core, change.get("object"), told, datetime.now(UTC))
                if stop.is_set():
                    return
            forget_old(told, datetime.now(UTC))
        except Exception:
            LOG.exception("watch failed", extra={"fields": {"action": "error"}})
            stop.wait(interval)


def _create(core: client.CoreV1Api, job: object, namespace: str, uid: str, e: JobEvent) -> bool:
    """Create the Event; False if it exists already."""
    name = str(dig(job, "metadata", "name"))
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=e.name, namespace=namespace),
        involved_object=client.V1ObjectReference(
            api_version=f"{GROUP}/{VERSION}",
            kind=KIND,
            name=name,
            namespace=namespace,
            uid=uid,
            resource_version=dig(job, "metadata", "resourceVersion"),
        ),
        reason=e.reason,
        message=e.message,
        type=e.type,
        first_timestamp=e.time,
        last_timestamp=e.time,
        count=1,
        source=client.V1EventSource(component=COMPONENT),
        reporting_component=COMPONENT,
        reporting_instance=COMPONENT,
    )
    try:
        core.create_namespaced_event(namespace, body, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    except ApiException as exc:
        if exc.status == HTTP_CONFLICT:
            return False
        raise
    LOG.info(
        "event",
        extra={"fields": {"action": "event", "namespace": namespace, "name": name,
                          "reason": e.reason, "type": e.type}},
    )  # fmt: skip
    return True

"""Prometheus metrics of the hook, served on `GET /metrics` (docs/http.md#metrics).

Under gunicorn every worker is a process of its own, so the values live in files: with
`PROMETHEUS_MULTIPROC_DIR` set (by `gunicorn_config.py`, on tmpfs) each scrape sums every
worker's files, including those of workers that have exited. Without it (the Flask test client,
a single process) the default registry is used. prometheus-client picks its storage when it is
first imported, so the variable must be set before this module is imported.

A worker creates its file empty and sizes it a moment later; prometheus-client's own collector
fails the whole scrape on an empty file (client_python issue 1199), so a scrape while a worker
starts answered 500, and a worker killed in that moment would have broken every later scrape.
Empty files hold no values yet and are left out.

Outcomes (label `outcome`) of a sync (`hook="sync"`): the job's state after the sync, read from
the status the hook returns (its last condition that is True): created, running, restarting,
succeeded, failed, suspended; `invalid` for an invalid spec (Failed, reason MXJobInvalidSpec);
`not_modified` for a 304 (Metacontroller's ETag cache holds the answer, hooks/etag.py). Of a
conversion (`hook="convert"`): `success`, or `failure` when an object could not be converted.
Of either: `rejected` for a request refused with a 4xx (not a sync request or a review,
malformed JSON, …); `error` for a 500 (a bug).
"""

import glob
import os
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from hooks.core.api import ConditionStatus, Reason

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
REJECTED = "rejected"
ERROR = "error"
NOT_MODIFIED = "not_modified"
INVALID = "invalid"
#: What a status without any True condition means: nothing has happened yet.
NO_CONDITION = "created"

SYNCS = Counter(
    "mxjob_hook_syncs",
    "Hook calls answered (syncs and conversions), by hook and outcome.",
    ["hook", "outcome"],
)
DURATION = Histogram(
    "mxjob_hook_sync_duration_seconds",
    "Time from the request body read to the response built (decode, decide, encode).",
    ["hook"],
    # Small jobs take about a millisecond; 5000 replicas about a second. Metacontroller's
    # hook timeout is 10 s by default.
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
_SIZES = tuple(float(4**k * 1024) for k in range(10))  # 1 KiB … 256 MiB
REQUEST_BYTES = Histogram(
    "mxjob_hook_request_bytes",
    "Size of request bodies, by hook: a sync's grows linearly with the job's replicas.",
    ["hook"],
    buckets=_SIZES,
)
RESPONSE_BYTES = Histogram(
    "mxjob_hook_response_bytes",
    "Size of response bodies, by hook: a sync's grows linearly with the job's replicas.",
    ["hook"],
    buckets=_SIZES,
)
INVALID_SPECS = Counter(
    "mxjob_hook_invalid_specs",
    "Syncs that found an invalid MXJob spec (the job is Failed with MXJobInvalidSpec; every "
    "resync of the same job counts again).",
)


def outcome(status: Mapping[str, Any], *, invalid: bool) -> str:
    """The outcome label of a sync answered with `status` (see the module docstring)."""
    conditions = status.get("conditions")
    if invalid:
        return INVALID
    for condition in reversed(conditions if isinstance(conditions, list) else []):
        if isinstance(condition, dict) and condition.get("status") == ConditionStatus.TRUE:
            if condition.get("reason") == Reason.INVALID_SPEC:
                return INVALID
            return str(condition.get("type", NO_CONDITION)).lower()
    return NO_CONDITION


def observe(
    hook: str, result: str, seconds: float, request_bytes: int, response_bytes: int | None
) -> None:
    """Record one answered call."""
    SYNCS.labels(hook, result).inc()
    DURATION.labels(hook).observe(seconds)
    REQUEST_BYTES.labels(hook).observe(request_bytes)
    if response_bytes is not None:
        RESPONSE_BYTES.labels(hook).observe(response_bytes)
    if result == INVALID:
        INVALID_SPECS.inc()


class _WorkerFiles(Collector):
    """Every worker's values in `directory`, summed; files not yet sized are left out."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def collect(self) -> Iterable[Metric]:
        paths = glob.glob(os.path.join(self.directory, "*.db"))
        sized = [path for path in paths if os.path.getsize(path) > 0]
        merge = MultiProcessCollector.merge
        merged: Iterable[Metric] = merge(sized, accumulate=True)  # type: ignore[no-untyped-call]
        return merged


def exposition() -> bytes:
    """The Prometheus text of every worker (multiprocess mode) or of this process."""
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    registry.register(_WorkerFiles(directory))
    return generate_latest(registry)

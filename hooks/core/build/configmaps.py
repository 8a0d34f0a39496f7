"""The job's ConfigMaps: MX_CONFIG's shared parts, and the record of a finished job.

The result record is what makes cleanup safe against a stale parent cache (docs/run-policy.md):
once the
job has finished, its final status is also kept in a child, so a sync that sees the pods gone
but an old parent status restores the final status instead of starting the job again.
"""

import json
from typing import Any

from hooks.core.build.env import config_map_data
from hooks.core.children import ConfigMap
from hooks.core.fields import parsed_json
from hooks.core.job import Job
from hooks.core.labels import job_labels
from hooks.core.naming import RunNames, result_name
from hooks.core.previous import PreviousStatus, read_previous
from hooks.core.status import JobStatus

RESULT_KEY = "status"


def _config_map(job: Job, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": job.namespace, "labels": job_labels(job.name)},
        # Immutable: kubelets need not watch it, which matters for jobs with many pods.
        "immutable": True,
        "data": data,
    }


def desired_config(job: Job, names: RunNames | None = None) -> dict[str, Any]:
    """The `cluster` and `labels` JSON that the MX_CONFIG of every pod of a run references:
    the run's `names` (run 0's, as this version makes them, unless given)."""
    names = names or job.names()
    return _config_map(job, names.config, config_map_data(job.name, job.spec, names.subdomain))


def desired_result(job: Job, status: JobStatus) -> dict[str, Any]:
    """The record of the terminal status."""
    body = json.dumps(status, separators=(",", ":"), sort_keys=True)
    return _config_map(job, result_name(job.name), {RESULT_KEY: body})


def recorded_status(observed: ConfigMap | None) -> PreviousStatus | None:
    """The terminal status kept in an observed result record, if it holds one."""
    text = (observed.data or {}).get(RESULT_KEY) if observed is not None else None
    status = parsed_json(text)
    return read_previous(status) if isinstance(status, dict) else None

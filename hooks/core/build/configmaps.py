"""The job's ConfigMaps: MX_CONFIG's shared parts, and the record of a finished job.

The result record is what makes cleanup safe against a stale parent cache (docs/run-policy.md):
once the
job has finished, its final status is also kept in a child, so a sync that sees the pods gone
but an old parent status restores the final status instead of starting the job again.
"""

import json
from collections.abc import Mapping
from typing import Any

from hooks.core.build.env import config_map_data
from hooks.core.job import Job
from hooks.core.labels import job_labels
from hooks.core.naming import RunNames, result_name
from hooks.core.previous import RESULT_KEY


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


def desired_result(job: Job, status: Mapping[str, object]) -> dict[str, Any]:
    """The record of the terminal status (a JobStatus, hooks/core/status.py; read back by
    hooks/core/previous.py's `recorded_status`)."""
    body = json.dumps(status, separators=(",", ":"), sort_keys=True)
    return _config_map(job, result_name(job.name), {RESULT_KEY: body})

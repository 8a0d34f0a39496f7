"""The job's checkpoint PersistentVolumeClaim, and what its pods add to mount it
(docs/restarts.md#checkpoints)."""

from typing import Any

from hooks.core.checkpoint import VOLUME, Checkpoint, claim_name
from hooks.core.job import Job
from hooks.core.labels import job_labels


def desired_claim(job: Job, saved: Checkpoint) -> dict[str, Any]:
    """`<job>-checkpoint`, from the template: its labels under the job's, its annotations, its
    spec (accessModes defaulted)."""
    metadata: dict[str, Any] = {
        "name": claim_name(job.name),
        "namespace": job.namespace,
        "labels": {**saved.labels, **job_labels(job.name)},
    }
    if saved.annotations:
        metadata["annotations"] = saved.annotations
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": saved.spec,
    }


def mounted(job: str, saved: Checkpoint, spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec with the claim as a volume, mounted in every container at its path."""
    volume = {"name": VOLUME, "persistentVolumeClaim": {"claimName": claim_name(job)}}
    mount = {"name": VOLUME, "mountPath": saved.mount_path}
    return {
        **spec,
        "volumes": [*spec.get("volumes", []), volume],
        "containers": [
            {**c, "volumeMounts": [*c.get("volumeMounts", []), mount]} for c in spec["containers"]
        ],
    }

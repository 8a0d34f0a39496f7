"""The job's checkpoint PersistentVolumeClaim, what its pods add to mount it, and why they wait
for it (docs/restarts.md#checkpoints)."""

from typing import Any

from hooks.core.checkpoint import VOLUME, Checkpoint, claim_name
from hooks.core.children import Claim
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


def claim_waits(job: Job, claim: Claim | None) -> str | None:
    """Why the job's pods wait for its checkpoint claim, if they do: it is not there yet (no
    pod is made before it, so none can mount a claim of that name that is not the job's), or
    it has lost its volume."""
    if job.spec.checkpoint is None and claim is None:
        return None
    name = claim_name(job.name)
    if claim is None:
        return (
            f"waiting for its checkpoint claim {name} to be made (if it is not, a claim of "
            "that name that is not this job's, or a quota, stops it: Metacontroller's log says)"
        )
    if claim.status.phase == "Lost":
        return f"its checkpoint claim {name} has lost its volume (phase Lost)"
    return None

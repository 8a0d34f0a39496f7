"""The desired Pod of a replica slot and attempt (docs/environment.md)."""

from typing import Any

from hooks.core.api import ANNOTATION_ATTEMPT, ANNOTATION_RESTARTS, ANNOTATION_RUN
from hooks.core.env import container_env, default_env, injected_env
from hooks.core.gang import (
    PLUGINS_GROUP_LABEL,
    PLUGINS_SCHEDULER,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_SCHEDULER,
    VOLCANO_TASK_ANNOTATION,
    Gang,
)
from hooks.core.job import Job
from hooks.core.labels import slot_labels
from hooks.core.naming import Slot
from hooks.core.queueing import group_metadata, queue_group
from hooks.core.rejoin import pod_restart_policy, wait_container


def desired_pod(
    job: Job, slot: Slot, attempt: int, restarts_before: int, run: int
) -> dict[str, Any]:
    """The template's metadata and spec, with our labels, restart policy and environment;
    every pod carries its run and attempt (read back by the hook and, through the downward API,
    by the training script), a replacement also the restarts before it."""
    replica = job.spec.replicas[slot.rtype]
    template = replica.template
    labels = {**template.get("metadata", {}).get("labels", {}), **slot_labels(job.name, slot)}
    annotations = dict(template.get("metadata", {}).get("annotations", {}))
    annotations[ANNOTATION_RUN] = str(run)
    annotations[ANNOTATION_ATTEMPT] = str(attempt)
    if attempt > 0:
        annotations[ANNOTATION_RESTARTS] = str(restarts_before)
    # Only what differs per pod is copied; the rest of the template is shared, read-only,
    # between the pods of one response (a deep copy per pod was 60% of a large job's sync).
    injected = injected_env(job.name, job.spec, slot)
    defaults = default_env(job.spec)
    spec = {
        **template["spec"],
        "restartPolicy": pod_restart_policy(job.spec, replica.restart_policy),
        "containers": [
            {**container, "env": container_env(injected, defaults, container.get("env", []))}
            for container in template["spec"]["containers"]
        ],
    }
    wait = wait_container(job.spec, slot.rtype)
    if wait is not None:
        spec["initContainers"] = [*template["spec"].get("initContainers", []), wait]
    if job.gang is Gang.VOLCANO:
        spec["schedulerName"] = VOLCANO_SCHEDULER
        annotations[VOLCANO_GROUP_ANNOTATION] = job.name
        annotations[VOLCANO_TASK_ANNOTATION] = slot.rtype.short
    elif job.gang is Gang.SCHEDULER_PLUGINS:
        spec.setdefault("schedulerName", PLUGINS_SCHEDULER)
        labels[PLUGINS_GROUP_LABEL] = job.name
    if job.queue is not None:
        queue_labels, queue_annotations = group_metadata(
            job.queue, queue_group(job.name, run), job.spec.total_replicas
        )
        labels.update(queue_labels)
        annotations.update(queue_annotations)
    metadata: dict[str, Any] = {
        "name": slot.pod_name(job.name, attempt),
        "namespace": job.namespace,
        "labels": labels,
        "annotations": annotations,
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}

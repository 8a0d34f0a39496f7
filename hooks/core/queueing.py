"""Kueue admission (docs/scheduling.md#kueue): the pods of each run of an MXJob labelled with a
Kueue queue form one plain Pod group, which Kueue admits as one Workload.

Kueue has no MXJob integration and cannot suspend a job it does not know, so the hook uses the
one it has for pods made by any controller: every pod carries the queue, the group's name and
its size; Kueue's webhook gates each pod until the group is admitted as a whole.

One group per run, marked not retriable as a group: Kueue then ends a group's Workload (and
gives its quota back) once none of its pods is active any more. Otherwise it would wait for
every pod to succeed, which the Servers of an MXTrain job never do, and hold the quota of a
finished job. A Worker replaced inside a run still joins the run's group.
"""

from dataclasses import dataclass
from typing import Any

from hooks.core.fields import dig_dict
from hooks.core.naming import run_record_name

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_SIZE_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
#: The scheduling gate Kueue's webhook puts on a pod until its Workload is admitted.
ADMISSION_GATE = "kueue.x-k8s.io/admission"


@dataclass(frozen=True)
class Queue:
    """The Kueue LocalQueue an MXJob asks for, and its WorkloadPriorityClass if any."""

    name: str
    priority_class: str | None = None


def read_queue(parent: dict[str, Any]) -> Queue | None:
    """The queue named by the MXJob's `kueue.x-k8s.io/queue-name` label, if it has one."""
    labels = dig_dict(parent, "metadata", "labels")
    name = labels.get(QUEUE_LABEL)
    if not isinstance(name, str) or not name:
        return None
    priority = labels.get(PRIORITY_LABEL)
    return Queue(name, priority if isinstance(priority, str) and priority else None)


def queue_group(job: str, run: int) -> str:
    """The Pod group (and Kueue Workload) name of one run: the run record's name, which the
    name rules already keep within 63 characters."""
    return run_record_name(job, run)


def group_metadata(queue: Queue, group: str, size: int) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations that make a pod a member of the job's Pod group."""
    labels = {QUEUE_LABEL: queue.name, GROUP_LABEL: group}
    if queue.priority_class:
        labels[PRIORITY_LABEL] = queue.priority_class
    return labels, {GROUP_SIZE_ANNOTATION: str(size), RETRIABLE_ANNOTATION: "false"}

"""The desired Pods of a job's replica slots and attempts (docs/environment.md)."""

from dataclasses import dataclass
from typing import Any

from hooks.core.api import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_RESTARTS,
    ANNOTATION_RUN,
    MXNET_CONTAINER,
    ReplicaType,
)
from hooks.core.build.claims import mounted
from hooks.core.build.env import ReplicaEnv
from hooks.core.build.inplace import made_for, restarting_in_place
from hooks.core.job import Job
from hooks.core.labels import at_index, run_selector, slot_labels
from hooks.core.naming import RunNames, Slot, attempt_name, slot_prefix
from hooks.core.restart.rejoin import pod_restart_policy, wait_container
from hooks.core.restart.runs import restarts_in_place


@dataclass(frozen=True)
class _Shape:
    """What every pod of one replica type and run shares: all but its index and attempt."""

    prefix: str
    #: The labels of the type's slot 0.
    labels: dict[str, str]
    #: The annotations of a first attempt, and of a replacement (with its keys in place).
    first: dict[str, str]
    replaced: dict[str, str]
    #: The pod spec but for the containers' env, and each container with what follows our
    #: variables in its env.
    spec: dict[str, Any]
    containers: list[tuple[dict[str, Any], list[dict[str, Any]]]]
    env: ReplicaEnv
    #: Whether each pod has its slot name as its hostname (one Service per job).
    named: bool


class PodMaker:
    """The desired pods of one job on one sync, which reach the names `names` give (run 0's, as
    this version makes them, unless given): the template merged with ours is built once per
    replica type and run, then each pod adds its slot and attempt. What pods share is shared
    read-only, as the template is (a deep copy per pod was 60% of a large job's sync)."""

    def __init__(self, job: Job, names: RunNames | None = None) -> None:
        self._job = job
        self._names = names or job.names()
        self._shapes: dict[tuple[ReplicaType, int, bool], _Shape] = {}

    def pod(
        self, slot: Slot, attempt: int, restarts_before: int, run: int, *, waits: bool
    ) -> dict[str, Any]:
        """The template's metadata and spec, with our labels, restart policy and environment;
        every pod carries its run and attempt (read back by the hook and, through the downward
        API, by the training script), a replacement also the restarts before it. `waits`: a
        pod that may register with a running ps-lite Scheduler gets the rejoin wait
        (hooks/core/restart/rejoin.py)."""
        shape = self._shapes.get((slot.rtype, run, waits))
        if shape is None:
            shape = self._shape(slot.rtype, run, waits=waits)
        index = str(slot.index)
        annotations = shape.first
        if attempt > 0:
            annotations = {
                **shape.replaced,
                ANNOTATION_ATTEMPT: str(attempt),
                ANNOTATION_RESTARTS: str(restarts_before),
            }
        injected = shape.env.injected(index)
        metadata = {
            "name": attempt_name(shape.prefix + index, attempt),
            "namespace": self._job.namespace,
            "labels": at_index(shape.labels, index),
            "annotations": annotations,
        }
        containers = [{**c, "env": injected + after} for c, after in shape.containers]
        spec = {**shape.spec, "containers": containers}
        if shape.named:
            spec["hostname"] = shape.prefix + index
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}

    def _shape(self, rtype: ReplicaType, run: int, *, waits: bool) -> _Shape:
        """What the pods of this type and run share, built for the first of them."""
        job = self._job
        replica = job.spec.replicas[rtype]
        template = replica.template
        labels = {
            **template.get("metadata", {}).get("labels", {}),
            **slot_labels(job.name, Slot(rtype, 0)),
            **run_selector(run),
        }
        annotations = {
            **template.get("metadata", {}).get("annotations", {}),
            ANNOTATION_RUN: str(run),
            ANNOTATION_ATTEMPT: "0",
        }
        replaced = {**annotations, ANNOTATION_RESTARTS: "0"}
        ours: dict[str, str] = {}
        env = ReplicaEnv(job.name, job.spec, rtype, self._names)
        containers = [_telling(c) for c in template["spec"]["containers"]]
        spec = {
            **template["spec"],
            "restartPolicy": pod_restart_policy(job.spec, replica.restart_policy),
            "containers": containers,
        }
        saved = job.spec.checkpoint
        if saved is not None and saved.mounts(rtype):
            spec = mounted(job.name, saved, spec)
            containers = spec["containers"]
        wait = wait_container(job.spec, rtype) if waits else None
        if wait is not None:
            spec["initContainers"] = [*template["spec"].get("initContainers", []), wait]
        if restarts_in_place(job.spec):
            spec = restarting_in_place(spec)
            # A pod made for a later run is that run's already: the restarter component, which
            # writes the run on every pod of the job, must not restart it.
            ours.update(made_for(run))
        subdomain = self._names.subdomain
        if subdomain is not None:
            spec["subdomain"] = subdomain
        # What its schedulers put on the pod (hooks/core/scheduling), in the group of its run or,
        # for a run restarted in place, of the run it keeps the group of (RunNames.group).
        group = run if self._names.group is None else self._names.group
        marks = job.scheduling.marks(job.name, job.spec, rtype, group)
        labels.update(marks.labels)
        ours.update(marks.annotations)
        spec.update(marks.spec)
        spec.update({k: v for k, v in marks.defaults.items() if k not in spec})
        shape = _Shape(
            prefix=slot_prefix(job.name, rtype),
            labels=labels,
            first={**annotations, **ours},
            replaced={**replaced, **ours},
            spec=spec,
            containers=[(c, env.after_injected(c.get("env", []))) for c in containers],
            env=env,
            named=subdomain is not None,
        )
        self._shapes[rtype, run, waits] = shape
        return shape


#: What the kubelet puts in a failed container's termination message when its program wrote
#: none: the end of its log, which the hook copies into the job (hooks/core/failures.py).
MESSAGE_POLICY = "FallbackToLogsOnError"


def _telling(container: dict[str, Any]) -> dict[str, Any]:
    """The mxnet container with `terminationMessagePolicy: FallbackToLogsOnError`, unless the
    user chose a policy; any other container as it is."""
    if container.get("name") != MXNET_CONTAINER or "terminationMessagePolicy" in container:
        return container
    return {**container, "terminationMessagePolicy": MESSAGE_POLICY}

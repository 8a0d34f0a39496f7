"""Which schedulers a job has, picked once per job (docs/scheduling.md): the gang scheduler of the
install, else the default scheduler, and Kueue when the job names a queue. Kueue admits a
job's pods before any scheduler binds them, so one job may have both: each says its part.

Which gang scheduler is in use is read from the CompositeController in the request: a kustomize
overlay adds its group kind as a child resource, so one hook serves every variant. A new gang
scheduler is a module of this room and its line in `Gang` and `_GANGS`.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hooks.core.api import ReplicaType
from hooks.core.children import PodGroup
from hooks.core.fields import dig_list
from hooks.core.observed import ObservedPod
from hooks.core.scheduling import scheduler_plugins, shared, volcano
from hooks.core.scheduling.default import DefaultScheduler
from hooks.core.scheduling.kueue import Kueue, Queue
from hooks.core.scheduling.protocol import PodMarks, Scheduler
from hooks.core.spec import JobSpec, Problem, Topology


class Gang(StrEnum):
    """A gang scheduler, by the `Kind.apiVersion` key of its group children."""

    VOLCANO = volcano.KEY
    SCHEDULER_PLUGINS = scheduler_plugins.KEY

    @property
    def kind(self) -> str:
        """Its group children's kind (`PodGroup`)."""
        return self.value.split(".", 1)[0]

    @property
    def api_version(self) -> str:
        """Its group children's apiVersion."""
        return self.value.split(".", 1)[1]

    @property
    def resource(self) -> str:
        """Its group kind's resource name, as a controller's childResources rule names it."""
        return self.kind.lower() + "s"

    @property
    def scheduler(self) -> Scheduler:
        """What it says of a job."""
        return _GANGS[self]


_GANGS: dict[Gang, Scheduler] = {
    Gang.VOLCANO: volcano.Volcano(),
    Gang.SCHEDULER_PLUGINS: scheduler_plugins.SchedulerPlugins(),
}
_DEFAULT = DefaultScheduler()


def detect(controller: dict[str, Any], child_keys: list[str]) -> Gang | None:
    """The gang scheduler whose group kind the controller manages, if any."""
    rules = [r for r in dig_list(controller, "spec", "childResources") if isinstance(r, dict)]
    return next((gang for gang in Gang if _declared(gang, rules, child_keys)), None)


def _declared(gang: Gang, rules: list[dict[str, Any]], child_keys: list[str]) -> bool:
    """Whether the controller's child resource `rules`, or the request's children, name the
    gang scheduler's group kind."""
    return gang.value in child_keys or any(
        r.get("resource") == gang.resource and r.get("apiVersion") == gang.api_version
        for r in rules
    )


@dataclass(frozen=True)
class Scheduling:
    """A job's schedulers: its gang scheduler (or the default one), whose group child it is, and
    its Kueue queue if it names one. The core asks them through this, never by name."""

    gang: Scheduler
    queue: Scheduler | None = None

    def _each(self) -> tuple[Scheduler, ...]:
        return (self.gang,) if self.queue is None else (self.gang, self.queue)

    def group(self, name: str, namespace: str, spec: JobSpec) -> dict[str, Any] | None:
        """The job's group child (its PodGroup), if its gang scheduler makes one."""
        return self.gang.group(name, namespace, spec)

    def same_group(self, desired: dict[str, Any], observed: PodGroup) -> bool:
        """Whether the observed group is still the desired one."""
        return self.gang.same_group(desired, observed)

    def admits_new_pods(self, observed: PodGroup | None) -> bool:
        """Whether new pods may be made now, given the observed group."""
        return self.gang.admits_new_pods(observed)

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """What a pod of the type carries for its schedulers: the gang's, then the queue's."""
        marks = self.gang.marks(name, spec, rtype, run)
        return marks if self.queue is None else marks | self.queue.marks(name, spec, rtype, run)

    def problems(self, spec: JobSpec) -> list[Problem]:
        """Why the job cannot be scheduled as written: a topology naming types of another mode
        or none of the job's, or that none of its schedulers can place; else the first of its
        schedulers' own problems."""
        topology = spec.run_policy.scheduling.topology
        if topology is not None:
            found = shared.types_problems(spec, topology)
            if found:
                return found
            if not any(s.places_by_topology for s in self._each()):
                return [_one_by_one(topology, self.gang.name)]
        return next((found for s in self._each() if (found := s.problems(spec))), [])

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """Why the job's current pods are not all bound yet, if its queue (which holds them
        first) or its gang scheduler holds them."""
        queued = self.queue.waits(name, spec, group, pods) if self.queue is not None else None
        return queued or self.gang.waits(name, spec, group, pods)


def pick(gang: Gang | None, queue: Queue | None) -> Scheduling:
    """The schedulers of a job run under the install's `gang` scheduler, in its Kueue `queue`."""
    return Scheduling(
        gang.scheduler if gang is not None else _DEFAULT,
        Kueue(queue) if queue is not None else None,
    )


def _one_by_one(topology: Topology, who: str) -> Problem:
    """A topology no scheduler of the job can place: `who` binds pods one by one."""
    return Problem(
        topology.path,
        f"{who} places pods one by one and cannot keep them in one domain: queue the job"
        " with Kueue (label kueue.x-k8s.io/queue-name) or run it with the Volcano install",
    )

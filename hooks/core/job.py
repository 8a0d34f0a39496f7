"""The job being synced: its identity, its read spec, how its pods are gang-scheduled and
queued."""

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from hooks.core.api import ServiceMode
from hooks.core.naming import RunNames, Slot, run_names
from hooks.core.scheduling.kueue import Queue
from hooks.core.scheduling.pick import Gang, Scheduling, pick
from hooks.core.spec import JobSpec


@dataclass(frozen=True)
class Job:
    """A valid MXJob as the hook sees it on one sync."""

    name: str
    namespace: str
    spec: JobSpec
    gang: Gang | None
    created: datetime | None
    spec_changed: datetime | None
    #: The Kueue queue its pods are admitted through, if the job names one.
    queue: Queue | None = None

    @cached_property
    def scheduling(self) -> Scheduling:
        """Its schedulers, picked once: the install's gang scheduler (or the default one) and
        its Kueue queue, which the core asks for its group, its pods' marks, its problems and
        why it waits (hooks/core/scheduling)."""
        return pick(self.gang, self.queue)

    def slots(self) -> list[Slot]:
        """Every replica of the job, in canonical type order then index."""
        return [
            Slot(rtype, index)
            for rtype, replica in self.spec.replicas.items()
            for index in range(replica.replicas)
        ]

    def names(self, run: int = 0) -> RunNames:
        """The names the pods of a run reach, when this version of the hook starts the run."""
        return run_names(self.name, run, per_job=self.spec.service_mode is ServiceMode.PER_JOB)

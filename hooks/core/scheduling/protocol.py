"""What a scheduler integration says of a job (docs/scheduling.md): the one protocol each module
of this room meets, so the core asks every scheduler the same questions and names none."""

from dataclasses import dataclass, field
from typing import Any, Protocol

from hooks.core.api import ReplicaType
from hooks.core.children import PodGroup
from hooks.core.observed import ObservedPod
from hooks.core.spec import JobSpec, Problem


@dataclass(frozen=True)
class PodMarks:
    """What a scheduler puts on a pod of one replica type and run: labels, annotations, pod spec
    fields it sets (`spec`), and those it sets only where the template has none (`defaults`)."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)

    def __or__(self, other: "PodMarks") -> "PodMarks":
        """Both schedulers' marks, in order: the other's win a key both set."""
        return PodMarks(
            {**self.labels, **other.labels},
            {**self.annotations, **other.annotations},
            {**self.spec, **other.spec},
            {**self.defaults, **other.defaults},
        )


class Scheduler(Protocol):
    """One scheduler integration: its group child, what it puts on a pod, its problems with a
    spec, and why a job waits for it."""

    @property
    def name(self) -> str:
        """Its name as a problem says it ("the default scheduler")."""
        ...

    @property
    def places_by_topology(self) -> bool:
        """Whether it can keep the replica types a topology names in one domain."""
        ...

    def group(self, name: str, namespace: str, spec: JobSpec) -> dict[str, Any] | None:
        """The group child it places the job's pods by, named after the job; None if none."""
        ...

    def same_group(self, desired: dict[str, Any], observed: PodGroup) -> bool:
        """Whether its observed group is still the desired one (compared between runs only)."""
        ...

    def admits_new_pods(self, observed: PodGroup | None) -> bool:
        """Whether the job's new pods may be made now, given its observed group."""
        ...

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """What it puts on a pod of the type; `run` is the run whose group the pod joins (a run
        restarted in place keeps its predecessor's)."""
        ...

    def problems(self, spec: JobSpec) -> list[Problem]:
        """Why it cannot schedule the spec as written (the topology it cannot say, say)."""
        ...

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """Why the job's current `pods` are not all bound yet, in words for its status, if it
        holds them."""
        ...


class Groupless:
    """A scheduler that makes no group child: the job's pods are made as soon as they may be,
    and it has no group to compare."""

    def group(self, name: str, namespace: str, spec: JobSpec) -> dict[str, Any] | None:
        """None: no group child."""
        return None

    def same_group(self, desired: dict[str, Any], observed: PodGroup) -> bool:
        """False: no observed group is one it wants."""
        return False

    def admits_new_pods(self, observed: PodGroup | None) -> bool:
        """True: nothing of its own holds the pods back."""
        return True

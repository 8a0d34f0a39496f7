"""The default scheduler (docs/scheduling.md#default-scheduler): each pod is placed on its own,
with nothing of the hook's on it. It places pods one by one, so it cannot keep a topology's
types in one domain."""

from hooks.core.api import ReplicaType
from hooks.core.children import PodGroup
from hooks.core.observed import ObservedPod
from hooks.core.scheduling.protocol import Groupless, PodMarks
from hooks.core.spec import JobSpec, Problem


class DefaultScheduler(Groupless):
    """No gang scheduler: no group, nothing on the pods, no words of its own while a job waits
    (a pod it cannot place says so itself: docs/status.md#conditions)."""

    name = "the default scheduler"
    places_by_topology = False

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """Nothing."""
        return PodMarks()

    def problems(self, spec: JobSpec) -> list[Problem]:
        """None of its own (a topology it cannot place is the job's problem: pick.py)."""
        return []

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """Nothing: no pod of the job is held for the others."""
        return None

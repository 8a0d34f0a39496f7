"""scheduler-plugins' coscheduling (docs/scheduling.md#scheduler-plugins): one PodGroup per job;
its pods are made at once and wait Pending until all `minMember` of them can be bound. It
places pods one by one, so it cannot keep a topology's types in one domain."""

from typing import Any

from hooks.core.api import ReplicaType
from hooks.core.children import PodGroup
from hooks.core.observed import ObservedPod
from hooks.core.scheduling import shared
from hooks.core.scheduling.protocol import PodMarks
from hooks.core.spec import JobSpec, Problem

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
#: The `Kind.apiVersion` key of its PodGroup children.
KEY = f"PodGroup.{API_VERSION}"
#: The name scheduler-plugins' own "as a second scheduler" chart gives its scheduler; pods whose
#: template names no scheduler get it (docs/scheduling.md#scheduler-plugins).
SCHEDULER = "scheduler-plugins-scheduler"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class SchedulerPlugins:
    """Coscheduling: its PodGroup, and its group label and scheduler on every pod."""

    name = "scheduler-plugins' coscheduling"
    places_by_topology = False

    def group(self, name: str, namespace: str, spec: JobSpec) -> dict[str, Any]:
        """The PodGroup with coscheduling's own field: how long it may wait to be placed."""
        timeout = spec.run_policy.scheduling.schedule_timeout_seconds
        own = {"scheduleTimeoutSeconds": timeout} if timeout else {}
        return shared.pod_group(API_VERSION, name, namespace, spec, own)

    def same_group(self, desired: dict[str, Any], observed: PodGroup) -> bool:
        """The same `minMember` (shared.same_members)."""
        return shared.same_members(desired, observed)

    def admits_new_pods(self, observed: PodGroup | None) -> bool:
        """Always: coscheduling holds the pods, not their making."""
        return True

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """The group label, and its scheduler where the template names none."""
        return PodMarks(labels={GROUP_LABEL: name}, defaults={"schedulerName": SCHEDULER})

    def problems(self, spec: JobSpec) -> list[Problem]:
        """None of its own (a topology it cannot place is the job's problem: pick.py)."""
        return []

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """The binding of the gang's pods."""
        return shared.unbound(spec, group, pods, SCHEDULER)

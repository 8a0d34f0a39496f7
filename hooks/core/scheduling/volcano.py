"""Volcano (docs/scheduling.md#volcano): one PodGroup per job, which Volcano admits into a queue
before the hook makes any pod, so a gang that cannot fit holds nothing on any node.

Volcano (v1.14's API) places a topology by the PodGroup's `networkTopology`, whose
`highestTierName` names a tier of HyperNodes; its label discovery names each tier after the
node label it was made from (docs/scheduling.md#topology). It places the whole gang in one
domain, the Scheduler too.
"""

from typing import Any

from hooks.core.api import ReplicaType, TopologyMode
from hooks.core.children import PodGroup
from hooks.core.observed import ObservedPod
from hooks.core.scheduling import shared
from hooks.core.scheduling.protocol import PodMarks
from hooks.core.spec import JobSpec, Problem

API_VERSION = "scheduling.volcano.sh/v1beta1"
#: The `Kind.apiVersion` key of its PodGroup children.
KEY = f"PodGroup.{API_VERSION}"
SCHEDULER = "volcano"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
#: Volcano's `networkTopology.mode` for each topology mode.
_MODES = {TopologyMode.REQUIRED: "hard", TopologyMode.PREFERRED: "soft"}
#: PodGroup phases in which Volcano has not yet admitted the gang.
WAITING_PHASES = ("", "Pending")
#: The longest `networkTopology.highestTierName` Volcano's PodGroup CRD takes (v1.15.1).
TIER_MAX = 253


class Volcano:
    """Volcano's gang scheduling: its PodGroup, its scheduler's name and group annotations on
    every pod, and no pod before the group is admitted."""

    name = "Volcano"
    places_by_topology = True

    def group(self, name: str, namespace: str, spec: JobSpec) -> dict[str, Any]:
        """The PodGroup with Volcano's own fields: its queue, priority class and topology."""
        policy = spec.run_policy.scheduling
        own: dict[str, Any] = {}
        if policy.queue:
            own["queue"] = policy.queue
        if policy.priority_class:
            own["priorityClassName"] = policy.priority_class
        if policy.topology is not None:
            # The whole gang within one domain: Volcano's `networkTopology` names the tier of
            # HyperNodes that its label discovery names after the node label.
            own["networkTopology"] = {
                "mode": _MODES[policy.topology.mode],
                "highestTierName": policy.topology.level,
            }
        return shared.pod_group(API_VERSION, name, namespace, spec, own)

    def same_group(self, desired: dict[str, Any], observed: PodGroup) -> bool:
        """The same `minMember` (shared.same_members)."""
        return shared.same_members(desired, observed)

    def admits_new_pods(self, observed: PodGroup | None) -> bool:
        """Pods are made only once the PodGroup has left phase Pending."""
        phase = observed.status.phase if observed is not None else None
        return phase is not None and phase not in WAITING_PHASES

    def marks(self, name: str, spec: JobSpec, rtype: ReplicaType, run: int) -> PodMarks:
        """`schedulerName: volcano`, the group's name and the pod's task (its type)."""
        return PodMarks(
            annotations={GROUP_ANNOTATION: name, TASK_ANNOTATION: rtype.short},
            spec={"schedulerName": SCHEDULER},
        )

    def problems(self, spec: JobSpec) -> list[Problem]:
        """A topology level longer than Volcano's `highestTierName` takes."""
        topology = spec.run_policy.scheduling.topology
        if topology is None or len(topology.level) <= TIER_MAX:
            return []
        return [
            Problem(
                f"{topology.path}.level",
                f"Volcano's highestTierName takes at most {TIER_MAX} characters",
            )
        ]

    def waits(
        self, name: str, spec: JobSpec, group: PodGroup | None, pods: list[ObservedPod]
    ) -> str | None:
        """Its admission of the PodGroup (its phase and newest condition), then the binding of
        the gang's pods."""
        if not self.admits_new_pods(group):
            phase = (group.status.phase if group is not None else None) or "not seen yet"
            members = shared.min_member(spec)
            words = f"waiting for Volcano to admit PodGroup {name} ({members} pods; phase {phase})"
            return shared.with_condition(words, group)
        return shared.unbound(spec, group, pods, SCHEDULER)

"""Gang scheduling (docs/scheduling.md): one PodGroup per job for Volcano or for scheduler-plugins.

Which scheduler is in use is read from the CompositeController in the request: a kustomize
overlay adds the PodGroup kind as a child resource, so one hook serves every variant.
"""

from decimal import Decimal
from enum import StrEnum
from typing import Any

from hooks.core import quantity
from hooks.core.api import TopologyMode
from hooks.core.children import GroupSpec, PodGroup, spec_of
from hooks.core.fields import dig_dict, dig_list
from hooks.core.labels import job_labels
from hooks.core.spec import JobSpec


class Gang(StrEnum):
    """A gang scheduler, by the `Kind.apiVersion` key of its PodGroup children."""

    VOLCANO = "PodGroup.scheduling.volcano.sh/v1beta1"
    SCHEDULER_PLUGINS = "PodGroup.scheduling.x-k8s.io/v1alpha1"

    @property
    def api_version(self) -> str:
        return self.value.split(".", 1)[1]


VOLCANO_SCHEDULER = "volcano"
#: The name scheduler-plugins' own "as a second scheduler" chart gives its scheduler; pods whose
#: template names no scheduler get it (docs/scheduling.md#scheduler-plugins).
PLUGINS_SCHEDULER = "scheduler-plugins-scheduler"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
#: Volcano's `networkTopology.mode` for each topology mode.
_VOLCANO_MODES = {TopologyMode.REQUIRED: "hard", TopologyMode.PREFERRED: "soft"}
#: PodGroup phases in which Volcano has not yet admitted the gang.
VOLCANO_WAITING_PHASES = ("", "Pending")


def detect(controller: dict[str, Any], child_keys: list[str]) -> Gang | None:
    """The gang scheduler whose PodGroup kind the controller manages, if any."""
    declared = {
        f"PodGroup.{rule.get('apiVersion')}"
        for rule in dig_list(controller, "spec", "childResources")
        if isinstance(rule, dict) and rule.get("resource") == "podgroups"
    }
    declared.update(child_keys)
    return next((gang for gang in Gang if gang.value in declared), None)


def pod_group(gang: Gang, name: str, namespace: str, spec: JobSpec) -> dict[str, Any]:
    """The job's PodGroup; `minMember` is `minAvailable` or every replica."""
    policy = spec.run_policy.scheduling
    members = min_member(spec)
    group_spec: dict[str, Any] = {"minMember": members}
    needs = policy.min_resources or min_resources(spec, members)
    if needs:
        group_spec["minResources"] = needs
    if gang is Gang.VOLCANO:
        if policy.queue:
            group_spec["queue"] = policy.queue
        if policy.priority_class:
            group_spec["priorityClassName"] = policy.priority_class
        if policy.topology is not None:
            # The whole gang within one domain: Volcano's `networkTopology` names the tier of
            # HyperNodes that its label discovery names after the node label (docs/scheduling.md).
            group_spec["networkTopology"] = {
                "mode": _VOLCANO_MODES[policy.topology.mode],
                "highestTierName": policy.topology.level,
            }
    elif policy.schedule_timeout_seconds:
        group_spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    return {
        "apiVersion": gang.api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": job_labels(name)},
        "spec": group_spec,
    }


def same_group(desired: dict[str, Any], observed: PodGroup) -> bool:
    """Whether an observed PodGroup asks for as many pods as the desired one: the one field a
    resize changes. Only that is compared, as a scheduler's webhook may default others."""
    spec = spec_of(observed, GroupSpec)
    return spec is not None and spec.min_member == desired["spec"]["minMember"]


def min_member(spec: JobSpec) -> int:
    """Pods the gang scheduler must place together: `minAvailable`, else every replica."""
    return spec.run_policy.scheduling.min_available or spec.total_replicas


def min_resources(spec: JobSpec, members: int) -> dict[str, str]:
    """What the first `members` pods (Scheduler, Servers, then Workers or Tuners) request, as
    training-operator computes it: the gang scheduler can then hold back a gang that cannot fit
    before any of its pods exists. Empty when no request is given or one cannot be read."""
    total: dict[str, Decimal] = {}
    left = members
    for replica in spec.replicas.values():
        count = min(left, replica.replicas)
        left -= count
        pod = pod_requests(replica.template.get("spec", {}))
        if pod is None:
            return {}
        for name, amount in pod.items():
            total[name] = total.get(name, Decimal(0)) + amount * count
    return {name: quantity.render(amount) for name, amount in sorted(total.items()) if amount}


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Decimal] | None:
    """A pod's effective requests: its containers' sum, or an init container's if larger (a
    limit stands in for a missing request, as the API server defaults it); None if unreadable."""
    containers = [_requests(c) for c in pod_spec.get("containers", [])]
    inits = [_requests(c) for c in pod_spec.get("initContainers", [])]
    total: dict[str, Decimal] = {}
    for requests in containers:
        if requests is None:
            return None
        for name, amount in requests.items():
            total[name] = total.get(name, Decimal(0)) + amount
    for requests in inits:
        if requests is None:
            return None
        for name, amount in requests.items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return total


def _requests(container: dict[str, Any]) -> dict[str, Decimal] | None:
    resources = dig_dict(container, "resources")
    merged = {**dig_dict(resources, "limits"), **dig_dict(resources, "requests")}
    parsed = {name: quantity.parse(value) for name, value in merged.items()}
    if any(v is None for v in parsed.values()):
        return None
    return {name: v for name, v in parsed.items() if v is not None}


def admits_new_pods(gang: Gang | None, observed_group: PodGroup | None) -> bool:
    """Volcano: pods are created only once the PodGroup has left phase Pending."""
    if gang is not Gang.VOLCANO:
        return True
    phase = observed_group.status.phase if observed_group is not None else None
    return phase is not None and phase not in VOLCANO_WAITING_PHASES

"""Gang scheduling (docs/run-policy.md): one PodGroup per job for Volcano or for scheduler-plugins.

Which scheduler is in use is read from the CompositeController in the request: a kustomize
overlay adds the PodGroup kind as a child resource, so one hook serves every variant.
"""

from enum import StrEnum
from typing import Any

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
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
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
    group_spec: dict[str, Any] = {"minMember": policy.min_available or spec.total_replicas}
    if policy.min_resources:
        group_spec["minResources"] = policy.min_resources
    if gang is Gang.VOLCANO:
        if policy.queue:
            group_spec["queue"] = policy.queue
        if policy.priority_class:
            group_spec["priorityClassName"] = policy.priority_class
    elif policy.schedule_timeout_seconds:
        group_spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    return {
        "apiVersion": gang.api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": job_labels(name)},
        "spec": group_spec,
    }


def admits_new_pods(gang: Gang | None, observed_group: dict[str, Any] | None) -> bool:
    """Volcano: pods are created only once the PodGroup has left phase Pending."""
    if gang is not Gang.VOLCANO:
        return True
    phase = dig_dict(observed_group, "status").get("phase")
    return isinstance(phase, str) and phase not in VOLCANO_WAITING_PHASES

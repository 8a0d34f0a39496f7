"""Builders for sync requests: MXJobs, and observed children in the states a cluster shows.

Observed pods are made from the hook's own desired pods plus what the API server and kubelet
add (uid, creationTimestamp, controller-uid label, status), so tests follow real lifecycles.
"""

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.core.request import parse
from hooks.core.sync import SyncResponse, sync

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)
UID = "3f1c2a9e-0000-4000-8000-000000000001"
CONTROLLER: dict[str, Any] = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "mxjob-controller"},
    "spec": {
        "parentResource": {"apiVersion": "kubeflow.org/v1", "resource": "mxjobs"},
        "childResources": [
            {"apiVersion": "v1", "resource": "pods"},
            {"apiVersion": "v1", "resource": "services"},
            {"apiVersion": "v1", "resource": "configmaps"},
        ],
        "generateSelector": True,
    },
}
CHILD_GROUPS = ("Pod.v1", "Service.v1", "ConfigMap.v1")


def at(minutes: float) -> str:
    """A timestamp `minutes` after T0."""
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def template(image: str = "mxjob/mxnet:gpu", **extra: Any) -> dict[str, Any]:
    """A pod template with one `mxnet` container."""
    container: dict[str, Any] = {"name": "mxnet", "image": image, **extra}
    return {"spec": {"containers": [container]}}


def replica(count: int | None = 1, policy: str | None = None, **tmpl: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": template(**tmpl)}
    if count is not None:
        spec["replicas"] = count
    if policy is not None:
        spec["restartPolicy"] = policy
    return spec


def mxjob(
    name: str = "mnist",
    replicas: dict[str, Any] | None = None,
    run_policy: dict[str, Any] | None = None,
    mode: str | None = None,
    status: dict[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """An MXJob as Metacontroller sends it."""
    spec: dict[str, Any] = {
        "mxReplicaSpecs": replicas
        or {"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3)},
        **spec_extra,
    }
    if mode is not None:
        spec["jobMode"] = mode
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": UID,
            "generation": 1,
            "resourceVersion": "1000",
            "creationTimestamp": at(0),
        },
        "spec": spec,
    }
    if status is not None:
        job["status"] = status
    return job


def request(
    parent: dict[str, Any],
    children: list[dict[str, Any]] | None = None,
    controller: dict[str, Any] | None = None,
    v2: bool = False,
) -> dict[str, Any]:
    """A sync request; v2 keys children by `namespace/name`, v1 by name."""
    groups: dict[str, dict[str, Any]] = {key: {} for key in CHILD_GROUPS}
    ctrl: dict[str, Any] = controller or CONTROLLER
    for rule in ctrl["spec"]["childResources"]:
        if rule["resource"] == "podgroups":
            groups[f"PodGroup.{rule['apiVersion']}"] = {}
    for child in children or []:
        key = f"{child['kind']}.{child['apiVersion']}"
        name = child["metadata"]["name"]
        groups.setdefault(key, {})[f"default/{name}" if v2 else name] = child
    return {"controller": ctrl, "parent": parent, "children": groups, "finalizing": False}


def run(body: dict[str, Any], now: datetime = NOW) -> SyncResponse:
    return sync(parse(copy.deepcopy(body)), now)


def created(child: dict[str, Any], minutes: float = 0.5) -> dict[str, Any]:
    """A desired child as the API server stores it after creation."""
    obj = copy.deepcopy(child)
    meta = obj["metadata"]
    meta["uid"] = f"uid-{meta['name']}"
    meta["creationTimestamp"] = at(minutes)
    meta["resourceVersion"] = "2000"
    meta.setdefault("labels", {})["controller-uid"] = UID
    meta["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "name": "job",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    if obj["kind"] == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return obj


def _container_status(name: str, state: dict[str, Any], restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "image": "mxjob/mxnet:gpu",
        "imageID": "",
        "ready": "running" in state,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
    }


def running(pod: dict[str, Any], minutes: float = 1, restarts: int = 0) -> dict[str, Any]:
    obj = copy.deepcopy(pod)
    obj["status"] = {
        "phase": "Running",
        "startTime": at(minutes),
        "podIP": "10.0.0.10",
        "containerStatuses": [
            _container_status("mxnet", {"running": {"startedAt": at(minutes)}}, restarts)
        ],
    }
    return obj


def terminated(
    pod: dict[str, Any],
    exit_code: int | None,
    minutes: float = 10,
    started: float = 1,
    restarts: int = 0,
    reason: str | None = None,
) -> dict[str, Any]:
    """A finished pod: Succeeded on exit 0, else Failed; `exit_code=None` models an eviction."""
    obj = copy.deepcopy(pod)
    phase = "Succeeded" if exit_code == 0 else "Failed"
    status: dict[str, Any] = {"phase": phase, "startTime": at(started)}
    if exit_code is not None:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": at(started),
                "finishedAt": at(minutes),
            }
        }
        status["containerStatuses"] = [_container_status("mxnet", state, restarts)]
    if reason:
        status["reason"] = reason
        status["message"] = f"The pod was {reason.lower()}."
    obj["status"] = status
    return obj


def disrupted(pod: dict[str, Any], reason: str = "PreemptionByScheduler") -> dict[str, Any]:
    """A pod the cluster takes away: condition DisruptionTarget, as preemption or a drain set."""
    obj = copy.deepcopy(pod)
    obj.setdefault("status", {}).setdefault("conditions", []).append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": f"{reason}: the pod is taken away by the cluster",
        }
    )
    return obj


def terminating(child: dict[str, Any], minutes: float = 20) -> dict[str, Any]:
    obj = copy.deepcopy(child)
    obj["metadata"]["deletionTimestamp"] = at(minutes)
    obj["metadata"]["deletionGracePeriodSeconds"] = 30
    return obj


def pods_by_name(children: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in children if c["kind"] == "Pod"}


def cluster_after(response: SyncResponse, minutes: float = 0.5) -> list[dict[str, Any]]:
    """Every child of a response as freshly created objects (the cluster after one sync)."""
    return [created(c, minutes) for c in response.children]

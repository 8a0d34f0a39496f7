"""MXJobs and sync requests as Metacontroller sends them, for tests and the benchmark alike.

`mxjob()` is the smallest MXJob a test needs; `request()` wraps a parent and its observed
children the way Metacontroller does (v1 keys children by name, v2 by `namespace/name`);
`run()` answers it with the pure core. Observed children in cluster states are built in
tests/builders.py; the benchmark's realistic ones in testsupport/requests.py.
"""

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from hooks import wire
from hooks.core.request import parse_request
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
    status: Mapping[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """An MXJob as Metacontroller sends it; `replicas` is copied (callers share constants)."""
    spec: dict[str, Any] = {
        "mxReplicaSpecs": copy.deepcopy(replicas)
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
    *,
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
    return sync(parse_request(copy.deepcopy(body)), now)


def as_sent(response: SyncResponse) -> dict[str, Any]:
    """The answer as Metacontroller reads it: kept children's bodies, echoed as the bytes they
    came in (`msgspec.Raw`), read back as JSON."""
    answer: dict[str, Any] = orjson.loads(wire.encode(response.to_json()))
    return answer

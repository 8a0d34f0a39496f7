"""The DMLC_* / MX_CONFIG environment that lets ps-lite and AutoTVM processes find each other.

The values are exactly docs/environment.md. To keep a job linear in its size, the O(N) parts of
MX_CONFIG (`cluster`, `labels`) are published once per run in a ConfigMap and every container
rebuilds MX_CONFIG from two variables that reference its run's, using Kubernetes' `$(VAR)`
expansion of earlier variables. The process sees the same bytes as if MX_CONFIG were written out
literally.
Inside MX_CONFIG, map keys (replica types) are sorted and object fields follow the Go operator's
struct order (`url` before `port`, `type` before `index`), byte-compatible with kubeflow.
"""

import json
from typing import Any

from hooks.core.api import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_RUN,
    CLUSTER_KEY,
    LABELS_KEY,
    TUNER_SERVER_KEY,
    JobMode,
    ReplicaType,
)
from hooks.core.checkpoint import DIR_VAR
from hooks.core.naming import RunNames, Slot, address, slot_prefix
from hooks.core.spec import JobSpec, ReplicaSpec

CLUSTER_VAR = "MXJOB_CLUSTER"
LABELS_VAR = "MXJOB_LABELS"
#: The job's run (whole-job restarts so far) and the replica's attempt, for resuming scripts.
RUN_VAR = "MXJOB_RUN"
ATTEMPT_VAR = "MXJOB_ATTEMPT"
#: ps-lite heartbeats, seconds (docs/environment.md). Without them a replaced Worker never
#: registers again;
#: measured with real MXNet: a replacement registering before the timeout is dropped by ps-lite,
#: so it is short (README "Heartbeats", tools/measure/heartbeats.py).
HEARTBEAT_INTERVAL = "1"
HEARTBEAT_TIMEOUT = "2"


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def cluster_json(job: str, spec: JobSpec, subdomain: str | None) -> str:
    """`{type: [{"url": address, "port": mxjob-port}, …]}`, types sorted, in Go field order;
    each address a slot's, in `subdomain` with one Service per job (naming.address)."""
    entries = {rtype.short: _urls(job, r, subdomain) for rtype, r in spec.replicas.items()}
    return "{" + ",".join(f'"{t}":[{entries[t]}]' for t in sorted(entries)) + "}"


def _urls(job: str, replica: ReplicaSpec, subdomain: str | None) -> str:
    """The comma-separated `cluster` entries of one replica type, a slot's address each."""
    # An address's JSON is the JSON string of what precedes the index, still open, then the
    # index's digits, then what follows it: JSON escapes character by character and digits
    # need none.
    opened = json.dumps(slot_prefix(job, replica.rtype))[:-1]
    after = json.dumps(address("", subdomain))[1:]
    port = replica.mxnet_port
    return ",".join(f'{{"url":{opened}{i}{after},"port":{port}}}' for i in range(replica.replicas))


def labels_json(spec: JobSpec) -> str:
    """`{type: annotation "tuner-server-key" of that type's template, or ""}`."""
    return _compact(
        {
            rtype.short: replica.template.get("metadata", {})
            .get("annotations", {})
            .get(TUNER_SERVER_KEY, "")
            for rtype, replica in spec.replicas.items()
        }
    )


def mx_config(role: str, index: str) -> str:
    """MX_CONFIG before `$(VAR)` expansion: the ConfigMap's cluster and labels, then the slot's
    task `{"type": t, "index": i}` in the field order of the Go operator."""
    return (
        f'{{"cluster":$({CLUSTER_VAR}),"labels":$({LABELS_VAR}),'
        f'"task":{{"type":"{role}","index":{index}}}}}'
    )


def _var(name: str, value: str) -> dict[str, Any]:
    # The API server drops empty values; emitting them would make every diff churn.
    return {"name": name, "value": value} if value else {"name": name}


def _from_annotation(name: str, annotation: str) -> dict[str, Any]:
    path = f"metadata.annotations['{annotation}']"
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _from_config_map(name: str, config_map: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": key}}}


class ReplicaEnv:
    """The environment of the containers of one replica type's pods of a run, which reach the
    names `names` gives. Only DMLC_WORKER_ID and MX_CONFIG's task depend on the slot, so the rest
    is built once per type and shared, read-only, by its pods (a large job's pods differ in
    little else)."""

    def __init__(self, job: str, spec: JobSpec, rtype: ReplicaType, names: RunNames) -> None:
        scheduler = spec.replicas.get(ReplicaType.SCHEDULER)
        root = address(Slot(ReplicaType.SCHEDULER, 0).name(job), names.subdomain)
        config_map = names.config
        self._role = rtype.short
        self._worker = rtype is ReplicaType.WORKER
        self._before = [
            _var("DMLC_PS_ROOT_URI", root if scheduler else ""),
            _var("DMLC_PS_ROOT_PORT", str(scheduler.mxnet_port) if scheduler else "0"),
            _var("DMLC_NUM_SERVER", str(spec.count(ReplicaType.SERVER))),
            _var("DMLC_NUM_WORKER", str(spec.count(ReplicaType.WORKER))),
            _var("DMLC_ROLE", self._role),
            _var("DMLC_USE_KUBERNETES", "1"),
        ]
        self._references = [
            _from_config_map(CLUSTER_VAR, config_map, CLUSTER_KEY),
            _from_config_map(LABELS_VAR, config_map, LABELS_KEY),
        ]
        # The same for every pod of a replica: the values come from the pod's own annotations,
        # so a training script knows it was restarted (docs/restarts.md).
        self._after = [
            _from_annotation(RUN_VAR, ANNOTATION_RUN),
            _from_annotation(ATTEMPT_VAR, ANNOTATION_ATTEMPT),
        ]
        # Where the job's checkpoint claim is mounted, in the types that mount it.
        saved = spec.checkpoint
        if saved is not None and saved.mounts(rtype):
            self._after.append(_var(DIR_VAR, saved.mount_path))
        self._defaults = default_env(spec)
        self._owned = frozenset(var["name"] for var in self.injected("0"))

    def injected(self, index: str) -> list[dict[str, Any]]:
        """The variables this controller owns in the slot of this index (its decimal string),
        in an order where references precede their use."""
        worker_id = [_var("DMLC_WORKER_ID", index)] if self._worker else []
        task = _var("MX_CONFIG", mx_config(self._role, index))
        return [*self._before, *worker_id, *self._references, task, *self._after]

    def after_injected(self, user_env: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What follows ours in a container's env (ours come first, so user values may
        reference them): the defaults the user does not set, then the user's variables minus
        names we own."""
        user_names = {var.get("name") for var in user_env}
        kept_defaults = [var for var in self._defaults if var["name"] not in user_names]
        return kept_defaults + [var for var in user_env if var.get("name") not in self._owned]


def default_env(spec: JobSpec) -> list[dict[str, Any]]:
    """Variables a user may set differently: the ps-lite heartbeats of MXTrain pods."""
    if spec.mode is not JobMode.TRAIN:
        return []
    return [
        _var("PS_HEARTBEAT_INTERVAL", HEARTBEAT_INTERVAL),
        _var("PS_HEARTBEAT_TIMEOUT", HEARTBEAT_TIMEOUT),
    ]


def config_map_data(job: str, spec: JobSpec, subdomain: str | None) -> dict[str, str]:
    """The ConfigMap data the MXJOB_CLUSTER / MXJOB_LABELS variables reference, the replicas
    addressed in `subdomain` with one Service per job."""
    return {CLUSTER_KEY: cluster_json(job, spec, subdomain), LABELS_KEY: labels_json(spec)}

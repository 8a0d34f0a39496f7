"""kubeflow.org/v1alpha2 and v1: the same map of replica specs (docs/api.md#versions).

v1alpha2 (kubeflow/mxnet-operator 5411acf…8b18864) already keys replica specs by type with
v1's `replicas`, `restartPolicy` and `template`. What differs: the run policy is directly under
`spec` (`cleanPodPolicy`, absent meaning All; `ttlSecondsAfterFinished`); `jobMode` may be
empty or absent, which ran any replica types (MXTune when a tuning type is there); a replica's
`label` was its MX_CONFIG label, which v1 reads from the template annotation
`tuner-server-key`; the first kubeflow v1alpha2 had `schedulerName`, written into every pod;
the status counts pods under `mxReplicaStatuses` and may carry `lastReconcileTime` (which no
operator wrote).
"""

from typing import Any

from hooks.core.api import MODE_TYPES, TUNER_SERVER_KEY, JobMode
from hooks.core.conversion.versions import (
    Mapping,
    UnconvertibleError,
    View,
    clean_pod_policy_down,
    clean_pod_policy_up,
    replica_type,
    run_policy,
    spread_scheduler_name,
)
from hooks.core.conversion.versions import from_v1 as _from_v1
from hooks.core.conversion.versions import to_v1 as _to_v1

VERSION = "v1alpha2"
#: The fields of a replica spec both versions hold.
REPLICA_FIELDS = ("replicas", "restartPolicy", "label", "template")
#: Pod counts of a replica status both versions hold (v1 adds restarts and selector).
COUNTS = ("active", "succeeded", "failed")
#: Status fields both versions hold as they are.
STATUS_FIELDS = ("conditions", "startTime", "completionTime")


def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The v1 object of a v1alpha2 MXJob; raises UnconvertibleError."""
    return _to_v1(MAPPING, obj)


def from_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The v1alpha2 object of a v1 MXJob."""
    return _from_v1(MAPPING, obj)


def _counts(statuses: object) -> dict[str, Any]:
    """Per replica type, the pod counts both versions hold."""
    if not isinstance(statuses, dict):
        return {}
    return {
        key: {name: counts[name] for name in COUNTS if name in counts}
        for key, counts in statuses.items()
        if isinstance(counts, dict)
    }


def _status(status: dict[str, Any], counts_from: str, counts_to: str) -> dict[str, Any]:
    """The status at the other version: the same fields, the counts under their other key."""
    converted = {k: status[k] for k in STATUS_FIELDS if status.get(k) is not None}
    if isinstance(status.get(counts_from), dict):
        converted[counts_to] = _counts(status[counts_from])
    return converted


# --- v1alpha2 → v1 ----------------------------------------------------------------------------


def _up(obj: dict[str, Any]) -> View:
    view: View = {}
    if obj.get("spec") is not None:
        view["spec"] = _spec_up(obj["spec"])
    if isinstance(obj.get("status"), dict):
        view["status"] = _status(obj["status"], "mxReplicaStatuses", "replicaStatuses")
    return view


def _spec_up(spec: object) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise UnconvertibleError("spec", "must be an object")
    specs = spec.get("mxReplicaSpecs")
    run: dict[str, Any] = {"cleanPodPolicy": clean_pod_policy_up(spec.get("cleanPodPolicy"))}
    if spec.get("ttlSecondsAfterFinished") is not None:
        run["ttlSecondsAfterFinished"] = spec["ttlSecondsAfterFinished"]
    v1: dict[str, Any] = {"jobMode": _job_mode_up(spec.get("jobMode"), specs), "runPolicy": run}
    if specs is None:
        return v1
    if not isinstance(specs, dict):
        raise UnconvertibleError("spec.mxReplicaSpecs", "must be an object keyed by replica type")
    replicas = {key: _replica_up(r) if isinstance(r, dict) else r for key, r in specs.items()}
    templates = [r.get("template") for r in replicas.values() if isinstance(r, dict)]
    spread_scheduler_name(spec.get("schedulerName"), templates)
    v1["mxReplicaSpecs"] = replicas
    return v1


def _job_mode_up(mode: object, specs: object) -> str:
    """MXTrain or MXTune as given; any other (the Go client sent "") ran whatever replica types
    the job had: MXTune when a tuning type is among them."""
    if mode in (JobMode.TRAIN.value, JobMode.TUNE.value):
        return str(mode)
    keys = specs if isinstance(specs, dict) else {}
    tuning = any(replica_type(key) in MODE_TYPES[JobMode.TUNE] for key in keys)
    return (JobMode.TUNE if tuning else JobMode.TRAIN).value


def _replica_up(replica: dict[str, Any]) -> dict[str, Any]:
    """The spec as v1's; a `label` is also the template's `tuner-server-key` unless it has one."""
    converted = {k: replica[k] for k in REPLICA_FIELDS if k in replica}
    label, template = replica.get("label"), converted.get("template")
    if not isinstance(label, str) or not label or not isinstance(template, dict):
        return converted
    metadata = template.get("metadata") or {}
    annotations = (metadata.get("annotations") or {}) if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and TUNER_SERVER_KEY not in annotations:
        template["metadata"] = {**metadata, "annotations": {**annotations, TUNER_SERVER_KEY: label}}
    return converted


# --- v1 → v1alpha2 ----------------------------------------------------------------------------


def _down(obj: dict[str, Any]) -> View:
    view: View = {}
    if isinstance(obj.get("spec"), dict):
        view["spec"] = _spec_down(obj["spec"])
    if isinstance(obj.get("status"), dict):
        view["status"] = _status(obj["status"], "replicaStatuses", "mxReplicaStatuses")
    return view


def _spec_down(spec: dict[str, Any]) -> dict[str, Any]:
    old: dict[str, Any] = {}
    policy = clean_pod_policy_down(spec)
    if isinstance(policy, str):
        old["cleanPodPolicy"] = policy
    ttl = run_policy(spec, "ttlSecondsAfterFinished")
    if ttl is not None:
        old["ttlSecondsAfterFinished"] = ttl
    mode = spec.get("jobMode", JobMode.TRAIN.value)  # v1's default
    if isinstance(mode, str):
        old["jobMode"] = mode
    specs = spec.get("mxReplicaSpecs")
    if isinstance(specs, dict):
        old["mxReplicaSpecs"] = {
            key: _replica_down(replica)
            for key, replica in specs.items()
            if isinstance(replica, dict)
        }
    return old


def _replica_down(replica: dict[str, Any]) -> dict[str, Any]:
    """The spec as v1alpha2's; a `tuner-server-key` annotation that repeats the label leaves."""
    converted = {k: replica[k] for k in REPLICA_FIELDS if k in replica}
    template = converted.get("template")
    label = replica.get("label")
    if isinstance(template, dict) and label:
        _drop_repeated_key(template, label)
    return converted


def _drop_repeated_key(template: dict[str, Any], label: object) -> None:
    """Remove the template's `tuner-server-key` annotation where it repeats `label` (and the
    metadata it leaves empty)."""
    metadata = template.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(metadata, dict) or not isinstance(annotations, dict):
        return
    if annotations.get(TUNER_SERVER_KEY) != label:
        return
    rest = {k: v for k, v in annotations.items() if k != TUNER_SERVER_KEY}
    kept = {k: v for k, v in metadata.items() if k != "annotations"}
    if rest:
        kept["annotations"] = rest
    del template["metadata"]
    if kept:
        template["metadata"] = kept


MAPPING = Mapping(VERSION, _up, _down)

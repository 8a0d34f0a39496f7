"""kubeflow.org/v1alpha1 and v1: the first operator's list of replica specs (docs/api.md#versions).

v1alpha1 (kubeflow/mxnet-operator 8d73e16…8b18864) lists replica specs, each with an
`mxReplicaType` (SCHEDULER, SERVER or WORKER; empty was WORKER) and a `PsRootPort`. Its pods
took the template's own `restartPolicy` (absent: Always, the API server's pod default) and the
job's `schedulerName`; the SCHEDULER's `PsRootPort` was `DMLC_PS_ROOT_PORT` and every
replica's own was its Service port, which is what the `mxjob-port` of each type's `mxnet`
container is in v1. An absent `cleanupPodPolicy` deleted every pod. `RuntimeId`, `mxImage`,
`terminationPolicy` and `jobMode` (`dist`, `local`: read by no kubeflow operator) have no v1
field: the stash keeps them. v1alpha1 has no tuning types: an MXTune job reads as one without
replica specs, all of it in the stash.

The status is only ever written in v1; it reads as v1alpha1's phase, state, reason and
per-type pod counts.
"""

from typing import Any

from hooks.core.api import DEFAULT_PORT_NAME, MXNET_CONTAINER, ReplicaType
from hooks.core.conversion.versions import (
    Mapping,
    UnconvertibleError,
    View,
    clean_pod_policy_down,
    clean_pod_policy_up,
    pod_spec,
    replica_type,
    spread_scheduler_name,
)
from hooks.core.conversion.versions import from_v1 as _from_v1
from hooks.core.conversion.versions import to_v1 as _to_v1
from hooks.core.fields import dig_dict, dig_int, dig_list

VERSION = "v1alpha1"
#: The replica types v1alpha1 has, in the order it lists them.
TYPES = (ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER)
#: What an empty `mxReplicaType` was (the old defaulter).
DEFAULT_TYPE = "WORKER"
#: The pod's restartPolicy when its template gives none (the API server's pod default).
POD_DEFAULT_RESTART = "Always"
#: v1's restartPolicy when a replica gives none (the CRD default).
V1_DEFAULT_RESTART = "Never"
#: v1 condition types that are a v1alpha1 phase `Running`; other non-terminal ones are
#: `Creating` (set up, its pods not yet running).
_RUNNING = ("Running", "Restarting")
#: v1alpha1's pod counts per state, and the v1 count each one is.
_COUNTS = (("Running", "active"), ("Succeeded", "succeeded"), ("Failed", "failed"))


def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The v1 object of a v1alpha1 MXJob; raises UnconvertibleError."""
    return _to_v1(MAPPING, obj)


def from_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The v1alpha1 object of a v1 MXJob."""
    return _from_v1(MAPPING, obj)


def _old_name(rtype: ReplicaType) -> str:
    return rtype.value.upper()


# --- v1alpha1 → v1 ----------------------------------------------------------------------------


def _up(obj: dict[str, Any]) -> View:
    view: View = {}
    if obj.get("spec") is not None:
        view["spec"] = _spec_up(obj["spec"])
    if isinstance(obj.get("status"), dict):
        view["status"] = _status_up(obj["status"])
    return view


def _spec_up(spec: object) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise UnconvertibleError("spec", "must be an object")
    v1: dict[str, Any] = {
        "jobMode": "MXTrain",
        "runPolicy": {"cleanPodPolicy": clean_pod_policy_up(spec.get("cleanupPodPolicy"))},
    }
    replicas = _replica_specs_up(spec.get("replicaSpecs"))
    if replicas is not None:
        templates = [replica.get("template") for replica in replicas.values()]
        spread_scheduler_name(spec.get("schedulerName"), templates)
        v1["mxReplicaSpecs"] = replicas
    return v1


def _replica_specs_up(listed: object) -> dict[str, Any] | None:
    """The list as v1's map, one spec per type; a type twice or unknown cannot be held."""
    path = "spec.replicaSpecs"
    if listed is None:
        return None
    if not isinstance(listed, list):
        raise UnconvertibleError(path, "must be a list of replica specs")
    found: dict[ReplicaType, dict[str, Any]] = {}
    for i, entry in enumerate(listed):
        if not isinstance(entry, dict):
            raise UnconvertibleError(f"{path}[{i}]", "must be an object (a replica spec)")
        name = entry.get("mxReplicaType")
        defaulted = name in (None, "")
        rtype = next(
            (t for t in TYPES if _old_name(t) == (DEFAULT_TYPE if defaulted else name)), None
        )
        where = f"{path}[{i}].mxReplicaType"
        if rtype is None:
            raise UnconvertibleError(
                where, f"{name!r} is not a v1alpha1 replica type: SCHEDULER, SERVER or WORKER"
            )
        if rtype in found:
            empty = " (an empty mxReplicaType is WORKER)" if defaulted else ""
            raise UnconvertibleError(
                where, f"{_old_name(rtype)} appears twice{empty}; v1 holds one spec per type"
            )
        found[rtype] = _replica_up(entry)
    return {rtype.value: found[rtype] for rtype in TYPES if rtype in found}


def _replica_up(entry: dict[str, Any]) -> dict[str, Any]:
    """One listed spec as v1's: the pod's restartPolicy is the replica's, PsRootPort the port."""
    replica: dict[str, Any] = {}
    if "replicas" in entry:
        replica["replicas"] = entry["replicas"]
    spec = pod_spec(entry.get("template"))
    policy = spec.get("restartPolicy") if spec is not None else None
    replica["restartPolicy"] = policy if isinstance(policy, str) and policy else POD_DEFAULT_RESTART
    if "template" in entry:
        replica["template"] = entry["template"]
    port = entry.get("PsRootPort")
    container = _mxnet_container(spec)
    if isinstance(port, int) and not isinstance(port, bool) and container is not None:
        _set_port(container, port)
    return replica


def _mxnet_container(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    containers = dig_list(spec, "containers")
    return next(
        (c for c in containers if isinstance(c, dict) and c.get("name") == MXNET_CONTAINER), None
    )


def _set_port(container: dict[str, Any], number: int) -> None:
    """The container's `mxjob-port` is `number`: set where there is one, else appended."""
    ports = container.get("ports")
    if ports is None:
        ports = container["ports"] = []
    if not isinstance(ports, list):
        return
    for port in ports:
        if isinstance(port, dict) and port.get("name") == DEFAULT_PORT_NAME:
            port["containerPort"] = number
            return
    ports.append({"containerPort": number, "name": DEFAULT_PORT_NAME})


def _status_up(status: dict[str, Any]) -> dict[str, Any]:
    v1: dict[str, Any] = {}
    conditions = _conditions_up(status.get("phase"), status.get("state"), status.get("reason"))
    if conditions:
        v1["conditions"] = conditions
    counts: dict[ReplicaType, dict[str, int]] = {}
    for entry in dig_list(status, "replicaStatuses"):
        name = entry.get("mx_replica_type") if isinstance(entry, dict) else None
        rtype = next((t for t in TYPES if _old_name(t) == name), None)
        if rtype is None or rtype in counts:
            continue
        states = dig_dict(entry, "ReplicasStates")
        counts[rtype] = {v1_key: _count(states, state) for state, v1_key in _COUNTS}
    if counts:
        v1["replicaStatuses"] = {t.value: counts[t] for t in TYPES if t in counts}
    return v1


def _conditions_up(phase: object, state: object, reason: object) -> list[dict[str, str]]:
    """Created once set up; then Running, Succeeded or Failed (an invalid spec: phase Failed)."""
    if not phase and not state:
        return []
    conditions = [_condition("Created", "MXJobCreated")]
    if state == "Succeeded":
        conditions.append(_condition("Succeeded", "MXJobSucceeded"))
    elif state == "Failed":
        failed = _condition("Failed", "MXJobInvalidSpec" if phase == "Failed" else "MXJobFailed")
        if isinstance(reason, str) and reason:
            failed["message"] = reason
        conditions.append(failed)
    elif phase == "Running":
        conditions.append(_condition("Running", "MXJobRunning"))
    return conditions


def _condition(ctype: str, reason: str) -> dict[str, str]:
    return {"type": ctype, "status": "True", "reason": reason}


def _count(counts: dict[str, Any], key: str) -> int:
    found = dig_int(counts, key)
    return found if found is not None and found > 0 else 0


# --- v1 → v1alpha1 ----------------------------------------------------------------------------


def _down(obj: dict[str, Any]) -> View:
    view: View = {}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        view["spec"] = _spec_down(spec)
    if isinstance(obj.get("status"), dict):
        view["status"] = _status_down(obj["status"])
    return view


def _spec_down(spec: dict[str, Any]) -> dict[str, Any]:
    old: dict[str, Any] = {}
    specs = spec.get("mxReplicaSpecs")
    if isinstance(specs, dict):
        old["replicaSpecs"] = [_replica_down(rtype, specs[key]) for rtype, key in _shown(specs)]
    policy = clean_pod_policy_down(spec)
    if isinstance(policy, str):
        old["cleanupPodPolicy"] = policy
    name = _common_scheduler_name(old.get("replicaSpecs", []))
    if name is not None:
        old["schedulerName"] = name
    return old


def _shown(by_type: dict[str, Any]) -> list[tuple[ReplicaType, str]]:
    """The v1alpha1 types of a map keyed by replica type, each with its (first) key."""
    keys = [(replica_type(k), k) for k, value in by_type.items() if isinstance(value, dict)]
    return [
        (rtype, next(key for found, key in keys if found is rtype))
        for rtype in TYPES
        if any(found is rtype for found, _ in keys)
    ]


def _replica_down(rtype: ReplicaType, replica: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if "replicas" in replica:
        entry["replicas"] = replica["replicas"]
    entry["mxReplicaType"] = _old_name(rtype)
    spec = pod_spec(replica.get("template"))
    if spec is not None:
        _set_restart(spec, replica.get("restartPolicy", V1_DEFAULT_RESTART))
        port = _take_port(_mxnet_container(spec))
        if port is not None:
            entry["PsRootPort"] = port
    if "template" in replica:
        entry["template"] = replica["template"]
    return entry


def _set_restart(spec: dict[str, Any], policy: object) -> None:
    """The replica's restartPolicy as the pod's: ExitCode pods are Never (the kubelet cannot
    judge exit codes); Always stays implicit where the template leaves it so."""
    pod = "Never" if policy == "ExitCode" else policy
    if pod == POD_DEFAULT_RESTART and "restartPolicy" not in spec:
        return
    spec["restartPolicy"] = pod


def _take_port(container: dict[str, Any] | None) -> int | None:
    """The number of the container's `mxjob-port`, which leaves the template for PsRootPort."""
    ports = dig_list(container, "ports")
    for i, port in enumerate(ports):
        number = dig_int(port, "containerPort")
        if isinstance(port, dict) and port.get("name") == DEFAULT_PORT_NAME and number is not None:
            del ports[i]
            if not ports and container is not None:
                del container["ports"]
            return number
    return None


def _common_scheduler_name(entries: list[dict[str, Any]]) -> str | None:
    """The scheduler every listed template names alike, which then leaves the templates."""
    specs = [pod_spec(entry.get("template")) for entry in entries]
    names = [spec.get("schedulerName") if spec is not None else None for spec in specs]
    name = names[0] if names else None
    if not isinstance(name, str) or not name or any(other != name for other in names):
        return None
    for spec in specs:
        if spec is not None:
            del spec["schedulerName"]
    return name


def _status_down(status: dict[str, Any]) -> dict[str, Any]:
    """Phase and state from the conditions that are True; reason: the Failed message."""
    true = [
        c
        for c in dig_list(status, "conditions")
        if isinstance(c, dict) and c.get("status") == "True"
    ]
    failed = next((c for c in true if c.get("type") == "Failed"), None)
    phase, state = _phase_and_state(true, failed)
    message = failed.get("message") if failed is not None else None
    old: dict[str, Any] = {
        "phase": phase,
        "reason": message if isinstance(message, str) else "",
        "state": state,
    }
    counts = dig_dict(status, "replicaStatuses")
    listed = [_replica_status_down(rtype, counts[key]) for rtype, key in _shown(counts)]
    if listed:
        old["replicaStatuses"] = listed
    return old


def _phase_and_state(true: list[dict[str, Any]], failed: dict[str, Any] | None) -> tuple[str, str]:
    """v1alpha1's phase and state from v1's true conditions (`failed`: the Failed one)."""
    if failed is not None:
        return ("Failed" if failed.get("reason") == "MXJobInvalidSpec" else "Done"), "Failed"
    if any(c.get("type") == "Succeeded" for c in true):
        return "Done", "Succeeded"
    if true:
        return ("Running" if true[-1].get("type") in _RUNNING else "Creating"), "Running"
    return "", ""


def _replica_status_down(rtype: ReplicaType, counts: dict[str, Any]) -> dict[str, Any]:
    """`state`: Failed once a pod failed, else Running while one runs, else Succeeded once one
    has (v1alpha1 judged the newest pod of each index; v1 counts only the current ones)."""
    states = {name: _count(counts, key) for name, key in _COUNTS if _count(counts, key)}
    state = next((name for name in ("Failed", "Running", "Succeeded") if name in states), "Unknown")
    return {"mx_replica_type": _old_name(rtype), "state": state, "ReplicasStates": states}


MAPPING = Mapping(VERSION, _up, _down)

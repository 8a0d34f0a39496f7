"""Rules that need the whole MXJob: replica counts per mode and the job name (docs/api.md).

Types, enums and templates are checked while reading (`spec.load`); these rules run on the
result. The CRD enforces most of them too, but objects can predate the CRD.
"""

from typing import Any

from hooks.core import checkpoint
from hooks.core.api import MODE_TYPES, JobMode, ReplicaType, RestartPolicy, RestartStrategy
from hooks.core.failure_policy import Action
from hooks.core.naming import DNS_1035, DNS_LABEL_MAX, longest_suffix
from hooks.core.spec import JobSpec, Problem

#: Types ps-lite (AutoTVM) cannot replace alone: a RestartReplica rule naming one is refused.
NOT_ALONE = frozenset(
    {ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.TUNER_TRACKER, ReplicaType.TUNER}
)

_PATH = "spec.mxReplicaSpecs"


def validate(name: str, spec: JobSpec) -> list[Problem]:
    """Every cross-field problem of a readable spec; empty when the job can run."""
    problems = _mode_rules(spec)
    problems.extend(_failure_rules(spec))
    problems.extend(_name_rules(name, spec))
    problems.extend(_checkpoint_rules(spec))
    problems.extend(_in_place_rules(spec))
    return problems


def _exactly(spec: JobSpec, rtype: ReplicaType, wanted: int) -> list[Problem]:
    count = spec.count(rtype)
    if count == wanted:
        return []
    return [Problem(f"{_PATH}.{rtype.value}.replicas", f"must be exactly {wanted}, got {count}")]


def _at_least_one(spec: JobSpec, rtype: ReplicaType, why: str) -> list[Problem]:
    if spec.count(rtype) >= 1:
        return []
    return [Problem(f"{_PATH}.{rtype.value}", f"at least 1 replica is required: {why}")]


def _mode_rules(spec: JobSpec) -> list[Problem]:
    allowed = MODE_TYPES[spec.mode]
    problems = [
        Problem(f"{_PATH}.{t.value}", f"is not a replica type of jobMode {spec.mode.value}")
        for t in spec.replicas
        if t not in allowed
    ]
    if spec.mode is JobMode.TRAIN:
        has_ps = ReplicaType.SCHEDULER in spec.replicas or ReplicaType.SERVER in spec.replicas
        if has_ps:
            if ReplicaType.SCHEDULER not in spec.replicas:
                problems.append(
                    Problem(f"{_PATH}.Scheduler", "is required when Servers are present")
                )
            else:
                problems.extend(_exactly(spec, ReplicaType.SCHEDULER, 1))
        problems.extend(_at_least_one(spec, ReplicaType.WORKER, "MXTrain needs Workers"))
    else:
        problems.extend(_exactly(spec, ReplicaType.TUNER_TRACKER, 1))
        problems.extend(_at_least_one(spec, ReplicaType.TUNER_SERVER, "MXTune needs TunerServers"))
        problems.extend(_exactly(spec, ReplicaType.TUNER, 1))
    return problems


def _failure_rules(spec: JobSpec) -> list[Problem]:
    """failurePolicy rules against the job: replica types of its mode, RestartReplica only for
    types replaced alone, onExitCodes.containerName a container the rule's types have."""
    problems = []
    allowed = MODE_TYPES[spec.mode]
    for rule in spec.run_policy.failure_rules:
        types = rule.replica_types
        for rtype in sorted(types or ()):
            if rtype not in allowed:
                problems.append(
                    Problem(
                        f"{rule.path}.replicaTypes",
                        f"{rtype.value} is not a replica type of jobMode {spec.mode.value}",
                    )
                )
            elif rule.action is Action.RESTART_REPLICA and rtype in NOT_ALONE:
                problems.append(
                    Problem(
                        f"{rule.path}.action",
                        f"RestartReplica cannot apply to {rtype.value}: it cannot be replaced "
                        "alone (docs/restarts.md); use RestartJob",
                    )
                )
        codes = rule.on_exit_codes
        targets = [r for t, r in spec.replicas.items() if types is None or t in types]
        if (
            codes is not None
            and targets
            and not any(codes.container in _container_names(r.template) for r in targets)
        ):
            problems.append(
                Problem(
                    f"{rule.path}.onExitCodes.containerName",
                    f"{codes.container!r} is not a container of the replica types it applies to",
                )
            )
    return problems


def _container_names(template: dict[str, object]) -> set[object]:
    spec = template.get("spec")
    containers = spec.get("containers", []) if isinstance(spec, dict) else []
    return {c.get("name") for c in containers if isinstance(c, dict)}


def _name_rules(name: str, spec: JobSpec) -> list[Problem]:
    if not DNS_1035.match(name):
        return [
            Problem(
                "metadata.name",
                f"{name!r} must be a DNS-1035 label: lower-case letters, digits and '-', "
                "starting with a letter and ending with a letter or digit",
            )
        ]
    # Only a job whose every replica has restartPolicy Never, no failurePolicy rule that
    # retries, and no progress deadlines (a stall restarts the job) can never replace a pod
    # (whole-job restarts rename every replica too), so only it may skip the `-rNNNN` reserve.
    policy = spec.run_policy
    replaceable = (
        any(r.restart_policy is not RestartPolicy.NEVER for r in spec.replicas.values())
        or any(rule.action is not Action.FAIL_JOB for rule in policy.failure_rules)
        or policy.progress_deadline_seconds is not None
        or policy.first_progress_deadline_seconds is not None
    )
    counts = {t: r.replicas for t, r in spec.replicas.items()}
    limit = DNS_LABEL_MAX - longest_suffix(counts, replaceable=replaceable)
    if len(name) > limit:
        return [
            Problem(
                "metadata.name",
                f"is {len(name)} characters but at most {limit} fit: child names such as "
                f"'<name>-<type>-<index>{'-r<attempt>' if replaceable else ''}' and "
                f"'<name>-mxjob-result' must stay within {DNS_LABEL_MAX} characters",
            )
        ]
    return []


def _checkpoint_rules(spec: JobSpec) -> list[Problem]:
    """The checkpoint against the job: the types it names are the job's, at least one pod
    mounts it (a ReadWriteOncePod claim exactly one), and no template already uses its volume
    name or its mount path."""
    saved = spec.checkpoint
    if saved is None:
        return []
    problems = [
        Problem(f"{saved.path}.replicaTypes", f"this job has no {rtype.value} replicas")
        for rtype in sorted(saved.replica_types or ())
        if rtype not in spec.replicas
    ]
    mounted = {t: r for t, r in spec.replicas.items() if saved.mounts(t)}
    pods = sum(r.replicas for r in mounted.values())
    if not problems and pods == 0:
        problems.append(Problem(f"{saved.path}.replicaTypes", "no pod of this job would mount it"))
    if "ReadWriteOncePod" in saved.spec["accessModes"] and pods > 1:
        problems.append(
            Problem(
                f"{saved.path}.volumeClaimTemplate.spec.accessModes",
                f"ReadWriteOncePod lets one pod mount the claim, and {pods} would",
            )
        )
    for rtype, replica in mounted.items():
        problems.extend(_clashes(saved.mount_path, replica.template, f"{_PATH}.{rtype.value}"))
    return problems


def _clashes(mount_path: str, template: dict[str, Any], path: str) -> list[Problem]:
    """A template's volume named like the checkpoint's, or a mount at its path."""
    pod = template["spec"]
    problems = [
        Problem(
            f"{path}.template.spec.volumes[{i}].name",
            f"{checkpoint.VOLUME!r} is the checkpoint volume's",
        )
        for i, volume in enumerate(pod.get("volumes") or [])
        if isinstance(volume, dict) and volume.get("name") == checkpoint.VOLUME
    ]
    for c, container in enumerate(pod["containers"]):
        mounts = container.get("volumeMounts") or []
        problems.extend(
            Problem(
                f"{path}.template.spec.containers[{c}].volumeMounts[{m}].mountPath",
                f"{mount_path!r} is where the checkpoint is mounted (spec.checkpoint.mountPath)",
            )
            for m, mount in enumerate(mounts if isinstance(mounts, list) else [])
            if isinstance(mount, dict)
            and str(mount.get("mountPath", "")).rstrip("/") == mount_path.rstrip("/")
        )
    return problems


#: The restartPolicies under which the kubelet restarts a failed mxnet container by itself.
_KUBELET_RESTARTS = frozenset({RestartPolicy.ON_FAILURE, RestartPolicy.ALWAYS})


def _in_place_rules(spec: JobSpec) -> list[Problem]:
    """restartStrategy InPlace against the replicas' restartPolicy: the hook reads an in-place
    pod's restarts from its run records, so a container the kubelet restarts by itself
    (OnFailure, Always) would go uncounted, and a Scheduler or Server restarted alone would not
    restart the whole job (docs/restarts.md#in-place)."""
    if spec.run_policy.restart_strategy is not RestartStrategy.IN_PLACE:
        return []
    kubelet = sorted(
        t.value for t, r in spec.replicas.items() if r.restart_policy in _KUBELET_RESTARTS
    )
    if not kubelet:
        return []
    return [
        Problem(
            "spec.runPolicy.restartStrategy",
            "InPlace needs restartPolicy ExitCode or Never for every replica type; "
            f"{', '.join(kubelet)} {'has' if len(kubelet) == 1 else 'have'} OnFailure or Always, "
            "under which the kubelet restarts a failed container by itself",
        )
    ]

"""Rules that need the whole MXJob: replica counts per mode and the job name (docs/api.md).

Types, enums and templates are checked while reading (`spec.load`); these rules run on the
result. The CRD enforces most of them too, but objects can predate the CRD.
"""

from hooks.core.api import MODE_TYPES, JobMode, ReplicaType, RestartPolicy
from hooks.core.naming import DNS_1035, DNS_LABEL_MAX, longest_suffix
from hooks.core.spec import JobSpec, Problem

_PATH = "spec.mxReplicaSpecs"


def validate(name: str, spec: JobSpec) -> list[Problem]:
    """Every cross-field problem of a readable spec; empty when the job can run."""
    problems = _mode_rules(spec)
    problems.extend(_name_rules(name, spec))
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


def _name_rules(name: str, spec: JobSpec) -> list[Problem]:
    if not DNS_1035.match(name):
        return [
            Problem(
                "metadata.name",
                f"{name!r} must be a DNS-1035 label: lower-case letters, digits and '-', "
                "starting with a letter and ending with a letter or digit",
            )
        ]
    # Only a job whose every replica has restartPolicy Never can never replace a pod (whole-job
    # restarts rename every replica too), so only it may skip the `-rNNNN` reserve.
    replaceable = any(r.restart_policy is not RestartPolicy.NEVER for r in spec.replicas.values())
    counts = {t: r.replicas for t, r in spec.replicas.items()}
    limit = DNS_LABEL_MAX - longest_suffix(counts, replaceable)
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

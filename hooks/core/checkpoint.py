"""`spec.checkpoint` (docs/restarts.md#checkpoints): one PersistentVolumeClaim per job, made from
the user's template, mounted in the pods of the replica types it names, its path in
MXJOB_CHECKPOINT_DIR. The claim outlives whole-job restarts, resizes and cleanPodPolicy: once
made it is listed as long as the job exists, and goes with the job (its owner reference) unless
its retention policy says Retain: then the retention component releases it first.

What is read here is checked here too, by field, so that Kubernetes never refuses the claim a
job was accepted with (a refused create would leave the job waiting with no word of why).
"""

import re
from dataclasses import dataclass
from typing import Any

from hooks.core import quantity
from hooks.core.api import ReplicaType
from hooks.core.fields import dig

#: The checkpoint volume's name in each pod, and the variable that says where it is mounted.
VOLUME = "mxjob-checkpoint"
DIR_VAR = "MXJOB_CHECKPOINT_DIR"
DEFAULT_PATH = "/mxjob/checkpoint"
#: `<job>-checkpoint`: the job name's 50 characters leave 61, within a claim name's 253.
CLAIM_SUFFIX = "-checkpoint"

#: The claim spec fields a template may set; others are refused by name. `volumeName` (a
#: given PersistentVolume) is allowed: binding a job to a known volume is how a user resumes
#: from a checkpoint kept by an earlier job.
SPEC_FIELDS = frozenset(
    {
        "accessModes",
        "storageClassName",
        "resources",
        "selector",
        "volumeMode",
        "volumeName",
        "dataSource",
        "dataSourceRef",
        "volumeAttributesClassName",
    }
)
#: What becomes of the claim when its job is deleted (`retentionPolicy.whenDeleted`, the words
#: of StatefulSet and JobSet): Delete, the default, goes with the job; Retain is kept.
WHEN_DELETED = ("Delete", "Retain")
#: The finalizer a MutatingAdmissionPolicy keeps on a job that retains its claim, so that the
#: retention component can release the claim before the garbage collector sees the job gone.
RETAIN_FINALIZER = "mxjob.kubeflow.org/retain-checkpoint"
#: The annotation of a released claim: the uid of the job it was kept from.
RETAINED_FROM = "mxjob.kubeflow.org/retained-from"
#: Access modes a checkpoint can use: it is written, so never ReadOnlyMany.
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Checkpoint:
    """The job's checkpoint claim: its labels, annotations and spec (accessModes defaulted),
    where it is mounted, and in which replica types' pods (None: every type but the
    Scheduler, which holds no model state)."""

    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]
    mount_path: str = DEFAULT_PATH
    replica_types: frozenset[ReplicaType] | None = None
    #: Where it was read, for problems.
    path: str = "spec.checkpoint"

    def mounts(self, rtype: ReplicaType) -> bool:
        """Whether the pods of this replica type mount the claim."""
        if self.replica_types is None:
            return rtype is not ReplicaType.SCHEDULER
        return rtype in self.replica_types


def claim_name(job: str) -> str:
    """The job's checkpoint claim: `<job>-checkpoint`."""
    return job + CLAIM_SUFFIX


def retains(job: object) -> bool:
    """Whether a job, as the API server stores it, keeps its claim when it is deleted."""
    return bool(dig(job, "spec", "checkpoint", "retentionPolicy", "whenDeleted") == "Retain")


def spec_problems(spec: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """What Kubernetes would refuse, or a checkpoint cannot use, in a claim template's spec, as
    (path, rule) pairs."""
    found = [
        (
            f"{path}.{key}",
            f"is not a claim field mxjob passes on ({', '.join(sorted(SPEC_FIELDS))})",
        )
        for key in sorted(spec)
        if key not in SPEC_FIELDS
    ]
    found += _storage_problems(spec.get("resources"), f"{path}.resources")
    found += _mode_problems(spec, path)
    found += [
        (f"{path}.{key}", f"must be a DNS subdomain name, got {spec[key]!r}")
        for key in ("storageClassName", "volumeName", "volumeAttributesClassName")
        if spec.get(key) not in (None, "") and not _is_subdomain(spec[key])
    ]
    found += [
        (f"{path}.{key}", "must be an object")
        for key in ("selector", "dataSource", "dataSourceRef")
        if key in spec and not isinstance(spec[key], dict)
    ]
    return found


def _is_subdomain(value: object) -> bool:
    """A DNS subdomain name, as Kubernetes names classes and volumes."""
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS_SUBDOMAIN.match(value))


def _mode_problems(spec: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """accessModes a non-empty list of ACCESS_MODES; volumeMode Filesystem."""
    found = []
    modes = spec.get("accessModes")
    if not isinstance(modes, list) or not modes:
        found.append((f"{path}.accessModes", "must be a non-empty list"))
    else:
        found += [
            (f"{path}.accessModes[{i}]", f"must be one of {', '.join(ACCESS_MODES)}, got {mode!r}")
            for i, mode in enumerate(modes)
            if mode not in ACCESS_MODES
        ]
    mode = spec.get("volumeMode", "Filesystem")
    if mode != "Filesystem":
        found.append(
            (f"{path}.volumeMode", f"must be Filesystem (checkpoints are files), got {mode!r}")
        )
    return found


def _storage_problems(resources: object, path: str) -> list[tuple[str, str]]:
    """`resources.requests.storage` is required and, like `limits.storage`, a positive
    quantity."""
    if not isinstance(resources, dict):
        return [(path, "must be an object with requests.storage")]
    found = []
    for part in ("requests", "limits"):
        values = resources.get(part)
        if values is None and part == "limits":
            continue
        if not isinstance(values, dict):
            found.append((f"{path}.{part}", "must be an object with storage"))
            continue
        storage = values.get("storage")
        if storage is None and part == "requests":
            found.append((f"{path}.requests.storage", "is required: the claim's size, e.g. 10Gi"))
            continue
        amount = quantity.parse(storage)
        if amount is None or amount <= 0:
            found.append(
                (
                    f"{path}.{part}.storage",
                    f"must be a positive quantity, got {storage!r}",
                )
            )
    return found


def mount_path_problem(path_value: object) -> str | None:
    """Why a mountPath cannot be used, if it cannot: absolute, no ':' and no '..' part (the
    kubelet's rules)."""
    if not isinstance(path_value, str) or not path_value.startswith("/"):
        return f"must be an absolute path, got {path_value!r}"
    if ":" in path_value or ".." in path_value.split("/"):
        return f"must contain no ':' and no '..' part, got {path_value!r}"
    if len(path_value) > 4096:
        return "must be at most 4096 characters"
    return None

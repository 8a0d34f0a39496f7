"""A job's pods as the user names them: `worker-1` for the first attempt of Worker 1,
`worker-1-r1` for its replacement (the pod's name without the job's), in the order the hook
lists replicas, and which of them `--replica` picks."""

from dataclasses import dataclass
from typing import Any

from hooks.core.public import (
    ALL_TYPES,
    MXNET_CONTAINER,
    TYPE_BY_FOLDED_NAME,
    ReplicaType,
    dig,
    dig_list,
    named,
    parse_pod_name,
)


@dataclass(frozen=True, order=True)
class Replica:
    """One pod of the job: its replica type (in the hook's order), index and attempt."""

    order: int
    index: int
    attempt: int
    rtype: ReplicaType
    pod: str

    @property
    def label(self) -> str:
        """`worker-1`, `worker-1-r1`: the pod's name without the job's."""
        suffix = f"-r{self.attempt}" if self.attempt else ""
        return f"{self.rtype.short}-{self.index}{suffix}"


def replica_of(job: str, pod: object) -> Replica | None:
    """The replica a pod object of the job is, or None for a pod whose name the job never
    gives."""
    name = dig(pod, "metadata", "name")
    parsed = parse_pod_name(job, name) if isinstance(name, str) else None
    if parsed is None or not isinstance(name, str):
        return None
    slot, attempt = parsed
    return Replica(ALL_TYPES.index(slot.rtype), slot.index, attempt, slot.rtype, name)


def job_replicas(job: str, pods: list[Any]) -> list[tuple[Replica, Any]]:
    """The job's pods with their replicas, in the hook's order: type, index, attempt."""
    found = [(r, pod) for pod in pods if (r := replica_of(job, pod)) is not None]
    return sorted(found, key=lambda item: item[0])


class ReplicaFilter:
    """`--replica worker-1` (one replica, every attempt) or `--replica worker` (every Worker);
    the type in any case, as spec keys are matched."""

    index: int | None

    def __init__(self, text: str) -> None:
        head, _, index = text.strip().lower().rpartition("-")
        if head and index.isdigit():
            name, self.index = head, int(index)
        else:
            name, self.index = text.strip().lower(), None
        rtype = TYPE_BY_FOLDED_NAME.get(name)
        if rtype is None:
            known = ", ".join(t.short for t in ReplicaType)
            raise ValueError(f"{text!r} names no replica: TYPE or TYPE-INDEX, TYPE one of {known}")
        self.rtype = rtype

    def __call__(self, replica: Replica) -> bool:
        return replica.rtype is self.rtype and self.index in (None, replica.index)


def mxnet_status(pod: object) -> dict[str, Any]:
    """The status of the pod's mxnet container ({} before the kubelet reports one)."""
    return named(dig_list(pod, "status", "containerStatuses"), MXNET_CONTAINER)

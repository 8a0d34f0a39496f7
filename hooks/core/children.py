"""Observed children as typed shapes: of each kind, exactly the fields the core reads.

Metacontroller sends every child in full (managedFields, volumes, the kubelet's status of every
container); the hook reads a dozen fields of each. These msgspec shapes name only those, so the
rest is skipped while scanning and never becomes Python objects. They are the only place that
lists what the core reads of a child: the HTTP adapter decodes the request bytes straight into
them (hooks/wire.py) and `decode_group` reads a request already in Python objects the same way.

The types are the ones Kubernetes gives these fields. A child that does not have them is no
object the API server holds: the request is refused, naming the field (`ChildError`).

A child's `spec` (and the body of a kind the hook does not read) stays `msgspec.Raw`, its own
bytes: echoed untouched when the hook keeps an observed child (hooks/core/retention.py). Of a
pod's spec, the three fields the core reads are decoded from those bytes (`pod_spec`), for a
job a gang scheduler or Kueue places: the only readers of where a pod is bound.
"""

from datetime import datetime
from typing import Annotated, Any, TypeVar, cast

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from hooks.core.fields import MAX_DEPTH, too_deep

#: A Kubernetes timestamp: RFC 3339 with its zone, as `metav1.Time` writes it.
Moment = Annotated[datetime, msgspec.Meta(tz=True)]


_C = TypeVar("_C", bound="Child")


_TEXT = msgspec.json.Decoder(str)


class ChildError(ValueError):
    """A child that is not of the shape its kind has: names the field, and the child if known."""

    def __init__(self, message: str, child: str | None = None) -> None:
        super().__init__(message)
        self.child = child


class _Shape(Struct, frozen=True, rename="camel", gc=False):
    """Fields named in Python style, read from their Kubernetes (camelCase) names. Not tracked
    by the garbage collector: decoded shapes hold no cycles."""


class Meta(_Shape, frozen=True):
    """The metadata of any child. Annotation values stay raw: Metacontroller's
    last-applied-configuration is a copy of the whole object; only `annotation` decodes one."""

    name: str
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, Raw] = {}
    creation_timestamp: Moment | None = None
    deletion_timestamp: Moment | None = None
    #: The grace period of a deletion: its request was made this long before deletionTimestamp.
    deletion_grace_period_seconds: int | None = None

    def annotation(self, key: str) -> str | None:
        """The value of one annotation, if the child has it; raises ChildError if it is no
        string."""
        raw = self.annotations.get(key)
        if raw is None:
            return None
        try:
            return _TEXT.decode(raw)
        except msgspec.MsgspecError as exc:
            raise ChildError(_at(exc, f"metadata.annotations[{key!r}]")) from None


class Child(_Shape, frozen=True):
    """A child of a kind of which the hook reads only the metadata (Services)."""

    metadata: Meta
    spec: Raw | UnsetType = UNSET


class Condition(_Shape, frozen=True):
    """A pod's or a PodGroup's condition."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: Moment | None = None


class Running(_Shape, frozen=True):
    """A container's state while it runs."""

    started_at: Moment | None = None


class Terminated(_Shape, frozen=True):
    """How a container ended: its exit code, the kubelet's reason (`OOMKilled`, …) and its
    termination message (for the mxnet container, the end of its log when it failed)."""

    exit_code: int | None = None
    reason: str | None = None
    message: str | None = None
    started_at: Moment | None = None
    finished_at: Moment | None = None


class Waiting(_Shape, frozen=True):
    """Why a container has not started (`ImagePullBackOff`, …)."""

    reason: str | None = None
    message: str | None = None


class ContainerState(_Shape, frozen=True):
    """One of running, terminated or waiting (the kubelet sets one; none while unknown)."""

    running: Running | None = None
    terminated: Terminated | None = None
    waiting: Waiting | None = None


_NO_STATE = ContainerState()


class ContainerStatus(_Shape, frozen=True):
    """One container's state, how often the kubelet restarted it in place, and how its run
    before the last in-place restart ended (`lastState`)."""

    name: str | None = None
    restart_count: int = 0
    state: ContainerState = _NO_STATE
    last_state: ContainerState = _NO_STATE


class PodStatus(_Shape, frozen=True):
    """Phase, reason, start, conditions (DisruptionTarget, Kueue's TerminationTarget, …) and the
    state of every container: the rejoin wait and the user's init containers say why a pod
    cannot start, the mxnet container how it ended."""

    phase: str | None = None
    reason: str | None = None
    start_time: Moment | None = None
    conditions: list[Condition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []


class Gate(_Shape, frozen=True):
    """A scheduling gate: the pod is not considered by any scheduler while it has one."""

    name: str | None = None


class PodSpec(_Shape, frozen=True):
    """What the core reads of a pod's spec: where it is bound, which scheduler holds it, and
    Kueue's gate (docs/scheduling.md)."""

    node_name: str | None = None
    scheduler_name: str | None = None
    scheduling_gates: list[Gate] = []


class Pod(Child, frozen=True):
    """A pod: its metadata, its spec's raw bytes, and the status the kubelet reports."""

    status: PodStatus = PodStatus()


class ConfigMap(Child, frozen=True):
    """The job's own ConfigMaps: MX_CONFIG's parts, run records, the result record."""

    data: dict[str, str] | UnsetType = UNSET
    binary_data: dict[str, str] | UnsetType = UNSET
    immutable: bool | UnsetType = UNSET


class GroupStatus(_Shape, frozen=True):
    """Volcano admits a gang's pods once its PodGroup has left Pending; the newest condition
    says why it waits."""

    phase: str | None = None
    conditions: list[Condition] = []


class PodGroup(Child, frozen=True):
    """A gang scheduler's PodGroup (Volcano's or scheduler-plugins')."""

    status: GroupStatus = GroupStatus()


class ClaimStatus(_Shape, frozen=True):
    """Whether the claim is bound to a volume (`Pending`, `Bound`, `Lost`)."""

    phase: str | None = None


class Claim(Child, frozen=True):
    """The job's checkpoint PersistentVolumeClaim (hooks/core/checkpoint.py)."""

    status: ClaimStatus = ClaimStatus()


class Other(Child, frozen=True):
    """A child of a kind the hook does not know: kept as it came (its body as raw bytes)."""

    api_version: Any = None
    kind: Any = None
    data: Raw | UnsetType = UNSET
    binary_data: Raw | UnsetType = UNSET
    immutable: Raw | UnsetType = UNSET


#: The fields of its body a kept child echoes where it has them (retention.as_observed), by
#: attribute: their names in the object.
BODY_FIELDS = {
    "spec": "spec",
    "data": "data",
    "binary_data": "binaryData",
    "immutable": "immutable",
}


class ServicePort(_Shape, frozen=True):
    """A Service port: where it listens and where it sends."""

    port: int | None = None
    target_port: int | str | None = None


class ServiceSpec(_Shape, frozen=True):
    """What the core compares of a Service's spec: which pods it selects, on which ports."""

    selector: dict[str, str] = {}
    ports: list[ServicePort] = []


class GroupSpec(_Shape, frozen=True):
    """What the core compares of a PodGroup's spec: how many pods the gang needs."""

    min_member: int | None = None


_POD_SPEC = msgspec.json.Decoder(PodSpec)
_NO_SPEC = PodSpec()
_SPECS: dict[type[Struct], msgspec.json.Decoder[Any]] = {
    ServiceSpec: msgspec.json.Decoder(ServiceSpec),
    GroupSpec: msgspec.json.Decoder(GroupSpec),
}
_S = TypeVar("_S", ServiceSpec, GroupSpec)


def spec_of(child: Child, shape: type[_S]) -> _S | None:
    """A child's spec read into `shape`, or None when it has none of that shape: only compared
    between runs (hooks/core/desired.py), never a reason to refuse a request."""
    if isinstance(child.spec, UnsetType):
        return None
    try:
        return cast(_S, _SPECS[shape].decode(child.spec))
    except msgspec.MsgspecError:
        return None


def pod_spec(pod: Pod) -> PodSpec:
    """The fields of a pod's spec the core reads, decoded from its raw bytes."""
    if isinstance(pod.spec, UnsetType):
        return _NO_SPEC
    try:
        return _POD_SPEC.decode(pod.spec)
    except msgspec.MsgspecError as exc:
        raise ChildError(_at(exc, "spec")) from None


def _at(exc: msgspec.MsgspecError, field: str) -> str:
    """msgspec's message about a part of a child decoded on its own, with the part's path."""
    text = str(exc)
    if " - at `$" in text:
        return text.replace(" - at `$", f" - at `$.{field}", 1)
    return f"{text} - at `$.{field}`"


def decode_child(kind: type[_C], child: object) -> _C:
    """A child given as Python objects, read into the shape of its kind; raises ChildError."""
    try:
        return msgspec.json.decode(msgspec.json.encode(child), type=kind)
    except msgspec.MsgspecError as exc:
        raise ChildError(str(exc)) from None
    except RecursionError:
        where = too_deep(child) or ""
        raise ChildError(f"'{where[1:]}' nests deeper than {MAX_DEPTH} levels") from None


def decode_group(kind: type[Child], key: str, members: dict[str, object]) -> dict[str, Child]:
    """The children of one group, each read into `kind`, by member key; raises ChildError
    naming the first that does not fit."""
    decoded: dict[str, Child] = {}
    for member, child in members.items():
        try:
            decoded[member] = decode_child(kind, child)
        except ChildError as exc:
            raise ChildError(f"'children.{key}.{member}': {exc}") from None
    return decoded

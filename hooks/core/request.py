"""The Metacontroller sync request, read once at the door into what the core decides from (hook
versions v1 and v2).

Every part is read here and nowhere again: the parent's identity, moments, queue and hand-off;
its last status (hooks/core/previous.py); the controller's gang scheduler; each child group in
its typed shape (hooks/core/children.py); the job's pods, each read into its slot and attempt
(hooks/core/observed.py). The core reads attributes. The parent's `spec` is the user's and is
read by `spec.load`, which names its problems in the job's status.

v1 keys each child group by name, v2 by `namespace/name`; both carry whole objects, so children
are re-keyed by `metadata.name` (all children live in the parent's namespace). A group's key
`Kind.apiVersion` is what identifies its children, whatever their own `kind` says.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from hooks.core.api import OWN_MANAGERS
from hooks.core.checkpoint import claim_name
from hooks.core.children import (
    Child,
    ChildError,
    Claim,
    ConfigMap,
    Other,
    Pod,
    PodGroup,
    decode_group,
)
from hooks.core.fields import dig, dig_list, too_deep
from hooks.core.naming import Slot
from hooks.core.observed import ObservedPod, pods_by_slot
from hooks.core.previous import PreviousStatus, read_previous
from hooks.core.scheduling.kueue import Queue, read_queue
from hooks.core.scheduling.pick import Gang, detect
from hooks.core.timestamps import latest, parse_time

POD = "Pod.v1"
SERVICE = "Service.v1"
CONFIG_MAP = "ConfigMap.v1"
CLAIM = "PersistentVolumeClaim.v1"
#: The shape of each group the core reads, by `Kind.apiVersion`; any other group's children
#: are read as `Other` (identity only, their body kept as raw bytes).
KINDS: dict[str, type[Child]] = {
    POD: Pod,
    SERVICE: Child,
    CONFIG_MAP: ConfigMap,
    CLAIM: Claim,
    **{gang.value: PodGroup for gang in Gang},
}
#: Members of the groups of one request, as decoded: by member key, not yet by name.
Groups = dict[str, dict[str, Child]]


class RequestError(ValueError):
    """The body is not a sync request: the caller answers 4xx and names the problem."""


@dataclass(frozen=True, kw_only=True)
class SyncRequest:
    """What the hook needs of a sync request, read."""

    #: The MXJob as sent: its `spec` is read by `spec.load`, its templates copied into pods.
    parent: dict[str, Any]
    name: str
    namespace: str
    #: Children by group key, then by name.
    children: dict[str, dict[str, Child]]
    #: The parent's status as Metacontroller last saw it (possibly stale).
    previous: PreviousStatus
    #: The job's pods by slot, oldest attempt first; pods of names it never gives left out.
    pods: dict[Slot, list[ObservedPod]]
    #: The gang scheduler whose group kind the controller manages, if any.
    gang: Gang | None
    #: When the job was created, and when its spec last changed (its creation if never).
    created: datetime | None
    spec_changed: datetime | None
    queue: Queue | None
    #: `runPolicy.managedBy` names another controller (MultiKueue): hands off entirely.
    managed_elsewhere: bool

    def group(self, key: str) -> dict[str, Child]:
        """Observed children of one `Kind.apiVersion` group, by name."""
        return self.children.get(key, {})

    @property
    def config_maps(self) -> dict[str, ConfigMap]:
        """The observed ConfigMaps (the job's config, run records and result record), by name."""
        return cast(dict[str, ConfigMap], self.group(CONFIG_MAP))

    @property
    def claim(self) -> Claim | None:
        """The job's checkpoint claim as observed, if it exists."""
        return cast(Claim | None, self.group(CLAIM).get(claim_name(self.name)))

    @property
    def pod_group(self) -> PodGroup | None:
        """The job's PodGroup as observed, when it is gang-scheduled and the group exists."""
        if self.gang is None:
            return None
        return cast(PodGroup | None, self.group(self.gang.value).get(self.name))


def parse_request(body: object) -> SyncRequest:
    """Read a request already decoded into Python objects; raise RequestError naming the first
    problem."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object with 'parent' and 'children'")
    parent, controller = _checked(body.get("parent"), body.get("controller", {}))
    try:
        groups = {
            key: decode_group(KINDS.get(key, Other), key, members)
            for key, members in _members(body.get("children")).items()
        }
    except ChildError as exc:
        raise RequestError(str(exc)) from None
    return _read(parent, controller, groups)


def assemble(parent: object, controller: object, groups: Groups) -> SyncRequest:
    """Read a request whose children are decoded already (hooks/wire.py decodes them from the
    body's bytes into the same shapes); raise RequestError naming the first problem."""
    return _read(*_checked(parent, controller), groups)


def _checked(parent: object, controller: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parent and the controller, if they are objects and the parent names the job."""
    if not isinstance(parent, dict):
        raise RequestError("'parent' must be an object (the MXJob)")
    metadata = parent.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise RequestError("'parent.metadata.name' must be a string")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise RequestError("'parent.metadata.namespace' must be a string")
    if not isinstance(controller, dict):
        raise RequestError("'controller' must be an object")
    return parent, controller


def _members(raw: object) -> dict[str, dict[str, object]]:
    """The child groups' members, checked for shape: objects keyed by member key."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RequestError("'children' must be an object keyed by 'Kind.apiVersion'")
    groups: dict[str, dict[str, object]] = {}
    for key, listed in raw.items():
        members = {} if listed is None else listed
        if not isinstance(members, dict):
            raise RequestError(f"'children.{key}' must be an object keyed by child name")
        groups[str(key)] = members
    return groups


def _read(parent: dict[str, Any], controller: dict[str, Any], groups: Groups) -> SyncRequest:
    """Every part read once: the parent's, the controller's gang scheduler, the job's pods."""
    name = str(parent["metadata"]["name"])
    children = {
        key: {child.metadata.name: child for child in members.values()}
        for key, members in groups.items()
    }
    # Nobody but the hook should write the status; one it cannot read (a stray write) is
    # treated like a stale cache: rebuilt from the children, never a reason to refuse.
    status = parent.get("status")
    created = parse_time(dig(parent, "metadata", "creationTimestamp"))
    scheduler, queue = detect(controller, list(children)), read_queue(parent)
    placed = scheduler is not None or queue is not None  # what the schedulers read of each pod
    try:
        pods = pods_by_slot(name, cast(dict[str, Pod], children.get(POD, {})), placement=placed)
    except ChildError as exc:
        raise RequestError(f"'children.{POD}.{exc.child}': {exc}") from None
    return SyncRequest(
        parent=parent,
        name=name,
        namespace=str(parent["metadata"].get("namespace") or "default"),
        children=children,
        previous=read_previous(None if too_deep(status) is not None else status),
        pods=pods,
        gang=scheduler,
        created=created,
        spec_changed=_spec_changed(parent) or created,
        queue=queue,
        managed_elsewhere=_managed_elsewhere(parent),
    )


def _managed_elsewhere(parent: dict[str, Any]) -> bool:
    """Whether `managedBy` names a controller other than this one."""
    managers = (dig(parent, "spec", "runPolicy", "managedBy"), dig(parent, "spec", "managedBy"))
    return any(m is not None and m not in OWN_MANAGERS for m in managers)


def _spec_changed(parent: dict[str, Any]) -> datetime | None:
    """When the spec last changed: the latest non-status managedFields entry, if any."""
    times = [
        parse_time(entry.get("time"))
        for entry in dig_list(parent, "metadata", "managedFields")
        if isinstance(entry, dict) and not entry.get("subresource")
    ]
    return latest(*times)

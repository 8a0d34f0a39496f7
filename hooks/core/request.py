"""The Metacontroller sync request, checked for shape and normalised (hook versions v1 and v2).

v1 keys each child group by name, v2 by `namespace/name`; both carry whole objects, so children
are re-keyed by `metadata.name` (all children live in the parent's namespace). A group's key
`Kind.apiVersion` is what identifies its children: a child whose own `kind` or `apiVersion`
says otherwise is read (and echoed) with the group's.

Nesting is bounded where the hook recurses into user data: the spec (`spec.load`, a problem
of the job), the parent's status (here: one nested too deep is left out, as if absent) and
echoed children (`retention.as_observed`).
"""

from dataclasses import dataclass, field
from typing import Any

from hooks.core.fields import dig, too_deep

POD = "Pod.v1"
#: Where a child may carry the few fields of its `spec` the core reads (`nodeName`,
#: `schedulerName`, `schedulingGates`) when the HTTP adapter left the `spec` itself undecoded, to
#: echo it byte for byte (hooks/wire.py); never echoed (retention keeps `spec`, not this key).
SPEC_READ = "mxjob.spec-read"
SERVICE = "Service.v1"
CONFIG_MAP = "ConfigMap.v1"


class RequestError(ValueError):
    """The body is not a sync request: the caller answers 4xx and names the problem."""


@dataclass(frozen=True)
class SyncRequest:
    """What the hook needs of a sync request."""

    parent: dict[str, Any]
    children: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    controller: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.parent["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.parent["metadata"].get("namespace") or "default")

    @property
    def status(self) -> dict[str, Any]:
        """The parent's status as Metacontroller last saw it (possibly stale)."""
        status = self.parent.get("status")
        return status if isinstance(status, dict) else {}

    def group(self, key: str) -> dict[str, dict[str, Any]]:
        """Observed children of one `Kind.apiVersion` group, by name."""
        return self.children.get(key, {})


def parse_request(body: object) -> SyncRequest:
    """Check the request's shape; raise RequestError naming the first problem."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object with 'parent' and 'children'")
    parent = body.get("parent")
    if not isinstance(parent, dict):
        raise RequestError("'parent' must be an object (the MXJob)")
    metadata = parent.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise RequestError("'parent.metadata.name' must be a string")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise RequestError("'parent.metadata.namespace' must be a string")
    controller = body.get("controller", {})
    if not isinstance(controller, dict):
        raise RequestError("'controller' must be an object")
    if too_deep(parent.get("status")) is not None:
        # Nobody but the hook should write the status; one it cannot read (a stray write) is
        # treated like a stale cache: rebuilt from the children, never a reason to refuse.
        parent = {key: value for key, value in parent.items() if key != "status"}
    return SyncRequest(parent, _children(body.get("children")), controller)


def _children(raw: object) -> dict[str, dict[str, dict[str, Any]]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RequestError("'children' must be an object keyed by 'Kind.apiVersion'")
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for key, listed in raw.items():
        members = {} if listed is None else listed
        if not isinstance(members, dict):
            raise RequestError(f"'children.{key}' must be an object keyed by child name")
        kind, _, api_version = str(key).partition(".")
        group: dict[str, dict[str, Any]] = {}
        for member_key, child in members.items():
            if not isinstance(child, dict):
                raise RequestError(f"'children.{key}.{member_key}' must be an object")
            name = dig(child, "metadata", "name")
            if not isinstance(name, str):
                raise RequestError(f"'children.{key}.{member_key}' has no metadata.name")
            group[name] = _identified(child, kind, api_version)
        groups[key] = group
    return groups


def _identified(child: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """The child with the kind and apiVersion of its group (when the key names both)."""
    if not kind or not api_version:
        return child
    if child.get("kind") == kind and child.get("apiVersion") == api_version:
        return child
    return {**child, "kind": kind, "apiVersion": api_version}

"""Retention: which observed children a response keeps listing, per job state
(docs/run-policy.md, docs/metacontroller.md).

Metacontroller deletes every observed child missing from the response, so "keep" means "list
it". Kept children that the hook cannot or need not rebuild are listed as observed, trimmed to
what identifies them (children are never updated in place: `updateStrategy: OnDelete`).
"""

from typing import Any, cast

from msgspec import UNSET

from hooks.core.api import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, CleanPodPolicy
from hooks.core.children import BODY_FIELDS, Child, Other, Pod
from hooks.core.observed import FINISHED_PHASES
from hooks.core.request import CONFIG_MAP, POD, SERVICE, SyncRequest

_LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def as_observed(key: str, child: Child) -> dict[str, Any]:
    """An observed child of the group `key` trimmed to its identity and desired content (no
    status or bookkeeping); its body echoed as the bytes it came in."""
    kind, _, api_version = key.partition(".")
    if (not kind or not api_version) and isinstance(child, Other):
        kind, api_version = child.kind, child.api_version
    metadata = child.metadata
    kept_meta: dict[str, Any] = {"name": metadata.name}
    if metadata.namespace is not None:
        kept_meta["namespace"] = metadata.namespace
    if metadata.labels:
        kept_meta["labels"] = metadata.labels
    annotations = {k: v for k, v in metadata.annotations.items() if k != _LAST_APPLIED}
    if annotations:
        kept_meta["annotations"] = annotations
    trimmed = {"apiVersion": api_version, "kind": kind, "metadata": kept_meta}
    for attribute, name in BODY_FIELDS.items():
        value = getattr(child, attribute, UNSET)
        if value is not UNSET:
            trimmed[name] = value
    return trimmed


def _listed(observed: list[tuple[str, Child]]) -> list[dict[str, Any]]:
    """Trimmed and in a canonical order, whatever order the request used."""
    trimmed = [as_observed(key, child) for key, child in observed]
    return sorted(trimmed, key=lambda c: (str(c["kind"]), str(c["metadata"]["name"])))


def keep_all(request: SyncRequest) -> list[dict[str, Any]]:
    """Every observed child, unchanged: nothing created, nothing deleted."""
    return _listed([(key, c) for key, group in request.children.items() for c in group.values()])


def _survives_cleanup(pod: Pod, policy: CleanPodPolicy) -> bool:
    if pod.metadata.deletion_timestamp is not None:
        return False
    if policy is CleanPodPolicy.NONE:
        return True
    if policy is CleanPodPolicy.ALL:
        return False
    return pod.status.phase in FINISHED_PHASES


def after_cleanup(request: SyncRequest, policy: CleanPodPolicy) -> list[dict[str, Any]]:
    """A finished job's children: pods the policy keeps and their Services; no PodGroups.

    ConfigMaps stay (the result record guards against a stale parent cache).
    """
    observed = cast(dict[str, Pod], request.group(POD))
    pods = [p for p in observed.values() if _survives_cleanup(p, policy)]
    slots = {_slot_key(p) for p in pods}
    services = [s for s in request.group(SERVICE).values() if _slot_key(s) in slots]
    return _listed(
        [
            *((POD, p) for p in pods),
            *((SERVICE, s) for s in services),
            *((CONFIG_MAP, c) for c in request.config_maps.values()),
        ]
    )


def _slot_key(child: Child) -> tuple[str | None, str | None]:
    """The replica type and index labels."""
    labels = child.metadata.labels
    return labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)

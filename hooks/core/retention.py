"""Retention: which observed children a response keeps listing, per job state
(docs/run-policy.md, docs/metacontroller.md).

Metacontroller deletes every observed child missing from the response, so "keep" means "list
it". Kept children that the hook cannot or need not rebuild are listed as observed, trimmed to
what identifies them (children are never updated in place: `updateStrategy: OnDelete`).
"""

from typing import Any

from hooks.core.api import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, CleanPodPolicy
from hooks.core.fields import MAX_DEPTH, dig, dig_dict, too_deep
from hooks.core.observed import FINISHED_PHASES
from hooks.core.request import CONFIG_MAP, POD, SERVICE, RequestError, SyncRequest

_METADATA_KEPT = ("name", "namespace", "labels", "annotations")
_BODY_KEPT = ("spec", "data", "binaryData", "immutable")
_LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def as_observed(child: dict[str, Any]) -> dict[str, Any]:
    """An observed child trimmed to its identity and desired content (no status or bookkeeping).

    Raises RequestError when what would be echoed nests beyond MAX_DEPTH."""
    metadata = dig_dict(child, "metadata")
    kept_meta = {k: metadata[k] for k in _METADATA_KEPT if k in metadata}
    annotations = kept_meta.get("annotations")
    if isinstance(annotations, dict) and _LAST_APPLIED in annotations:
        annotations = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
        if annotations:
            kept_meta["annotations"] = annotations
        else:
            del kept_meta["annotations"]
    trimmed = {
        "apiVersion": child.get("apiVersion"),
        "kind": child.get("kind"),
        "metadata": kept_meta,
    }
    trimmed.update({k: child[k] for k in _BODY_KEPT if k in child})
    deep = too_deep(trimmed)
    if deep is not None:
        # It cannot be written back, and leaving it out would delete it: refuse the request.
        where = f"{trimmed['kind']} {kept_meta.get('name')}"
        raise RequestError(
            f"observed child {where}: '{deep[1:]}' nests deeper than {MAX_DEPTH} levels"
        )
    return trimmed


def _listed(observed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trimmed and in a canonical order, whatever order the request used."""
    trimmed = [as_observed(child) for child in observed]
    return sorted(trimmed, key=lambda c: (str(c["kind"]), str(c["metadata"].get("name"))))


def keep_all(request: SyncRequest) -> list[dict[str, Any]]:
    """Every observed child, unchanged: nothing created, nothing deleted."""
    return _listed([child for group in request.children.values() for child in group.values()])


def _survives_cleanup(pod: dict[str, Any], policy: CleanPodPolicy) -> bool:
    if dig(pod, "metadata", "deletionTimestamp") is not None:
        return False
    if policy is CleanPodPolicy.NONE:
        return True
    if policy is CleanPodPolicy.ALL:
        return False
    return dig(pod, "status", "phase") in FINISHED_PHASES


def after_cleanup(request: SyncRequest, policy: CleanPodPolicy) -> list[dict[str, Any]]:
    """A finished job's children: pods the policy keeps and their Services; no PodGroups.

    ConfigMaps stay (the result record guards against a stale parent cache).
    """
    pods = [p for p in request.group(POD).values() if _survives_cleanup(p, policy)]
    slots = {_slot_key(p) for p in pods}
    services = [s for s in request.group(SERVICE).values() if _slot_key(s) in slots]
    config_maps = list(request.group(CONFIG_MAP).values())
    return _listed([*pods, *services, *config_maps])


def _slot_key(child: dict[str, Any]) -> tuple[str | None, str | None]:
    """The replica type and index labels; a value that is not a string matches no slot."""
    labels = dig_dict(child, "metadata", "labels")
    kind, index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
    return (kind if isinstance(kind, str) else None), (index if isinstance(index, str) else None)

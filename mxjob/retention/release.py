"""What the retention component decides, with no call made: which MXJobs have work (being deleted
and still holding `RETAIN_FINALIZER`), whether a claim is theirs, and the JSON patches that
release the claim and then remove the finalizer.

Each patch opens with a `test` of the object's uid, so that a patch made from one object never
lands on another that took its name since it was read: the API server refuses it instead.
"""

from dataclasses import dataclass
from typing import Any

from hooks.core.public import RETAIN_FINALIZER, RETAINED_FROM, dig, dig_list, retains
from mxjob.component.ref import job_ref

#: The label of Metacontroller's generated selector on the children of a parent: its uid.
CONTROLLER_UID = "controller-uid"

#: A JSON patch (RFC 6902): the list of operations the API server applies in order, or none.
Patch = list[dict[str, Any]]


@dataclass(frozen=True)
class Pending:
    """A job being deleted that still holds `RETAIN_FINALIZER`: the only kind of job with work."""

    namespace: str
    name: str
    uid: str
    #: Whether its claim outlives it (`spec.checkpoint.retentionPolicy.whenDeleted: Retain`).
    retains: bool
    #: Where the finalizer stands in `metadata.finalizers`, for the patch that removes it.
    finalizer: int


def pending(job: object) -> Pending | None:
    """The job's work if it is being deleted and holds the finalizer; None for any other job
    (one not deleting, without the finalizer, or without namespace, name or uid)."""
    finalizers = dig(job, "metadata", "finalizers")
    if not dig(job, "metadata", "deletionTimestamp") or not isinstance(finalizers, list):
        return None
    if RETAIN_FINALIZER not in finalizers:
        return None
    ref = job_ref(job)
    if ref is None:
        return None
    return Pending(
        ref.namespace, ref.name, ref.uid, retains(job), finalizers.index(RETAIN_FINALIZER)
    )


def owned_by(claim: object, uid: str) -> bool:
    """Whether the claim names the object `uid` among its owners: only then is it the job's to
    release (a claim of the same name made by someone else is left alone)."""
    return any(dig(ref, "uid") == uid for ref in dig_list(claim, "metadata", "ownerReferences"))


def pointer(*keys: str) -> str:
    """The JSON pointer (RFC 6901) to `keys`: '~' and '/' inside a key escaped as ~0 and ~1."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in keys)


def release_patch(claim: object, uid: str) -> Patch:
    """The patch that frees the claim read of the job `uid`, and of nothing else: its owner
    references to that uid go (so the garbage collector keeps it), Metacontroller's selector
    label goes if it names that uid (so no job of the same selector adopts it again), and the
    annotation `RETAINED_FROM` records the uid. Labels, annotations and spec stay as they are."""
    patch = [
        {"op": "test", "path": pointer("metadata", "uid"), "value": dig(claim, "metadata", "uid")},
        _without_owner(claim, uid),
    ]
    if dig(claim, "metadata", "labels", CONTROLLER_UID) == uid:
        patch.append({"op": "remove", "path": pointer("metadata", "labels", CONTROLLER_UID)})
    patch.append(_retained_from(claim, uid))
    return patch


def _without_owner(claim: object, uid: str) -> dict[str, Any]:
    """The owner references but those to `uid`; the field removed when none is left."""
    refs = dig_list(claim, "metadata", "ownerReferences")
    others = [ref for ref in refs if dig(ref, "uid") != uid]
    path = pointer("metadata", "ownerReferences")
    if others:
        return {"op": "replace", "path": path, "value": others}
    return {"op": "remove", "path": path}


def _retained_from(claim: object, uid: str) -> dict[str, Any]:
    """The annotation `RETAINED_FROM: uid`, added to the annotations or as the first one."""
    if isinstance(dig(claim, "metadata", "annotations"), dict):
        return {
            "op": "add",
            "path": pointer("metadata", "annotations", RETAINED_FROM),
            "value": uid,
        }
    return {"op": "add", "path": pointer("metadata", "annotations"), "value": {RETAINED_FROM: uid}}


def finalizer_patch(job: Pending) -> Patch:
    """The patch that removes `RETAIN_FINALIZER` from the job, if it is still the job listed and
    the finalizer still stands where it stood: else the API server refuses it, and the next pass
    reads the job again."""
    at = pointer("metadata", "finalizers", str(job.finalizer))
    return [
        {"op": "test", "path": pointer("metadata", "uid"), "value": job.uid},
        {"op": "test", "path": at, "value": RETAIN_FINALIZER},
        {"op": "remove", "path": at},
    ]

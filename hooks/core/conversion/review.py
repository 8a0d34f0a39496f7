"""The CRD's conversion webhook: a ConversionReview in, its answer out (docs/http.md,
docs/api.md#versions).

The API server sends `apiextensions.k8s.io/v1` `ConversionReview`s with `request.uid`,
`request.desiredAPIVersion` and `request.objects`, and takes `response.convertedObjects` in the
same order. A body that is no review raises `ReviewError`, which the HTTP adapter answers with
a 4xx, as it does a sync request that is none. An object that cannot be converted fails the
whole answer (`result.status: Failure`, the message naming the object and the field): the API
server then refuses the request that needed it. Objects already at the desired version come
back unchanged; one old version becomes another through v1.
"""

import json
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from hooks.core.api import KIND
from hooks.core.conversion import v1alpha1, v1alpha2
from hooks.core.conversion.versions import (
    V1,
    V1_FIELDS,
    Mapping,
    UnconvertibleError,
    from_v1,
    to_v1,
)
from hooks.core.fields import dig
from hooks.core.spec import shown

REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
REVIEW_KIND = "ConversionReview"
_MAPPINGS: dict[str, Mapping] = {m.api_version: m for m in (v1alpha1.MAPPING, v1alpha2.MAPPING)}
#: The versions served, oldest first.
SERVED = (*_MAPPINGS, V1)
SUCCESS = "Success"
FAILURE = "Failure"
#: The JSON bytes of old objects with a stash one review may have checked (`answer`): as large
#: as an object the API server stores (etcd's 1.5 MiB), which it converts one a write, the only
#: request that brings a stash in; checking costs ~1.5 s of CPU per MiB (docs/security.md).
MAX_CHECKED_BYTES = 3 * 2**19
#: The API server's review uids are UUIDs (36 characters); the answer echoes one, the log too.
UID_CHARS = 128
#: Characters of a Failure's message at most: the API server hands it to the client and the
#: webhook logs it, and a value it quotes (a schema error quotes the whole value) can be a
#: megabyte of the object.
MESSAGE_CHARS = 1024


class ReviewError(ValueError):
    """The body is not a ConversionReview: the caller answers 4xx and names the problem."""


class ConversionResult(TypedDict):
    """`response.result`, a Status: Success, or Failure and why."""

    status: str
    message: NotRequired[str]


class ConversionResponse(TypedDict):
    uid: str
    convertedObjects: list[dict[str, Any]]
    result: ConversionResult


class ConversionReview(TypedDict):
    """The body of the answer: the review with its `response`."""

    apiVersion: str
    kind: str
    response: ConversionResponse


@dataclass(frozen=True)
class Review:
    """What the hook needs of a ConversionReview."""

    uid: str
    desired: str
    objects: list[dict[str, Any]]


def parse_review(body: object) -> Review:
    """Check the review's shape; raise ReviewError naming the first problem."""
    if not isinstance(body, dict):
        raise ReviewError("the body must be a JSON object: a ConversionReview")
    if (body.get("apiVersion"), body.get("kind")) != (REVIEW_API_VERSION, REVIEW_KIND):
        raise ReviewError(
            f"'apiVersion' must be {REVIEW_API_VERSION} and 'kind' {REVIEW_KIND}, got "
            f"{shown(body.get('apiVersion'))} and {shown(body.get('kind'))}"
        )
    request = body.get("request")
    if not isinstance(request, dict):
        raise ReviewError("'request' must be an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not 0 < len(uid) <= UID_CHARS:
        raise ReviewError(f"'request.uid' must be a string of 1 to {UID_CHARS} characters")
    desired = request.get("desiredAPIVersion")
    if desired not in SERVED:
        raise ReviewError(
            f"'request.desiredAPIVersion' must be one of {', '.join(SERVED)}, got {shown(desired)}"
        )
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise ReviewError("'request.objects' must be a list of objects")
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise ReviewError(f"'request.objects[{i}]' must be an object")
    return Review(uid, str(desired), objects)


def answer(review: Review, v1_spec: dict[str, Any] | None = None) -> ConversionReview:
    """Every object at the desired version, or Failure naming the first that cannot be; with
    the v1 spec's schema, an old object whose stash brings in what v1 refuses cannot be, and a
    review whose stashes would take more than MAX_CHECKED_BYTES to check fails whole."""
    checked = _checked_bytes(review) if v1_spec is not None else 0
    if checked > MAX_CHECKED_BYTES:
        message = (
            f"the review holds {checked} bytes of objects whose {V1_FIELDS} must be checked, "
            f"over the {MAX_CHECKED_BYTES} one review may: send them one at a time"
        )
        return _review(review.uid, [], {"status": FAILURE, "message": message})
    converted = []
    for i, obj in enumerate(review.objects):
        try:
            converted.append(convert(obj, review.desired, v1_spec))
        except UnconvertibleError as exc:
            message = (
                f"{KIND} {_reference(obj, i)} cannot be converted from "
                f"{obj.get('apiVersion')} to {review.desired}: {exc}"
            )
            if len(message) > MESSAGE_CHARS:
                message = message[: MESSAGE_CHARS - 1] + "…"
            return _review(review.uid, [], {"status": FAILURE, "message": message})
    return _review(review.uid, converted, {"status": SUCCESS})


def convert(
    obj: dict[str, Any], desired: str, v1_spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One MXJob at a served version, as it is if it is there already; raises UnconvertibleError
    (see `answer` for `v1_spec`)."""
    if obj.get("kind") != KIND:
        raise UnconvertibleError("kind", f"{obj.get('kind')!r} is not {KIND}")
    source = obj.get("apiVersion")
    if source == desired:
        return obj
    if source not in SERVED:
        raise UnconvertibleError("apiVersion", f"{source!r} is not served: {', '.join(SERVED)}")
    at_v1 = obj if source == V1 else to_v1(_MAPPINGS[str(source)], obj, v1_spec)
    return at_v1 if desired == V1 else from_v1(_MAPPINGS[desired], at_v1)


def _checked_bytes(review: Review) -> int:
    """The JSON bytes of the review's objects converted up from an old version with a stash:
    what `to_v1` checks against v1 (one too deep to encode counts as more than any limit)."""
    total = 0
    for obj in review.objects:
        source = obj.get("apiVersion")
        stashed = dig(obj, "metadata", "annotations", V1_FIELDS) is not None
        if stashed and source in _MAPPINGS and source != review.desired:
            try:
                total += len(json.dumps(obj, separators=(",", ":")))
            except RecursionError:
                return MAX_CHECKED_BYTES + 1
    return total


def _reference(obj: dict[str, Any], index: int) -> str:
    """`namespace/name` of an object, as far as it names them; its place in the review if not."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str):
        return f"request.objects[{index}]"
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def _review(
    uid: str, converted: list[dict[str, Any]], result: ConversionResult
) -> ConversionReview:
    return {
        "apiVersion": REVIEW_API_VERSION,
        "kind": REVIEW_KIND,
        "response": {"uid": uid, "convertedObjects": converted, "result": result},
    }

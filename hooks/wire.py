"""Bytes to `SyncRequest` and back, fast: the children decoded straight into the core's shapes.

Metacontroller sends every child in full: managedFields, volumes, tolerations, the kubelet's
status of every container. `decode` scans the request once with msgspec: the parent and the
controller as raw bytes, then decoded in full with orjson (the parent's templates are copied
into pods); each child group the core reads straight into its typed shape
(hooks/core/children.py), which names only the fields the core reads, so everything else is
skipped, never turned into Python objects. A child's `spec` stays its own bytes, echoed
untouched when the hook keeps an observed child and encoded as they came by `encode`.

Whenever the fast path cannot vouch for the result (not JSON, a child group of a kind the
core does not read, a child not of its kind's shape, orjson refusing the parent), `decode`
returns None and the caller decodes the body in full and reads it with `parse_request`, which
gives the same answer and names the problem of a bad request (4xx). So bad input costs one
extra scan and keeps its behaviour; good input never builds what nobody reads.
"""

import json
import sys
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Raw, Struct, UnsetType

from hooks.core.children import Child
from hooks.core.request import KINDS, Groups, RequestError, SyncRequest, assemble

#: Levels an answer nests at most, beyond those of a body orjson reads (1024) and their
#: wrapping: the room `encode` makes above the recursion limit for the standard library.
_DEEPEST = 1100
#: Every group the core reads, each an optional field named by its key; any other group makes
#: the decoding fail (forbid_unknown_fields), so that `parse_request` reads it as `Other`.
_FIELDS: list[tuple[str, Any, Any]] = [
    (f"group{i}", dict[str, kind] | None | UnsetType, msgspec.field(name=key, default=UNSET))  # type: ignore[valid-type]
    for i, (key, kind) in enumerate(KINDS.items())
]
_Groups = msgspec.defstruct(
    "_Groups",
    _FIELDS,
    forbid_unknown_fields=True,
    frozen=True,
)


class _Body(Struct, frozen=True):
    parent: Raw | UnsetType = UNSET
    children: _Groups | None = None  # type: ignore[valid-type]
    controller: Raw | UnsetType = UNSET


_DECODER = msgspec.json.Decoder(_Body)


def _groups(children: Any) -> Groups:
    """The groups the body lists (one listed as null has no members), by key."""
    if children is None:
        return {}
    found: Groups = {}
    for i, key in enumerate(KINDS):
        members: dict[str, Child] | UnsetType | None = getattr(children, f"group{i}")
        if members is not UNSET:
            found[key] = members or {}
    return found


def decode(data: bytes) -> SyncRequest | None:
    """The sync request of `data`, or None: decode it in full instead (same answer, slower)."""
    if not data.isascii():
        try:  # orjson refuses invalid UTF-8 anywhere; msgspec does not look inside skipped text
            data.decode()
        except UnicodeDecodeError:
            return None
    try:
        body = _DECODER.decode(data)
        parent = None if body.parent is UNSET else orjson.loads(memoryview(body.parent))
        controller = {} if body.controller is UNSET else orjson.loads(memoryview(body.controller))
    except (msgspec.MsgspecError, orjson.JSONDecodeError, RecursionError):
        # RecursionError: msgspec stops at Python's recursion limit, below orjson's depth.
        return None
    try:
        return assemble(parent, controller, _groups(body.children))
    except RequestError:
        return None


def _fragment(value: object) -> object:
    if isinstance(value, msgspec.Raw):
        return orjson.Fragment(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _plain(value: object) -> object:
    if isinstance(value, msgspec.Raw):
        return json.loads(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode(body: object) -> bytes:
    """orjson, echoing raw children's bytes as they came; the standard library for what orjson
    refuses (nesting deeper than 254), with room for as deep as a body can be: an answer echoes
    what it was sent (a conversion, the objects' managedFields), and orjson reads 1024 levels
    where Python's recursion limit lets the standard library write about 1000 less the stack
    in use."""
    try:
        return orjson.dumps(body, default=_fragment)
    except orjson.JSONEncodeError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + _DEEPEST)
        try:
            return json.dumps(
                body, separators=(",", ":"), ensure_ascii=False, default=_plain
            ).encode()
        finally:
            sys.setrecursionlimit(limit)

"""The stash: what an MXJob's own API version cannot hold, kept in an annotation of it.

A conversion maps the object to the other version, maps the result straight back, and compares
that with the object it started from: every difference is an entry `{"at": path, "was": value,
"to": value}` (`was` or `to` left out for an absent field) in an annotation of the converted
object, as JSON. Converting back applies an entry only where the field still holds what it
`was`: a field edited in the other version keeps the edit, and one the other version cannot
hold (it never changes there) comes back as it `to` was (docs/api.md#versions).

Paths walk objects only; a list is compared, kept and restored whole. Keys of one object that
differ only in letter case (`worker` and `Worker`, which the hook reads as one replica type)
are one entry at that object, so a renamed key never leaves both spellings behind.

A stash is written by whoever writes the object, so it holds the spec only: an entry elsewhere
(the status, which belongs to the controller) is taken away and never applied
(docs/security.md#the-conversion-stash). A value that is no stash the converter writes (an entry
with neither `was` nor `to`, nesting deeper than a spec the hook reads) is no stash at all: it
is left where it is and never applied, so reading a stored job never fails on it.
"""

import copy
import json
from typing import Any, NotRequired, Required, TypedDict

from hooks.core.fields import MAX_DEPTH, dig, parsed_json, too_deep


class Entry(TypedDict, total=False):
    """One difference: the field `at` a path held `was` in the mapped view and `to` originally."""

    at: Required[list[str]]
    was: NotRequired[Any]
    to: NotRequired[Any]


class _Absent:
    """A field that is not there (JSON has no value for it)."""


_ABSENT = _Absent()
#: The part of an object a stash holds.
HELD = "spec"
#: The nesting a stash holds at most: a spec's the hook reads, in an entry of the list.
DEPTH = MAX_DEPTH + 2


def same(a: object, b: object) -> bool:
    """JSON equality: `true` is not `1`, `1.0` is not `1` (Python's `==` says they are)."""
    if a is b:
        return True
    if isinstance(a, _Absent) or isinstance(b, _Absent):
        return False
    return _canonical(a) == _canonical(b)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _renamed(want: dict[str, Any], have: dict[str, Any]) -> bool:
    """Whether a key of one object is a key of the other in another letter case."""
    only_want = {key.lower() for key in want.keys() - have.keys()}
    return any(key.lower() in only_want for key in have.keys() - want.keys())


def patch(want: dict[str, Any], have: dict[str, Any]) -> list[Entry]:
    """The entries that turn `have` into `want`, in path order."""
    entries: list[Entry] = []
    _walk(want, have, [], entries)
    return entries


def _walk(want: object, have: object, at: list[str], entries: list[Entry]) -> None:
    if isinstance(want, dict) and isinstance(have, dict) and not (at and _renamed(want, have)):
        for key in sorted(want.keys() | have.keys()):
            _walk(want.get(key, _ABSENT), have.get(key, _ABSENT), [*at, key], entries)
        return
    if same(want, have):
        return
    entry: Entry = {"at": at}
    if not isinstance(have, _Absent):
        entry["was"] = have
    if not isinstance(want, _Absent):
        entry["to"] = want
    entries.append(entry)


def apply(entries: list[Entry], view: dict[str, Any]) -> dict[str, Any]:
    """`view` with every entry applied whose field still holds what it `was` (in place)."""
    for entry in entries:
        *parents, last = entry["at"]
        node: object = view
        for key in parents:
            if not isinstance(node, dict):
                break
            if key not in node and "was" not in entry:
                node[key] = {}  # restoring a field whose parent the mapped view lacks
            node = node.get(key, _ABSENT)
        if not isinstance(node, dict) or not same(
            node.get(last, _ABSENT), entry.get("was", _ABSENT)
        ):
            continue
        if "to" in entry:
            node[last] = copy.deepcopy(entry["to"])
        else:
            del node[last]
    return view


def take(obj: dict[str, Any], key: str) -> tuple[list[Entry], dict[str, Any]]:
    """The entries the annotation `key` holds under the spec, and the object without it. An
    annotation that is not a stash (not JSON, not a list of entries) is no stash: it stays, and
    nothing is taken."""
    entries = _read(dig(obj, "metadata", "annotations", key))
    if entries is None:
        return [], obj
    return [e for e in entries if e["at"][0] == HELD], put(obj, key, [])


def held(view: dict[str, Any]) -> dict[str, Any]:
    """The part of a view (an object's spec and status) a stash compares: its spec."""
    return {HELD: view[HELD]} if HELD in view else {}


def put(obj: dict[str, Any], key: str, entries: list[Entry]) -> dict[str, Any]:
    """A copy of the object whose annotation `key` holds the entries. Without entries a stash
    there is removed, and an object left without annotations has no `annotations` (the API
    server omits it too); a value that is no stash is left alone."""
    metadata = dict(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    if entries:
        annotations[key] = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    elif _read(annotations.get(key)) is not None:
        del annotations[key]
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    updated = dict(obj)
    if metadata or "metadata" in obj:
        updated["metadata"] = metadata
    return updated


def _read(text: object) -> list[Entry] | None:
    value = parsed_json(text)
    if not isinstance(value, list) or not all(_is_entry(item) for item in value):
        return None
    return value if too_deep(value, DEPTH) is None else None


def _is_entry(item: object) -> bool:
    """An entry as the converter writes it: a path, and what the field was or is (an entry
    with neither says nothing, and applying one would delete a field that is not there)."""
    if not isinstance(item, dict) or not item.keys() <= {"at", "was", "to"}:
        return False
    at = item.get("at")
    known = "was" in item or "to" in item
    return known and isinstance(at, list) and bool(at) and all(isinstance(k, str) for k in at)

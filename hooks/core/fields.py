"""Safe reads of plain JSON: observed objects are read without trusting their shape or depth."""

import json
from typing import Any


def parsed_json(text: object) -> Any:
    """The value a JSON text holds, or None when `text` is no string of JSON or one nesting
    deeper than the standard library reads (about 1000 levels: a RecursionError). Texts the
    cluster's users can write (a ConfigMap's data, an annotation) come here."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def dig(value: object, *keys: str | int) -> Any:
    """`value[k1][k2]…`, or None as soon as a step is missing or of the wrong type."""
    for key in keys:
        if isinstance(key, str) and isinstance(value, dict):
            value = value.get(key)
        elif isinstance(key, int) and isinstance(value, list) and -len(value) <= key < len(value):
            value = value[key]
        else:
            return None
    return value


def dig_dict(value: object, *keys: str | int) -> dict[str, Any]:
    """Like `dig`, but an empty dict when the result is not an object."""
    found = dig(value, *keys)
    return found if isinstance(found, dict) else {}


def dig_list(value: object, *keys: str | int) -> list[Any]:
    """Like `dig`, but an empty list when the result is not a list."""
    found = dig(value, *keys)
    return found if isinstance(found, list) else []


def dig_int(value: object, *keys: str | int) -> int | None:
    """Like `dig`, but only a true integer (not a bool) comes back."""
    found = dig(value, *keys)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def named(items: list[Any], name: str) -> dict[str, Any]:
    """The first object of `items` whose `name` is `name` (a container, its status, a volume),
    or an empty dict when none is."""
    return next((i for i in items if isinstance(i, dict) and i.get("name") == name), {})


#: Nesting allowed in what the hook reads or echoes of a request. Real Kubernetes objects stay
#: below 20 levels; within 64, every recursive step (copies, repr, orjson, which writes at most
#: 254 levels) is safe, where ~1000 levels exhaust Python's stack.
MAX_DEPTH = 64
#: Path segments shown when naming a value nested too deep.
_SHOWN_SEGMENTS = 12


def too_deep(value: object, limit: int = MAX_DEPTH) -> str | None:
    """Where `value` nests objects or lists more than `limit` levels deep (`.a[0].b…`, the
    first segments of the path), or None when it does not; without recursion."""
    stack: list[tuple[object, tuple[str, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > limit:
            shown = "".join(path[:_SHOWN_SEGMENTS])
            return shown + ("…" if len(path) > _SHOWN_SEGMENTS else "")
        if isinstance(node, dict):
            stack.extend(
                (child, (*path, f".{key}"))
                for key, child in node.items()
                if isinstance(child, dict | list)
            )
        elif isinstance(node, list):
            stack.extend(
                (child, (*path, f"[{i}]"))
                for i, child in enumerate(node)
                if isinstance(child, dict | list)
            )
    return None

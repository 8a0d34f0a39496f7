"""Safe reads of plain JSON: observed objects are read without trusting their shape."""

from typing import Any


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

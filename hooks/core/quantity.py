"""Kubernetes resource quantities (`500m`, `2Gi`, `1e3`): read, added up and written back, so a
PodGroup can carry the resources its gang needs (docs/scheduling.md#gang-scheduling)."""

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{
        suffix: Decimal(1024**n) for n, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)
    },
}


def parse(value: object) -> Decimal | None:
    """The quantity's value, or None when it is not a quantity Kubernetes would accept."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    try:
        scale = _SUFFIX.get(suffix) or Decimal(10) ** int(suffix[1:])
        return Decimal(number) * scale
    except (InvalidOperation, ValueError):
        return None


def render(value: Decimal) -> str:
    """A canonical string for `value`: whole units, else milli-units, else the decimal."""
    if value == value.to_integral_value():
        return str(int(value))
    millis = value * 1000
    if millis == millis.to_integral_value():
        return f"{int(millis)}m"
    return format(value.normalize(), "f")

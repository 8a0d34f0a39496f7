"""Kubernetes resource quantities (`500m`, `2Gi`, `1e3`): read, added up and written back, so a
PodGroup can carry the resources its gang needs (docs/scheduling.md#gang-scheduling).

A quantity is read as Kubernetes reads it (`resource.ParseQuantity`): an exponent within int32,
a non-zero amount below a nano-unit rounded up to one. An amount above `MAX`, the int64 in which
Kubernetes counts a quantity (it caps a binary one there, and its scheduler overflows past it),
is refused like one it cannot read: `parse` never raises, whatever the text (`1e9999999`)."""

import re
from decimal import ROUND_UP, Context, Decimal

#: ASCII digits only: `\\d` would also take the digits of other scripts, which Kubernetes does not.
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
#: The decimal exponent each suffix stands for, and the binary ones' factors.
_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {
    suffix: Decimal(1024**n) for n, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)
}
#: The largest amount read: int64's, what Kubernetes counts a quantity in.
MAX = Decimal(2**63 - 1)
#: The smallest non-zero amount Kubernetes holds; below it, amounts are rounded up to it.
NANO = Decimal("1e-9")
#: Exponents Kubernetes reads (`strconv.ParseInt(…, 10, 32)`).
_INT32 = 2**31
#: Room for every digit of an amount up to MAX in nano-units, and a margin.
_EXACT = Context(prec=60)


def parse(value: object) -> Decimal | None:
    """The quantity's value in nano-units at most, or None when it is not a quantity Kubernetes
    would accept or is over MAX in size (either sign)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return None
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        exponent, factor = 0, _BINARY[suffix]
    elif suffix in _EXPONENTS:
        exponent, factor = _EXPONENTS[suffix], Decimal(1)
    elif len(suffix[1:].lstrip("+-").lstrip("0")) > len(str(_INT32)):
        return None  # more digits than any int32 has (int() of thousands of digits raises)
    else:
        exponent, factor = int(suffix[1:]), Decimal(1)
    if not -_INT32 <= exponent < _INT32:
        return None
    return _bounded(number, exponent, factor)


def _bounded(number: Decimal, exponent: int, factor: Decimal) -> Decimal | None:
    """`number` times 10^`exponent` times `factor`, rounded up to a nano-unit; None over MAX.
    Its size is judged from the exponents before anything is multiplied out."""
    if not number:
        return Decimal(0)
    magnitude = number.adjusted() + exponent + factor.adjusted()
    if magnitude > MAX.adjusted():
        return None
    if magnitude < NANO.adjusted():
        return NANO.copy_sign(number)
    amount = _EXACT.multiply(number.scaleb(exponent, _EXACT), factor)
    if abs(amount) > MAX:
        return None
    return amount.quantize(NANO, rounding=ROUND_UP, context=_EXACT)


def render(value: Decimal) -> str:
    """A canonical string for `value`: whole units, else milli-units, else the decimal."""
    if value == value.to_integral_value():
        return str(int(value))
    millis = value * 1000
    if millis == millis.to_integral_value():
        return f"{int(millis)}m"
    return format(value.normalize(), "f")

"""Resource quantities read as Kubernetes reads them (hooks/core/quantity.py): a table of what
`resource.ParseQuantity` makes of each text, and that no text raises (hypothesis).

`1e9999999` and `1e5000` once raised (decimal.Overflow, and int() of a 5000-digit number), a 500
on every sync of the job under Volcano or scheduler-plugins, whose PodGroup adds the pods'
requests up."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.core import quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("2Gi", "2147483648"),
        ("1e3", "1000"),
        ("1E3", "1000"),
        (".5", "0.5"),
        ("1.", "1"),
        ("0", "0"),
        (1, "1"),
        (0.25, "0.25"),
        ("+1k", "1000"),
        ("-1", "-1"),
        ("7Ei", str(7 * 2**60)),
        ("9223372036854775807", str(2**63 - 1)),
        # Below a nano-unit, a non-zero amount is rounded up to one, as Kubernetes does.
        ("0.5n", "1e-9"),
        ("1e-9999999", "1e-9"),
        ("1.0000000001", "1.000000001"),
        # An exponent is an int32, however many leading zeros it is written with.
        ("1e0000000000000000000003", "1000"),
    ],
)
def test_a_quantity_is_read_as_kubernetes_reads_it(text: object, value: str) -> None:
    assert quantity.parse(text) == Decimal(value)


@pytest.mark.parametrize(
    "text",
    [
        # Over int64, what Kubernetes counts a quantity in (it caps a binary one there).
        "1e9999999",
        "1e5000",
        "1e308",
        1e308,
        2**70,
        "8Ei",
        "9223372036854775808",
        "9" * 5000,
        # No int32 exponent: Kubernetes refuses these.
        "1e2147483648",
        "1e" + "9" * 5000,
        "0e99999999999",
        # Not quantities at all.
        "",
        "1.5.5",
        "1KiB",
        "1 k",
        "\u0661",  # ARABIC-INDIC DIGIT ONE: a digit of another script
        "e3",
        True,
        None,
        [1],
    ],
)
def test_what_kubernetes_cannot_count_is_no_quantity(text: object) -> None:
    assert quantity.parse(text) is None


QUANTITY_LIKE = st.from_regex(
    r"\A[+-]?[0-9]{0,30}\.?[0-9]{0,12}([eE][+-]?[0-9]{1,12}|[a-zA-Z]{0,2})\Z"
)


@given(text=st.one_of(QUANTITY_LIKE, st.text(max_size=40)))
def test_no_text_raises_and_every_value_renders_back(text: str) -> None:
    """Whatever the text, a value or None; a value within int64 in nano-units, and written back
    as a quantity of that very value."""
    value = quantity.parse(text)
    if value is None:
        return
    assert abs(value) <= quantity.MAX
    assert value == value.quantize(quantity.NANO)
    assert quantity.parse(quantity.render(value)) == value

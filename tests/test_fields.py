"""Table tests for the core's safe readers of plain JSON (hooks/core/fields.py) that lack a
test of their own elsewhere."""

from typing import Any

import pytest

from hooks.core.fields import named

MXNET = {"name": "mxnet", "state": {"running": {}}}


@pytest.mark.parametrize(
    ("items", "name", "expected"),
    [
        ([MXNET], "mxnet", MXNET),
        ([{"name": "sidecar"}, MXNET, {"name": "mxnet", "second": True}], "mxnet", MXNET),
        (["mxnet", None, 3, ["mxnet"], MXNET], "mxnet", MXNET),  # only objects are read
        ([{"name": "sidecar"}], "mxnet", {}),
        ([{"names": "mxnet"}, {}], "mxnet", {}),
        ([], "mxnet", {}),
    ],
    ids=["alone", "first-of-two", "non-objects-skipped", "absent", "no-name-field", "empty"],
)
def test_named_finds_the_first_object_of_that_name(
    items: list[Any], name: str, expected: dict[str, Any]
) -> None:
    assert named(items, name) == expected

"""The fast decoding (hooks/wire.py) answers exactly what the full decoding answers.

Every golden fixture, every benchmark state and generated requests go through both paths: the
fast one (`wire.decode`: the body's bytes straight into the children's typed shapes) must give
the same bytes as `parse_request(orjson.loads(…))`, which reads each child from Python objects
into the same shapes.
"""

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given

from hooks import wire
from hooks.core.request import parse_request
from hooks.core.sync import sync
from tests import golden
from tests.builders import NOW
from tests.test_properties import PROFILE, states
from testsupport.requests import STATES, sync_request

CASES = golden.folders()


def full(data: bytes, now: datetime) -> bytes:
    return wire.encode(sync(parse_request(orjson.loads(data)), now).to_json())


def fast(data: bytes, now: datetime) -> bytes:
    decoded = wire.decode(data)
    assert decoded is not None, "the fast decoding refused a well-formed request"
    return wire.encode(sync(decoded, now).to_json())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_fixtures_answer_the_same_bytes(case: Path) -> None:
    recorded = golden.load(case)
    data, now = orjson.dumps(recorded.request), recorded.now
    assert fast(data, now) == full(data, now)


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("state", STATES)
def test_benchmark_requests_answer_the_same_bytes(state: str, v2: bool) -> None:
    data = orjson.dumps(sync_request(12, state, v2=v2))
    assert fast(data, NOW) == full(data, NOW)


@PROFILE
@given(states())
def test_generated_requests_answer_the_same_bytes(body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    assert fast(data, NOW) == full(data, NOW)


def test_kept_children_echo_their_spec_without_decoding_it() -> None:
    """An invalid spec keeps every child: each pod's spec goes out as the bytes it came in."""
    data = orjson.dumps(sync_request(12, "invalid"))
    decoded = wire.decode(data)
    assert decoded is not None
    pods = decoded.group("Pod.v1").values()
    assert pods and all(isinstance(p.spec, msgspec.Raw) for p in pods)
    assert fast(data, NOW) == full(data, NOW)


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"[]",
        b"null",
        b'{"parent": 1}',
        b'{"parent": {"metadata": {"name": "a"}}, "children": []}',
        b'{"parent": {"metadata": {"name": "a"}}, "children": {"Pod.v1": {"p": null}}}',
        b'{"parent": {"metadata": {"name": "a"}}, "children": {"Pod.v1": {"p": {"status": 1}}}}',
        # A group of a kind the core does not read: parse_request keeps its children as Other.
        b'{"parent": {"metadata": {"name": "a"}}, "children": {"Job.batch/v1": {}}}',
        # Invalid UTF-8 where msgspec would only skip: orjson refuses it, so must the hook.
        b'{"parent": {"metadata": {"name": "a"}}, "x": "\xff"}',
        b'{"parent": {"metadata": {"name": "a"}, "x": ' + b"[" * 2000 + b"]" * 2000 + b"}}",
    ],
)
def test_what_the_fast_path_cannot_vouch_for_is_decoded_in_full(data: bytes) -> None:
    assert wire.decode(data) is None


def test_encode_falls_back_for_deep_nesting_with_raw_children() -> None:
    deep: object = "x"
    for _ in range(300):
        deep = [deep]
    raw = msgspec.json.decode(b'{"a": [1, 2]}', type=dict[str, msgspec.Raw])["a"]
    assert json.loads(wire.encode({"deep": deep, "raw": raw})) == {"deep": deep, "raw": [1, 2]}

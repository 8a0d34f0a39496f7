"""Golden conversion cases (tests/conversion_cases.py): each recorded review gives exactly the
recorded answer, compared whole, and each case states its reason in a digest that is up to
date."""

import json
from pathlib import Path

import pytest

from tests import golden
from tests.conversion_cases import CASES, FIXTURES, REGENERATE, answered, digest
from tests.test_fixtures import pretty, unified

CASE_DIRS = golden.folders(FIXTURES)


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_answer_matches_recording(case: Path) -> None:
    recorded = golden.load(case)
    got = answered(recorded.request)
    if got != recorded.response:
        diff = unified(pretty(recorded.response), pretty(got))
        pytest.fail(f"{case.name}: answer differs (-want +got); `{REGENERATE}` rewrites it\n{diff}")


def test_every_case_is_recorded() -> None:
    assert sorted(CASES) == [p.name for p in CASE_DIRS]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_states_its_reason(name: str) -> None:
    lines = (CASES[name].build.__doc__ or "").strip().splitlines()
    assert lines and lines[0].strip().endswith("."), (
        f"{name}: the docstring's first line is its reason"
    )
    assert len(lines) == 1 or not lines[1].strip(), f"{name}: one line of reason, then a blank line"


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_recorded_review_is_what_the_case_builds(case: Path) -> None:
    assert json.loads(json.dumps(CASES[case.name].build())) == golden.load(case).request


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_digest_is_up_to_date(case: Path) -> None:
    recorded = golden.load(case)
    want = digest(CASES[case.name].reason, recorded.request, recorded.response)
    if recorded.digest != want:
        diff = unified(recorded.digest.splitlines(), want.splitlines(), ("committed", "current"))
        pytest.fail(
            f"{case.name}: digest.txt is out of date; regenerate with `{REGENERATE}` and review "
            f"the diff (-committed +current)\n{diff}"
        )


def test_every_answer_converts_back_to_what_was_sent() -> None:
    """The digests' `back` lines: no recorded conversion loses anything."""
    for case in CASE_DIRS:
        assert "NOT the object sent" not in golden.load(case).digest, case.name

"""Golden fixtures of both hooks: each recorded request gives exactly the recorded response,
compared whole, and each case states its reason in a digest that is up to date. The sync cases
are tests/fixture_cases.py, the conversion cases tests/conversion_cases.py."""

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from hooks.core.request import parse_request
from hooks.core.sync import sync
from tests import conversion_cases, fixture_cases, golden
from tests.fixture_cases import Case
from testsupport.jobs import as_sent

K8S_VERSION = "1.36"


@dataclass(frozen=True)
class Suite:
    """The golden cases of one hook: how they are built, where and how they are recorded."""

    cases: Mapping[str, Case]
    folders: list[Path]
    summary: Callable[[str, Any, Mapping[str, Any]], str]
    regenerate: str


SUITES = {
    "sync": Suite(fixture_cases.CASES, golden.folders(), golden.digest, golden.REGENERATE),
    "convert": Suite(
        conversion_cases.CASES,
        golden.folders(conversion_cases.FIXTURES),
        conversion_cases.digest,
        conversion_cases.REGENERATE,
    ),
}
CASE_DIRS = SUITES["sync"].folders
CONVERSION_DIRS = SUITES["convert"].folders
RECORDED = [(name, folder) for name, suite in SUITES.items() for folder in suite.folders]
BUILT = [(name, case) for name, suite in SUITES.items() for case in sorted(suite.cases)]


def pretty(value: object) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def unified(want: list[str], got: list[str], names: tuple[str, str] = ("want", "got")) -> str:
    return "\n".join(difflib.unified_diff(want, got, *names, lineterm=""))


def differs(name: str, want: object, got: object, regenerate: str) -> None:
    """Fail with a `-want +got` diff and the command that records the current answer."""
    if got != want:
        diff = unified(pretty(want), pretty(got))
        pytest.fail(f"{name}: the answer differs (-want +got); `{regenerate}` records it\n{diff}")


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_response_matches_recording(case: Path) -> None:
    recorded = golden.load(case)
    got = as_sent(sync(parse_request(recorded.request), recorded.now))
    differs(case.name, recorded.response, got, golden.REGENERATE)


@pytest.mark.parametrize("case", CONVERSION_DIRS, ids=lambda p: p.name)
def test_conversion_answer_matches_recording(case: Path) -> None:
    recorded = golden.load(case)
    got = conversion_cases.answered(recorded.request)
    differs(case.name, recorded.response, got, conversion_cases.REGENERATE)


def test_every_conversion_answer_converts_back_to_what_was_sent() -> None:
    """The digests' `back` lines: no recorded conversion loses anything."""
    for case in CONVERSION_DIRS:
        assert "NOT the object sent" not in golden.load(case).digest, case.name


@pytest.mark.parametrize("suite", SUITES)
def test_every_case_is_recorded(suite: str) -> None:
    assert sorted(SUITES[suite].cases) == [p.name for p in SUITES[suite].folders]


@pytest.mark.parametrize(("suite", "name"), BUILT, ids=[f"{s}/{n}" for s, n in BUILT])
def test_every_case_states_its_reason(suite: str, name: str) -> None:
    """The reason is the first line of the case's docstring, a whole sentence on its own."""
    case = SUITES[suite].cases[name]
    lines = (case.build.__doc__ or "").strip().splitlines()
    assert lines and lines[0].strip(), f"{name}: give the case a docstring saying what it proves"
    assert len(lines) == 1 or not lines[1].strip(), (
        f"{name}: the docstring's first line is the reason; keep it to one line, then a blank line"
    )
    assert case.reason.endswith("."), f"{name}: the reason is a sentence ending with '.'"


@pytest.mark.parametrize(("suite", "case"), RECORDED, ids=[f"{s}/{p.name}" for s, p in RECORDED])
def test_recorded_request_is_what_the_case_builds(suite: str, case: Path) -> None:
    recorded = golden.load(case)
    built = SUITES[suite].cases[case.name]
    assert json.loads(json.dumps(built.build())) == recorded.request
    assert built.now == recorded.now


@pytest.mark.parametrize(("suite", "case"), RECORDED, ids=[f"{s}/{p.name}" for s, p in RECORDED])
def test_digest_is_up_to_date(suite: str, case: Path) -> None:
    recorded, each = golden.load(case), SUITES[suite]
    want = each.summary(each.cases[case.name].reason, recorded.request, recorded.response)
    if recorded.digest != want:
        diff = unified(recorded.digest.splitlines(), want.splitlines(), ("committed", "current"))
        pytest.fail(
            f"{case.name}: digest.txt is out of date; regenerate with `{each.regenerate}` "
            f"and review the diff (-committed +current)\n{diff}"
        )


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_builtin_children_validate_against_kubernetes_schema(case: Path) -> None:
    for child in golden.load(case).response["children"]:
        if child["apiVersion"] == "v1":  # PodGroups are checked against their CRDs elsewhere
            kubernetes_validate.validate(child, K8S_VERSION, strict=True)

"""Golden fixtures: each recorded request gives exactly the recorded response, compared whole,
and each case states its reason in a digest that is up to date."""

import difflib
import json
from pathlib import Path

import kubernetes_validate
import pytest

from hooks.core.request import parse_request
from hooks.core.sync import sync
from tests import golden
from tests.fixture_cases import CASES

K8S_VERSION = "1.36"
CASE_DIRS = golden.folders()


def pretty(value: object) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def unified(want: list[str], got: list[str], names: tuple[str, str] = ("want", "got")) -> str:
    return "\n".join(difflib.unified_diff(want, got, *names, lineterm=""))


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_response_matches_recording(case: Path) -> None:
    recorded = golden.load(case)
    got = sync(parse_request(recorded.request), recorded.now).to_json()
    if got != recorded.response:
        diff = unified(pretty(recorded.response), pretty(got))
        pytest.fail(f"{case.name}: response differs (-want +got)\n{diff}")


def test_every_case_is_recorded() -> None:
    assert sorted(CASES) == [p.name for p in CASE_DIRS]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_case_states_its_reason(name: str) -> None:
    """The reason is the first line of the case's docstring, a whole sentence on its own."""
    build = CASES[name].build
    lines = (build.__doc__ or "").strip().splitlines()
    assert lines and lines[0].strip(), f"{name}: give the case a docstring saying what it proves"
    assert len(lines) == 1 or not lines[1].strip(), (
        f"{name}: the docstring's first line is the reason; keep it to one line, then a blank line"
    )
    assert CASES[name].reason.endswith("."), f"{name}: the reason is a sentence ending with '.'"


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_recorded_request_is_what_the_case_builds(case: Path) -> None:
    recorded = golden.load(case)
    built = CASES[case.name]
    assert json.loads(json.dumps(built.build())) == recorded.request
    assert built.now == recorded.now


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_digest_is_up_to_date(case: Path) -> None:
    recorded = golden.load(case)
    want = golden.digest(CASES[case.name].reason, recorded.request, recorded.response)
    if recorded.digest != want:
        diff = unified(recorded.digest.splitlines(), want.splitlines(), ("committed", "current"))
        pytest.fail(
            f"{case.name}: digest.txt is out of date; regenerate with `{golden.REGENERATE}` "
            f"and review the diff (-committed +current)\n{diff}"
        )


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_builtin_children_validate_against_kubernetes_schema(case: Path) -> None:
    for child in golden.load(case).response["children"]:
        if child["apiVersion"] == "v1":  # PodGroups are checked against their CRDs elsewhere
            kubernetes_validate.validate(child, K8S_VERSION, strict=True)

"""Golden fixtures: each recorded request gives exactly the recorded response, compared whole."""

import difflib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from hooks.core.request import parse
from hooks.core.sync import sync
from tests.fixture_cases import CASES, FIXTURES

K8S_VERSION = "1.36"
CASE_DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir())


def load(case: Path) -> tuple[dict[str, Any], datetime, dict[str, Any]]:
    body = json.loads((case / "request.json").read_text())
    now = datetime.fromisoformat((case / "now.txt").read_text().strip().replace("Z", "+00:00"))
    return body, now, json.loads((case / "response.json").read_text())


def pretty(value: object) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_response_matches_recording(case: Path) -> None:
    body, now, want = load(case)
    got = sync(parse(body), now).to_json()
    if got != want:
        diff = "\n".join(
            difflib.unified_diff(pretty(want), pretty(got), "want", "got", lineterm="")
        )
        pytest.fail(f"{case.name}: response differs (-want +got)\n{diff}")


def test_every_case_is_recorded() -> None:
    assert sorted(CASES) == [p.name for p in CASE_DIRS]


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_recorded_request_is_what_the_case_builds(case: Path) -> None:
    body, now, _ = load(case)
    built, built_now = CASES[case.name]()
    assert json.loads(json.dumps(built)) == body
    assert built_now == now


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda p: p.name)
def test_builtin_children_validate_against_kubernetes_schema(case: Path) -> None:
    _, _, response = load(case)
    for child in response["children"]:
        if child["apiVersion"] == "v1":  # PodGroups are checked against their CRDs elsewhere
            kubernetes_validate.validate(child, K8S_VERSION, strict=True)

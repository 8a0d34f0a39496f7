"""What each lane's pytest session did, read from its JUnit XML: test counts per lane and per tier,
the time each tier took (setup, call and teardown of its tests, so a stack's start counts), and
which tests failed, so the run's last lines name them (CI keeps only a run's tail)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tools.testrun.lanes import tier

OUTCOMES = ("passed", "failed", "error", "skipped")
#: How much of a failure's message a run's last lines repeat.
MESSAGE_CHARS = 160


@dataclass
class Tally:
    """Tests by outcome, the seconds they took, and each failed or errored test's id and message."""

    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def executed(self) -> int:
        """Tests that ran (passed, failed or errored): what the budget's count compares."""
        return self.outcomes["passed"] + self.outcomes["failed"] + self.outcomes["error"]

    def add(self, outcome: str, seconds: float) -> None:
        self.outcomes[outcome] += 1
        self.seconds += seconds

    def counts(self) -> str:
        """`2412 passed, 3 skipped` (outcomes that occurred, in OUTCOMES' order)."""
        shown = [f"{self.outcomes[o]} {o}" for o in OUTCOMES if self.outcomes[o]]
        return ", ".join(shown) or "no tests"


def _outcome(case: ET.Element) -> tuple[str, str]:
    """The test's outcome and, when it failed or errored, its message's first line."""
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            message = (child.get("message") or child.text or "").strip().splitlines()
            return {"failure": "failed"}.get(child.tag, child.tag), (message or [""])[0]
    return "passed", ""


def _failure(case: ET.Element, outcome: str, message: str) -> str:
    """`FAILED tests/test_x.py::name: message`, as pytest's short summary says it."""
    path = case.get("classname", "").replace(".", "/") + ".py"
    return f"{outcome.upper()} {path}::{case.get('name')}: {message[:MESSAGE_CHARS]}"


def read(junit: Path) -> tuple[Tally, dict[str, Tally]]:
    """A lane's tally and its tiers' (an empty tally when the session wrote no report)."""
    lane, tiers = Tally(), dict[str, Tally]()
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return lane, tiers
    for case in root.iter("testcase"):
        (outcome, message), seconds = _outcome(case), float(case.get("time") or 0)
        lane.add(outcome, seconds)
        if outcome in ("failed", "error"):
            lane.failures.append(_failure(case, outcome, message))
        tiers.setdefault(tier(case.get("classname", "")), Tally()).add(outcome, seconds)
    return lane, tiers

"""What each lane's pytest session did, read from its JUnit XML: test counts per lane and per tier,
and the time each tier took (setup, call and teardown of its tests, so a stack's start counts)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tools.testrun.lanes import tier

OUTCOMES = ("passed", "failed", "error", "skipped")


@dataclass
class Tally:
    """Tests by outcome and the seconds they took."""

    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

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


def _outcome(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            return {"failure": "failed"}.get(child.tag, child.tag)
    return "passed"


def read(junit: Path) -> tuple[Tally, dict[str, Tally]]:
    """A lane's tally and its tiers' (an empty tally when the session wrote no report)."""
    lane, tiers = Tally(), dict[str, Tally]()
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return lane, tiers
    for case in root.iter("testcase"):
        outcome, seconds = _outcome(case), float(case.get("time") or 0)
        lane.add(outcome, seconds)
        tiers.setdefault(tier(case.get("classname", "")), Tally()).add(outcome, seconds)
    return lane, tiers

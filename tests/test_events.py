"""Which Events tell a job's story (events.story): one per condition that turned True, named
so that telling it twice is a duplicate, none for transitions the API server has expired."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.story import RECENT, story

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(ctype: str, status: str, minutes: float, reason: str = "") -> dict[str, str]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason or f"MXJob{ctype}",
        "message": f"MXJob train is {ctype.lower()}.",
        "lastTransitionTime": at(minutes),
        "lastUpdateTime": at(minutes),
    }


def job(*conditions: dict[str, str], uid: str = "u-1") -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "default", "uid": uid},
        "status": {"conditions": list(conditions)},
    }


def test_each_condition_that_turned_true_is_one_event_oldest_first() -> None:
    told = story(
        job(
            condition("Created", "True", 10),
            condition("Running", "False", 2),
            condition("Restarting", "True", 2, "MXJobRestarting"),
        ),
        NOW,
    )
    assert [(e.reason, e.type) for e in told] == [
        ("MXJobCreated", "Normal"),
        ("MXJobRestarting", "Warning"),
    ]
    assert told[1].message == "MXJob train is restarting."
    assert told[1].time == NOW - timedelta(minutes=2)


def test_the_name_is_the_transition_so_a_second_telling_is_a_duplicate() -> None:
    first = story(job(condition("Running", "True", 5)), NOW)
    again = story(job(condition("Running", "True", 5)), NOW + timedelta(minutes=1))
    assert [e.name for e in first] == [e.name for e in again]
    assert first[0].name.startswith("train.")
    # A new transition of the same type (Running again after a restart) is a new Event, and so
    # is the same moment of a job re-created under the same name.
    later = story(job(condition("Running", "True", 1)), NOW)
    other = story(job(condition("Running", "True", 5), uid="u-2"), NOW)
    assert len({first[0].name, later[0].name, other[0].name}) == 3


@pytest.mark.parametrize(
    ("conditions", "count"),
    [
        ([condition("Failed", "True", RECENT.total_seconds() / 60 - 1)], 1),
        ([condition("Failed", "True", RECENT.total_seconds() / 60 + 1)], 0),
        ([{"type": "Running", "status": "True", "lastTransitionTime": "yesterday"}], 0),
        ([{"status": "True", "lastTransitionTime": at(1)}], 0),
        (["not a condition"], 0),
    ],
    ids=["recent", "expired", "bad-time", "no-type", "not-an-object"],
)
def test_only_recent_readable_transitions_are_told(conditions: list[Any], count: int) -> None:
    assert len(story(job(*conditions), NOW)) == count


def test_a_failed_job_is_a_warning_and_a_job_without_status_tells_nothing() -> None:
    (failed,) = story(job(condition("Failed", "True", 1, "MXJobFailed")), NOW)
    assert (failed.type, failed.reason) == ("Warning", "MXJobFailed")
    assert story({"metadata": {"name": "x", "uid": "u"}}, NOW) == []
    assert story({"status": {"conditions": []}}, NOW) == []


def test_a_resume_is_told_though_its_condition_turned_false() -> None:
    (resumed,) = story(job(condition("Suspended", "False", 1, "MXJobResumed")), NOW)
    assert (resumed.type, resumed.reason) == ("Normal", "MXJobResumed")

"""Table tests of condition transitions (docs/status.md#conditions): what setting one condition
does to the list carried from the previous status."""

from typing import Any

import pytest

from hooks.core.api import ConditionType, Reason
from hooks.core.conditions import Condition, clean, find, is_true, set_condition

C = ConditionType
T0, T1 = "2026-03-01T12:00:00Z", "2026-03-01T12:05:00Z"


def cond(ctype: C, status: str, reason: Reason, time: str = T0, message: str = "m") -> Condition:
    return {
        "type": ctype.value,
        "status": status,
        "reason": reason.value,
        "message": message,
        "lastUpdateTime": time,
        "lastTransitionTime": time,
    }


CREATED = cond(C.CREATED, "True", Reason.CREATED)
RUNNING = cond(C.RUNNING, "True", Reason.RUNNING)
RESTARTING = cond(C.RESTARTING, "True", Reason.RESTARTING)


@pytest.mark.parametrize(
    ("before", "ctype", "status", "reason", "after"),
    [
        # Identical: nothing changes, not even the times.
        (
            [CREATED, RUNNING],
            C.RUNNING,
            True,
            Reason.RUNNING,
            [("Created", "True"), ("Running", "True")],
        ),
        # A new condition goes last.
        ([CREATED], C.RUNNING, True, Reason.RUNNING, [("Created", "True"), ("Running", "True")]),
        # Running and Restarting replace each other.
        (
            [CREATED, RUNNING],
            C.RESTARTING,
            True,
            Reason.RESTARTING,
            [("Created", "True"), ("Restarting", "True")],
        ),
        (
            [CREATED, RESTARTING],
            C.RUNNING,
            True,
            Reason.RUNNING,
            [("Created", "True"), ("Running", "True")],
        ),
        # A terminal condition turns Running (and Restarting) False and comes last.
        (
            [CREATED, RUNNING],
            C.SUCCEEDED,
            True,
            Reason.SUCCEEDED,
            [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
        ),
        (
            [CREATED, RESTARTING],
            C.FAILED,
            True,
            Reason.BACKOFF_LIMIT,
            [("Created", "True"), ("Restarting", "False"), ("Failed", "True")],
        ),
        # A changed condition moves to the end.
        (
            [cond(C.SUSPENDED, "True", Reason.SUSPENDED), CREATED],
            C.SUSPENDED,
            False,
            Reason.RESUMED,
            [("Created", "True"), ("Suspended", "False")],
        ),
    ],
)
def test_set_condition(
    before: list[Condition],
    ctype: C,
    status: bool,
    reason: Reason,
    after: list[tuple[str, str]],
) -> None:
    result = set_condition(before, ctype, status=status, reason=reason, message="m", time=T1)
    assert [(c["type"], c["status"]) for c in result] == after


def test_an_identical_condition_keeps_the_list_as_it_was() -> None:
    before = [CREATED, RUNNING]
    assert (
        set_condition(before, C.RUNNING, status=True, reason=Reason.RUNNING, message="m", time=T1)
        is before
    )


def test_a_new_message_keeps_the_transition_time_while_the_status_holds() -> None:
    [_, running] = set_condition(
        [CREATED, RUNNING], C.RUNNING, status=True, reason=Reason.RUNNING, message="new", time=T1
    )
    assert (running["message"], running["lastUpdateTime"]) == ("new", T1)
    assert running["lastTransitionTime"] == T0


def test_a_flipped_status_takes_the_time_of_the_event() -> None:
    [*_, running] = set_condition(
        [CREATED, RUNNING], C.RUNNING, status=False, reason=Reason.SUSPENDED, message="m", time=T1
    )
    assert running["lastTransitionTime"] == T1


def test_no_time_known_leaves_the_times_out() -> None:
    [created] = set_condition(
        [], C.CREATED, status=True, reason=Reason.CREATED, message="m", time=None
    )
    assert "lastUpdateTime" not in created and "lastTransitionTime" not in created


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (None, []),
        ("Running", []),
        ([1, None, {}], []),
        ([{"type": "Running", "status": "Unknown"}], []),
        ([{"type": "Chief", "status": "True"}], []),
        (
            [{"type": "Running", "status": "True", "reason": 7, "extra": "x"}],
            [{"type": "Running", "status": "True"}],
        ),
    ],
)
def test_clean_keeps_well_formed_conditions_with_known_keys(
    raw: object, kept: list[dict[str, Any]]
) -> None:
    assert clean(raw) == kept


def test_find_and_is_true() -> None:
    conditions = [CREATED, cond(C.RUNNING, "False", Reason.SUSPENDED)]
    assert find(conditions, C.RUNNING) is conditions[1]
    assert find(conditions, C.FAILED) is None
    assert is_true(conditions, C.CREATED)
    assert not is_true(conditions, C.RUNNING)
    assert not is_true(conditions, C.FAILED)

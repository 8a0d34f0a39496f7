"""Table tests of pod-name parsing (docs/restarts.md#attempt-names): which names a job gives."""

import pytest

from hooks.core.api import ReplicaType
from hooks.core.naming import Slot, parse_pod_name

W, S = ReplicaType.WORKER, ReplicaType.SCHEDULER


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("mnist-worker-0", (Slot(W, 0), 0)),
        ("mnist-worker-12", (Slot(W, 12), 0)),
        ("mnist-worker-3-r1", (Slot(W, 3), 1)),
        ("mnist-worker-3-r9999", (Slot(W, 3), 9999)),
        ("mnist-scheduler-0", (Slot(S, 0), 0)),
        ("mnist-tunerserver-2-r7", (Slot(ReplicaType.TUNER_SERVER, 2), 7)),
        ("mnist-worker-01", None),  # leading zero: never given
        ("mnist-worker-3-r0", None),  # the first attempt has no suffix
        ("mnist-worker-3-r01", None),
        ("mnist-worker-3-r10000", None),  # beyond the last attempt
        ("mnist-worker", None),
        ("mnist-Worker-0", None),  # names are lower case
        ("mnist-chief-0", None),  # not a replica type
        ("other-worker-0", None),  # another job's pod
        ("mnist-x-worker-0", None),
        ("mnist-worker-0-config", None),
    ],
)
def test_parse_pod_name(name: str, parsed: tuple[Slot, int] | None) -> None:
    assert parse_pod_name("mnist", name) == parsed


@pytest.mark.parametrize(("attempt", "name"), [(0, "mnist-worker-3"), (2, "mnist-worker-3-r2")])
def test_pod_names_read_back(attempt: int, name: str) -> None:
    slot = Slot(W, 3)
    assert slot.pod_name("mnist", attempt) == name
    assert parse_pod_name("mnist", name) == (slot, attempt)


def test_a_job_name_with_a_type_inside_parses_against_its_own_name() -> None:
    assert parse_pod_name("a-worker-1", "a-worker-1-worker-0") == (Slot(W, 0), 0)

"""The failure's own words (docs/status.md#the-last-failure): table tests of what is kept of a
termination message, properties of its bounds, and how `lastFailure` is chosen and carried."""

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.core.failures import (
    LINE_BYTES,
    TAIL_LINES,
    LastFailure,
    last_failure,
    last_line,
    read_last_failure,
    tail,
)
from hooks.core.naming import Slot
from hooks.core.observed import ObservedPod
from tests.builders import (
    at,
    cluster_after,
    mxjob,
    pods_by_name,
    replica,
    request,
    restarted_in_place,
    run,
    running,
    saying,
    terminated,
    terminating,
)
from testsupport.observed import observe

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/workloads/train.py", line 9, in <module>\n'
    "    main()\n"
    '  File "/workloads/train.py", line 6, in main\n'
    '    raise ValueError("loss is nan")\n'
    "ValueError: loss is nan\n"
)


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        (None, None),
        ("", None),
        (42, None),
        ("\n\n  \n", None),
        ("done\n", "done"),
        # The last five lines: the traceback's last two frames and its exception.
        (TRACEBACK, "\n".join(TRACEBACK.splitlines()[-TAIL_LINES:])),
        # Colours, a window title and cursor moves go whole, not only their ESC.
        ("\x1b[1;31mError\x1b[0m: \x1b]0;title\x07boom\x1b[2K", "Error: boom"),
        # Right-to-left overrides, zero-width spaces, NUL, BEL, a lone surrogate: dropped.
        ("a\u202eb\u200bc\x00d\x07e\ud800f", "abcdef"),
        # A progress bar's carriage returns end lines; tabs are spaces; trailing blanks go.
        ("10%\r100%\r\nx\ty  \n\n", "10%\n100%\nx y"),
        # CRLF, vertical tab, form feed, NEL and the Unicode separators all end lines.
        ("a\r\nb\x0bc\x0cd\x85e\u2028f\u2029g", "c\nd\ne\nf\ng"),
    ],
)
def test_tail_keeps_the_last_clean_lines(message: object, kept: str | None) -> None:
    assert tail(message) == kept


def test_a_long_line_keeps_its_start_and_is_cut_on_a_character() -> None:
    line = "ValueError: " + "é" * 500
    kept = tail(line)
    assert kept is not None
    assert kept.startswith("ValueError: éé") and kept.endswith("…")
    assert len(kept.encode()) <= LINE_BYTES
    assert tail(kept) == kept


def test_last_line_is_the_exception() -> None:
    assert last_line(TRACEBACK) == "ValueError: loss is nan"
    assert last_line("") is None


#: Any text: every Unicode category (surrogates too) and what terminals interpret.
HOSTILE_TEXT = st.lists(
    st.one_of(
        st.text(st.characters(exclude_categories=()), max_size=300),
        st.sampled_from(["\x1b[", "\x1b]", "\x07", "\r", "\n", "\t", "\u202e", "\x00", "m"]),
    ),
    max_size=40,
).map("".join)


@given(HOSTILE_TEXT)
def test_tail_is_bounded_clean_and_its_own_tail(message: str) -> None:
    kept = tail(message)
    if kept is None:
        return
    lines = kept.split("\n")
    assert len(lines) <= TAIL_LINES
    assert all(line.strip() and len(line.encode()) <= LINE_BYTES for line in lines)
    assert not {unicodedata.category(c) for c in kept.replace("\n", "")} & {"Cc", "Cf", "Cs"}
    assert tail(kept) == kept


def test_megabytes_of_log_leave_a_status_of_bounded_size() -> None:
    """Each line of a 4 MB log is itself 1 MB: the status grows by what the bounds allow."""
    job, children = _running_job()
    quiet = _failed_status(job, children, "")
    for huge in ("x" * 2**20 + "\n") * 4, '"\\' * 2**21, "\x1b[" * 2**21:
        loud = _failed_status(job, children, huge)
        grown = len(json.dumps(loud, ensure_ascii=False)) - len(json.dumps(quiet))
        # The message (five lines of 200 bytes) and the condition's quoted line, each at most
        # doubled by JSON escapes (`"` and `\`).
        assert grown <= 2 * (TAIL_LINES * (LINE_BYTES + 1) + LINE_BYTES) + 40, grown


def _running_job() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    replicas = {"Worker": replica(2, "Never")}
    job = mxjob(replicas=replicas)
    children = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]
    return mxjob(replicas=replicas, status=run(request(job, children)).status), children


def _failed_status(job: dict[str, Any], children: list[dict[str, Any]], message: str) -> Any:
    failed = [
        saying(terminated(c, 1, minutes=9), message) if c["metadata"]["name"] == "mnist-worker-1"
        else c
        for c in children
    ]  # fmt: skip
    return run(request(job, failed)).status


# --- which failure is the last ---------------------------------------------------------------


def _pods(**states: dict[str, Any]) -> dict[Slot, list[ObservedPod]]:
    """Observed pods of the job `mnist`, by slot, from pod objects."""
    found: dict[Slot, list[ObservedPod]] = {}
    for pod in states.values():
        observed = observe("mnist", pod)
        assert observed is not None
        found.setdefault(observed.slot, []).append(observed)
    return found


def _cluster() -> dict[str, dict[str, Any]]:
    return pods_by_name(cluster_after(run(request(mxjob(replicas={"Worker": replica(2)})))))


def test_the_newest_own_failure_wins_and_a_deleted_pod_is_no_failure() -> None:
    pods = _cluster()
    older = saying(terminated(pods["mnist-worker-0"], 1, minutes=5), "older\n")
    newer = saying(terminated(pods["mnist-worker-1"], 2, minutes=9), "newer\n")
    deleted = terminating(saying(terminated(pods["mnist-worker-1"], 143, minutes=20), "sig\n"))
    found = last_failure(None, _pods(a=older, b=newer))
    assert found is not None
    assert (found["pod"], found["exitCode"], found.get("message")) == ("mnist-worker-1", 2, "newer")
    assert found == {
        "replicaType": "Worker",
        "replicaIndex": 1,
        "pod": "mnist-worker-1",
        "attempt": 0,
        "exitCode": 2,
        "reason": "Error",
        "time": at(9),
        "message": "newer",
    }
    only_older = last_failure(None, _pods(a=older, b=deleted))
    assert only_older is not None and only_older["pod"] == "mnist-worker-0"
    succeeded = terminated(pods["mnist-worker-0"], 0, minutes=30)
    assert last_failure(None, _pods(a=succeeded)) is None


def test_an_in_place_restart_leaves_its_failure_and_the_previous_one_is_kept() -> None:
    pods = _cluster()
    again = restarted_in_place(pods["mnist-worker-0"], 3, TRACEBACK, minutes=7)
    found = last_failure(None, _pods(a=again))
    assert found is not None
    assert (found["exitCode"], found["time"], found.get("message", "").split("\n")[-1]) == (
        3,
        at(7),
        "ValueError: loss is nan",
    )
    # Later, nothing observed fails: what the status holds stays, as it was written.
    assert last_failure(found, _pods(a=running(pods["mnist-worker-0"]))) == found
    # A newer previous one is kept over an older observed one; a tie goes to the pod.
    newer: LastFailure = {**found, "time": at(8), "message": "written later"}
    assert last_failure(newer, _pods(a=again)) == newer
    edited: LastFailure = {**found, "message": "edited by hand"}
    assert last_failure(edited, _pods(a=again)) == found


@pytest.mark.parametrize(
    "written",
    [
        None,
        "text",
        {},
        {"pod": "other-worker-0", "attempt": 0, "exitCode": 1},  # another job's pod
        {"pod": "mnist-worker-0-r2", "attempt": 1, "exitCode": 1},  # attempt of another name
        {"pod": "mnist-worker-0", "attempt": 0, "exitCode": 0},  # no failure
        {"pod": "mnist-worker-0", "attempt": 0, "exitCode": "1"},
        {"pod": "mnist-worker-0", "attempt": 0, "exitCode": True},
    ],
)
def test_a_written_last_failure_that_is_none_of_this_job_reads_as_none(written: object) -> None:
    assert read_last_failure("mnist", written) is None


def test_a_written_last_failure_is_cleaned_again() -> None:
    written = {
        "pod": "mnist-server-0-r3",
        "attempt": 3,
        "exitCode": 137,
        "reason": "OOMKilled\x1b[0m",
        "time": "2026-03-01T12:05:00.25Z",
        "message": "x" * 5000 + "\nlast",
        "replicaType": "Tuner",  # names come from the pod, not from what was written
        "extra": "dropped",
    }
    assert read_last_failure("mnist", written) == {
        "replicaType": "Server",
        "replicaIndex": 0,
        "pod": "mnist-server-0-r3",
        "attempt": 3,
        "exitCode": 137,
        "reason": "OOMKilled",
        "time": "2026-03-01T12:05:00Z",
        "message": "x" * (LINE_BYTES - 3) + "…\nlast",
    }

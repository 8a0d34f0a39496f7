"""Progress reports (docs/status.md#progress): what the lines MXNet 1.9.1 logs become, what an
annotation is read as, and what the progress component notes on a job's Workers."""

from datetime import UTC, datetime, timedelta

import pytest

from hooks.core.progress import (
    MAX_ANNOTATION_BYTES,
    NOTHING,
    Noted,
    Report,
    encode_noted,
    parse_lines,
    read_noted,
)
from mxjob.progress.collector import next_wait
from mxjob.progress.notes import Deadlines, Worker, noted_after

T = "2026-11-28T01:02:03.123456789Z"
LATER = "2026-11-28T01:02:09.5Z"


def report(
    epoch: int, batch: int | None, time: str = "2026-11-28T01:02:03Z", **more: float
) -> Report:
    return Report(
        epoch=epoch,
        batch=batch,
        speed=more.get("speed"),
        epoch_seconds=more.get("epoch_seconds"),
        time=time,
    )


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # Speedometer with auto_reset (MXNet 1.9.1's default): the range's end is the batch.
        (
            [f"{T} INFO:root:Epoch[2] Batch [120-140]\tSpeed: 1834.51 samples/sec\taccuracy=0.9"],
            report(2, 140, speed=1834.51),
        ),
        # The first range of an epoch, and without auto_reset.
        ([f"{T} Epoch[0] Batch [0-20]\tSpeed: 99.00 samples/sec"], report(0, 20, speed=99.0)),
        ([f"{T} Epoch[3] Batch [140]\tSpeed: 10.5 samples/sec"], report(3, 140, speed=10.5)),
        # The documented line for other scripts: the speed is optional.
        ([f"{T} Epoch[4] Batch [7]"], report(4, 7)),
        # Module.fit's epoch end: the epoch is done, its duration kept.
        ([f"{T} INFO:root:Epoch[1] Time cost=12.345"], report(1, None, epoch_seconds=12.345)),
        # The newest line wins; speed and duration carry over from earlier lines.
        (
            [
                f"{T} Epoch[1] Batch [100]\tSpeed: 50.00 samples/sec",
                f"{T} Epoch[1] Time cost=60.000",
                f"{LATER} Epoch[2] Batch [20]",
            ],
            report(2, 20, "2026-11-28T01:02:09Z", speed=50.0, epoch_seconds=60.0),
        ),
        # Anything else says nothing: other lines, no timestamp, Iter lines, a number too large.
        ([f"{T} INFO:root:Epoch[1] Train-accuracy=0.5", f"{T} hello"], None),
        (["Epoch[1] Batch [20]\tSpeed: 5.00 samples/sec"], None),
        ([f"{T} Iter[3] Batch [20]\tSpeed: 5.00 samples/sec"], None),
        ([f"{T} Epoch[9999999999] Batch [20]"], None),
        (["not-a-time Epoch[1] Batch [20]"], None),
    ],
)
def test_lines_become_reports(lines: list[str], expected: Report | None) -> None:
    assert parse_lines(lines) == expected


def test_a_read_without_new_lines_keeps_the_previous_report() -> None:
    previous = report(5, 3, speed=7.0)
    assert parse_lines([f"{T} unrelated"], previous) == previous
    assert parse_lines([f"{T} Epoch[5] Batch [4]"], previous) == report(5, 4, speed=7.0)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "not json",
        "[]",
        '{"report": {"epoch": -1, "time": "2026-11-28T01:02:03Z"}}',
        '{"report": {"epoch": 1}}',
        '{"report": {"epoch": 1, "time": "yesterday"}}',
        '{"report": {"epoch": 1, "batch": 2, "speed": 1e300, "time": "2026-11-28T01:02:03Z"}}',
        '{"seen": "later"}',
        '{"report": {"epoch": true, "time": "2026-11-28T01:02:03Z"}}',
        '{"seen": "2026-11-28T01:02:03Z", "pad": "' + "x" * MAX_ANNOTATION_BYTES + '"}',
    ],
)
def test_an_annotation_that_is_not_a_note_reads_as_nothing(text: str | None) -> None:
    assert read_noted(text) is NOTHING


def test_a_note_reads_back_as_written() -> None:
    noted = Noted(report=report(2, 140, speed=1.5, epoch_seconds=3.0), seen="2026-11-28T02:00:00Z")
    text = encode_noted(noted)
    assert len(text) < MAX_ANNOTATION_BYTES
    assert read_noted(text) == noted
    assert read_noted('{"other": 1}') == NOTHING  # unknown keys are ignored


NOW = datetime(2026, 11, 28, 2, 0, 0, tzinfo=UTC)


def line(minutes_ago: float, text: str) -> str:
    moment = NOW - timedelta(minutes=minutes_ago)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000001Z ") + text


def worker(name: str, started_ago: float = 30, noted: Noted = NOTHING) -> Worker:
    return Worker(name, NOW - timedelta(minutes=started_ago), noted)


def stamp(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_new_report_is_noted_and_an_unchanged_one_is_not() -> None:
    workers = [worker("w-0"), worker("w-1")]
    logs = {"w-0": [line(1, "Epoch[0] Batch [20]")], "w-1": []}
    changed = noted_after(workers, logs, Deadlines(), NOW).changed
    assert changed == {"w-0": Noted(report=report(0, 20, stamp(1)), began=0)}
    again = [worker("w-0", noted=changed["w-0"]), worker("w-1")]
    assert noted_after(again, logs, Deadlines(), NOW).changed == {}


def test_a_first_note_says_where_the_run_began_and_later_ones_keep_it() -> None:
    """The first report read in a new pod's log is where its run began (a run restored from
    a checkpoint begins where it ends), however far it got before the component read it."""
    logs = {
        "w-0": [
            line(0.9, "resuming at epoch 3"),
            line(0.8, "Epoch[3] Batch [5]\tSpeed: 100.0 samples/sec"),
            line(0.4, "Epoch[3] Time cost=20.1"),
            line(0.2, "Epoch[4] Batch [5]\tSpeed: 110.0 samples/sec"),
        ]
    }
    (first,) = noted_after([worker("w-0")], logs, Deadlines(), NOW).changed.values()
    assert (first.report.epoch if first.report else None, first.began) == (4, 3)
    later = {"w-0": [line(0.1, "Epoch[5] Batch [5]")]}
    (moved,) = noted_after([worker("w-0", noted=first)], later, Deadlines(), NOW).changed.values()
    assert (moved.report.epoch if moved.report else None, moved.began) == (5, 3)
    assert read_noted(encode_noted(moved)) == moved
    assert read_noted(encode_noted(Noted(report=moved.report, began=-1))) == NOTHING


def test_a_look_past_the_deadline_is_noted_on_the_newest_reporter() -> None:
    old = Noted(report=report(1, 5, stamp(10)))
    older = Noted(report=report(1, 4, stamp(12)))
    workers = [worker("w-0", noted=older), worker("w-1", noted=old)]
    logs: dict[str, list[str]] = {"w-0": [], "w-1": []}
    assert noted_after(workers, logs, Deadlines(300), NOW).changed == {
        "w-1": Noted(report=report(1, 5, stamp(10)), seen=stamp(0))
    }
    # Before the deadline has run out nothing is seen; without a deadline neither.
    assert noted_after(workers, logs, Deadlines(900), NOW).changed == {}
    assert noted_after(workers, logs, Deadlines(first=300), NOW).changed == {}


def test_no_look_is_noted_unless_every_worker_was_read() -> None:
    workers = [worker("w-0"), worker("w-1")]
    first = Deadlines(300, first=300)
    assert noted_after(workers, {"w-0": []}, first, NOW).changed == {}
    # With no report at all, the first-report deadline counts from the last start; the look
    # goes on the first Worker. Without that deadline, no look.
    assert noted_after(workers, {"w-0": [], "w-1": []}, first, NOW).changed == {
        "w-0": Noted(seen=stamp(0))
    }
    assert noted_after(workers, {"w-0": [], "w-1": []}, Deadlines(300), NOW).changed == {}
    assert noted_after([worker("w-0", started_ago=2)], {"w-0": []}, first, NOW).changed == {}


def test_a_report_within_an_epoch_is_noted_at_most_every_30_seconds() -> None:
    """Each note is a sync of the job: a newer batch of the same epoch waits until 30 s after
    the one noted; a new epoch is noted at once."""
    noted = Noted(report=report(1, 5, stamp(0.4)))
    workers = [worker("w-0", noted=noted)]
    soon = {"w-0": [line(0.2, "Epoch[1] Batch [6]")]}
    assert noted_after(workers, soon, Deadlines(), NOW).changed == {}
    later = {"w-0": [line(0.2, "Epoch[2] Batch [1]")]}
    assert noted_after(workers, later, Deadlines(), NOW).changed == {
        "w-0": Noted(report=report(2, 1, stamp(0.2)))
    }
    old = [worker("w-0", noted=Noted(report=report(1, 5, stamp(1))))]
    assert noted_after(old, soon, Deadlines(), NOW).changed == {
        "w-0": Noted(report=report(1, 6, stamp(0.2)))
    }
    # Held back, it still counts for the look: nothing is seen past a deadline it moved.
    assert noted_after(workers, soon, Deadlines(60), NOW + timedelta(seconds=30)).changed == {}


def test_the_next_look_is_when_the_deadline_runs_out() -> None:
    """The component looks again a second after a job's deadline runs out, sooner than its
    interval, so a stall is seen as soon as it is one; never sooner than a second."""
    old = Noted(report=report(1, 5, stamp(1)))
    notes = noted_after([worker("w-0", noted=old)], {"w-0": []}, Deadlines(120), NOW)
    assert notes.due == NOW + timedelta(minutes=1) and notes.changed == {}
    assert next_wait(10.0, 0.5, NOW + timedelta(seconds=3), NOW) == 4.0
    assert next_wait(10.0, 0.5, NOW + timedelta(minutes=5), NOW) == 9.5
    assert next_wait(10.0, 12.0, None, NOW) == next_wait(10.0, 0.5, NOW, NOW) == 1.0
    assert noted_after([worker("w-0")], {"w-0": []}, Deadlines(120), NOW).due is None


def test_progress_read_now_clears_the_look() -> None:
    stalled = Noted(report=report(1, 5, stamp(10)), seen=stamp(1))
    workers = [worker("w-0", noted=stalled)]
    moved = noted_after(
        workers, {"w-0": [line(0.5, "Epoch[1] Batch [6]")]}, Deadlines(300), NOW
    ).changed
    # The new report is noted; the earlier look stays as it was (the hook compares it with the
    # deadline counted from the new report, which it is before).
    assert moved == {"w-0": Noted(report=report(1, 6, stamp(0.5)), seen=stamp(1))}


def test_a_note_from_before_the_workers_container_started_is_not_its_own() -> None:
    """Restarted in place, a Worker keeps its pod and the note on it: the note of the process
    before (epoch 4, its run began at 0) gives way to the new process's first report (its run
    resumed at 3), and where the run began is read again."""
    before = Noted(report=report(4, 5, stamp(3)), seen=stamp(2.5), began=0)
    logs = {"w-0": [line(0.5, "resuming at epoch 3"), line(0.4, "Epoch[3] Batch [5]")]}
    (noted,) = noted_after([worker("w-0", 1, before)], logs, Deadlines(), NOW).changed.values()
    assert noted == Noted(report=report(3, 5, stamp(0.4)), began=3)
    assert noted_after([worker("w-0", 1, before)], {"w-0": []}, Deadlines(), NOW).changed == {}
    assert before.since(NOW - timedelta(minutes=4)) == before
    assert before.since(NOW - timedelta(minutes=2.7)) == NOTHING, "a report from before it"
    assert before.since(None) == NOTHING

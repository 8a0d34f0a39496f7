"""What the progress component notes on one job's Workers after reading their logs: each one's
newest report and, once the job's progress deadline has run out with nothing new, the moment it
saw that (`seen`), which is what lets the hook call the job stalled
(hooks/core/restart/stall.py).

The deadline counts as the hook counts it: from the newest report of any Worker, or from when
the last Worker started; before any report the job's first-report deadline applies, if any. A
stall is confirmed only when every Worker read was read in this pass, so a Worker left unread
never hides progress; the confirmation is renewed on each pass while the job looks stalled,
since the hook also counts its Scheduler's and Servers' starts and may come due a little later.
Pure: no client, no clock.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hooks.core.public import Noted, Report, first_report, format_time, latest, parse_lines


@dataclass(frozen=True)
class Worker:
    """A running Worker pod of a job, as listed: its name, when its mxnet container started,
    and what is noted on it already."""

    name: str
    started: datetime | None
    noted: Noted


@dataclass(frozen=True)
class Deadlines:
    """A job's progress deadlines in seconds (None: not set): between reports, and to a
    run's first report."""

    progress: int | None = None
    first: int | None = None


@dataclass(frozen=True)
class Notes:
    """What one read of a job's Workers gives: the notes that change, by pod name, and when
    the job's deadline runs out if nothing moves (None: no deadline applies): the component
    looks again then, so a stall is seen as soon as it is one."""

    changed: dict[str, Noted]
    due: datetime | None


def noted_after(
    workers: list[Worker],
    logs: dict[str, list[str]],
    deadlines: Deadlines,
    now: datetime,
) -> Notes:
    """Each Worker's newest report from its `logs` (its timestamped lines, oldest first; a
    Worker missing from `logs` was not read), and the look past the job's deadline confirmed
    on the newest reporter (the first Worker when none reported)."""
    # A note made before the Worker's container started (restarted in place) is not its own.
    workers = [replace(w, noted=w.noted.since(w.started)) for w in workers]
    reports = {w.name: parse_lines(logs.get(w.name, ()), w.noted.report) for w in workers}
    moments = {name: r.moment for name, r in reports.items() if r is not None and r.moment}
    due = _due(workers, moments, deadlines)
    looked_on = _looked_on(workers, moments, due, now, every_read=len(logs) == len(workers))
    changed: dict[str, Noted] = {}
    for worker in workers:
        lines = logs.get(worker.name, ())
        noted = _noted(worker, reports[worker.name], lines, now, looked=worker.name == looked_on)
        if noted is not None and noted != worker.noted:
            changed[worker.name] = noted
    return Notes(changed, due)


def _looked_on(
    workers: list[Worker],
    moments: dict[str, datetime],
    due: datetime | None,
    now: datetime,
    *,
    every_read: bool,
) -> str | None:
    """The Worker a look past the deadline is noted on, once it has run out and every Worker
    was read in this pass: the newest reporter, or the first Worker when none reported."""
    if due is None or now < due or not every_read:
        return None
    return max(moments, key=lambda name: moments[name]) if moments else workers[0].name


def _noted(
    worker: Worker, new: Report | None, lines: Sequence[str], now: datetime, *, looked: bool
) -> Noted | None:
    """What to note on the Worker given its newest report `new` (read from `lines`): the look
    at `now` when `looked`; None when nothing is worth noting yet (`_worth_noting`)."""
    if not looked and not _worth_noting(worker.noted.report, new):
        return None
    seen = format_time(now) if looked else worker.noted.seen
    return Noted(report=new, seen=seen, began=_began(worker.noted, new, lines))


def _began(noted: Noted, new: Report | None, lines: Sequence[str]) -> int | None:
    """The epoch the Worker's run began at: kept once noted, read from its log's first report
    when its first report is noted (the newest report's epoch if none is found there)."""
    if noted.report is not None or new is None:
        return noted.began
    first = first_report(lines)
    return first.epoch if first is not None else new.epoch


#: A Worker's newer report within the same epoch is noted at most this long after the one
#: noted before it: every note is a pod change that Metacontroller syncs and the hook answers
#: (docs/performance.md#the-progress-component). A new epoch, a first report and a look are
#: noted at once. The watchdog is not misled by a report held back: the component decides its
#: looks on the newest report it read, and the hook acts only on a look.
NOTE_EVERY = timedelta(seconds=30)


def _worth_noting(old: Report | None, new: Report | None) -> bool:
    """Whether a Worker's newest report is noted now rather than held back."""
    if new is None or old is None:
        return new != old
    moved, then = new.moment, old.moment
    if new.epoch != old.epoch or moved is None or then is None:
        return new != old
    return moved - then >= NOTE_EVERY


def _due(
    workers: list[Worker], moments: dict[str, datetime], deadlines: Deadlines
) -> datetime | None:
    """When the deadline that applies (between reports once one came, else to the first)
    runs out, counted from the newest report or the last Worker's start."""
    deadline = deadlines.progress if moments else deadlines.first
    since = latest(*(w.started for w in workers), *moments.values())
    if deadline is None or since is None:
        return None
    try:
        return since + timedelta(seconds=deadline)
    except OverflowError:  # a report near year 9999: never due
        return None

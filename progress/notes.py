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

from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.core.public import Noted, Report, format_time, latest, parse_lines


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


def noted_after(
    workers: list[Worker],
    logs: dict[str, list[str]],
    deadlines: Deadlines,
    now: datetime,
) -> dict[str, Noted]:
    """The notes that change, by pod name: each Worker's newest report from its `logs` (its
    timestamped lines, oldest first; a Worker missing from `logs` was not read), and the look
    past the job's deadline confirmed on the newest reporter."""
    reports = {w.name: parse_lines(logs.get(w.name, ()), w.noted.report) for w in workers}
    confirm = _confirming(workers, reports, deadlines, now) if len(logs) == len(workers) else None
    changed: dict[str, Noted] = {}
    for worker in workers:
        seen = format_time(now) if worker.name == confirm else worker.noted.seen
        noted = Noted(report=reports[worker.name], seen=seen)
        if noted != worker.noted:
            changed[worker.name] = noted
    return changed


def _confirming(
    workers: list[Worker], reports: dict[str, Report | None], deadlines: Deadlines, now: datetime
) -> str | None:
    """The Worker to note the look on when the job's deadline has run out at `now` with no
    newer report: the one that reported last (the first listed when none did); else None."""
    moments: dict[str, datetime] = {}
    for name, report in reports.items():
        moment = report.moment if report is not None else None
        if moment is not None:
            moments[name] = moment
    deadline = deadlines.progress if moments else deadlines.first
    if deadline is None or not workers:
        return None
    since = latest(*(w.started for w in workers), *moments.values())
    if since is None or now < since + timedelta(seconds=deadline):
        return None
    if not moments:
        return workers[0].name
    return max(moments, key=lambda name: moments[name])

"""What `mxjob get` and `mxjob describe` show, from the objects the API server gave: a job's
state and counts, tables that fit a terminal, colours only where asked. Pure: `now` is a
parameter, nothing is read from a cluster or the clock here."""

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hooks.core.public import (
    CHECKPOINT_PATH,
    MODE_TYPES,
    JobMode,
    claim_name,
    clean,
    dig,
    dig_dict,
    dig_list,
    load,
    parse_time,
    retains,
)
from mxjob.jobs.replicas import Replica, job_replicas, mxnet_status

#: ANSI styles by name; `Paint` leaves them out unless colours are on.
STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
#: How each state is coloured.
STATE_STYLES = {
    "Succeeded": "green",
    "Failed": "red",
    "Restarting": "yellow",
    "Running": "cyan",
    "Suspended": "magenta",
}
#: Shown for a value the job does not have (yet).
NONE = "-"
#: Between two columns of a table, as kubectl prints them.
GAP = "   "
#: The fewest characters of a message a table cuts to fit a terminal.
MIN_FREE = 20
_CUT = "…"


@dataclass(frozen=True)
class Paint:
    """Colours on or off: `mxjob` turns them on only for a terminal (and not under NO_COLOR)."""

    on: bool = False

    def __call__(self, text: str, style: str) -> str:
        code = STYLES.get(style)
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and code and text else text


@dataclass(frozen=True)
class Cell:
    """One cell of a table, with the style it is painted in."""

    text: str
    style: str = ""


def safe(text: object) -> str:
    """Text from the cluster, on one line, with nothing a terminal would interpret: cleaned as
    the hook cleans what it quotes of pods (hooks/core/quoting.py)."""
    return clean(str(text)) if text is not None else NONE


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str | Cell]],
    paint: Paint,
    width: int | None = None,
    indent: str = "",
    *,
    drop: Sequence[str] = (),
    free: bool = True,
) -> list[str]:
    """Columns as wide as their widest cell, three spaces apart. With `width` (a terminal's),
    the columns named in `drop` are left out, in that order, while the table does not fit,
    and a last column of free text (`free`) is cut to what is left (`…`, at least MIN_FREE
    characters); other columns are never cut."""
    cells = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in rows]
    fit = Fit(column_widths(headers, cells), indent, free)
    keep = fit.kept(headers, width, drop)
    room = fit.room(keep, width)
    bold = [Cell(header, "bold") for header in headers]
    return [table_line(row, keep, fit, room, paint) for row in [bold, *cells]]


def column_widths(headers: Sequence[str], cells: list[list[Cell]]) -> list[int]:
    """Each column's width: its widest cell, the header's included."""
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell.text))
    return widths


@dataclass(frozen=True)
class Fit:
    """How a table's columns fit a terminal: their widths, the indent before them, and whether
    the last column is free text (cut to fit, where the others are only ever left out)."""

    widths: list[int]
    indent: str
    free: bool

    def cuts(self, keep: list[int]) -> bool:
        """Whether the columns `keep` end with the free text column."""
        return self.free and keep[-1] == len(self.widths) - 1

    def fixed(self, keep: list[int]) -> int:
        """The characters the columns `keep` take but a free text column they end with: the
        indent, the other columns and the gaps between them all."""
        whole = keep[:-1] if self.cuts(keep) else keep
        return len(self.indent) + sum(self.widths[i] for i in whole) + len(GAP) * (len(keep) - 1)

    def needed(self, keep: list[int]) -> int:
        """The width a table of the columns `keep` needs: its free text at most MIN_FREE."""
        free = min(self.widths[-1], MIN_FREE) if self.cuts(keep) else 0
        return self.fixed(keep) + free

    def kept(self, headers: Sequence[str], width: int | None, drop: Sequence[str]) -> list[int]:
        """The columns shown: those named in `drop` left out, in that order, while the table is
        wider than `width`."""
        keep = list(range(len(headers)))
        for name in drop:
            if width is None or self.needed(keep) <= width:
                break
            keep.remove(headers.index(name))
        return keep

    def room(self, keep: list[int], width: int | None) -> int | None:
        """The characters left to the free text column within `width` (MIN_FREE at least); None
        when nothing is cut: no width, or no free text column shown."""
        if width is None or not self.cuts(keep):
            return None
        return max(width - self.fixed(keep), MIN_FREE)


def table_line(row: list[Cell], keep: list[int], fit: Fit, room: int | None, paint: Paint) -> str:
    """One line of a table: the cells of the columns `keep`, each padded to its column's width
    but the last, which is cut to `room`."""
    parts = [
        paint(
            cut(row[i].text, room) if i == keep[-1] else row[i].text.ljust(fit.widths[i]),
            row[i].style,
        )
        for i in keep
    ]
    return (fit.indent + GAP.join(parts)).rstrip()


def cut(text: str, room: int | None) -> str:
    """`text` cut to `room` characters, its last one `…`; whole when it fits or `room` is None."""
    return text if room is None or len(text) <= room else text[: room - 1] + _CUT


def age(moment: datetime | None, now: datetime) -> str:
    """How long ago, as kubectl writes it: `45s`, `3m20s`, `4h`, `2d3h`, `40d`, `2y`."""
    if moment is None:
        return NONE
    seconds = max(int((now - moment).total_seconds()), 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


@dataclass(frozen=True)
class Counts:
    """Pods of one replica type, or of the whole job: wanted, running, done, failed, restarts."""

    desired: int = 0
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    restarts: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(
            self.desired + other.desired,
            self.active + other.active,
            self.succeeded + other.succeeded,
            self.failed + other.failed,
            self.restarts + other.restarts,
        )


@dataclass(frozen=True)
class Summary:
    """One job as `mxjob get` lists it."""

    namespace: str
    name: str
    mode: str
    state: str
    reason: str
    message: str
    created: datetime | None
    started: datetime | None
    completed: datetime | None
    by_type: dict[str, Counts] = field(default_factory=dict)
    #: `status.progress` as the hook wrote it (docs/status.md#progress); {} before a report.
    progress: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> Counts:
        return sum(self.by_type.values(), Counts())

    def as_json(self, now: datetime) -> dict[str, Any]:
        """The summary for `-o json|yaml`: numbers as numbers, times as the API writes them."""
        total = self.total
        return {
            "namespace": self.namespace,
            "name": self.name,
            "mode": self.mode,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "created": _stamp(self.created),
            "started": _stamp(self.started),
            "completed": _stamp(self.completed),
            "ageSeconds": int((now - self.created).total_seconds()) if self.created else None,
            "replicas": {t: vars(c) for t, c in self.by_type.items()},
            **{k: v for k, v in vars(total).items() if k != "desired"},
            "progress": self.progress or None,
        }

    def point(self) -> str:
        """`e2 b140 40%`: the epoch and batch reached, and the percent done when known."""
        found = self.progress
        if not isinstance(found.get("epoch"), int):
            return NONE
        batch = f" b{found['batch']}" if isinstance(found.get("batch"), int) else " end"
        percent = f" {found['percent']}%" if isinstance(found.get("percent"), int) else ""
        return f"e{found['epoch']}{batch}{percent}"


def _stamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def latest_condition(job: object) -> dict[str, Any]:
    """The condition the job is in: the last one that is True (the hook keeps the most
    recently changed last), else the last one; {} without any."""
    conditions = [c for c in dig_list(job, "status", "conditions") if isinstance(c, dict)]
    true = [c for c in conditions if c.get("status") == "True"]
    return (true or conditions or [{}])[-1]


def summarize(job: object) -> Summary:
    """A job object as `get` lists it: its state, and its pods by type from its status (the
    wanted number from its spec)."""
    spec, _ = load(dig(job, "spec"))
    condition = latest_condition(job)
    statuses = dig_dict(job, "status", "replicaStatuses")
    mode = spec.mode if spec is not None else JobMode.TRAIN
    by_type = {}
    for rtype in MODE_TYPES[mode]:
        desired = spec.count(rtype) if spec is not None else 0
        counts = dig_dict(statuses, rtype.value)
        if not desired and not counts:
            continue
        by_type[rtype.value] = Counts(
            desired,
            *(_int(counts.get(k)) for k in ("active", "succeeded", "failed", "restarts")),
        )
    return Summary(
        namespace=str(dig(job, "metadata", "namespace") or NONE),
        name=str(dig(job, "metadata", "name") or NONE),
        mode=mode.value,
        state=str(condition.get("type") or NONE),
        reason=str(condition.get("reason") or ""),
        message=str(condition.get("message") or ""),
        created=parse_time(dig(job, "metadata", "creationTimestamp")),
        started=parse_time(dig(job, "status", "startTime")),
        completed=parse_time(dig(job, "status", "completionTime")),
        by_type=by_type,
        progress=dig_dict(job, "status", "progress"),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def job_table(
    jobs: list[Summary], now: datetime, paint: Paint, width: int | None, *, namespaces: bool
) -> list[str]:
    """`mxjob get`: a row per job (ACTIVE as active/wanted, PROGRESS as epoch, batch and
    percent), the message last, cut to the terminal's width; on a narrow terminal SUCCEEDED,
    then the message, then PROGRESS, then RESTARTS go."""
    headers = [
        "NAME", "STATE", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS", "PROGRESS", "AGE", "MESSAGE",
    ]  # fmt: skip
    rows: list[list[str | Cell]] = []
    for job in jobs:
        total = job.total
        rows.append(
            [
                *([safe(job.namespace)] if namespaces else []),
                safe(job.name),
                Cell(safe(job.state), STATE_STYLES.get(job.state, "")),
                f"{total.active}/{total.desired}",
                str(total.succeeded),
                Cell(str(total.failed), "red" if total.failed else ""),
                Cell(str(total.restarts), "yellow" if total.restarts else ""),
                job.point(),
                age(job.created, now),
                safe(job.message),
            ]
        )
    return table(
        [*(["NAMESPACE"] if namespaces else []), *headers],
        rows,
        paint,
        width,
        drop=("SUCCEEDED", "MESSAGE", "PROGRESS", "RESTARTS"),
    )


@dataclass(frozen=True)
class PodRow:
    """One pod of the job as `describe` lists it."""

    replica: Replica
    run: str
    phase: str
    exit_code: int | None
    reason: str
    restarts: int
    node: str
    created: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "replica": self.replica.label,
            "pod": self.replica.pod,
            "replicaType": self.replica.rtype.value,
            "replicaIndex": self.replica.index,
            "attempt": self.replica.attempt,
            "run": self.run,
            "phase": self.phase,
            "exitCode": self.exit_code,
            "reason": self.reason,
            "restarts": self.restarts,
            "node": self.node,
            "created": _stamp(self.created),
        }


def pod_rows(job: str, pods: list[Any]) -> list[PodRow]:
    """The job's pods, every attempt, in the hook's order, with how each ended."""
    rows = []
    for replica, pod in job_replicas(job, pods):
        statuses = dig_list(pod, "status", "containerStatuses")
        ended = dig_dict(mxnet_status(pod), "state", "terminated")
        code = ended.get("exitCode")
        deleting = dig(pod, "metadata", "deletionTimestamp") is not None
        phase = str(dig(pod, "status", "phase") or "Pending")
        rows.append(
            PodRow(
                replica=replica,
                run=str(dig(pod, "metadata", "annotations", "mxjob.kubeflow.org/run") or "0"),
                phase=f"{phase} (deleting)" if deleting else phase,
                exit_code=code if isinstance(code, int) else None,
                reason=str(ended.get("reason") or dig(pod, "status", "reason") or ""),
                restarts=sum(_int(dig(s, "restartCount")) for s in statuses),
                node=str(dig(pod, "spec", "nodeName") or ""),
                created=parse_time(dig(pod, "metadata", "creationTimestamp")),
            )
        )
    return rows


_NEVER = datetime.min.replace(tzinfo=UTC)


def _event_time(event: object) -> datetime | None:
    return (
        parse_time(dig(event, "lastTimestamp"))
        or parse_time(dig(event, "eventTime"))
        or parse_time(dig(event, "firstTimestamp"))
        or parse_time(dig(event, "metadata", "creationTimestamp"))
    )


def sorted_events(events: list[Any]) -> list[Any]:
    """Events oldest first, as `kubectl describe` lists them."""
    return sorted(events, key=lambda e: _event_time(e) or _NEVER)


def describe(
    job: object,
    pods: list[Any],
    events: list[Any],
    now: datetime,
    paint: Paint,
    width: int | None,
) -> list[str]:
    """`mxjob describe`: the job's story, from its status, its pods and its Events."""
    summary = summarize(job)
    return [
        *heading_lines(job, summary, now, paint, width),
        "",
        "Conditions:",
        *condition_lines(job, now, paint, width),
        "",
        "Replicas:",
        *replica_lines(summary, paint),
        "",
        "Pods:",
        *pod_lines(pod_rows(summary.name, pods), now, paint, width),
        "",
        "Last failure:",
        *last_failure_lines(job, now, paint),
        "",
        "Events:",
        *event_lines(events, now, paint, width),
    ]


def heading_lines(
    job: object, summary: Summary, now: datetime, paint: Paint, width: int | None
) -> list[str]:
    """`describe`'s head: the job's name, state, times, progress and checkpoint, one a line."""
    state = paint(safe(summary.state), STATE_STYLES.get(summary.state, ""))
    reason = f" ({safe(summary.reason)})" if summary.reason else ""
    return [
        f"Name:        {safe(summary.name)}",
        f"Namespace:   {safe(summary.namespace)}",
        f"Mode:        {summary.mode}",
        f"State:       {state}{reason}",
        *_field("Message:     ", safe(summary.message) if summary.message else NONE, width),
        f"Created:     {_when(summary.created, now)}",
        f"Started:     {_when(summary.started, now)}",
        f"Completed:   {_when(summary.completed, now)}",
        *_field("Progress:    ", progress_words(summary.progress, now), width),
        *_field("Checkpoint:  ", checkpoint_words(job, summary.name, summary.progress), width),
    ]


def condition_lines(job: object, now: datetime, paint: Paint, width: int | None) -> list[str]:
    """The job's conditions as a table, in the order the hook keeps them."""
    conditions = [c for c in dig_list(job, "status", "conditions") if isinstance(c, dict)]
    return table(
        ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
        [
            [
                Cell(safe(c.get("type")), STATE_STYLES.get(str(c.get("type")), "")),
                safe(c.get("status")),
                safe(c.get("reason") or ""),
                age(parse_time(c.get("lastTransitionTime")), now),
                safe(c.get("message") or ""),
            ]
            for c in conditions
        ],
        paint,
        width,
        indent="  ",
    )


def replica_lines(summary: Summary, paint: Paint) -> list[str]:
    """The job's pods counted by replica type, as a table never cut (its columns are short)."""
    return table(
        ["TYPE", "DESIRED", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS"],
        [
            [rtype, *map(str, (c.desired, c.active, c.succeeded, c.failed, c.restarts))]
            for rtype, c in summary.by_type.items()
        ],
        paint,
        None,
        indent="  ",
    )


def pod_lines(rows: list[PodRow], now: datetime, paint: Paint, width: int | None) -> list[str]:
    """The job's pods as a table (on a narrow terminal NODE, then RUN, REASON and RESTARTS go),
    or why there is none."""
    if not rows:
        return ["  (none: not created yet, or deleted as cleanPodPolicy says)"]
    return table(
        ["REPLICA", "POD", "RUN", "PHASE", "EXIT", "REASON", "RESTARTS", "AGE", "NODE"],
        [_pod_cells(r, now) for r in rows],
        paint,
        width,
        indent="  ",
        drop=("NODE", "RUN", "REASON", "RESTARTS"),
        free=False,
    )


def event_lines(events: list[Any], now: datetime, paint: Paint, width: int | None) -> list[str]:
    """The job's Events as a table, oldest first, warnings in yellow; `(none)` without any."""
    told = sorted_events(events)
    if not told:
        return ["  (none)"]
    return table(
        ["TYPE", "REASON", "AGE", "FROM", "MESSAGE"],
        [
            [
                Cell(safe(e.get("type")), "yellow" if e.get("type") == "Warning" else ""),
                safe(e.get("reason")),
                age(_event_time(e), now),
                safe(dig(e, "source", "component") or dig(e, "reportingComponent") or ""),
                safe(e.get("message") or ""),
            ]
            for e in told
        ],
        paint,
        width,
        indent="  ",
    )


def progress_words(found: dict[str, Any], now: datetime) -> str:
    """`epoch 2 batch 140, 1834.51 samples/s, 40% (done about …), reported 1m ago by Worker
    1`: status.progress in words; `-` before any report."""
    if not isinstance(found.get("epoch"), int):
        return NONE
    where = f"epoch {found['epoch']}"
    where += f" batch {found['batch']}" if isinstance(found.get("batch"), int) else " ended"
    parts = [where]
    if isinstance(found.get("samplesPerSecond"), int | float):
        parts.append(f"{found['samplesPerSecond']} samples/s")
    if isinstance(found.get("percent"), int):
        done = parse_time(found.get("estimatedCompletionTime"))
        parts.append(f"{found['percent']}%" + (f" (done about {_stamp(done)})" if done else ""))
    reported = parse_time(found.get("lastReportTime"))
    who = f"{safe(found.get('replicaType'))} {safe(found.get('replicaIndex'))}"
    parts.append(f"reported {age(reported, now)} ago by {who}" if reported else f"by {who}")
    return ", ".join(parts)


def checkpoint_words(job: object, name: str, found: dict[str, Any]) -> str:
    """`claim mnist-checkpoint at /mxjob/checkpoint; runs began at epoch 0 (run 0), 2 (run 1)`:
    the job's checkpoint claim (spec.checkpoint), whether it is kept when the job is deleted, and
    where each run began; `-` without one."""
    saved = dig(job, "spec", "checkpoint")
    if not isinstance(saved, dict):
        return NONE
    path = saved.get("mountPath", CHECKPOINT_PATH)
    words = f"claim {safe(claim_name(name))} at {safe(path)}"
    words += ", kept when the job is deleted" if retains(job) else ""
    resumes = found.get("resumes")
    began = [
        f"{r['epoch']} (run {r['run']})"
        for r in (resumes if isinstance(resumes, list) else [])
        if isinstance(r, dict) and isinstance(r.get("epoch"), int) and isinstance(r.get("run"), int)
    ]
    return words + (f"; runs began at epoch {', '.join(began)}" if began else "")


def _field(title: str, text: str, width: int | None) -> list[str]:
    """`Title:  text`, the text wrapped to the terminal's width under itself."""
    if width is None:
        return [title + text]
    lines = textwrap.wrap(text, max(width - len(title), 20)) or [""]
    return [title + lines[0], *(" " * len(title) + line for line in lines[1:])]


def _when(moment: datetime | None, now: datetime) -> str:
    return f"{_stamp(moment)} ({age(moment, now)} ago)" if moment else NONE


def _pod_cells(row: PodRow, now: datetime) -> list[str | Cell]:
    phase_style = {"Failed": "red", "Succeeded": "green", "Running": "cyan"}
    return [
        row.replica.label,
        safe(row.replica.pod),
        safe(row.run),
        Cell(safe(row.phase), phase_style.get(row.phase, "")),
        NONE if row.exit_code is None else str(row.exit_code),
        safe(row.reason) if row.reason else NONE,
        str(row.restarts),
        age(row.created, now),
        safe(row.node) if row.node else NONE,
    ]


def last_failure_lines(job: object, now: datetime, paint: Paint) -> list[str]:
    """`status.lastFailure`: who failed how and when, then the words it left, indented."""
    last = dig_dict(job, "status", "lastFailure")
    if not last:
        return ["  (none)"]
    replica = f"{str(last.get('replicaType', '')).lower()}-{last.get('replicaIndex', '?')}"
    reason = f" ({safe(last['reason'])})" if last.get("reason") else ""
    moment = parse_time(last.get("time"))
    when = f" {age(moment, now)} ago" if moment else ""
    head = (
        f"  {safe(replica)} (pod {safe(last.get('pod'))}, attempt {safe(last.get('attempt'))})"
        f" exited with code {paint(safe(last.get('exitCode')), 'red')}{reason}{when}"
    )
    words = str(last.get("message") or "")
    return [head, *(f"    {safe(line)}" for line in words.split("\n") if line)]


def description_json(job: object, pods: list[Any], events: list[Any], now: datetime) -> Any:
    """`mxjob describe -o json|yaml`: the summary, the conditions, every pod, the last failure
    and the Events."""
    summary = summarize(job)
    return {
        **summary.as_json(now),
        "conditions": dig_list(job, "status", "conditions"),
        "pods": [row.as_json() for row in pod_rows(summary.name, pods)],
        "lastFailure": dig(job, "status", "lastFailure"),
        "events": [
            {
                "type": e.get("type"),
                "reason": e.get("reason"),
                "time": _stamp(_event_time(e)),
                "from": dig(e, "source", "component") or dig(e, "reportingComponent"),
                "message": e.get("message"),
            }
            for e in sorted_events(events)
        ],
    }

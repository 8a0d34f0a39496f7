"""Training progress (docs/status.md#progress): what a Worker's log says of how far it got.

MXNet's own loop already tells it: `Module.fit` with `mx.callback.Speedometer` logs
`Epoch[2] Batch [120-140]\tSpeed: 1834.51 samples/sec\taccuracy=…` every few batches and
`Epoch[2] Time cost=12.345` at each epoch's end; any other script prints the same words
(`Epoch[2] Batch [140] Speed: 1834.51 samples/sec`, the speed optional). The progress
component reads them from the Worker's log, each line with the kubelet's timestamp, and keeps
the newest on the pod as the annotation `mxjob.kubeflow.org/progress`, with the moment it last
`seen` that nothing moved once the job's progress deadline had run out: the watchdog acts only
on that (hooks/core/restart/stall.py), so a progress component that stopped never makes a
healthy job look stalled. The hook reads the annotation back. Pure: lines and annotations in,
reports out.
"""

import re
from collections.abc import Iterable
from datetime import datetime

import msgspec

from hooks.core.timestamps import format_time, parse_time

#: Bytes of the annotation the hook reads at most: a report is about 120.
MAX_ANNOTATION_BYTES = 512
#: Epochs and batches a report may name: what an int32 holds.
MAX_COUNT = 2**31 - 1

_BATCH = re.compile(
    r"Epoch\[(\d{1,10})\]\s*Batch\s*\[(?:\d{1,10}-)?(\d{1,10})\]"
    r"(?:\s+Speed:\s*(\d{1,15}(?:\.\d{1,6})?)\s*samples/sec)?"
)
_EPOCH_END = re.compile(r"Epoch\[(\d{1,10})\]\s*Time cost=(\d{1,15}(?:\.\d{1,6})?)")
#: A kubelet log line read with `timestamps=true`: RFC 3339 with nanoseconds, a space, the line.
_STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (.*)$")


class Report(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The newest progress one Worker reported: the epoch (counted from 0, as MXNet logs it) and
    the batch within it (None: the epoch has ended), the throughput and the last epoch's
    duration as last logged, and when the kubelet received the line."""

    epoch: int
    batch: int | None = None
    speed: float | None = None
    epoch_seconds: float | None = msgspec.field(default=None, name="epochSeconds")
    time: str

    @property
    def moment(self) -> datetime | None:
        return parse_time(self.time)

    @property
    def epochs_done(self) -> int:
        """Epochs this report says are complete."""
        return self.epoch + 1 if self.batch is None else self.epoch

    def words(self) -> str:
        """`epoch 2 batch 140` or `end of epoch 2`, as messages name the point reached."""
        if self.batch is None:
            return f"end of epoch {self.epoch}"
        return f"epoch {self.epoch} batch {self.batch}"


class Noted(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The annotation: the Worker's newest report, if it made one, when the progress component
    last saw nothing move past the job's progress deadline, if it did, and the epoch of the
    first report the component read in the pod's log (where its run began: a run restored
    from a checkpoint begins where it ends)."""

    report: Report | None = None
    seen: str | None = None
    began: int | None = None

    @property
    def seen_at(self) -> datetime | None:
        return parse_time(self.seen)

    def since(self, started: datetime | None) -> "Noted":
        """The note if it is of the mxnet container that started at `started`, else NOTHING:
        a pod's note stays on it when its containers restart in place, and tells of the
        process before (where its run began, its newest report, a look)."""
        report = self.report.moment if self.report is not None else None
        moments = [m for m in (report, self.seen_at) if m is not None]
        if started is None or any(moment < started for moment in moments):
            return NOTHING
        return self


_DECODE = msgspec.json.Decoder(Noted)
_ENCODE = msgspec.json.Encoder()
NOTHING = Noted()


def read_noted(text: str | None) -> Noted:
    """What an annotation holds; NOTHING for anything else (absent, too long, malformed, out of
    range): a pod's annotations are its namespace's to write, so nothing here trusts them
    beyond their own job."""
    if text is None or len(text) > MAX_ANNOTATION_BYTES:
        return NOTHING
    try:
        noted = _DECODE.decode(text)
    except msgspec.DecodeError:
        return NOTHING
    report = noted.report
    if report is not None and (not _in_range(report) or report.moment is None):
        return NOTHING
    if noted.seen is not None and noted.seen_at is None:
        return NOTHING
    if noted.began is not None and not 0 <= noted.began <= MAX_COUNT:
        return NOTHING
    return noted


def _in_range(report: Report) -> bool:
    counts = [report.epoch, *([] if report.batch is None else [report.batch])]
    rates = [r for r in (report.speed, report.epoch_seconds) if r is not None]
    return all(0 <= c <= MAX_COUNT for c in counts) and all(0 <= r < 1e15 for r in rates)


def encode_noted(noted: Noted) -> str:
    """The annotation's value."""
    return _ENCODE.encode(noted).decode()


def parse_lines(lines: Iterable[str], previous: Report | None = None) -> Report | None:
    """The newest report among timestamped log lines (oldest first), carrying the speed and the
    epoch's duration from earlier lines and from the `previous` report; `previous` when no line
    reports anything."""
    report = previous
    for line in lines:
        report = _next(report, line)
    return report


def first_report(lines: Iterable[str]) -> Report | None:
    """The first report among timestamped log lines (oldest first), if any."""
    for line in lines:
        report = _next(None, line)
        if report is not None:
            return report
    return None


def _next(report: Report | None, line: str) -> Report | None:
    """The report after one line: a batch line or an epoch's end moves it, any other keeps it."""
    stamped = _STAMPED.match(line.rstrip("\r\n"))
    if stamped is None:
        return report
    when = parse_time(stamped[1])
    text = stamped[2]
    if when is None:
        return report
    batch = _BATCH.search(text)
    end = _EPOCH_END.search(text) if batch is None else None
    if batch is None and end is None:
        return report
    speed = report.speed if report else None
    seconds = report.epoch_seconds if report else None
    if batch is not None:
        epoch, at = int(batch[1]), int(batch[2])
        speed = float(batch[3]) if batch[3] is not None else speed
    else:
        assert end is not None
        epoch, at, seconds = int(end[1]), None, float(end[2])
    found = Report(
        epoch=epoch, batch=at, speed=speed, epoch_seconds=seconds, time=format_time(when)
    )
    return found if _in_range(found) else report

"""The failure's own words (docs/status.md#the-last-failure): the tail of a failed mxnet
container's termination message, cleaned and bounded, and `status.lastFailure`, the newest
failure of any replica, carried from status to status so that it outlives the pod.

The kubelet fills the message with the end of the container's log when the container fails
(`terminationMessagePolicy: FallbackToLogsOnError`, hooks/core/build/pods.py), so a Python
traceback's last line lands here. The message is the pod's to write: any text of any size, escape
sequences and all. What is kept is at most `TAIL_LINES` lines of at most `LINE_BYTES` bytes of
UTF-8 each, each cleaned as all text from pods is (hooks/core/quoting.py), read from the last
`READ_CHARS` characters only.

Which failure is the last is decided from what the request holds, never the clock: the newest
(by the container's `finishedAt`, then the pod's name) of the previous status's `lastFailure`
and every observed pod's own failures, so the same request gives the same answer and feeding the
answer back changes nothing.
"""

from datetime import UTC, datetime
from typing import NotRequired, TypedDict

from hooks.core.naming import Slot, parse_pod_name
from hooks.core.observed import Ended, ObservedPod
from hooks.core.quoting import clean
from hooks.core.timestamps import format_time, parse_time

#: Lines of the message kept: a traceback's last frame and its exception.
TAIL_LINES = 5
#: Bytes of UTF-8 a kept line has at most; a longer one keeps its start (the exception's type).
LINE_BYTES = 200
#: How much of the message is read at all: its end, however long it is.
READ_CHARS = 16384


class LastFailure(TypedDict):
    """`status.lastFailure`: the newest failure of a replica's mxnet container."""

    replicaType: str
    replicaIndex: int
    pod: str
    attempt: int
    exitCode: int
    reason: NotRequired[str]
    time: NotRequired[str]
    message: NotRequired[str]


def tail(message: object) -> str | None:
    """The last lines of a termination message, cleaned and bounded; None when nothing is left.
    Idempotent: a tail is its own tail."""
    if not isinstance(message, str) or not message:
        return None
    kept: list[str] = []
    for line in reversed(message[-READ_CHARS:].splitlines()):
        cleaned = clean(line, LINE_BYTES)
        if cleaned.strip():
            kept.append(cleaned)
            if len(kept) == TAIL_LINES:
                break
    return "\n".join(reversed(kept)) or None


def last_line(message: object) -> str | None:
    """The last line of a termination message's tail: a traceback's exception."""
    kept = tail(message)
    return kept.rsplit("\n", 1)[-1] if kept else None


def _failure(slot: Slot, pod: str, attempt: int, ended: Ended) -> LastFailure:
    found: LastFailure = {
        "replicaType": slot.rtype.value,
        "replicaIndex": slot.index,
        "pod": pod,
        "attempt": attempt,
        "exitCode": ended.exit_code,
    }
    reason = last_line(ended.reason)
    if reason:
        found["reason"] = reason
    if ended.finished is not None:
        found["time"] = format_time(ended.finished)
    words = tail(ended.message)
    if words:
        found["message"] = words
    return found


def own_failures(pod: ObservedPod) -> list[Ended]:
    """How the pod's mxnet container failed on its own, oldest first: its end before an in-place
    restart and its current end, where the exit code is not 0. A pod being deleted is left out:
    its end (SIGTERM, SIGKILL) is the deletion's, and a whole-job restart deletes every pod of
    the run it ends."""
    if pod.terminating:
        return []
    return [e for e in (pod.ended_before, pod.ended) if e is not None and e.exit_code != 0]


_NEVER = datetime.min.replace(tzinfo=UTC)


def _key(failure: LastFailure) -> tuple[datetime, str]:
    """What orders failures: when the container ended, then the pod's name."""
    return parse_time(failure.get("time")) or _NEVER, failure["pod"]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_last_failure(job: str, written: object) -> LastFailure | None:
    """A previous status's `lastFailure`, if it names a pod this job could have and a failure
    (read leniently, as the rest of the status: anything else reads as none), cleaned again."""
    if not isinstance(written, dict):
        return None
    pod, attempt, code = _text(written.get("pod")), written.get("attempt"), written.get("exitCode")
    parsed = parse_pod_name(job, pod) if pod is not None else None
    if pod is None or parsed is None or parsed[1] != attempt or type(code) is not int or not code:
        return None
    ended = Ended(
        exit_code=code,
        reason=_text(written.get("reason")),
        finished=parse_time(written.get("time")),
        message=_text(written.get("message")),
    )
    return _failure(parsed[0], pod, parsed[1], ended)


def last_failure(
    previous: LastFailure | None, pods: dict[Slot, list[ObservedPod]]
) -> LastFailure | None:
    """The newest of the previous `lastFailure` and every observed pod's own failures; an
    observed one wins a tie, so a status written by hand is corrected from the pod."""
    best: tuple[tuple[datetime, str], Slot, ObservedPod, Ended] | None = None
    for slot, attempts in pods.items():
        for pod in attempts:
            for ended in own_failures(pod):
                key = (ended.finished or _NEVER, pod.name)
                if best is None or key >= best[0]:
                    best = (key, slot, pod, ended)
    if best is None or (previous is not None and _key(previous) > best[0]):
        return previous
    _, slot, pod, ended = best
    return _failure(slot, pod.name, pod.attempt, ended)

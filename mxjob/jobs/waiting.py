"""When `mxjob wait` is done, from one version of the job: the state asked for is reached, or
can no longer be (the job failed, succeeded instead, or is gone), with the words to print.
Pure: the command reads the job and the clock."""

from dataclasses import dataclass
from enum import StrEnum

from hooks.core.public import clean, dig_dict, dig_list

#: Exit statuses of `mxjob wait` (docs/cli.md#wait).
REACHED, ENDED_OTHERWISE, CANNOT_READ, TIMED_OUT = 0, 1, 2, 3


class Goal(StrEnum):
    """What `--for` waits for."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    RUNNING = "Running"


@dataclass(frozen=True)
class Verdict:
    """The wait is over: with this exit status and these lines."""

    status: int
    lines: list[str]


def _true(job: object, ctype: str) -> dict[str, object] | None:
    return next(
        (
            c
            for c in dig_list(job, "status", "conditions")
            if isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True"
        ),
        None,
    )


def why_failed(job: object) -> list[str]:
    """The Failed condition's message, then the last failure's words (docs/status.md), each
    line cleaned of what a terminal would interpret (hooks/core/quoting.py)."""
    failed = _true(job, "Failed") or {}
    lines = [clean(str(failed.get("message") or failed.get("reason") or "failed"))]
    last = dig_dict(job, "status", "lastFailure")
    words = [clean(w) for w in str(last.get("message") or "").split("\n")]
    if any(words):
        lines.append(f"the log of {clean(str(last.get('pod')))} ends:")
        lines += [f"  {w}" for w in words if w]
    return lines


def verdict(name: str, job: object | None, goal: Goal) -> Verdict | None:
    """Whether waiting for `goal` is over for this version of the job (None: wait on). A job
    that has finished ran, so `Running` is also reached by one that succeeded."""
    title = f"mxjob/{name}"
    if job is None:
        return Verdict(ENDED_OTHERWISE, [f"{title} is gone (deleted before it was {goal})"])
    succeeded, failed = _true(job, "Succeeded"), _true(job, "Failed")
    if goal is Goal.FAILED and failed:
        return Verdict(REACHED, [f"{title} Failed", *why_failed(job)])
    if failed:
        return Verdict(ENDED_OTHERWISE, [f"{title} Failed, not {goal}:", *why_failed(job)])
    if succeeded:
        if goal is Goal.FAILED:
            return Verdict(ENDED_OTHERWISE, [f"{title} Succeeded, not Failed"])
        return Verdict(REACHED, [f"{title} Succeeded"])
    if goal is Goal.RUNNING and _true(job, "Running"):
        return Verdict(REACHED, [f"{title} Running"])
    return None

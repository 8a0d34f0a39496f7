"""Play one scenario against the controller installed on a stack, and say what it did."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.compare.observe import JOB_LABEL, NAMESPACE, Watcher, latest_condition
from bench.compare.scenarios import Run, Scenario, StuckError
from tools.cluster.stack import Stack


@dataclass
class Outcome:
    """What a controller did with a scenario's job."""

    scenario: str
    #: The latest condition at the end (`Failed/BackoffLimitExceeded`), or what stopped the job.
    final: str
    #: The latest condition's types as they followed each other.
    path: list[str]
    #: Pods made beyond the first of each replica; in-place restarts of the pods left.
    replaced: int
    restarts: int
    #: The job's pods left at the end, by phase.
    left: dict[str, int]
    #: Seconds from the test's last action before the final condition (its first, the apply,
    #: for a scenario timed from it) to that condition (None without a Succeeded or Failed),
    #: and that action.
    seconds: float | None
    after: str
    #: Seconds from each exit the test made to the job's next status write.
    answers: list[float] = field(default_factory=list)
    message: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def answer(self) -> float | None:
        """The median of `answers`."""
        return statistics.median(self.answers) if self.answers else None

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON values (the raw results `make compare` writes)."""
        return asdict(self)


def apply(stack: Stack, job: dict[str, Any], *flags: str) -> str:
    """`kubectl apply -f` as a user runs it: '' or the refusal's message."""
    proc = stack.kubectl("apply", *flags, "-f", "-", input=json.dumps(job), check=False)
    return "" if proc.returncode == 0 else " ".join(proc.stderr.split())


def play(stack: Stack, scenario: Scenario) -> Outcome:
    """Apply the job, take the steps, wait for an outcome, then delete the job."""
    name = scenario.job["metadata"]["name"]
    with Watcher(stack, name) as watch:
        run = Run(stack, watch, scenario.job)
        run.mark("applied")
        refused = apply(stack, scenario.job)
        if refused and scenario.unvalidated_retry:
            run.notes.append(f"kubectl apply refused: {refused}")
            run.mark("applied with --validate=false")
            refused = apply(stack, scenario.job, "--validate=false")
            if not refused:
                run.notes.append("applied with --validate=false (the field is dropped)")
        if refused:
            return _refused(scenario, refused)
        try:
            for step in scenario.steps:
                step(run)
        except StuckError as stuck:
            run.notes.append(str(stuck))
        if not watch.wait(watch.finished, scenario.timeout):
            run.notes.append(f"no Succeeded or Failed {scenario.timeout:.0f} s after the last step")
        watch.quiet(2.0, 15.0)  # the cleanup the outcome starts
        outcome = _outcome(scenario, run)
    _delete(stack, name)
    return outcome


def _refused(scenario: Scenario, message: str) -> Outcome:
    return Outcome(
        scenario=scenario.name,
        final="refused by kubectl apply",
        path=[],
        replaced=0,
        restarts=0,
        left={},
        seconds=None,
        after="",
        message=message,
    )


def _outcome(scenario: Scenario, run: Run) -> Outcome:
    watch = run.watch
    path = [c.ctype for c in watch.changes]
    latest = latest_condition(watch.status)
    final = f"{latest[0]}/{latest[1]}" if latest else "no condition"
    seconds, after = None, ""
    if watch.finished():
        at = next(c.at for c in watch.changes if c.ctype == watch.condition())
        before = [(t, what) for t, what in run.marks if t <= at]
        if scenario.from_apply:
            before = before[:1]
        if before:
            seconds, after = at - before[-1][0], before[-1][1]
    return Outcome(
        scenario=scenario.name,
        final=final,
        path=[t for i, t in enumerate(path) if i == 0 or path[i - 1] != t],
        replaced=watch.replaced(),
        restarts=sum(p.restarts for p in watch.pods.values() if not p.gone),
        left=dict(watch.left()),
        seconds=seconds,
        after=after,
        answers=run.answers,
        message=latest[2] if latest else "",
        notes=run.notes,
    )


def _delete(stack: Stack, name: str, timeout: float = 60.0) -> None:
    """Delete the job and its pods and Services (the garbage collector learns a new CRD only
    at its next discovery, up to 30 s later) and wait until the pods are gone, so the next
    scenario starts clean."""
    stack.kubectl("delete", "mxjob", "-n", NAMESPACE, name, "--ignore-not-found", "--wait=true")
    stack.kubectl(
        "delete", "pods,services", "-n", NAMESPACE, "-l", f"{JOB_LABEL}={name}", "--wait=false"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = stack.kubectl(
            "get", "pods", "-n", NAMESPACE, "-l", f"{JOB_LABEL}={name}", "-o", "name"
        )
        if not out.stdout.strip():
            return
        time.sleep(0.5)

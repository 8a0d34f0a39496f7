"""The stall watchdog (docs/run-policy.md#progressdeadlineseconds): a running job whose progress
has not moved for `runPolicy.progressDeadlineSeconds` is stalled, and a failurePolicy rule with
`onStall` (else a counted whole-job restart) says what happens to it.

Progress is any Worker's newer report (hooks/core/progress.py); the clock runs from the latest
of the run's Workers' newest report and the moment the last replica of the run started running,
so every restart, of the job or of one replica, starts it again; reports of an older run are on
its pods, never read. Until the run first reports (loading data, connecting) it is judged only
by `firstProgressDeadlineSeconds`, counted from its last replica's start, and not at all without
it: a startup may take far longer than the steps between two reports. The watchdog judges only a
run whose every replica runs: one with a pod pending, ended or on its way out is judged by the
other rules.

A run is stalled only once the progress component has `seen` a Worker's log after the deadline
ran out with nothing new in it: a component that stopped, or lags, leaves jobs unjudged, never
stalled. Pure: the moments compared with `now` are the kubelet's and the component's.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.core.api import ReplicaType
from hooks.core.failure_policy import Verdict, stall_verdict
from hooks.core.job import Job
from hooks.core.observed import ObservedPod
from hooks.core.progress import Report
from hooks.core.restart.slots import SlotPlan, replica_words
from hooks.core.timestamps import format_time, latest


@dataclass(frozen=True)
class Clock:
    """Where the watchdog's clock stands: since when nothing moved, the newest report and the
    words naming its replica (None: none yet)."""

    since: datetime
    seconds: int
    report: Report | None
    replica: str | None
    #: When the progress component last saw no progress past the deadline, on any Worker.
    seen: datetime | None = None

    @property
    def due(self) -> datetime | None:
        """When the job is stalled if nothing moves before."""
        try:
            return self.since + timedelta(seconds=self.seconds)
        except OverflowError:  # a report near year 9999: never due
            return None

    def words(self) -> str:
        """`no progress from any Worker for 300 s; last: epoch 2 batch 140 at 14:02:11Z by
        Worker replica 1 (pod …)`: what the condition, the Event and the failure say."""
        if self.report is None:
            return (
                f"no first report from any Worker within {self.seconds} s of every replica"
                f" running ({format_time(self.since)})"
            )
        head = f"no progress from any Worker for {self.seconds} s"
        return f"{head}; last: {self.report.words()} at {self.report.time} by {self.replica}"


@dataclass(frozen=True)
class Stall:
    """A stalled run: its clock, and the verdict of the failure policy."""

    clock: Clock
    verdict: Verdict

    @property
    def moment(self) -> datetime:
        """When it became stalled: the moment the deadline ran out, never the hook's now."""
        due = self.clock.due
        assert due is not None
        return due


def clock(job: Job, plans: list[SlotPlan]) -> Clock | None:
    """The watchdog's clock, when every replica of the run is running and the job has the
    deadline that applies: progressDeadlineSeconds once a Worker reported, else
    firstProgressDeadlineSeconds; None otherwise."""
    running = _running(plans)
    if running is None:
        return None
    newest = _newest(plans)
    report = newest[1].noted.report if newest is not None else None
    policy = job.spec.run_policy
    seconds = (
        policy.progress_deadline_seconds
        if report is not None
        else policy.first_progress_deadline_seconds
    )
    since = latest(*(p.started for p in running), report.moment if report else None)
    if seconds is None or since is None:
        return None
    seen = latest(*(p.noted.seen_at for p in _workers(plans)))
    who = replica_words(newest[0].slot, newest[1]) if newest is not None else None
    return Clock(since, seconds, report, who, seen)


def _running(plans: list[SlotPlan]) -> list[ObservedPod] | None:
    """The run's current pods, if every slot has one and each is running."""
    pods = [p.current for p in plans]
    if not pods or not all(p is not None and p.active for p in pods):
        return None
    return [p for p in pods if p is not None]


def _workers(plans: list[SlotPlan]) -> list[ObservedPod]:
    return [
        p.current for p in plans if p.slot.rtype is ReplicaType.WORKER and p.current is not None
    ]


def _newest(plans: list[SlotPlan]) -> tuple[SlotPlan, ObservedPod] | None:
    """The Worker whose report is the newest (the first Worker on a tie)."""
    found: tuple[SlotPlan, ObservedPod, datetime] | None = None
    for plan in plans:
        pod = plan.current
        report = pod.noted.report if pod is not None else None
        if plan.slot.rtype is not ReplicaType.WORKER or pod is None or report is None:
            continue
        when = report.moment
        if when is not None and (found is None or when > found[2]):
            found = (plan, pod, when)
    return None if found is None else (found[0], found[1])


def judge(job: Job, plans: list[SlotPlan], now: datetime) -> Stall | None:
    """The stall of the run at `now`, if its progress deadline has run out and the progress
    component has seen nothing move since."""
    found = clock(job, plans)
    due = found.due if found is not None else None
    if found is None or due is None or now < due or found.seen is None or found.seen < due:
        return None
    return Stall(found, stall_verdict(job.spec.run_policy.failure_rules))

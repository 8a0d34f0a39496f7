"""Whole-job restarts (docs/restarts.md): ps-lite cannot replace a Scheduler or a Server alone (nor
AutoTVM a TunerTracker or a Tuner), so their retryable failure restarts every replica.

A restart moves through three steps, each taken only once the previous one is observed in the
children and in the parent status (the stale-cache rule of docs/run-policy.md), so every response
is a
fixpoint of the children it lists:
1. a run record, the ConfigMap `<job>-mxjob-run-<N>`, is created; the pods of the run stay;
2. once the record is observed, every pod of the older run is deleted;
3. once no pod of an older run is observed, every replica is created for run N, with new
   attempt names and the annotations `run` and `restarts-before`.
The run number comes from observed children only: the newest record's name and the pods' `run`
annotation. The record carries what the gap between steps 2 and 3 needs (first attempt, every
slot's restarts before the run, the status message and its moment), so a sync that sees no pod
at all still knows the run and the restart count, whatever the parent status says; and what the
run itself reads back: the config ConfigMap its pods read (a record without one was written
before each run had its own), and how many restarts for edits in a row led to it
(hooks/core/restart/resize.py).
"""

import json
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Any, TypedDict

import msgspec

from hooks.core.api import ConditionType, JobMode, ReplicaType, RestartPolicy, RestartStrategy
from hooks.core.children import ConfigMap
from hooks.core.failure_policy import Action
from hooks.core.fields import parsed_json
from hooks.core.job import Job
from hooks.core.labels import job_labels
from hooks.core.naming import (
    RunNames,
    Slot,
    config_map_name,
    run_from_record_name,
    run_record_name,
)
from hooks.core.observed import FINISHED_PHASES, ObservedPod, PodPhase, judged_deleted
from hooks.core.previous import PreviousStatus
from hooks.core.restart import resize, stall
from hooks.core.restart.rejoin import through_ps_lite
from hooks.core.restart.slots import RunStart, SlotPlan, describe_exit, plan_slot, replica_words
from hooks.core.spec import JobSpec
from hooks.core.timestamps import earliest, format_time, parse_time

#: Replica types whose loss the other processes cannot survive (docs/restarts.md).
WHOLE_JOB_TYPES = frozenset(
    {ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.TUNER_TRACKER, ReplicaType.TUNER}
)
_IN_PLACE = (RestartPolicy.ALWAYS, RestartPolicy.ON_FAILURE)


def restarts_in_place(spec: JobSpec) -> bool:
    """`restartStrategy: InPlace` on a job that can restart whole (one with a replica type
    ps-lite or AutoTVM cannot replace alone, docs/restarts.md#in-place)."""
    return spec.run_policy.restart_strategy is RestartStrategy.IN_PLACE and any(
        rtype in WHOLE_JOB_TYPES for rtype in spec.replicas
    )


_WHO = {JobMode.TRAIN: "ps-lite", JobMode.TUNE: "AutoTVM's RPC tracker"}


class Step(Enum):
    """The steps of a whole-job restart, as the status message tells them."""

    RECORDING = "run {run} is recorded first, then every pod is deleted"
    DELETING = "every pod of run {old} is deleted, then run {run} starts with new pods"
    CREATING = "run {run} starts with new pods"


#: The same steps of a restart in place (docs/restarts.md#in-place).
IN_PLACE_WORDS = {
    Step.RECORDING: "run {run} is recorded first, then every pod restarts in place",
    Step.DELETING: "every pod of run {old} restarts in place, then run {run} is released",
    Step.CREATING: "run {run} is released in place",
}


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A whole-job restart: the run it starts and what that run begins from."""

    run: int
    attempt: int
    restarts_before: dict[Slot, int]
    cause: str
    moment: datetime | None
    #: Whole-job restarts for edits in a row that led to this run; 0 when a failure did.
    edits: int = 0
    #: Whether the run's pods read a config of their own (`config_map_name(job, run)`); a record
    #: an earlier version wrote names none, and its run read `<job>-mxjob-config`.
    own_config: bool = True
    #: Whether the run's pods restart in place (restartStrategy InPlace, and not a resize: a
    #: resized run's pods need another environment, docs/restarts.md#in-place).
    in_place: bool = False
    #: The run whose Kueue pod group this run's pods join: a run restarted in place keeps the
    #: group (and the admitted Workload) of the run its pods were made in; None: its own.
    group: int | None = None

    def start(self, slot: Slot) -> RunStart:
        """Where this run begins for one slot."""
        return RunStart(
            run=self.run, attempt=self.attempt, restarts_before=self.restarts_before.get(slot, 0)
        )

    def message(self, step: Step) -> str:
        """The Restarting message of one step; each is written only once its step is reached,
        so the parent status showing it proves the step was observed (docs/run-policy.md)."""
        words = IN_PLACE_WORDS[step] if self.in_place else step.value
        return f"{self.cause}; {words.format(run=self.run, old=self.run - 1)}."


def _slot_key(slot: Slot) -> str:
    return f"{slot.rtype.value}/{slot.index}"


def _read_counts(job: Job, text: str | None) -> dict[Slot, int] | None:
    raw = parsed_json(text)
    if not isinstance(raw, dict):
        return None
    slots = {_slot_key(slot): slot for slot in job.slots()}
    counts = {slots[k]: v for k, v in raw.items() if k in slots and isinstance(v, int)}
    return {slot: count for slot, count in counts.items() if count > 0}


def observed_record(
    job: Job, config_maps: dict[str, ConfigMap]
) -> tuple[RunRecord | None, ConfigMap | None]:
    """The newest well-formed run record among the observed ConfigMaps, and its object."""
    found: list[tuple[int, ConfigMap]] = []
    for name, child in config_maps.items():
        run = run_from_record_name(job.name, name)
        if run is not None:
            found.append((run, child))
    for run, child in sorted(found, key=lambda item: -item[0]):
        data = child.data or {}
        counts = _read_counts(job, data.get("restartsBefore"))
        attempt = _count(data.get("attempt"))
        cause = data.get("cause")
        if counts is None or cause is None or attempt is None:
            continue
        record = RunRecord(
            run=run,
            attempt=attempt,
            restarts_before=counts,
            cause=cause,
            moment=parse_time(data.get("time")),
            edits=_count(data.get("edits")) or 0,
            own_config=CONFIG_KEY in data,
            in_place=data.get(STRATEGY_KEY) == RestartStrategy.IN_PLACE.value,
            group=_count(data.get(GROUP_KEY)),
        )
        return record, child
    return None, None


#: The record's key naming the config ConfigMap its run's pods read.
CONFIG_KEY = "config"
#: The record's key saying its run restarts in place (absent: its pods are made again).
STRATEGY_KEY = "strategy"
#: The record's key naming the run whose Kueue pod group its run's pods join (absent: its own).
GROUP_KEY = "group"


def _count(text: str | None) -> int | None:
    """A count the hook wrote in a record (up to 9 ASCII digits); None for anything else."""
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > 9:
        return None
    return int(text)


def record_config_map(job: Job, record: RunRecord) -> dict[str, Any]:
    """The run record as a child ConfigMap (immutable: it is written once)."""
    counts = {_slot_key(slot): n for slot, n in sorted(record.restarts_before.items())}
    data = {
        "run": str(record.run),
        "attempt": str(record.attempt),
        "restartsBefore": json.dumps(counts, separators=(",", ":"), sort_keys=True),
        "cause": record.cause,
        CONFIG_KEY: config_map_name(job.name, record.run),
    }
    if record.moment is not None:
        data["time"] = format_time(record.moment)
    if record.edits:
        data["edits"] = str(record.edits)
    if record.in_place:
        data[STRATEGY_KEY] = RestartStrategy.IN_PLACE.value
    if record.group is not None:
        data[GROUP_KEY] = str(record.group)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": run_record_name(job.name, record.run),
            "namespace": job.namespace,
            "labels": job_labels(job.name),
        },
        "immutable": True,
        "data": data,
    }


def current_run(record: RunRecord | None, pods: dict[Slot, list[ObservedPod]]) -> int:
    """The newest run any observed child shows; a pod held back in place says nothing here:
    its run is the annotation it was restarted for, which anyone who may edit the pod could
    have written (`within_records` keeps it to this run)."""
    runs = [p.run for attempts in pods.values() for p in attempts if not p.held]
    return max([record.run if record else 0, *runs])


def within_records(pods: dict[Slot, list[ObservedPod]], run: int) -> dict[Slot, list[ObservedPod]]:
    """Pods held back in place for a run past `run` (the newest the records and running pods
    know), held for `run`."""
    return {
        slot: [msgspec.structs.replace(p, run=run) if p.held and p.run > run else p for p in found]
        for slot, found in pods.items()
    }


def _run_start(
    record: RunRecord | None, run: int, pods: dict[Slot, list[ObservedPod]], slot: Slot
) -> RunStart:
    """Where the current run begins for a slot; without its record, past every observed name."""
    if record is not None and record.run == run:
        return record.start(slot)
    if run == 0:
        return RunStart()
    newest = max((p.attempt for attempts in pods.values() for p in attempts), default=0)
    return RunStart(run=run, attempt=newest + 1)


def _trigger(job: Job, plan: SlotPlan, no_rejoin: str | None) -> tuple[int, str] | None:
    """Whether this slot's state restarts the whole job: the restarts it adds and the words.

    A failed (or deleted) pod restarts the whole job when a failurePolicy rule says RestartJob
    (any type), when its type cannot be replaced alone, or when it is a Worker of a ps-lite run
    whose Scheduler cannot take a replaced Worker back (`no_rejoin` says why). A deleted pod
    does so at once: it is going, whether or not the hook sees it end."""
    pod = plan.current
    if pod is not None and pod.evicted:
        # Kueue took the admission back and stops every pod of the group: never the job's
        # fault, whatever the type and the restartPolicy (docs/scheduling.md#preemption).
        return 0, describe_exit(pod)
    if pod is None or plan.fatal is not None or plan.verdict is None:
        return _in_place(job, plan)
    verdict = plan.verdict
    added = plan.restarts - plan.counted if plan.create_attempt is not None else verdict.added
    if verdict.action is Action.RESTART_JOB:
        return added, describe_exit(pod, verdict)
    if (
        no_rejoin is not None
        and plan.slot.rtype is ReplicaType.WORKER
        and through_ps_lite(job.spec)
    ):
        return added, f"{describe_exit(pod, verdict)}, and {no_rejoin}"
    if plan.slot.rtype not in WHOLE_JOB_TYPES:
        return None
    return added, describe_exit(pod, verdict) + _alone(job, plan.slot)


def _alone(job: Job, slot: Slot) -> str:
    return f", and {_WHO[job.spec.mode]} cannot replace a {slot.rtype.value} alone"


def _in_place(job: Job, plan: SlotPlan) -> tuple[int, str] | None:
    """A Scheduler or Server (TunerTracker, Tuner) the kubelet already restarted in place: its
    restartCount already counts that restart."""
    pod = plan.current
    if pod is None or plan.fatal is not None or plan.slot.rtype not in WHOLE_JOB_TYPES:
        return None
    policy = job.spec.replicas[plan.slot.rtype].restart_policy
    if policy in _IN_PLACE and pod.restart_count > 0:
        words = f"was restarted in place by the kubelet ({pod.restart_count} restarts)"
        return 0, words + _alone(job, plan.slot)
    return None


def decide_restart(
    job: Job, run: int, plans: list[SlotPlan], no_rejoin: str | None = None
) -> RunRecord | None:
    """A whole-job restart when a Scheduler/Server (TunerTracker/Tuner) of the run failed in a
    retryable way, was restarted in place, or is being taken away by the cluster, or when a
    failurePolicy rule said RestartJob for any failed pod, or when a Worker fails in a ps-lite
    run whose Scheduler cannot take it back (`no_rejoin`: why); else None."""
    for plan in plans:
        trigger = _trigger(job, plan, no_rejoin)
        if trigger is None or plan.current is None:
            continue
        added, words = trigger
        counts = {p.slot: p.counted for p in plans}
        counts[plan.slot] += added
        newest = _newest(plans, [])
        pod = plan.current
        cause = (
            f"MXJob {job.name} is restarting the whole job: {replica_words(plan.slot, pod)} {words}"
        )
        return RunRecord(
            run=run + 1,
            attempt=newest + 1,
            restarts_before={slot: n for slot, n in counts.items() if n > 0},
            cause=cause,
            moment=pod.failed_at,
            in_place=restarts_in_place(job.spec),
        )
    return None


def stall_restart(
    job: Job, run: int, plans: list[SlotPlan], found: stall.Stall | None
) -> RunRecord | None:
    """A whole-job restart of a stalled run (`found`, hooks/core/restart/stall.py), unless an
    onStall rule fails the job instead; counted toward backoffLimit on the first Worker, dated
    when the progress deadline ran out."""
    if found is None or found.verdict.action is not Action.RESTART_JOB:
        return None
    counts = {p.slot: p.counted for p in plans}
    first = next(p.slot for p in plans if p.slot.rtype is ReplicaType.WORKER)
    counts[first] += 1
    by = f" ({found.verdict.by()})" if found.verdict.rule else ""
    return RunRecord(
        run=run + 1,
        attempt=_newest(plans, []) + 1,
        restarts_before={slot: n for slot, n in counts.items() if n > 0},
        cause=f"MXJob {job.name} is restarting the whole job: {found.clock.words()}{by}",
        moment=found.moment,
        in_place=restarts_in_place(job.spec),
    )


def _grouped(fresh: RunRecord, record: RunRecord | None, run: int) -> RunRecord:
    """A run restarted in place keeps the Kueue pod group of the run it follows, which is the
    group its pods joined when they were made (a group is one Workload, admitted once)."""
    if not fresh.in_place:
        return fresh
    return replace(fresh, group=group_run(record, run))


def group_run(record: RunRecord | None, run: int) -> int:
    """The run whose Kueue pod group the pods of `run` join."""
    if record is None or record.run != run or record.group is None:
        return run
    return record.group


def run_names(
    job: Job,
    record: RunRecord | None,
    pods: dict[Slot, list[ObservedPod]],
    config_maps: dict[str, ConfigMap],
) -> RunNames:
    """The names the pods of the newest observed run reach (resize.run_names): this version's,
    or those of a run an earlier version began; and the pod group of the run they joined."""
    run = current_run(record, pods)
    shared = record is not None and record.run == run and not record.own_config
    names = resize.run_names(job, run, shared_config=shared, config_maps=config_maps)
    group = group_run(record, run)
    return names if group == run else replace(names, group=group)


def _of_the_run(plans: list[SlotPlan], extra: list[ObservedPod]) -> list[ObservedPod]:
    """Every observed pod of the run: its slots' and those of slots the spec no longer has."""
    return [p for q in plans for p in (*q.keep, q.current) if p] + extra


def _newest(plans: list[SlotPlan], extra: list[ObservedPod]) -> int:
    """The newest attempt any observed pod of the run has."""
    return max((p.attempt for p in _of_the_run(plans, extra)), default=0)


def resize_restart(
    job: Job,
    run: int,
    plans: list[SlotPlan],
    extra: list[ObservedPod],
    words: str | None,
    record: RunRecord | None,
    now: datetime,
) -> RunRecord | resize.EditWait | None:
    """A whole-job restart at the spec's new size when the running processes were started
    with another cluster (`words` say how it changed, hooks/core/restart/resize.py): not counted
    toward backoffLimit, dated by the spec's change; or, while the run `record` started has not
    run its wait (edits in a row) or the job's name leaves no room for its names, why not."""
    if words is None or not (extra or any(p.current is not None for p in plans)):
        return None
    edits = record.edits if record is not None and record.run == run else 0
    started = earliest(*(p.created for p in _of_the_run(plans, extra)))
    waits = resize.held(job, words, edits, started, now)
    if waits is not None:
        return waits
    return RunRecord(
        run=run + 1,
        attempt=_newest(plans, extra) + 1,
        restarts_before={p.slot: p.counted for p in plans if p.counted > 0},
        cause=f"MXJob {job.name} is restarting the whole job: {words}",
        moment=job.spec_changed,
        edits=resize.edits_in_a_row(edits, started, now),
    )


def _held(plans: list[SlotPlan], record: RunRecord) -> list[SlotPlan]:
    """The run's plans while it is being restarted: nothing created, restarts as recorded."""
    return [
        msgspec.structs.replace(
            p, create_attempt=None, restarts=record.start(p.slot).restarts_before
        )
        for p in plans
    ]


def _in_progress(record: RunRecord | None, run: int, plans: list[SlotPlan], *, old: bool) -> bool:
    """Whether the restart into `run` is still under way: older pods observed, or no pod of
    the run has started yet."""
    if record is None or record.run != run:
        return False
    return old or all(p.current is None or p.current.phase is PodPhase.PENDING for p in plans)


def _shows(previous: PreviousStatus, message: str) -> bool:
    """Whether the parent status shows Restarting=True with this message (or it extended)."""
    return previous.shows(ConditionType.RESTARTING, message)


def may_delete_old_run(
    previous: PreviousStatus, record: RunRecord | None, plans: list[SlotPlan]
) -> bool:
    """Older pods may go once the new run is observed, or once the parent status shows the
    deleting or the creating step, each written only after the record was observed."""
    if any(p.current is not None for p in plans):
        return True
    steps = (Step.DELETING, Step.CREATING)
    return record is not None and any(_shows(previous, record.message(s)) for s in steps)


def may_create_run(previous: PreviousStatus, restart: RunRecord | None, *, old: bool) -> bool:
    """New pods of a restarted run only once no older pod is observed and the parent status
    shows the creating step, written only after that was observed."""
    if old:
        return False
    return restart is None or _shows(previous, restart.message(Step.CREATING))


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """The whole job on one sync: the current run's slot plans, older pods still observed, pods
    of the run whose slots the spec no longer has, the whole-job restart decided now (`fresh`)
    or under way (`restart`) at its `step`, an edit that waits to restart the run, and the
    gates the parent status opens: `creating`, `keeps_old`, `replacing`."""

    plans: list[SlotPlan]
    old: list[ObservedPod]
    extra: list[ObservedPod]
    fresh: RunRecord | None
    restart: RunRecord | None
    step: Step
    #: An edit of the spec that does not restart the run yet, or cannot (resize.held).
    waits: resize.EditWait | None = None
    #: The run's stall, judged once here: restarted with the run, or failed by the outcome.
    stalled: stall.Stall | None = None
    #: Whether the run's new pods may be made: no edit waits to restart it (a pod would be made
    #: from the edited spec, not from the cluster its run started with:
    #: docs/restarts.md#edits-in-a-row), no older pod may still run, and a restart under way
    #: shows its creating step (`may_create_run`). Read from the parent status by plan_run;
    #: until then nothing is made.
    creating: bool = False
    #: Whether the older run's pods stay listed: until the new run is observed or the parent
    #: status shows the deleting or the creating step (`may_delete_old_run`). Read from the
    #: parent status by plan_run; until then nothing is deleted.
    keeps_old: bool = True

    @property
    def old_alive(self) -> bool:
        return _alive(self.old)

    @property
    def replacing(self) -> bool:
        """Whether a config ConfigMap, PodGroup or Service that differs from what the run
        needs is made again (docs/restarts.md#resizing): between runs, once the parent status
        shows the restart past its record (as for deleting the older run's pods:
        docs/run-policy.md#stale-cache-safety), or with no restart at all."""
        return self.between_runs and (self.restart is None or not self.keeps_old)

    @property
    def between_runs(self) -> bool:
        """No pod of the current run is observed but pods held back in place for it: the run
        has not started, or a restart is on its way into it."""
        return not self.extra and all(p.current is None or p.current.held for p in self.plans)

    @property
    def in_place(self) -> bool:
        """The restart under way restarts the pods in place (docs/restarts.md#in-place)."""
        return self.restart is not None and self.restart.in_place

    @property
    def movable(self) -> list[ObservedPod]:
        """The older run's pods that restart in place: running ones, not on their way out (a
        pod that ended cannot restart in place: it is made again)."""
        if not self.in_place:
            return []
        return [p for p in self.old if p.active and not p.lost]


def _alive(old: list[ObservedPod]) -> bool:
    """Whether a pod of an older run may still run: one that has ended cannot, even while a
    finalizer keeps it (Kueue removes its own only once the replacements exist), and one lost
    with its node counts as ended (docs/restarts.md, "Lost nodes")."""
    return any(p.phase not in FINISHED_PHASES and not p.lost for p in old)


def _no_rejoin(current: list[tuple[Slot, ObservedPod]], starts: dict[Slot, RunStart]) -> str | None:
    """Why the run's ps-lite Scheduler cannot take a replaced Worker back, if it cannot: MXNet
    1.9.1's Scheduler takes back one replaced node in its life and aborts on the next
    (docs/restarts.md, "One replaced Worker per run"), and one this hook did not make (adopted
    from training-operator) runs without the ps-lite heartbeats a replacement needs to register
    (docs/environment.md#ps-lite-heartbeats, docs/migration.md)."""
    if any(slot.rtype is ReplicaType.SCHEDULER and p.foreign for slot, p in current):
        return (
            "its Scheduler, not made by this controller, has no ps-lite heartbeats"
            " to take a replaced Worker back"
        )
    if any(
        slot.rtype is ReplicaType.WORKER and p.attempt > starts[slot].attempt for slot, p in current
    ):
        return "ps-lite's Scheduler takes back only one replaced Worker in its life"
    return None


def plan_run(
    job: Job,
    observed: dict[Slot, list[ObservedPod]],
    record: RunRecord | None,
    now: datetime,
    previous: PreviousStatus,
    *,
    resized: str | None = None,
) -> RunPlan:
    """Plan every slot within the newest observed run, decide or continue its restart, and
    read its gates (`creating`, `keeps_old`) in the `previous` parent status.

    `now` tells only which pods are lost with their node: those count as failed, and an older
    run's lost pods as gone (docs/restarts.md, "Lost nodes"). A pod of the run deleted after
    the job's own suspension (`previous.suspended_until`) was deleted by someone else and is
    judged as failed at once. `resized` says how the spec's cluster differs from the one the
    run started with (hooks/core/restart/resize.py): that restarts the whole job, once the run
    has run the wait of edits in a row (compared with `now` too)."""
    plan = _plan_run(job, observed, record, now, previous.suspended_until, resized)
    return replace(
        plan,
        creating=plan.waits is None and may_create_run(previous, plan.restart, old=plan.old_alive),
        keeps_old=not may_delete_old_run(previous, record, plan.plans),
    )


def _plan_run(
    job: Job,
    observed: dict[Slot, list[ObservedPod]],
    record: RunRecord | None,
    now: datetime,
    own_until: datetime | None,
    resized: str | None,
) -> RunPlan:
    """The run's slot plans and its restart, before its gates are read (`plan_run`)."""
    pods = {slot: [p.settled(now) for p in attempts] for slot, attempts in observed.items()}
    run = current_run(record, pods)
    pods = within_records(pods, run)
    slots = job.slots()
    old, extra = _outside(pods, run, set(slots))
    alive = _alive(old)
    starts = {slot: _run_start(record, run, pods, slot) for slot in slots}
    of_run = _of_runs(pods, run, own_until, starts, record)
    plans = [_plan(job, slot, of_run[slot], starts[slot]) for slot in slots]
    waits = None
    stalled = stall.judge(job, plans, now)
    if not alive:
        no_rejoin = _no_rejoin([(s, p) for s in slots for p in of_run[s]], starts)
        fresh = (
            decide_restart(job, run, plans, no_rejoin)
            or resize_restart(job, run, plans, extra, resized, record, now)
            or stall_restart(job, run, plans, stalled)
        )
        if isinstance(fresh, RunRecord):
            fresh = _grouped(fresh, record, run)
            held = _held(plans, fresh)
            step = Step.RECORDING
            return RunPlan(
                plans=held,
                old=old,
                extra=extra,
                fresh=fresh,
                restart=fresh,
                step=step,
                stalled=stalled,
            )
        waits = fresh
    restart = record if _in_progress(record, run, plans, old=alive) else None
    step = Step.DELETING if alive else Step.CREATING
    return RunPlan(
        plans=plans,
        old=old,
        extra=extra,
        fresh=None,
        restart=restart,
        step=step,
        waits=waits,
        stalled=stalled,
    )


def _outside(
    pods: dict[Slot, list[ObservedPod]], run: int, wanted: set[Slot]
) -> tuple[list[ObservedPod], list[ObservedPod]]:
    """Pods outside the run's slots: those of earlier runs, and those of this run in slots the
    spec no longer has (a job resized down), each in slot order."""
    ordered = sorted(pods.items())
    old = [p for _, attempts in ordered for p in attempts if p.run < run]
    extra = [
        p for slot, attempts in ordered if slot not in wanted for p in attempts if p.run == run
    ]
    return old, extra


def _plan(job: Job, slot: Slot, pods: list[ObservedPod], start: RunStart) -> SlotPlan:
    """The slot's next step under its replica type's restartPolicy and the failure rules."""
    policy = job.spec.replicas[slot.rtype].restart_policy
    return plan_slot(slot, policy, pods, start, job.spec.run_policy.failure_rules)


def _of_runs(
    pods: dict[Slot, list[ObservedPod]],
    run: int,
    own_until: datetime | None,
    starts: dict[Slot, RunStart],
    record: RunRecord | None,
) -> dict[Slot, list[ObservedPod]]:
    """Every slot's pods of the run (`_of_run`), those that came into it in place (its
    `record` says so) with the run's restarts before."""
    moved = record is not None and record.run == run and record.in_place
    return {
        slot: _of_run(pods.get(slot, []), run, own_until, start if moved else None)
        for slot, start in starts.items()
    }


def _of_run(
    attempts: list[ObservedPod], run: int, own_until: datetime | None, moved: RunStart | None
) -> list[ObservedPod]:
    """A slot's pods of the run, each judged deleted if someone else deleted it. With `moved`
    (the run's start, when it restarted in place), a pod made before the run (an attempt
    before its first) came into it in place: its restarts before are the run's."""
    found = [judged_deleted(p, own_until) for p in attempts if p.run == run]
    if moved is None:
        return found
    return [
        msgspec.structs.replace(p, restarts_before=moved.restarts_before)
        if p.attempt < moved.attempt
        else p
        for p in found
    ]


class InPlaceOrder(TypedDict):
    """`status.inPlaceRestart`: what the restarter component carries to the job's pods
    (docs/restarts.md#in-place): restart them for `run`, then, with `go`, release them."""

    run: int
    go: bool


def in_place_order(plan: RunPlan, record: RunRecord | None, *, go: bool) -> InPlaceOrder | None:
    """The order of a restart in place under way: from the sync that sees its record (the
    record is made first, as for any restart, and the older pods restart once they may go:
    `keeps_old`) until no pod of the run is held back any more; `go` once the run's new pods
    are admitted (every older pod restarted, the step shown)."""
    run = plan.plans[0].run if plan.plans else 0
    if record is None or not record.in_place or record.run != run or plan.fresh is not None:
        return None
    waiting = any(p.current is not None and p.current.held for p in plan.plans)
    if plan.restart is None and not waiting:
        return None
    if plan.keeps_old:
        return None
    return {"run": run, "go": go}

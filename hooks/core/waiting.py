"""What a job whose pods are not all placed waits for, in words for its status: its gang
scheduler or its Kueue queue (docs/scheduling.md#while-a-job-waits)."""

from hooks.core.children import PodGroup
from hooks.core.gang import PLUGINS_SCHEDULER, VOLCANO_SCHEDULER, Gang, admits_new_pods, min_member
from hooks.core.job import Job
from hooks.core.observed import FINISHED_PHASES, ObservedPod, quoted
from hooks.core.queueing import ADMISSION_GATE, queue_group

_SCHEDULERS = {Gang.VOLCANO: VOLCANO_SCHEDULER, Gang.SCHEDULER_PLUGINS: PLUGINS_SCHEDULER}


def waiting_for(job: Job, group: PodGroup | None, pods: list[ObservedPod]) -> str | None:
    """Why the job's current pods are not all bound yet, if its queue or its gang scheduler
    holds them."""
    return _queued(job, pods) or _gang(job, group, pods)


def _queued(job: Job, pods: list[ObservedPod]) -> str | None:
    if job.queue is None:
        return None
    gated = [p for p in _alive(pods) if ADMISSION_GATE in p.gates]
    if not gated:
        return None
    return (
        f"queued by Kueue in LocalQueue {job.queue.name}: {len(gated)} of "
        f"{job.spec.total_replicas} pods wait for the Workload "
        f"{queue_group(job.name, gated[0].run)} to be admitted"
    )


def _alive(pods: list[ObservedPod]) -> list[ObservedPod]:
    return [p for p in pods if p.phase not in FINISHED_PHASES and not p.terminating]


def _gang(job: Job, group: PodGroup | None, pods: list[ObservedPod]) -> str | None:
    if job.gang is None:
        return None
    wanted = min_member(job.spec)
    if not admits_new_pods(job.gang, group):
        phase = (group.status.phase if group is not None else None) or "not seen yet"
        words = f"waiting for Volcano to admit PodGroup {job.name} ({wanted} pods; phase {phase})"
        return _with_condition(words, group)
    alive = _alive(pods)
    bound = sum(1 for p in alive if p.node)
    if not alive or bound == len(alive):
        return None
    scheduler = next((p.scheduler for p in alive if p.scheduler), _SCHEDULERS[job.gang])
    words = f"waiting for its gang: {scheduler} has bound {bound} of {wanted} pods"
    blocked = next((p.blocked for p in alive if p.blocked), None)
    return _with_condition(words, group) if blocked is None else f"{words}; {blocked}"


def _with_condition(words: str, group: PodGroup | None) -> str:
    """The words, with the PodGroup's newest condition and its message where it has one."""
    conditions = group.status.conditions if group is not None else []
    if not conditions:
        return words
    latest = conditions[-1]
    reason = latest.reason or latest.type
    return quoted(f"{words}; {reason}", latest.message) if reason else words

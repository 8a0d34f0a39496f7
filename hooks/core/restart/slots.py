"""Restart rules (docs/restarts.md): how each replica slot moves on after a failure.

Which failures are retried, and whether a retry counts, is the failure policy's verdict
(`failure_policy.judge`: the user's rules, then the restartPolicy's). Each replacement gets the
next attempt name and an annotation with the restarts before it, so the attempt count and restart
total never depend on hook memory or parent status.
"""

import msgspec

from hooks.core.api import RestartPolicy
from hooks.core.failure_policy import Action, Rule, Verdict, judge
from hooks.core.failures import last_line
from hooks.core.naming import MAX_ATTEMPT, Slot
from hooks.core.observed import ObservedPod, PodPhase

SIGKILL_EXIT = 137

EXIT_MEANINGS = {
    1: "general error",
    2: "misuse of shell builtins",
    126: "command cannot execute",
    127: "command not found",
    128: "invalid argument to exit",
    130: "terminated by Control-C (SIGINT)",
    137: "killed (SIGKILL), often out of memory",
    138: "user-requested retry",
    139: "segmentation fault (SIGSEGV)",
    143: "terminated (SIGTERM)",
}


def replica_words(slot: Slot, pod: ObservedPod | None = None) -> str:
    """`Worker replica 2 (pod x-worker-2-r1)`: names a replica the way users look it up."""
    where = f" (pod {pod.name})" if pod else ""
    return f"{slot.rtype.value} replica {slot.index}{where}"


def describe_exit(pod: ObservedPod, retried: Verdict | None = None) -> str:
    """Words for how a pod ended, for condition messages: what the kubelet and the cluster
    said of it (exit code, its meaning, the termination reason, a deletion, a lost node) and
    the last line of its termination message (a traceback's exception: docs/status.md).

    `retried`: the failure policy's verdict on a pod that is retried; it says whether the retry
    counts, and names the user's rule that decided (docs/restarts.md#failure-policy)."""
    uncounted = pod.disrupted if retried is None else retried.added == 0
    cost = ", not counted toward backoffLimit" if uncounted else ""
    if retried is not None and retried.rule:
        cost += f", as {retried.by()} says"
    ended = _taken_away(pod, cost)
    if ended is not None:
        return ended
    deleted = "was deleted and " if pod.terminating else ""
    if pod.exit_code is None:
        why = f" ({pod.reason})" if pod.reason else ""
        return f"{deleted}failed without an exit code of its mxnet container{why}{cost}"
    said = last_line(pod.ended.message) if pod.ended is not None else None
    saying = f' saying "{said}"' if said else ""
    return f"{deleted}exited with code {pod.exit_code}{_exit_details(pod)}{saying}{cost}"


def _taken_away(pod: ObservedPod, cost: str) -> str | None:
    """Words for a pod that ended by what happened to it rather than by its process: its rejoin
    wait could not run, its node was lost, Kueue or the cluster took it, someone deleted it."""
    why = f" ({pod.reason})" if pod.reason else ""
    if pod.wait_failed is not None:
        return (
            f"could not run its rejoin wait (`sleep` in the mxnet container's image):"
            f" {pod.wait_failed}"
        )
    if pod.lost:
        return f"was lost with its node (still Terminating past its grace period){why}{cost}"
    if pod.evicted:
        return f"was stopped by Kueue ({pod.evicted}), not counted toward backoffLimit"
    if pod.disrupted:
        return f"was disrupted by the cluster{why}{cost}"
    if pod.deleted:
        # Whether it is still ending or has exited: the same words on every sync.
        return f"was deleted{cost}"
    return None


def _exit_details(pod: ObservedPod) -> str:
    """` (meaning; reason R)` of an exit code, or nothing when neither says more."""
    meaning = EXIT_MEANINGS.get(pod.exit_code) if pod.exit_code is not None else None
    if pod.reason == "OOMKilled":
        meaning = "killed for using more memory than its limit"
    elif pod.terminating and pod.exit_code == SIGKILL_EXIT:
        meaning = "killed (SIGKILL) at the end of its grace period"
    # "Error" is the kubelet's word for any non-zero exit: the code already says it.
    shown = pod.reason if pod.reason not in (None, "Error") else None
    details = "; ".join(d for d in (meaning, f"reason {shown}" if shown else None) if d)
    return f" ({details})" if details else ""


class RunStart(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How a run begins for one slot: the run, its first attempt and the restarts before it."""

    run: int = 0
    attempt: int = 0
    restarts_before: int = 0


class SlotPlan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where one slot goes next: pods to keep, an attempt to create, and what it costs. A
    Struct, as the observed pods it plans: one per slot, on every sync."""

    slot: Slot
    #: Observed pods listed again: the current attempt, and the failed one it replaces.
    keep: tuple[ObservedPod, ...] = ()
    #: The newest observed attempt of the run, if any.
    current: ObservedPod | None = None
    #: The attempt to create now (its name `-r<attempt>`), or None.
    create_attempt: int | None = None
    #: The `restarts-before` annotation of the pod created now.
    create_restarts_before: int = 0
    #: The slot's restarts, the replacement asked for now included.
    restarts: int = 0
    #: The pod whose failure its restartPolicy does not retry: the job fails.
    fatal: ObservedPod | None = None
    run: int = 0
    #: The run's first attempt of this slot: a later one replaces a pod of the run.
    first: int = 0
    #: The slot's restarts so far, without the replacement this plan asks for.
    counted: int = 0
    #: The failure policy's verdict on the current attempt, when it failed.
    verdict: Verdict | None = None

    @property
    def restarting(self) -> bool:
        """A replacement is on its way: created now, or observed but not yet running."""
        if self.create_attempt not in (None, 0):
            return True
        return (
            self.current is not None
            and self.current.attempt > 0
            and self.current.phase is PodPhase.PENDING
        )


def plan_slot(
    slot: Slot,
    policy: RestartPolicy,
    attempts: list[ObservedPod],
    start: RunStart,
    rules: tuple[Rule, ...] = (),
) -> SlotPlan:
    """Decide one slot from its observed attempts of the current run (oldest first).

    The newest failed attempt stays listed beside its replacement until that replacement fails
    in turn: the attempt count survives the loss of the replacement, `kubectl logs` still shows
    why it failed, and a response fed back as observed children asks for nothing new.
    """
    if not attempts:
        before = start.restarts_before
        return SlotPlan(
            slot=slot,
            create_attempt=start.attempt,
            create_restarts_before=before,
            restarts=before,
            run=start.run,
            first=start.attempt,
            counted=before,
        )
    current = attempts[-1]
    so_far = current.restarts_before + current.restart_count
    # A pod someone deleted is judged from the moment the hook sees the deletion, as failed
    # without an exit code, so what its process does with SIGTERM (and whether the hook sees it
    # end at all) changes nothing; it is replaced once it has ended.
    ended = current.phase is PodPhase.FAILED or (
        current.deleted and current.phase is PodPhase.SUCCEEDED
    )
    if not ended:
        predecessor = attempts[-2] if len(attempts) > 1 else None
        replaced = predecessor is not None and predecessor.phase is PodPhase.FAILED
        still = SlotPlan(
            slot=slot,
            keep=(predecessor, current) if predecessor and replaced else (current,),
            current=current,
            restarts=so_far,
            run=start.run,
            first=start.attempt,
            counted=so_far,
        )
        if not current.deleted:
            return still
        verdict = judge(rules, policy, slot.rtype, current.as_failed())
        fatal = current if verdict.action is Action.FAIL_JOB else None
        return msgspec.structs.replace(still, fatal=fatal, verdict=verdict)
    verdict = judge(rules, policy, slot.rtype, current.as_failed())
    if verdict.action is Action.FAIL_JOB or current.attempt >= MAX_ATTEMPT:
        return SlotPlan(
            slot=slot,
            keep=(current,),
            current=current,
            restarts=so_far,
            fatal=current,
            run=start.run,
            first=start.attempt,
            counted=so_far,
            verdict=verdict,
        )
    after = so_far + verdict.added
    return SlotPlan(
        slot=slot,
        keep=(current,),
        current=current,
        create_attempt=current.attempt + 1,
        create_restarts_before=after,
        restarts=after,
        run=start.run,
        first=start.attempt,
        counted=so_far,
        verdict=verdict,
    )

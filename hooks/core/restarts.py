"""Restart rules (docs/restarts.md): which failures are retried, and how each replica slot moves on.

Each replacement gets the next attempt name and an annotation with the restarts before it, so
the attempt count and restart total never depend on hook memory or parent status. A disruption
(the cluster took the pod away) is retried but not counted toward backoffLimit: it is not the
job's fault, as Kubernetes Jobs users get with podFailurePolicy `Ignore` on DisruptionTarget.
"""

from dataclasses import dataclass
from enum import Enum

from hooks.core.api import RestartPolicy
from hooks.core.naming import MAX_ATTEMPT, Slot
from hooks.core.observed import ObservedPod, PodPhase

SIGKILL_EXIT = 137
#: SIGINT, SIGKILL, SIGTERM, and 138 which users raise to ask for a retry.
RETRYABLE_EXIT_CODES = frozenset({130, 137, 138, 143})

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


class Retry(Enum):
    """What a failed pod means for its slot."""

    REPLACE = "replace"
    FATAL = "fatal"


def is_retryable(pod: ObservedPod) -> bool:
    """Whether a failed pod may be retried under ExitCode: a disruption always may."""
    return pod.disrupted or exit_is_retryable(pod.exit_code)


def counts_toward_backoff(pod: ObservedPod) -> int:
    """What replacing this failed pod adds to the restart count: 0 for a disruption."""
    return 0 if pod.disrupted else 1


def exit_is_retryable(exit_code: int | None) -> bool:
    """Whether a failed pod's mxnet exit code allows a retry under ExitCode.

    Retryable: the signal codes above; no exit code (evicted, node lost, preempted); and 0,
    which on a failed pod means another container failed it, not the training process.
    """
    return exit_code is None or exit_code == 0 or exit_code in RETRYABLE_EXIT_CODES


def on_failure(policy: RestartPolicy, pod: ObservedPod) -> Retry:
    """Never fails the job; ExitCode judges the mxnet exit code; Always/OnFailure replace. A
    rejoin wait that could not run would fail the same way in every replacement: fatal."""
    if policy is RestartPolicy.NEVER or pod.wait_failed is not None:
        return Retry.FATAL
    if policy is RestartPolicy.EXIT_CODE and not is_retryable(pod):
        return Retry.FATAL
    return Retry.REPLACE


def replica_words(slot: Slot, pod: ObservedPod | None = None) -> str:
    """`Worker replica 2 (pod x-worker-2-r1)`: names a replica the way users look it up."""
    where = f" (pod {pod.name})" if pod else ""
    return f"{slot.rtype.value} replica {slot.index}{where}"


def describe_exit(pod: ObservedPod) -> str:
    """Words for how a pod ended, for condition messages: what the kubelet and the cluster
    said of it (exit code, its meaning, the termination reason, a deletion, a lost node)."""
    why = f" ({pod.reason})" if pod.reason else ""
    if pod.wait_failed is not None:
        return (
            f"could not run its rejoin wait (`sleep` in the mxnet container's image):"
            f" {pod.wait_failed}"
        )
    if pod.lost:
        cost = ", not counted toward backoffLimit" if pod.disrupted else ""
        return f"was lost with its node (still Terminating past its grace period){why}{cost}"
    if pod.disrupted:
        return f"was disrupted by the cluster{why}, not counted toward backoffLimit"
    deleted = "was deleted and " if pod.terminating else ""
    if pod.exit_code is None:
        return f"{deleted}failed without an exit code of its mxnet container{why}"
    meaning = EXIT_MEANINGS.get(pod.exit_code)
    if pod.reason == "OOMKilled":
        meaning = "killed for using more memory than its limit"
    elif pod.terminating and pod.exit_code == SIGKILL_EXIT:
        meaning = "killed (SIGKILL) at the end of its grace period"
    # "Error" is the kubelet's word for any non-zero exit: the code already says it.
    shown = pod.reason if pod.reason not in (None, "Error") else None
    details = "; ".join(d for d in (meaning, f"reason {shown}" if shown else None) if d)
    return f"{deleted}exited with code {pod.exit_code}" + (f" ({details})" if details else "")


@dataclass(frozen=True, kw_only=True)
class RunStart:
    """How a run begins for one slot: the run, its first attempt and the restarts before it."""

    run: int = 0
    attempt: int = 0
    restarts_before: int = 0


@dataclass(frozen=True, kw_only=True)
class SlotPlan:
    """Where one slot goes next: pods to keep, an attempt to create, and what it costs."""

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
    #: The slot's restarts so far, without the replacement this plan asks for.
    counted: int = 0

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
    slot: Slot, policy: RestartPolicy, attempts: list[ObservedPod], start: RunStart
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
            counted=before,
        )
    current = attempts[-1]
    so_far = current.restarts_before + current.restart_count
    if current.phase is not PodPhase.FAILED:
        predecessor = attempts[-2] if len(attempts) > 1 else None
        replaced = predecessor is not None and predecessor.phase is PodPhase.FAILED
        return SlotPlan(
            slot=slot,
            keep=(predecessor, current) if predecessor and replaced else (current,),
            current=current,
            restarts=so_far,
            run=start.run,
            counted=so_far,
        )
    if on_failure(policy, current) is Retry.FATAL or current.attempt >= MAX_ATTEMPT:
        return SlotPlan(
            slot=slot,
            keep=(current,),
            current=current,
            restarts=so_far,
            fatal=current,
            run=start.run,
            counted=so_far,
        )
    after = so_far + counts_toward_backoff(current)
    return SlotPlan(
        slot=slot,
        keep=(current,),
        current=current,
        create_attempt=current.attempt + 1,
        create_restarts_before=after,
        restarts=after,
        run=start.run,
        counted=so_far,
    )

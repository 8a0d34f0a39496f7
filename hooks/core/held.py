"""What a pod that restarts in place says of its run (docs/restarts.md#in-place).

Its name and its `run` annotation are those it was made with; the run it runs now its `go`
annotation says, which released it (hooks/core/build/inplace.py): kept by the API server, where
the barrier's termination message was seen to go (the real node). A RestartAllContainers restart
overwrites every container's last state (exit 137, reason RestartingAllContainers), so only
current states count:
- a pod whose barrier does not hold it runs the run its `go` annotation released it into; with
  none, it was made in run 0 and never restarted (a pod made for a later run carries that run's
  `go`). Its `run` annotation cannot say: the restarter component writes it with `restart`
  (the next run's MXJOB_RUN), before the pod's processes stop;
- a barrier that runs holds the pod's processes back, for the run its `restart` annotation
  asks for (the annotation the restart came from; hooks/core/restart/runs.py keeps it within
  the runs the records know);
- while the kubelet restarts every container (the restarter exited 86, the condition
  AllContainersRestarting, a container ended with reason RestartingAllContainers) the pod may
  show phase Failed for a moment (seen on the real node): it is held, not failed.
"""

import msgspec

from hooks.core.api import BARRIER_CONTAINER, MXNET_CONTAINER, RESTARTER_CONTAINER
from hooks.core.children import ContainerStatus


class InPlace(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An in-place pod's own word on its run."""

    #: The run it runs, or is held for; None where only its `run` annotation can say.
    run: int | None
    #: Its barrier holds it: none of its processes runs.
    held: bool


#: The kubelet's words for a pod whose containers it restarts in place (KEP-5532).
RESTARTING_CONDITION = "AllContainersRestarting"
RESTARTING_REASON = "RestartingAllContainers"
#: The restarter's exit code that restarts every container (hooks/core/build/inplace.py).
RESTARTER_EXIT = 86


def in_place(
    statuses: list[ContainerStatus],
    inits: list[ContainerStatus],
    annotations: tuple[str | None, str | None],
    *,
    restarting: bool,
) -> InPlace | None:
    """The in-place facts of a pod with a barrier (its containers' and init containers'
    statuses, its `restart` and `go` annotations, whether its AllContainersRestarting
    condition is true); None for any other pod."""
    barrier = next((s for s in inits if s.name == BARRIER_CONTAINER), None)
    if barrier is None:
        return None
    restart, go = annotations
    if _held(statuses, inits, barrier, restarting=restarting):
        return InPlace(run=_run(restart), held=True)
    return InPlace(run=0 if go is None else _run(go), held=False)


def _held(
    statuses: list[ContainerStatus],
    inits: list[ContainerStatus],
    barrier: ContainerStatus,
    *,
    restarting: bool,
) -> bool:
    """Held: the kubelet restarts the pod in place or its barrier holds it, and its mxnet
    container has stopped (the restarter's exit, or the condition, comes before the kubelet
    kills it: the real node showed a release then let run 1 start beside run 0)."""
    mxnet = next((s for s in statuses if s.name == MXNET_CONTAINER), None)
    if mxnet is not None and mxnet.state.running is not None:
        return False
    if restarting or _restarting([*inits, *statuses]) or barrier.state.running is not None:
        return True
    # Restarted in place, its barrier not started yet (the real node: the restarter running
    # again, the barrier waiting PodInitializing): held as well.
    return barrier.state.terminated is None and _restarted(statuses)


def _restarted(statuses: list[ContainerStatus]) -> bool:
    """Whether the mxnet container was restarted in place (its last state, or its state while
    the kubelet restarts it, says RestartingAllContainers)."""
    mxnet = next((s for s in statuses if s.name == MXNET_CONTAINER), None)
    if mxnet is None:
        return False
    ended = [s.terminated for s in (mxnet.last_state, mxnet.state) if s.terminated is not None]
    return any(t.reason == RESTARTING_REASON for t in ended)


def _restarting(statuses: list[ContainerStatus]) -> bool:
    """Whether the kubelet is restarting every container: the restarter has just exited 86,
    or a container ended, or waits, for that restart (the real node showed the pod Running,
    then Failed, with its restarter and barrier waiting with reason RestartingAllContainers)."""
    for status in statuses:
        waiting = status.state.waiting
        if waiting is not None and waiting.reason == RESTARTING_REASON:
            return True
        ended = status.state.terminated
        if ended is None:
            continue
        if ended.reason == RESTARTING_REASON:
            return True
        if status.name == RESTARTER_CONTAINER and ended.exit_code == RESTARTER_EXIT:
            return True
    return False


def _run(text: str | None) -> int | None:
    """A run number as the barrier or the restarter component wrote it (up to 9 ASCII
    digits)."""
    words = (text or "").strip()
    if words.isascii() and words.isdigit() and len(words) <= 9:
        return int(words)
    return None

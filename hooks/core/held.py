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

from hooks.core.api import BARRIER_CONTAINER, RESTARTER_CONTAINER
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
    held = restarting or _restarting([*inits, *statuses]) or barrier.state.running is not None
    if held:
        return InPlace(run=_run(restart), held=True)
    return InPlace(run=0 if go is None else _run(go), held=False)


def _restarting(statuses: list[ContainerStatus]) -> bool:
    """Whether the kubelet is restarting every container: the restarter has just exited 86,
    or a container ended for that restart."""
    for status in statuses:
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

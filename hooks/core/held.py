"""What the containers of a pod that restarts in place say of it (docs/restarts.md#in-place).

Its name and annotations are those it was made with; what it runs now only its containers say
(hooks/core/build/inplace.py):
- the barrier's termination message is the run it last released the pod into (empty at the
  pod's first start: then the run of its annotation);
- a barrier that runs holds the pod: its processes have stopped. If the restarter last exited
  86 naming a later run, the pod was stopped for that run. Otherwise its mxnet container ended
  after the release (a failure: it restarted every container instead of failing the pod), or
  the pod is between its restart and its barrier's first look.
"""

import msgspec

from hooks.core.api import BARRIER_CONTAINER, RESTARTER_CONTAINER
from hooks.core.children import ContainerStatus, Terminated
from hooks.core.timestamps import moment

#: The restarter's exit code: it restarted every container (hooks/core/build/inplace.py).
RESTARTED = 86


class InPlace(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An in-place pod's own word on its run."""

    #: The run its barrier last released it into; None before its first release told one.
    run: int | None
    #: Its barrier holds it: no process of it runs.
    held: bool
    #: The later run its restarter stopped it for, while it is held for it.
    stopped_for: int | None = None
    #: How its mxnet container ended after the last release, while it is held for that.
    failed: Terminated | None = None


def in_place(inits: list[ContainerStatus], mxnet: ContainerStatus) -> InPlace | None:
    """The in-place facts of a pod with a barrier; None for any other pod."""
    barrier = next((s for s in inits if s.name == BARRIER_CONTAINER), None)
    if barrier is None:
        return None
    passed = barrier.state.terminated or barrier.last_state.terminated
    run = _run(passed.message if passed else None)
    if barrier.state.running is None:
        return InPlace(run=run, held=False)
    restarter = next((s for s in inits if s.name == RESTARTER_CONTAINER), None)
    stopped = restarter.last_state.terminated if restarter is not None else None
    asked = _run(stopped.message) if stopped and stopped.exit_code == RESTARTED else None
    if asked is not None and asked > (run or 0):
        return InPlace(run=run, held=True, stopped_for=asked)
    return InPlace(run=run, held=True, failed=_after(mxnet.last_state.terminated, passed))


def _after(ended: Terminated | None, passed: Terminated | None) -> Terminated | None:
    """The mxnet container's end if it came after the barrier's last pass."""
    if ended is None or ended.exit_code is None:
        return None
    released = moment(passed.finished_at) if passed is not None else None
    finished = moment(ended.finished_at)
    if released is not None and finished is not None and finished < released:
        return None
    return ended


def _run(message: str | None) -> int | None:
    """A run number as the barrier or the restarter wrote it (up to 9 ASCII digits)."""
    text = (message or "").strip()
    if text.isascii() and text.isdigit() and len(text) <= 9:
        return int(text)
    return None

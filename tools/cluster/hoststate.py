"""Host settings a real node changes, saved before the first stack starts and restored after the
last one stops.

The kubelet writes a few machine-wide sysctls at start (``vm.overcommit_memory``,
``kernel.panic``, ``kernel.panic_on_oops``, …). Network sysctls are not among them: every
real-node stack lives in its own network namespace. Two stacks may run at once (a test session
beside the ``make up`` playground), so the saved values and the set of stacks holding them live
in one file under a lock: the first holder saves, the last one restores.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.cluster.build import locked

#: The machine-wide sysctls the kubelet's container manager sets (setupKernelTunables).
KUBELET_SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)
STATE_DIR = Path(os.environ.get("MXJOB_HOST_STATE", "/run/mxjob-e2e"))


def _path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctls(names: tuple[str, ...] = KUBELET_SYSCTLS) -> dict[str, str]:
    values = {}
    for name in names:
        try:
            values[name] = _path(name).read_text().strip()
        except OSError:
            continue
    return values


def write_sysctls(values: dict[str, str]) -> None:
    for name, value in values.items():
        try:
            _path(name).write_text(value)
        except OSError:
            continue


def _load(state: Path) -> dict[str, object]:
    try:
        loaded = json.loads(state.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def hold(holder: str, state_dir: Path = STATE_DIR) -> None:
    """Register a stack as a holder; the first one saves the current values."""
    state = state_dir / "sysctls.json"
    with locked(state_dir / "sysctls.lock"):
        data = _load(state)
        holders = [h for h in _list(data.get("holders")) if Path(h).is_dir()]
        if not holders:
            data["saved"] = read_sysctls()
        if holder not in holders:
            holders.append(holder)
        data["holders"] = holders
        state.write_text(json.dumps(data, indent=2) + "\n")


def release(holder: str, state_dir: Path = STATE_DIR) -> dict[str, str]:
    """Unregister a stack; the last one restores the saved values. Returns what it restored."""
    state = state_dir / "sysctls.json"
    with locked(state_dir / "sysctls.lock"):
        data = _load(state)
        holders = [h for h in _list(data.get("holders")) if h != holder and Path(h).is_dir()]
        if holders:
            data["holders"] = holders
            state.write_text(json.dumps(data, indent=2) + "\n")
            return {}
        saved = data.get("saved")
        restored = {str(k): str(v) for k, v in saved.items()} if isinstance(saved, dict) else {}
        write_sysctls(restored)
        state.unlink(missing_ok=True)
        return restored


def holders(state_dir: Path = STATE_DIR) -> list[str]:
    """The stacks that hold the saved values now."""
    data = _load(state_dir / "sysctls.json")
    return [h for h in _list(data.get("holders")) if Path(h).is_dir()]


def _list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


#: The scheduler's grouping of processes by session (CONFIG_SCHED_AUTOGROUP). While it is on,
#: niceness counts only between the processes of one session, and every step of `make test` (a
#: Go build, a lane, each component of a stack) runs in a session of its own.
AUTOGROUP = "kernel.sched_autogroup_enabled"


@contextmanager
def niceness_counts() -> Iterator[None]:
    """For the block, niceness counts across sessions (autogroup off, where the kernel has it
    and this process may write it), so the lanes the run waits on come before the builds and
    tests that yield to them; the setting is put back after, however the block ends."""
    before = read_sysctls((AUTOGROUP,))
    if before.get(AUTOGROUP, "0") != "0":
        write_sysctls({AUTOGROUP: "0"})
    try:
        yield
    finally:
        write_sysctls(before)

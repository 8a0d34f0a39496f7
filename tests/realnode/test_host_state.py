"""A real-node stack leaves the host as it found it, also when its start fails half-way."""

from pathlib import Path
from typing import Any

import pytest

from tools.cluster import hoststate
from tools.cluster.host import cgroup_hierarchies
from tools.cluster.node import StackError
from tools.cluster.real_node import NETNS_DIR, RealNode
from tools.cluster.stack import Stack


class FailsAfterContainerd(RealNode):
    """A node whose namespace and containerd start, whose kubelet then fails like a bad one."""

    def build(self) -> None:  # binaries are cached by the session's stack; no images needed
        pass

    def _start_kubelet(self) -> None:
        (self.run_dir / "kubelet" / "probe").mkdir(parents=True)
        # A mount under the run directory, as the kubelet and containerd make them.
        target = self.run_dir / "kubelet" / "probe"
        import subprocess  # noqa: PLC0415

        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(target)], check=True)
        for hierarchy in cgroup_hierarchies():
            (hierarchy / self.cgroup_root.lstrip("/") / "kubepods").mkdir(
                parents=True, exist_ok=True
            )
        raise StackError("kubelet: simulated failure")


def mounts_under(path: Path) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p.startswith(str(path))]


def test_failed_start_undoes_namespace_mounts_cgroups_and_sysctls(
    node: Any, tmp_path: Path
) -> None:
    before = hoststate.read_sysctls()
    failing = FailsAfterContainerd()
    stack = Stack(run_dir=tmp_path / "run", log=lambda line: None, node=failing)
    with pytest.raises(StackError, match="simulated failure"):
        stack.start()
    assert failing.slot >= 0
    assert not (NETNS_DIR / failing.netns).exists()
    assert mounts_under(stack.run_dir) == []
    for hierarchy in cgroup_hierarchies():
        assert not (hierarchy / failing.cgroup_root.lstrip("/")).exists()
    # The session's own node is still up and holds the kubelet's sysctls: untouched by this one.
    assert hoststate.read_sysctls() == before
    assert (NETNS_DIR / node.node.netns).exists()
    # The logs stay for the error message's pointers.
    assert (stack.run_dir / "logs" / "containerd.log").is_file()

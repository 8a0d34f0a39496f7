"""Where a stack's pods run, as the control plane sees it (`Node`), and what such a node may use
of the plane (`Plane`).

A stack (tools/cluster/stack.py) runs etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, and holds one node that adds the rest at the plane's own steps: its binaries,
the API server's address, tokens and flags, its processes, its install of the project and what it
leaves on the host. Two nodes keep this protocol: KWOK's fake ones with Metacontroller and the
hook on the host (tools/cluster/kwok_node.py) and a real kubelet in a network namespace of its
own (tools/cluster/real_node.py). Both see the stack only as a `Plane`, so neither module
imports the stack.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from tools.cluster.build import Log


class StackError(RuntimeError):
    """Start-up failed; the message names the component and its log file."""


class Plane(Protocol):
    """What a node may use of the control plane it is part of (a `Stack`)."""

    run_dir: Path
    cache_dir: Path
    ports: dict[str, int]

    @property
    def log(self) -> Log:
        """Where progress lines go."""
        ...

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig of the plane."""
        ...

    def bin(self, name: str) -> Path:
        """A built binary, or one of the node's host binaries."""
        ...

    def env(self) -> dict[str, str]:
        """Environment for tools talking to the plane (KUBECONFIG, kubectl on PATH)."""
        ...

    def spawn(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        """Start argv as `name`, recorded by PID with the plane's own processes."""
        ...

    def wait(self, name: str, what: str, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ready() until true; fail early if `name` died, clearly on timeout."""
        ...

    def stop_process(self, name: str, grace: float) -> None:
        """SIGTERM `name`'s process group if it is still ours, SIGKILL after `grace` s."""
        ...

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """The built kubectl against the plane."""
        ...

    def node_ready(self, name: str) -> bool:
        """The Node object `name` reports Ready."""
        ...


class Node(Protocol):
    """Where a stack's pods run: called by the stack at its steps, in this order: `build`,
    `claim`, `tokens`, `prepare`, `apiserver_flags`, `controller_flags`, `start`, `install`
    (`up --install-project`), `stop`; `state` and `restore` let another process stop it."""

    #: Its name in state.json, by which `Stack.load` makes the same node again.
    kind: ClassVar[str]
    #: Its processes, started after the control plane's (stopped before them).
    processes: ClassVar[tuple[str, ...]]
    #: The control plane this node is part of (set by `Stack`).
    plane: Plane

    def build(self) -> None:
        """Build what the stack runs with this node (the control plane's binaries too), or
        fail saying what the prepare has to install first."""
        ...

    def claim(self) -> str:
        """Take what the node needs of the host; the address the API server listens on."""
        ...

    def tokens(self) -> str:
        """The node's own lines of the API server's token file ("" for none)."""
        ...

    def prepare(self) -> None:
        """What the node needs before the API server starts (the plane's kubeconfig is there)."""
        ...

    def apiserver_flags(self) -> Sequence[str]:
        """The API server's authorization and admission for this node."""
        ...

    def controller_flags(self) -> Sequence[str]:
        """Which controllers kube-controller-manager runs for this node, and their keys."""
        ...

    def start(self) -> None:
        """Start the node's processes and wait until it is Ready."""
        ...

    def install(self, repo: Path, hook_cmd: str, hook_port: int) -> None:
        """Install the project from `repo` the way this tier runs it."""
        ...

    def stop(self, grace: float) -> str | None:
        """Undo what the node changed on the host; what is still there, or None."""
        ...

    def binary(self, name: str) -> Path:
        """A binary of the host the node runs (KeyError if the node runs none by that name)."""
        ...

    def state(self) -> dict[str, Any]:
        """What another process needs to stop the node (merged into state.json)."""
        ...

    def restore(self, state: dict[str, Any]) -> None:
        """The node as `state` recorded it."""
        ...

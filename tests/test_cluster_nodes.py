"""The test cluster's two nodes (tools/cluster/node.py): each keeps the `Node` protocol, a stack
records which one it runs and loads the same one again, each decides the API server's
authorization and the processes after the control plane's, and no test run installs a host
package: a stack that lacks one says which and names the prepare, the one installer
(tools/cluster/host.py)."""

import json
import subprocess
from pathlib import Path

import pytest

from tools.cluster import host, prepare, stack
from tools.cluster.kwok_node import KwokNode
from tools.cluster.node import Node, StackError
from tools.cluster.real_node import RealNode, unavailable_reason
from tools.cluster.stack import CONTROL_PLANE, Stack

REPO = Path(__file__).resolve().parents[1]
#: A package no host has, looked for at a path no host has.
ABSENT = {"/nonexistent/mxjob-probe": "mxjob-probe-package"}


def quiet(line: str) -> None:
    del line


def test_each_node_keeps_the_protocol_under_a_kind_of_its_own() -> None:
    nodes: list[Node] = [KwokNode(), RealNode()]  # mypy checks each against the protocol
    assert {n.kind: type(n) for n in nodes} == stack.NODES


@pytest.mark.parametrize(
    "node",
    [KwokNode(count=3), RealNode(slot=5, images={"pause": "localhost/pause:1"})],
    ids=["kwok", "real"],
)
def test_a_stack_loads_with_the_node_it_recorded(tmp_path: Path, node: Node) -> None:
    recorded = Stack(run_dir=tmp_path, node=node, log=quiet)
    recorded.ports, recorded.pids = {"kube-apiserver": 6443}, {"etcd": 1}
    recorded._save_state()
    loaded = Stack.load(tmp_path, log=quiet)
    assert loaded is not None
    assert type(loaded.node) is type(node)
    assert loaded.node.state() == node.state()
    assert loaded.node.plane is loaded
    assert (loaded.ports, loaded.pids) == (recorded.ports, recorded.pids)


def test_a_state_that_names_no_node_is_a_kwok_stacks(tmp_path: Path) -> None:
    """As every KWOK stack recorded it before the nodes had kinds (a playground left up)."""
    (tmp_path / "state.json").write_text(json.dumps({"ports": {}, "pids": {}, "nodes": 2}))
    loaded = Stack.load(tmp_path, log=quiet)
    assert loaded is not None
    assert isinstance(loaded.node, KwokNode)
    assert loaded.node.count == 2


def test_each_node_decides_the_api_servers_authorization(tmp_path: Path) -> None:
    def flags(node: Node) -> list[str]:
        plane = Stack(run_dir=tmp_path, node=node, log=quiet)
        plane.ports = stack.allocate_ports(None)
        return plane._apiserver_args()

    kwok, serving = flags(KwokNode()), flags(KwokNode(serve_logs=tmp_path / "log"))
    assert "--authorization-mode=AlwaysAllow" in kwok
    assert "--kubelet-preferred-address-types=InternalIP" not in kwok
    assert serving[-1] == "--kubelet-preferred-address-types=InternalIP"
    assert "--authorization-mode=Node,RBAC" in flags(RealNode())


def test_the_nodes_processes_follow_the_control_planes(tmp_path: Path) -> None:
    kwok = Stack(run_dir=tmp_path, node=KwokNode(), log=quiet)
    real = Stack(run_dir=tmp_path, node=RealNode(), log=quiet)
    assert kwok.components == (*CONTROL_PLANE, "metacontroller", "kwok", "hook")
    assert real.components == (*CONTROL_PLANE, "containerd", "kubelet", "kube-proxy", "coredns")


def refuse(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    raise AssertionError(f"a stack ran {argv}")


def test_a_real_node_missing_packages_says_which_and_how_and_installs_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(host, "PACKAGES", ABSENT)
    monkeypatch.setattr(subprocess, "run", refuse)
    node = RealNode()
    Stack(run_dir=tmp_path, node=node, log=quiet)
    with pytest.raises(StackError) as raised:
        node.build()
    assert "mxjob-probe-package" in str(raised.value)
    assert f"`{host.PREPARE}`" in str(raised.value)
    monkeypatch.setattr(host, "host_reason", lambda: None)
    assert unavailable_reason() == host.missing_message(["mxjob-probe-package"])


def test_the_prepares_packages_step_installs_what_is_missing_with_apt_get(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran: list[list[str]] = []

    def apt_get(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(host, "PACKAGES", ABSENT)
    monkeypatch.setattr(subprocess, "run", apt_get)
    assert prepare.run_step("packages", tmp_path, quiet) == "made"
    assert ran == [
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "mxjob-probe-package"],
    ]


def test_only_the_prepare_installs_packages() -> None:
    """No stack, test or lane calls apt-get: host.py alone names it, and only the prepare's
    `packages` step calls the one function that runs it."""
    sources = [
        p.relative_to(REPO)
        for p in REPO.glob("**/*.py")
        if ".venv" not in p.parts and p.name != Path(__file__).name
    ]
    naming = [p for p in sources if '"apt-get"' in (REPO / p).read_text()]
    calling = [p for p in sources if "install_packages(" in (REPO / p).read_text()]
    assert naming == [Path("tools/cluster/host.py")]
    assert calling == [Path("tools/cluster/host.py"), Path("tools/cluster/prepare.py")]

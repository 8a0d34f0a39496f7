"""The KWOK tier's node: KWOK's fake Nodes, with Metacontroller and the hook on the host.

``KwokNode`` is the default part of a stack (``Stack()``, or ``Stack(node=KwokNode(count=2))``):
the API server authorizes everything and needs no service account for a pod, the
controller-manager runs only the namespace, garbage-collector and service-account controllers,
and KWOK (``cmd/kwok``, its stages in tools/cluster/kwok.py) makes bound pods Running without
running anything. Metacontroller runs as a host process beside it (the real node runs it in the
cluster instead), and ``install`` starts the project's hook on the host too. Every listener is
on 127.0.0.1; every process is the stack's, stopped by PID.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from tools.cluster import build, kwok, pki
from tools.cluster.node import Plane
from tools.cluster.probes import http_ok, tcp_open
from tools.ports import free_port

#: The pods' addresses KWOK hands out.
POD_CIDR = "10.244.0.1/16"
#: The KWOK tier's API server: no RBAC, and two admission plugins off.
APISERVER_FLAGS = (
    # Endpoints may not hold a loopback address: do not publish `kubernetes` endpoints.
    "--endpoint-reconciler-type=none",
    "--authorization-mode=AlwaysAllow",
    # ServiceAccount: pods need none (KWOK runs no containers), so there is no race with the SA
    # controller right after a namespace is created.
    # TaintNodesByCondition: would taint new nodes not-ready, and no node-lifecycle controller
    # runs to lift the taint once KWOK reports the node Ready.
    "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
)
#: The KWOK tier's controllers: namespace deletion, ownerReference GC, the `default` SA.
CONTROLLERS = ("--controllers=namespace,garbagecollector,serviceaccount",)


@dataclass
class KwokNode:
    """`count` fake Nodes `kwok-node-0..count-1` kept by KWOK, and Metacontroller on the host.

    ``pod_stages``: ``fast`` (pods Running at once) or ``general`` (KWOK's realistic delays).
    ``serve_logs``: a CRI-format log file KWOK serves as every pod's `mxnet` container log,
    through the API server's pods/log as a kubelet serves one (`make bench-progress` reads
    Workers' logs).
    """

    count: int = 1
    pod_stages: str = "fast"
    serve_logs: Path | None = None
    discovery_interval: str = "5s"
    #: Metacontroller's client rate (QPS; the burst is twice it): `make compare` can vary it.
    metacontroller_qps: int = 100
    #: The control plane this node is part of (set by `Stack`).
    plane: Plane = field(init=False, repr=False, compare=False)
    kind: ClassVar[str] = "kwok"
    processes: ClassVar[tuple[str, ...]] = ("metacontroller", "kwok", "hook")

    @property
    def names(self) -> list[str]:
        """The fake Nodes' names."""
        return [f"kwok-node-{i}" for i in range(self.count)]

    # -- the control plane's side -------------------------------------------------------------

    def build(self) -> None:
        """The control plane's binaries, Metacontroller and KWOK (no host packages needed)."""
        build.build_all(self.plane.cache_dir, self.plane.log, build.KWOK_STACK)

    def claim(self) -> str:
        """Nothing of the host: the API server listens on loopback."""
        return "127.0.0.1"

    def tokens(self) -> str:
        """None: KWOK, Metacontroller and the hook use the admin's kubeconfig."""
        return ""

    def prepare(self) -> None:
        """Nothing: KWOK's configuration is written when it starts."""

    def apiserver_flags(self) -> list[str]:
        """APISERVER_FLAGS, and kubelets reached at their InternalIP when KWOK serves logs
        (its nodes answer at 127.0.0.1, not at their names)."""
        return [
            *APISERVER_FLAGS,
            *(["--kubelet-preferred-address-types=InternalIP"] if self.serve_logs else []),
        ]

    def controller_flags(self) -> tuple[str, ...]:
        """CONTROLLERS."""
        return CONTROLLERS

    def start(self) -> None:
        """Metacontroller, the fake Nodes and KWOK; until the controllers answer and every
        fake Node is Ready."""
        self._start_metacontroller()
        self._start_kwok()
        self._wait_ready()

    def stop(self, grace: float) -> str | None:
        """Nothing beyond the stack's own: every process of this node is the stack's, stopped
        by PID, and nothing of the host was changed."""
        return None

    def binary(self, name: str) -> Path:
        """None: KWOK's tier runs built binaries alone."""
        raise KeyError(name)

    def state(self) -> dict[str, Any]:
        """How many fake Nodes it keeps."""
        return {"kind": self.kind, "nodes": self.count}

    def restore(self, state: dict[str, Any]) -> None:
        """The node `state` recorded."""
        self.count = int(state.get("nodes", 1))

    # -- processes ----------------------------------------------------------------------------

    def _start_metacontroller(self) -> None:
        plane, ports = self.plane, self.plane.ports
        crds = build.METACONTROLLER.home(plane.cache_dir) / "metacontroller-crds.yaml"
        plane.kubectl("apply", "--server-side", "-f", str(crds))
        plane.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "-f", str(crds), timeout=90
        )
        plane.spawn(
            "metacontroller",
            [
                str(plane.bin("metacontroller")),
                f"--kubeconfig={plane.kubeconfig}",
                f"--metrics-address=127.0.0.1:{ports['metacontroller']}",
                f"--health-probe-bind-address=127.0.0.1:{ports['metacontroller-health']}",
                f"--discovery-interval={self.discovery_interval}",
                f"--client-go-qps={self.metacontroller_qps}",
                f"--client-go-burst={2 * self.metacontroller_qps}",
                "--events-qps=100",
                "--zap-log-level=4",
            ],
        )

    def _start_kwok(self) -> None:
        plane = self.plane
        kwok_dir = plane.run_dir / "kwok"
        kwok_dir.mkdir(parents=True, exist_ok=True)
        config = kwok_dir / "kwok.yaml"
        kwok.write_config(
            build.KWOK.home(plane.cache_dir), self.pod_stages, config, logs=self.serve_logs
        )
        plane.kubectl("apply", "-f", "-", input=kwok.nodes_json(self.names))
        env = dict(os.environ)
        env["HOME"] = str(kwok_dir)  # keep KWOK away from ~/.kwok
        plane.spawn(
            "kwok",
            [
                str(plane.bin("kwok")),
                *self._kwok_server(kwok_dir),
                f"--kubeconfig={plane.kubeconfig}",
                f"--config={config}",
                f"--manage-nodes-with-annotation-selector={kwok.NODE_SELECTOR}",
                # Leases, renewed as a kubelet renews them: the node-lifecycle controller of the
                # node-loss tests then sees KWOK's nodes alive.
                "--node-lease-duration-seconds=10",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
            ],
            env=env,
        )

    def _kwok_server(self, kwok_dir: Path) -> list[str]:
        """KWOK's kubelet server on 127.0.0.1 (HTTPS, a certificate of its own; the API server
        does not check a kubelet's) when it serves logs; no flags otherwise."""
        if self.serve_logs is None:
            return []
        port = self.plane.ports.setdefault("kwok", free_port())
        pki.write_serving_cert(kwok_dir / "tls", "127.0.0.1")
        return [
            f"--server-address=127.0.0.1:{port}",
            f"--node-port={port}",
            f"--tls-cert-file={kwok_dir / 'tls' / 'tls.crt'}",
            f"--tls-private-key-file={kwok_dir / 'tls' / 'tls.key'}",
        ]

    def _wait_ready(self) -> None:
        plane, ports = self.plane, self.plane.ports
        for name in ("kube-controller-manager", "kube-scheduler"):
            url = f"https://127.0.0.1:{ports[name]}/healthz"
            plane.wait(name, "/healthz", partial(http_ok, url), 60)
        metrics = f"http://127.0.0.1:{ports['metacontroller']}/metrics"
        plane.wait("metacontroller", "its /metrics endpoint", lambda: http_ok(metrics), 60)
        for node_name in self.names:
            ready = partial(plane.node_ready, node_name)
            plane.wait("kwok", f"node {node_name} Ready", ready, 60)

    # -- the project, from the repository ------------------------------------------------------

    def install(self, repo: Path, hook_cmd: str, hook_port: int) -> None:
        """Install the project's CRD (v1 alone: no conversion webhook runs here), start its
        hook on the host with `hook_cmd` (none if empty; `PORT` is `hook_port`), then install
        the CompositeController of `metacontroller/overlays/local`.

        Missing kustomize directories are skipped with a note (they may not exist yet).
        """
        plane = self.plane
        crd_dir = repo / "manifests" / "crd"
        if crd_dir.is_dir():
            plane.kubectl("apply", "-f", str(crd_dir / "mxjobs.kubeflow.org.yaml"))
            plane.kubectl(
                "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all", timeout=90
            )
        else:
            plane.log(f"skip: {crd_dir} does not exist")
        if hook_cmd:
            env = plane.env()
            env["PORT"] = str(hook_port)
            plane.spawn("hook", ["/bin/sh", "-c", hook_cmd], env=env)
            plane.wait(
                "hook",
                f"127.0.0.1:{hook_port} to accept",
                lambda: tcp_open("127.0.0.1", hook_port),
                300,  # `make run` may create the venv first
            )
        overlay = repo / "metacontroller" / "overlays" / "local"
        if overlay.is_dir():
            plane.kubectl("apply", "-k", str(overlay))
        else:
            plane.log(f"skip: {overlay} does not exist")

"""A real, local Kubernetes control plane and the node its pods run on, as one object.

``Stack(run_dir).start()`` runs etcd, kube-apiserver, kube-controller-manager and
kube-scheduler as child processes, then its node (a `Node`, tools/cluster/node.py): by default
KWOK's fake Nodes with Metacontroller on the host (tools/cluster/kwok_node.py, everything on
127.0.0.1), or a real kubelet in a network namespace of its own (``Stack(node=RealNode())``,
tools/cluster/real_node.py); the node decides the API server's address, authorization and
controllers. ``start()`` writes ``<run_dir>/kubeconfig`` and waits until everything is ready;
``stop()`` stops the node (undoing what it changed on the host), ends the processes (SIGTERM,
then SIGKILL) and removes the run directory. All state (etcd data, keys, logs, pids, ports)
lives in the run directory; ``state.json`` there lets another process (``python3 -m
tools.cluster down``) find and stop a running stack, with the node it was started with.

Used by the CLI (``up``/``down``/``env``) and by pytest fixtures (a fresh stack on free ports in
a temporary directory).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Self

from tools.cluster import build, pki
from tools.cluster.build import Log
from tools.cluster.host import pid_alive, pid_cmdline
from tools.cluster.kwok_node import KwokNode
from tools.cluster.node import Node, StackError
from tools.cluster.probes import http_ok
from tools.cluster.real_node import RealNode
from tools.ports import free_port

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
#: The file in a run directory by which another process finds and stops the stack.
STATE = "state.json"
# Order of start-up; shutdown goes the other way. The node's processes (Node.processes) follow.
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
#: The nodes a stack may run, by the kind its state.json records (none recorded: KWOK's).
NODES: dict[str, Callable[[], Node]] = {KwokNode.kind: KwokNode, RealNode.kind: RealNode}
# Ports each stack needs, in the order used with a fixed port base (MXJOB_PORT_BASE).
PORT_NAMES = (
    "etcd",
    "etcd-peer",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "metacontroller",
    "metacontroller-health",
)


def default_run_dir() -> Path:
    """``$MXJOB_RUN`` or ``~/.cache/mxjob-e2e/run``."""
    env = os.environ.get("MXJOB_RUN")
    return Path(env) if env else build.default_cache_dir() / "run"


def allocate_ports(base: int | None) -> dict[str, int]:
    if base:
        return {name: base + i for i, name in enumerate(PORT_NAMES)}
    ports: dict[str, int] = {}
    while len(set(ports.values())) < len(PORT_NAMES):
        ports = {name: free_port() for name in PORT_NAMES}
    return ports


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _exited(exit_code: int, reason: str | None, now: str) -> dict[str, Any]:
    reason = reason or ("Completed" if exit_code == 0 else "Error")
    return {"exitCode": exit_code, "reason": reason, "startedAt": now, "finishedAt": now}


def exit_patch(pod: dict[str, Any], exit_code: int, reason: str | None = None) -> dict[str, Any]:
    """The pods/status strategic merge patch of a kubelet whose containers all exited with
    `exit_code` and that does not restart them: the pod Succeeded (0) or Failed."""
    now = _now()
    statuses = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"terminated": _exited(exit_code, reason, now)},
        }
        for c in pod["spec"]["containers"]
    ]
    conditions = [
        {"type": t, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
        for t in ("Ready", "ContainersReady")
    ]
    return {
        "status": {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "conditions": conditions,  # merged by type
            "containerStatuses": statuses,
        }
    }


def restart_patch(pod: dict[str, Any], exit_code: int, reason: str | None = None) -> dict[str, Any]:
    """The pods/status strategic merge patch of a kubelet that restarted every container in
    place after it exited with `exit_code`: one restart more, `lastState` the exit, running."""
    now = _now()
    counts = {
        s["name"]: s.get("restartCount", 0)
        for s in pod.get("status", {}).get("containerStatuses", [])
    }
    statuses = [
        {
            "name": c["name"],
            "restartCount": counts.get(c["name"], 0) + 1,
            "lastState": {"terminated": _exited(exit_code, reason, now)},
            "state": {"running": {"startedAt": now}},
        }
        for c in pod["spec"]["containers"]
    ]
    return {"status": {"containerStatuses": statuses}}  # merged by container name


@dataclass
class Stack:
    """One control plane rooted at ``run_dir``, and its node.

    ``port_base``: fixed ports ``base .. base+6`` (see PORT_NAMES) instead of free ones.
    ``node``: where pods run (default KWOK's fake Nodes, ``KwokNode()``; ``RealNode()``).
    """

    run_dir: Path = field(default_factory=default_run_dir)
    cache_dir: Path = field(default_factory=build.default_cache_dir)
    port_base: int | None = None
    #: Where the API server listens: the node's choice (`Node.claim`).
    api_address: str = "127.0.0.1"
    log: Log = print
    node: Node = field(default_factory=KwokNode)
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    token: str = ""
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.node.plane = self

    @property
    def components(self) -> tuple[str, ...]:
        """Processes in start order (stopped in reverse)."""
        return (*CONTROL_PLANE, *self.node.processes)

    # -- paths --------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.run_dir / STATE

    @property
    def logs_dir(self) -> Path:
        return self.run_dir / "logs"

    def log_file(self, component: str) -> Path:
        return self.logs_dir / f"{component}.log"

    def bin(self, name: str) -> Path:
        for component in (*build.COMPONENTS, *build.NODE_COMPONENTS):
            if name in component.mains.values():
                return component.binary(self.cache_dir, name)
        return self.node.binary(name)

    @property
    def server(self) -> str:
        return f"https://{self.api_address}:{self.ports['kube-apiserver']}"

    def env(self) -> dict[str, str]:
        """Environment for tools talking to this stack (KUBECONFIG, kubectl on PATH)."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.bin('kubectl').parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    # -- state --------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        """What another process needs to find and stop this stack."""
        return {
            "ports": self.ports,
            "pids": self.pids,
            "token": self.token,
            "api_address": self.api_address,
            **self.node.state(),
        }

    def _restore(self, state: dict[str, Any]) -> None:
        self.ports = {k: int(v) for k, v in state.get("ports", {}).items()}
        self.pids = {k: int(v) for k, v in state.get("pids", {}).items()}
        self.token = str(state.get("token", ""))
        self.api_address = str(state.get("api_address", "127.0.0.1"))
        self.node.restore(state)

    def _save_state(self) -> None:
        state = self._state()
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.state_file)

    @classmethod
    def load(cls, run_dir: Path | None = None, **kwargs: Any) -> Self | None:
        """The stack recorded in run_dir/state.json, with the node it was started with, or
        None."""
        run_dir = run_dir or default_run_dir()
        try:
            state = json.loads((run_dir / STATE).read_text())
        except (OSError, ValueError):
            return None
        stack = cls(run_dir=run_dir, node=NODES[str(state.get("kind", KwokNode.kind))](), **kwargs)
        stack._restore(state)
        return stack

    def is_running(self) -> bool:
        """Every recorded process alive and the API server ready."""
        return (
            bool(self.pids)
            and all(self.owns(name, pid) for name, pid in self.pids.items())
            and http_ok(f"{self.server}/readyz", self.token)
        )

    def owns(self, name: str, pid: int) -> bool:
        """pid is alive and still the process we started (pids get reused)."""
        if not pid_alive(pid):
            return False
        if name == "hook":
            return True  # an arbitrary command; it runs in its own process group
        return str(self.bin(name)) in pid_cmdline(pid)

    # -- processes ----------------------------------------------------------------------------

    def spawn(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        """Start argv as `name` in a process group of its own, its output in `name`'s log."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file(name).open("ab") as log_fh:
            log_fh.write(f"$ {shlex.join(argv)}\n".encode())
            log_fh.flush()
            proc = subprocess.Popen(
                list(argv),
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.run_dir,
                env=env,
                start_new_session=True,  # own process group: stop() signals the whole group
            )
        self._procs[name] = proc
        self.pids[name] = proc.pid
        self._save_state()

    def wait(self, name: str, what: str, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ready() until true; fail early if the process died, clearly on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if ready():
                return
            pid = self.pids.get(name)
            if pid is not None and not pid_alive(pid):
                proc = self._procs.get(name)
                code = proc.poll() if proc else None
                raise StackError(
                    f"{name} exited (code {code}) before {what}; see {self.log_file(name)}:\n"
                    f"{tail(self.log_file(name))}"
                )
            if time.monotonic() > deadline:
                raise StackError(
                    f"{name}: timed out after {timeout:.0f}s waiting for {what}; "
                    f"see {self.log_file(name)}:\n{tail(self.log_file(name))}"
                )
            time.sleep(0.25)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this stack."""
        return self.client("kubectl", *args, input=input, check=check, timeout=timeout)

    def helm(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the built helm against this stack (the chart charts/mxjob)."""
        build.need(build.HELM, self.cache_dir, self.log)
        return self.client("helm", *args, check=check, timeout=timeout)

    def client(
        self,
        tool: str,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run a built client that takes `--kubeconfig` (kubectl, helm) against this stack."""
        proc = subprocess.run(
            [str(self.bin(tool)), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise StackError(f"{tool} {shlex.join(args)} failed: {proc.stderr.strip()}")
        return proc

    # -- start --------------------------------------------------------------------------------

    def start(self, *, build_missing: bool = True) -> Self:
        """Start every component and wait for readiness. Raises StackError on failure."""
        started = time.monotonic()
        if build_missing:
            self.node.build()
        existing = type(self).load(self.run_dir, cache_dir=self.cache_dir, log=self.log)
        if existing and existing.is_running():
            raise StackError(f"a stack is already running in {self.run_dir}")
        if existing:
            existing.stop(remove=True)  # stale leftovers of a crashed stack
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.ports = allocate_ports(self.port_base)
        try:
            self._prepare_files()
            self._start_components()
        except BaseException:
            self.stop(remove=False)  # keep the logs for the error message's pointers
            raise
        self.log(f"stack up in {time.monotonic() - started:.1f}s (run dir {self.run_dir})")
        return self

    def _start_components(self) -> None:
        self._start_etcd()
        self._start_apiserver()
        self._start_controllers()
        self.node.start()
        self.wait_default_serviceaccount("default")

    def wait_default_serviceaccount(self, namespace: str) -> None:
        """Until the controller-manager made the namespace's `default` ServiceAccount, without
        which the API server refuses its pods."""
        self.wait(
            "kube-controller-manager",
            f"serviceaccount {namespace}/default",
            lambda: (
                self.kubectl(
                    "get", "serviceaccount", "default", "-n", namespace, check=False
                ).returncode
                == 0
            ),
            60,
        )

    def _prepare_files(self) -> None:
        self.api_address = self.node.claim()
        pki_dir = self.run_dir / "pki"
        pki_dir.mkdir(parents=True, exist_ok=True)
        pki.write_rsa_key(pki_dir / "sa.key")
        self.token = pki.new_token()
        tokens = f'{self.token},admin,admin,"system:masters"\n'
        (pki_dir / "tokens.csv").write_text(tokens + self.node.tokens())
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "mxjob-e2e",
                    "cluster": {"server": self.server, "insecure-skip-tls-verify": True},
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [
                {"name": "mxjob-e2e", "context": {"cluster": "mxjob-e2e", "user": "admin"}}
            ],
            "current-context": "mxjob-e2e",
        }
        self.kubeconfig.write_text(json.dumps(kubeconfig, indent=2) + "\n")
        self.kubeconfig.chmod(0o600)
        self._save_state()
        self.node.prepare()

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        self.spawn(
            "etcd",
            [
                str(self.bin("etcd")),
                "--name=mxjob-e2e",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=mxjob-e2e={peer}",
                "--unsafe-no-fsync=true",  # throw-away data: fsync only slows tests
                "--log-level=warn",
            ],
        )
        self.wait("etcd", "/health", lambda: http_ok(f"{client}/health"), 30)

    def _apiserver_args(self) -> list[str]:
        pki_dir = self.run_dir / "pki"
        return [
            str(self.bin("kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            f"--cert-dir={pki_dir}",
            f"--bind-address={self.api_address}",
            f"--advertise-address={self.api_address}",
            f"--secure-port={self.ports['kube-apiserver']}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki_dir / 'sa.key'}",
            f"--service-account-signing-key-file={pki_dir / 'sa.key'}",
            f"--token-auth-file={pki_dir / 'tokens.csv'}",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
            *self.node.apiserver_flags(),
        ]

    def _start_apiserver(self) -> None:
        self.spawn("kube-apiserver", self._apiserver_args())
        self.wait(
            "kube-apiserver", "/readyz", lambda: http_ok(f"{self.server}/readyz", self.token), 120
        )

    def restart_apiserver(
        self, while_down: Callable[[], None] = lambda: None, grace: float = 10.0
    ) -> float:
        """Stop kube-apiserver (SIGTERM), call `while_down`, start it again with the same flags
        (as an upgrade or a crashed control plane does); the seconds it was not ready."""
        down = time.monotonic()
        self.stop_process("kube-apiserver", grace)
        while_down()
        self._start_apiserver()
        return time.monotonic() - down

    def controller_manager(self, *flags: str, port: int = 0) -> list[str]:
        """A kube-controller-manager command line against this stack: `flags` (which
        controllers, their keys) and what every one here shares (loopback, no leader election)."""
        return [
            str(self.bin("kube-controller-manager")),
            f"--kubeconfig={self.kubeconfig}",
            *flags,
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--leader-elect=false",
            "--profiling=false",
        ]

    def _start_controllers(self) -> None:
        flags = self.node.controller_flags()
        port = self.ports["kube-controller-manager"]
        controllers = [*self.controller_manager(*flags, port=port), "--v=1"]
        self.spawn("kube-controller-manager", controllers)
        self.spawn(
            "kube-scheduler",
            [
                str(self.bin("kube-scheduler")),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['kube-scheduler']}",
                "--leader-elect=false",
                "--profiling=false",
                "--v=1",
            ],
        )

    def node_ready(self, name: str) -> bool:
        jsonpath = '{.status.conditions[?(@.type=="Ready")].status}'
        out = self.kubectl("get", "node", name, "-o", f"jsonpath={jsonpath}", check=False)
        return out.stdout.strip() == "True"

    # -- project hook point -------------------------------------------------------------------

    def install_project(self, repo: Path, hook_cmd: str = "", hook_port: int = 8080) -> None:
        """Install the project the way this stack's node runs it (`Node.install`): KWOK's with
        the CRD, the hook on the host by `hook_cmd` and the local CompositeController; a real
        node's from images, as the README tells users."""
        self.node.install(repo, hook_cmd, hook_port)

    # -- pods -----------------------------------------------------------------------------------

    def terminate_pod(
        self, namespace: str, name: str, exit_code: int, reason: str | None = None
    ) -> None:
        """End every container of a pod with exit_code via the pods/status subresource.

        The pod becomes Succeeded (0) or Failed (anything else); KWOK leaves it so.
        """
        self._patch_status(namespace, name, partial(exit_patch, exit_code=exit_code, reason=reason))

    def restart_container(
        self, namespace: str, name: str, exit_code: int, reason: str | None = None
    ) -> None:
        """Restart every container of a Running pod in place, as a kubelet does under
        `restartPolicy: OnFailure` (a non-zero exit) or `Always` (any exit): `restartCount` one
        more, `lastState` the exit, running again. The pod stays Running; KWOK leaves it so."""
        patch = partial(restart_patch, exit_code=exit_code, reason=reason)
        self._patch_status(namespace, name, patch)

    def _patch_status(
        self, namespace: str, name: str, patch: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        pod = json.loads(self.kubectl("get", "pod", "-n", namespace, name, "-o", "json").stdout)
        self.kubectl(
            "patch", "pod", "-n", namespace, name, "--subresource=status", "--type=strategic",
            "-p", json.dumps(patch(pod)),
        )  # fmt: skip

    # -- stop ---------------------------------------------------------------------------------

    def stop(self, *, remove: bool = True, grace: float = 10.0) -> None:
        """Stop the node (undoing its host changes), then every process group in reverse start
        order: SIGTERM, SIGKILL after `grace` seconds."""
        left = self.node.stop(grace)
        for name in reversed(self.components):
            self.stop_process(name, grace)
        self.pids = {}
        self._procs = {}
        if remove:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        elif self.run_dir.is_dir():
            self._save_state()
        if left:
            raise StackError(f"{left} is still there")

    def disown(self) -> None:
        """Leave running what this object started (a component restarted by a test) to the
        stack's owner, which stops it by the PID in state.json: forget its process handles,
        which would otherwise warn that it still runs when they are collected."""
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.returncode = 0  # not ours to wait for: the owner stops it
        self._procs = {}

    def stop_process(self, name: str, grace: float) -> None:
        """SIGTERM the process group of `name` if it is still ours, SIGKILL after `grace` s."""
        pid = self.pids.pop(name, None)
        if pid is None or not self.owns(name, pid):
            return
        self._signal(pid, signal.SIGTERM)
        self._await_exit(name, pid, grace)
        if pid_alive(pid):
            self.log(f"{name} (pid {pid}) ignored SIGTERM; killing it")
            self._signal(pid, signal.SIGKILL)
            self._await_exit(name, pid, 5)

    @staticmethod
    def _signal(pid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pid, sig)  # started with start_new_session: pgid == pid
        except ProcessLookupError:
            pass
        except PermissionError:
            os.kill(pid, sig)

    def _await_exit(self, name: str, pid: int, timeout: float) -> None:
        proc = self._procs.get(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None:
                try:
                    proc.wait(timeout=0.1)
                    return
                except subprocess.TimeoutExpired:
                    continue
            if not pid_alive(pid):
                return
            time.sleep(0.1)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The real-node tier: the control plane plus a real kubelet, so pods really run.

``RealNode`` is the part a control plane is given (``Stack(node=RealNode())``): the plane then
runs an API server that enforces RBAC (``--authorization-mode=Node,RBAC``, default admission
plugins plus NodeRestriction), a controller-manager with all its default controllers, and this
node in place of Metacontroller and KWOK on the host. The node runs in a network namespace of
its own (``mxjob<k>``): containerd + runc, the kubelet, kube-proxy (iptables) and CoreDNS, with
pods on a bridge inside that namespace. A veth pair joins it to the host: the API server listens
on the host end (``10.200.<k>.1``), the kubelet on the node end (``10.200.<k>.2``). So every
iptables rule, route and bridge the node makes lives and dies with the namespace, and two stacks
(a test session and the ``make up`` playground) do not see each other's. What remains
machine-wide — the kubelet's sysctls, its cgroups (under ``/mxjob<k>``) and mounts under the run
directory — is restored or removed by ``stop()``, also after a failed start (``Stack.stop``
stops the node first).

Metacontroller and the project itself are installed into the cluster from locally built images
(``tools/cluster/images.py``) by ``install_in_cluster``, the way the README tells users.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from tools.cluster import build, host, hoststate, images, pki
from tools.cluster.build import locked
from tools.cluster.host import cgroup_hierarchies, pid_cmdline
from tools.cluster.node import Plane, StackError

NODE_NAME = "mxjob-node"
NETNS_DIR = Path("/run/netns")
MAX_SLOTS = 16
#: Host binaries of the node (Debian packages, host.PACKAGES), not built by this project.
HOST_BINARIES = ("containerd", "ctr", "runc")
NODE_PROCESSES = ("containerd", "kubelet", "kube-proxy", "coredns")


def unavailable_reason() -> str | None:
    """One line saying why this machine cannot run a real node now, or None: a host that
    cannot run one, packages the prepare has not installed yet, binaries Go cannot build."""
    missing = host.missing_packages()
    return (
        host.host_reason()
        or (host.missing_message(missing) if missing else None)
        or build.unavailable_reason(components=build.NODE_STACK)
    )


#: What metacontroller/install adds to Metacontroller's release manifests (its requests).
METACONTROLLER_PATCH = "resources.yaml"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise StackError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


@dataclass
class RealNode:
    """One real node in its own network namespace, the part a control plane is given (a
    `Node`, tools/cluster/node.py): the plane calls it at its own steps."""

    slot: int = -1
    images: dict[str, str] | None = None
    node_token: str = ""
    proxy_token: str = ""
    archives: dict[str, Path] = field(default_factory=dict, repr=False)
    #: The control plane this node is part of (set by `Stack`).
    plane: Plane = field(init=False, repr=False, compare=False)
    kind: ClassVar[str] = "node"
    processes: ClassVar[tuple[str, ...]] = NODE_PROCESSES

    # -- names and addresses ------------------------------------------------------------------

    @property
    def run_dir(self) -> Path:
        return self.plane.run_dir

    @property
    def netns(self) -> str:
        return f"mxjob{self.slot}"

    @property
    def host_link(self) -> str:
        return f"mxjh{self.slot}"

    @property
    def host_ip(self) -> str:
        """The host end of the node's link, where the API server listens."""
        return f"10.200.{self.slot}.1"

    @property
    def node_ip(self) -> str:
        return f"10.200.{self.slot}.2"

    @property
    def pod_subnet(self) -> str:
        return f"10.201.{self.slot}.0/24"

    @property
    def bridge_ip(self) -> str:
        """The pods' gateway, and where CoreDNS answers (the pods' nameserver)."""
        return f"10.201.{self.slot}.1"

    @property
    def cgroup_root(self) -> str:
        return f"/mxjob{self.slot}"

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "ctrd" / "containerd.sock"

    def binary(self, name: str) -> Path:
        """containerd, ctr or runc of the host (Debian packages)."""
        found = shutil.which(name) if name in HOST_BINARIES else None
        if found is None:
            raise StackError(f"{name} is not installed")
        return Path(found)

    def _in_node(self, argv: list[str]) -> list[str]:
        """argv run inside the node's network namespace (and nothing else of it)."""
        return ["nsenter", f"--net={NETNS_DIR / self.netns}", "--", *argv]

    # -- state --------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Its slot (namespace, link, cgroups) and its images."""
        return {"kind": self.kind, "slot": self.slot, "images": self.images}

    def restore(self, state: dict[str, Any]) -> None:
        """The node `state` recorded."""
        self.slot = int(state.get("slot", -1))
        images_ = state.get("images")
        self.images = {str(k): str(v) for k, v in images_.items()} if images_ else None

    # -- the control plane's side -------------------------------------------------------------

    def build(self) -> None:
        """The node's packages checked (the prepare installs them: no apt-get here), its
        binaries and the control plane's built, its images built."""
        missing = host.missing_packages()
        if missing:
            raise StackError(host.missing_message(missing))
        build.build_all(self.plane.cache_dir, self.plane.log, build.NODE_STACK)
        built = images.Builder(self.plane.cache_dir, self.plane.log).all()
        self.images = {name: b.ref for name, b in built.items()}
        self.archives = {name: b.archive for name, b in built.items()}

    def claim(self) -> str:
        """The lowest k whose namespace `mxjob<k>` is free, claimed by creating it; the API
        server then listens on the host end of this node's link."""
        with locked(self.plane.cache_dir / "netns.lock"):
            for k in range(MAX_SLOTS):
                if not (NETNS_DIR / f"mxjob{k}").exists():
                    self.slot = k
                    _ip("netns", "add", self.netns)
                    return self.host_ip
        raise StackError(f"all {MAX_SLOTS} real-node slots are taken (ip netns list)")

    def tokens(self) -> str:
        """The lines of the kubelet and kube-proxy in the API server's token file."""
        self.node_token = pki.new_token()
        self.proxy_token = pki.new_token()
        return (
            f'{self.node_token},system:node:{NODE_NAME},node,"system:nodes"\n'
            f"{self.proxy_token},system:kube-proxy,kube-proxy\n"
        )

    def prepare(self) -> None:
        """The node's network, its sysctls held, its configuration files (before the API server,
        which binds the host end of the link)."""
        self._make_network()
        hoststate.hold(str(self.run_dir))
        self._write_node_files()

    def apiserver_flags(self) -> list[str]:
        """RBAC and the Node authorizer, NodeRestriction, kubelets reached by their IP."""
        return [
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            # The node's name does not resolve: reach kubelets by their InternalIP.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            # Webhooks behind a Service are called at a ready pod's IP (routed to the node's
            # namespace), not at the ClusterIP, which only the node's kube-proxy knows.
            "--enable-aggregator-routing=true",
        ]

    def controller_flags(self) -> list[str]:
        """Every default controller: node lifecycle lifts the not-ready taint, endpointslices
        feed Services and DNS, root-ca-cert-publisher and the token controller give pods their
        service-account volumes."""
        pki_dir = self.run_dir / "pki"
        return [
            f"--root-ca-file={pki_dir / 'apiserver.crt'}",
            f"--service-account-private-key-file={pki_dir / 'sa.key'}",
        ]

    def start(self) -> None:
        """containerd (its images imported), the kubelet, kube-proxy and CoreDNS; until the
        node is Ready and CoreDNS answers."""
        self._start_containerd()
        self._start_kubelet()
        self._wait_node_ready()

    def _make_network(self) -> None:
        ns = self.netns
        _ip("link", "add", self.host_link, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("addr", "add", f"{self.host_ip}/24", "dev", self.host_link)
        _ip("link", "set", self.host_link, "up")
        _ip("-n", ns, "addr", "add", f"{self.node_ip}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "route", "add", "default", "via", self.host_ip)
        # The API server reaches webhook pods (the CRD's conversion webhook) by their IP; the
        # route goes with the veth when the namespace does.
        _ip("route", "add", self.pod_subnet, "via", self.node_ip, "dev", self.host_link)
        # The pods' bridge exists before the first pod so that CoreDNS can bind its address.
        _ip("-n", ns, "link", "add", "mxjbr0", "type", "bridge")
        _ip("-n", ns, "addr", "add", f"{self.bridge_ip}/24", "dev", "mxjbr0")
        _ip("-n", ns, "link", "set", "mxjbr0", "up")
        # Per namespace: pod -> ClusterIP -> pod on the same bridge needs forwarding.
        subprocess.run(self._in_node(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]), check=True)

    def _kubeconfig_for(self, name: str, token: str) -> Path:
        config = json.loads(self.plane.kubeconfig.read_text())
        config["users"][0]["user"]["token"] = token
        path = self.run_dir / f"{name}.kubeconfig"
        path.write_text(json.dumps(config, indent=2) + "\n")
        path.chmod(0o600)
        return path

    def _write_node_files(self) -> None:
        run = self.run_dir
        for sub in ("ctrd", "cni/net.d", "kubelet", "pod-logs"):
            (run / sub).mkdir(parents=True, exist_ok=True)
        pause = (self.images or {}).get("pause", "")
        (run / "ctrd/config.toml").write_text(CONTAINERD_CONFIG.format(run=run, pause=pause))
        (run / "cni/net.d/10-mxjob.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": self.netns,
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": "mxjbr0",
                            "isGateway": True,
                            "ipMasq": True,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [
                                    [{"subnet": self.pod_subnet, "gateway": self.bridge_ip}]
                                ],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(run / "cni/ipam"),
                            },
                        },
                        {"type": "portmap", "capabilities": {"portMappings": True}},
                    ],
                },
                indent=2,
            )
        )
        (run / "resolv.conf").write_text(f"nameserver {self.bridge_ip}\n")
        self._kubeconfig_for("kubelet", self.node_token)
        (run / "kubelet.yaml").write_text(
            KUBELET_CONFIG.format(
                run=run, node_ip=self.node_ip, dns=self.bridge_ip, cgroup_root=self.cgroup_root
            )
        )
        proxy = self._kubeconfig_for("kube-proxy", self.proxy_token)
        (run / "kube-proxy.yaml").write_text(
            KUBE_PROXY_CONFIG.format(kubeconfig=proxy, cidr=self.pod_subnet, node=NODE_NAME)
        )
        (run / "Corefile").write_text(
            COREFILE.format(bind=self.bridge_ip, kubeconfig=self.plane.kubeconfig)
        )

    def _start_containerd(self) -> None:
        self.plane.spawn(
            "containerd",
            self._in_node(
                [str(self.plane.bin("containerd")), f"--config={self.run_dir}/ctrd/config.toml"]
            ),
        )
        self.plane.wait(
            "containerd",
            "its socket",
            lambda: self._ctr("version", check=False).returncode == 0,
            30,
        )
        for name, archive in self.archives.items():
            started = time.monotonic()
            self._ctr("images", "import", str(archive), timeout=600)
            self.plane.log(f"imported image {name} in {time.monotonic() - started:.1f}s")

    def _ctr(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            str(self.plane.bin("ctr")),
            f"--address={self.containerd_socket}",
            "-n",
            "k8s.io",
            *args,
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
        if check and proc.returncode != 0:
            raise StackError(f"ctr {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _start_kubelet(self) -> None:
        for hierarchy in cgroup_hierarchies():
            root = hierarchy / self.cgroup_root.lstrip("/")
            root.mkdir(exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):  # a v1 cpuset child starts empty
                if (root / knob).exists() and not (root / knob).read_text().strip():
                    (root / knob).write_text((hierarchy / knob).read_text())
        run = self.run_dir
        self.plane.spawn(
            "kubelet",
            self._in_node(
                [
                    str(self.plane.bin("kubelet")),
                    f"--config={run / 'kubelet.yaml'}",
                    f"--kubeconfig={run / 'kubelet.kubeconfig'}",
                    f"--root-dir={run / 'kubelet'}",
                    f"--hostname-override={NODE_NAME}",
                    f"--node-ip={self.node_ip}",
                    "--v=1",
                ]
            ),
        )
        self.plane.spawn(
            "kube-proxy",
            self._in_node(
                [str(self.plane.bin("kube-proxy")), f"--config={run / 'kube-proxy.yaml'}"]
            ),
        )
        self.plane.spawn(
            "coredns",
            self._in_node([str(self.plane.bin("coredns")), "-conf", str(run / "Corefile")]),
        )

    def _wait_node_ready(self) -> None:
        ready = partial(self.plane.node_ready, NODE_NAME)
        self.plane.wait("kubelet", f"node {NODE_NAME} Ready", ready, 120)
        self.plane.wait(
            "coredns",
            "its ready endpoint",
            lambda: (
                subprocess.run(
                    self._in_node(["python3", "-c", READY_PROBE]), check=False
                ).returncode
                == 0
            ),
            60,
        )

    # -- stop ---------------------------------------------------------------------------------

    def stop(self, grace: float) -> str | None:
        """Stop the node and undo every host change it made; its network namespace if that is
        still there after `ip netns del` (the control plane, stopped next, then says so)."""
        for name in ("kubelet", "kube-proxy", "coredns"):
            self.plane.stop_process(name, grace)
        self._kill_containers()
        self.plane.stop_process("containerd", grace)
        self._kill_shims()
        self._unmount_all()
        self._remove_cgroups()
        left = self._release_slot()
        _ip("link", "del", self.host_link, check=False)
        if self.run_dir.is_dir():
            hoststate.release(str(self.run_dir))
        return f"network namespace {left} (after `ip netns del`)" if left else None

    def _release_slot(self) -> str | None:
        """Delete this node's namespace (the veth pair and iptables go with it); the name of the
        namespace if it is still there. Under the lock that claims slots, so that a stack
        starting meanwhile cannot take the slot before the check."""
        if self.slot < 0:
            return None
        with locked(self.plane.cache_dir / "netns.lock"):
            if (NETNS_DIR / self.netns).exists():
                _ip("netns", "del", self.netns, check=False)
            return self.netns if (NETNS_DIR / self.netns).exists() else None

    @property
    def runc_root(self) -> Path:
        """Where the node's containerd keeps its runc state (the `k8s.io` namespace)."""
        return self.run_dir / "runc" / "k8s.io"

    def container_pid(self, container_id: str) -> int:
        """The host pid of a container's main process (`containerID` without its `containerd://`),
        from runc, not the API."""
        state = subprocess.run(
            ["runc", f"--root={self.runc_root}", "state", container_id.split("://", 1)[-1]],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(json.loads(state.stdout)["pid"])

    def _kill_containers(self) -> None:
        """Every container of this node's runc root, killed and deleted."""
        root = self.runc_root
        if not root.is_dir():
            return
        runc = ["runc", f"--root={root}"]
        listed = subprocess.run([*runc, "list", "-q"], capture_output=True, text=True, check=False)
        for cid in listed.stdout.split():
            subprocess.run([*runc, "kill", "--all", cid, "KILL"], capture_output=True, check=False)
            subprocess.run([*runc, "delete", "--force", cid], capture_output=True, check=False)

    def _kill_shims(self) -> None:
        """containerd's shims outlive it in their own sessions; they name its socket."""
        needle = str(self.containerd_socket)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and needle in pid_cmdline(int(entry.name)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry.name), signal.SIGKILL)

    def _unmount_all(self) -> None:
        """Every mount under the run directory, deepest first (the kubelet bind-mounts its root
        directory, containerd mounts overlay snapshots, pod netns and shm)."""
        prefix = f"{self.run_dir}/"
        for _ in range(3):
            points = [
                line.split()[4].replace("\\040", " ")
                for line in Path("/proc/self/mountinfo").read_text().splitlines()
            ]
            mine = [p for p in points if p.startswith(prefix) or p == str(self.run_dir)]
            if not mine:
                return
            for point in sorted(set(mine), key=len, reverse=True):
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)

    def _remove_cgroups(self) -> None:
        """The kubelet's cgroups under this node's root, leaves first, in every hierarchy."""
        if self.slot < 0:
            return
        for hierarchy in cgroup_hierarchies():
            root = hierarchy / self.cgroup_root.lstrip("/")
            if not root.is_dir():
                continue
            groups = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            for group in [*groups, root]:
                for attempt in range(20):
                    try:
                        group.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        self._kill_cgroup_procs(group)
                        time.sleep(0.1 * (attempt + 1))

    @staticmethod
    def _kill_cgroup_procs(group: Path) -> None:
        try:
            pids = (group / "cgroup.procs").read_text().split()
        except OSError:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)

    # -- the project, installed as users install it ----------------------------------------

    def install(self, repo: Path, hook_cmd: str, hook_port: int) -> None:
        """`install_in_cluster`: the hook runs in the cluster from its image, so `hook_cmd` and
        `hook_port` (the KWOK tier's hook on the host) mean nothing here."""
        self.install_in_cluster(repo)

    def install_in_cluster(self, repo: Path) -> None:
        """Metacontroller's production manifests with the patch of `metacontroller/install`,
        then `manifests/crd` and `manifests/overlays/standard` as the README says, with the
        locally built images; waits until the hook, the TTL controller and Metacontroller run."""
        refs = self.images or {}
        meta = self.run_dir / "install" / "metacontroller"
        meta.mkdir(parents=True, exist_ok=True)
        production = build.METACONTROLLER.home(self.plane.cache_dir) / "manifests"
        (meta / "kustomization.yaml").write_text(
            kustomization(
                meta,
                production,
                {"ghcr.io/metacontroller/metacontroller": refs[images.METACONTROLLER.name]},
                patches=(repo / "metacontroller" / "install" / METACONTROLLER_PATCH,),
            )
        )
        self.plane.kubectl("apply", "--server-side", "-k", str(meta), timeout=120)
        self.install_crd(repo)
        self.install_variant(repo, "standard")
        for kind, namespace, name in (
            ("statefulset", "metacontroller", "metacontroller"),
            ("deployment", "mxjob-system", "mxjob-hook"),
        ):
            self.plane.kubectl(
                "rollout",
                "status",
                "-n",
                namespace,
                f"{kind}/{name}",
                "--timeout=180s",
                timeout=200,
            )
        self.plane.kubectl(
            "wait",
            "--for=condition=Available",
            "--timeout=120s",
            "-A",
            "deployment",
            "--all",
            timeout=150,
        )

    def install_crd(self, repo: Path) -> None:
        """`kubectl apply -k manifests/crd` as the README says (installed on its own, so that
        uninstalling a variant keeps it); waits until every CRD is established."""
        self.plane.kubectl("apply", "-k", str(repo / "manifests" / "crd"), timeout=120)
        self.plane.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all", timeout=90
        )

    def install_variant(self, repo: Path, variant: str) -> None:
        """`kubectl apply -k manifests/overlays/<variant>` as the README says, with only the
        hook's image swapped for the locally built one."""
        project = self.run_dir / "install" / f"mxjob-{variant}"
        project.mkdir(parents=True, exist_ok=True)
        (project / "kustomization.yaml").write_text(
            kustomization(
                project,
                repo / "manifests" / "overlays" / variant,
                {"mxjob": (self.images or {})[images.HOOK.name]},
            )
        )
        self.plane.kubectl("apply", "-k", str(project), timeout=120)


def kustomization(
    directory: Path, base: Path, images_: dict[str, str], patches: tuple[Path, ...] = ()
) -> str:
    """A kustomization in `directory` of `base` that swaps images for locally built ones and
    applies `patches` (kustomize takes no absolute paths: the base is named relative to the
    directory, and the patches, which it reads only from inside it, are copied there)."""
    for patch in patches:
        shutil.copyfile(patch, directory / patch.name)
    entries = []
    for name, ref in images_.items():
        new_name, _, tag = ref.rpartition(":")
        entries.append({"name": name, "newName": new_name, "newTag": tag})
    return json.dumps(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(base, directory)],
            "images": entries,
            "patches": [{"path": patch.name} for patch in patches],
        },
        indent=2,
    )


READY_PROBE = (
    "import urllib.request,sys;"
    "sys.exit(urllib.request.urlopen('http://127.0.0.1:8181/ready',timeout=2).status!=200)"
)

CONTAINERD_CONFIG = """\
version = 2
root = "{run}/ctrd/root"
state = "{run}/ctrd/state"
[grpc]
  address = "{run}/ctrd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # This machine's root lacks CAP_SYS_RESOURCE: runc cannot lower a sandbox's oom_score_adj.
  restrict_oom_score_adj = true
  # Pod network namespaces under the run directory, not the shared /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{run}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{run}/cni/net.d"
"""

KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: {cgroup_root}
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://{run}/ctrd/containerd.sock
address: {node_ip}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {{anonymous: {{enabled: true}}, webhook: {{enabled: false}}}}
authorization: {{mode: AlwaysAllow}}
clusterDNS: [{dns}]
clusterDomain: cluster.local
resolvConf: {run}/resolv.conf
podLogsDir: {run}/pod-logs
evictionHard: {{memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 150
"""

KUBE_PROXY_CONFIG = """\
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
hostnameOverride: {node}
mode: iptables
clusterCIDR: {cidr}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
iptables: {{localhostNodePorts: false}}
conntrack: {{maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}}
"""

COREFILE = """\
.:53 {{
    bind {bind}
    errors
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} mxjob-e2e
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
"""

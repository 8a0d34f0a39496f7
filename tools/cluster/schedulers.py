"""Gang schedulers and queue admission a KWOK-tier stack can add on demand: Volcano's scheduler,
scheduler-plugins' scheduler with coscheduling (and its PodGroup controller), Kueue. Each runs
as a host process (tools/cluster/processes.py) with the CRDs and configuration from its own
release tree (docs/scheduling.md, docs/testing.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from tools.cluster import build, kwok, pki
from tools.cluster.probes import http_ok
from tools.cluster.processes import healthz, install_crds, kube_env, process, source
from tools.cluster.stack import Stack
from tools.ports import free_port

#: Label (and taint) of the KWOK nodes a test gives a scheduler of its own.
POOL_LABEL = "mxjob.kubeflow.org/test-pool"
#: The scheduler name scheduler-plugins' "as a second scheduler" chart gives its scheduler.
PLUGINS_SCHEDULER = "scheduler-plugins-scheduler"


@contextmanager
def volcano(stack: Stack, node_selector: str) -> Iterator[None]:
    """Volcano's scheduler (name `volcano`) with the configuration its Helm chart installs,
    looking only at nodes labelled `node_selector` (`key:value`); it creates the `default`
    Queue itself and moves PodGroups through their phases."""
    src = source(stack, build.VOLCANO)
    # Every Volcano CRD: the scheduler waits for its informers (Numatopology too) to sync.
    install_crds(stack, *sorted((src / "config" / "crd" / "volcano" / "bases").glob("*.yaml")))
    health = free_port()
    argv = [
        str(stack.bin("vc-scheduler")),
        f"--kubeconfig={stack.kubeconfig}",
        "--scheduler-name=volcano",
        f"--scheduler-conf={src / 'installer/helm/chart/volcano/config/volcano-scheduler.conf'}",
        f"--node-selector={node_selector}",
        f"--listen-address=127.0.0.1:{free_port()}",
        f"--healthz-address=127.0.0.1:{health}",
        "--enable-healthz",
        "--leader-elect=false",
        "--logtostderr",
        "-v=3",
    ]
    with process(stack, "vc-scheduler", argv, healthz(health)):
        yield


@contextmanager
def scheduler_plugins(stack: Stack) -> Iterator[None]:
    """scheduler-plugins' scheduler (name PLUGINS_SCHEDULER) with only the Coscheduling plugin,
    as its coscheduling manifest configures it, and its controller, which keeps PodGroup
    phases."""
    src = source(stack, build.SCHEDULER_PLUGINS)
    manifests = src / "manifests"
    install_crds(
        stack,
        manifests / "coscheduling" / "crd.yaml",
        manifests / "capacityscheduling" / "crd.yaml",
    )
    config = yaml.safe_load((manifests / "coscheduling" / "scheduler-config.yaml").read_text())
    config["clientConnection"]["kubeconfig"] = str(stack.kubeconfig)
    config["profiles"][0]["schedulerName"] = PLUGINS_SCHEDULER
    config_file = stack.run_dir / "scheduler-plugins.yaml"
    config_file.write_text(yaml.safe_dump(config))
    scheduler_port, probe = free_port(), free_port()
    scheduler = [
        str(stack.bin("sp-scheduler")),
        f"--config={config_file}",
        "--bind-address=127.0.0.1",
        f"--secure-port={scheduler_port}",
        "--v=3",
    ]
    controller = [
        str(stack.bin("sp-controller")),
        f"--metricsAddr=127.0.0.1:{free_port()}",
        f"--probeAddr=127.0.0.1:{probe}",
        "--qps=50",
        "--burst=100",
    ]
    env = kube_env(stack)
    secure = partial(http_ok, f"https://127.0.0.1:{scheduler_port}/healthz")
    with ExitStack() as started:
        started.enter_context(process(stack, "sp-scheduler", scheduler, secure))
        started.enter_context(
            process(stack, "sp-controller", controller, healthz(probe, "/healthz"), env)
        )
        yield


def nodes(names: Sequence[str], pool: str, cpu: str, memory: str = "8Gi") -> str:
    """KWOK nodes of a known, small size in their own pool: labelled and tainted
    `mxjob.kubeflow.org/test-pool=<pool>` so only a test's own pods land there."""
    items: list[dict[str, Any]] = []
    for name in names:
        node = kwok.node(name)
        node["metadata"]["labels"][POOL_LABEL] = pool
        node["spec"] = {"taints": [{"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"}]}
        capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
        node["status"] = {"capacity": capacity, "allocatable": capacity}
        items.append(node)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


KUEUE_NAMESPACE = "kueue-system"


@contextmanager
def kueue(stack: Stack) -> Iterator[None]:
    """Kueue's manager with only the plain Pod integration, its webhooks called by URL on
    127.0.0.1 with a certificate made here (its own certificate management expects a Service);
    the webhook configurations go before the manager stops, so no pod creation hangs on it."""
    src = source(stack, build.KUEUE)
    install_crds(stack, *sorted((src / "config/components/crd/bases").glob("*.yaml")))
    stack.kubectl("create", "namespace", KUEUE_NAMESPACE, check=False)
    certs = stack.run_dir / "kueue-certs"
    ca_bundle = pki.write_serving_cert(certs, "127.0.0.1")
    webhook, health = free_port(), free_port()
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
        "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": ["pod"]},
    }
    config_file = stack.run_dir / "kueue.yaml"
    config_file.write_text(yaml.safe_dump(config))
    argv = [
        *_with_metrics_certs(stack.run_dir / "kueue-etc", certs),
        str(stack.bin("kueue")),
        f"--config={config_file}",
        # The pending-workloads API is an aggregated API server of its own, which needs its
        # own certificate and an APIService; the tests read Workloads directly instead.
        "--feature-gates=VisibilityOnDemand=false",
        "--zap-log-level=3",
    ]
    env = kube_env(stack)
    webhooks = _kueue_webhooks(stack, src, f"https://127.0.0.1:{webhook}", ca_bundle)
    with process(stack, "kueue", argv, healthz(health, "/readyz"), env):
        stack.kubectl("apply", "-f", "-", input=webhooks)
        try:
            yield
        finally:
            stack.kubectl("delete", "-f", "-", "--ignore-not-found", input=webhooks, check=False)


def _with_metrics_certs(etc: Path, certs: Path) -> list[str]:
    """A command prefix giving the process a private /etc holding `kueue/metrics/certs`: without
    its own certificate management Kueue reads its metrics certificate from that fixed path, and
    the host's /etc stays untouched (a copy bind-mounted in a mount namespace of its own)."""
    script = (
        'set -e; cp -a /etc "$0"; mkdir -p "$0/kueue/metrics"; cp -a "$1" "$0/kueue/metrics/certs";'
        ' mount --bind "$0" /etc; shift; exec "$@"'
    )
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        str(etc),
        str(certs),
    ]


def _kueue_webhooks(stack: Stack, src: Path, url: str, ca_bundle: bytes) -> str:
    """Kueue's webhook configurations as its kustomization renders them, reduced to Pods and
    Kueue's own kinds (the only handlers its manager serves here) and pointed at `url`."""
    rendered = stack.kubectl("kustomize", str(src / "config/components/webhook")).stdout
    kept = []
    for doc in yaml.safe_load_all(rendered):
        if not doc or not doc["kind"].endswith("WebhookConfiguration"):
            continue
        hooks = []
        for hook in doc["webhooks"]:
            rules = hook.get("rules", [])
            if not any(
                "pods" in r.get("resources", []) or "kueue.x-k8s.io" in r.get("apiGroups", [])
                for r in rules
            ):
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": f"{url}{path}",
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            hooks.append(hook)
        doc["metadata"]["name"] = f"kueue-{doc['metadata']['name']}"
        doc["webhooks"] = hooks
        kept.append(doc)
    return yaml.safe_dump_all(kept)

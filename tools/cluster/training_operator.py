"""Kubeflow training-operator, the last releases with MXJob, run beside a stack as users ran it
(docs/comparison.md, docs/migration.md): its manager out of cluster against the stack's API
server (tools/cluster/processes.py), its own CRDs, metrics and probes on 127.0.0.1.

From v1.8 it also validates jobs with a webhook, behind a certificate rotator that lets the
manager start its controllers only once it has put its CA into the webhook configuration and
found the serving certificate on disk at a fixed path. So `installed` gives the rotator a
Secret it accepts (one self-signed certificate serving as CA and as server certificate) and the
webhook configuration its release ships, pointed at the manager by URL on 127.0.0.1; `manager`
puts the certificate at that path inside a mount namespace of the manager's own. Its webhook
server has no flag for a bind address: it listens on every interface, on a free port, while it
runs. v1.7.0 has no webhooks.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.cluster import build, pki
from tools.cluster.processes import healthz, install_crds, kube_env, process, source
from tools.cluster.stack import Stack
from tools.ports import free_port

NAMESPACE = "kubeflow"
#: The webhook configuration the manager's rotator fills in (its pkg/cert), and the name of
#: one scheme's webhook in it.
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
_WEBHOOK = "validator.{scheme}.training-operator.kubeflow.org"
_SECRET = "training-operator-webhook-cert"
#: Names the rotator checks the certificates for: its CA's, and the manager's Service's.
_CERT_NAMES = ("training-operator-ca", f"training-operator.{NAMESPACE}.svc")
#: Where the rotator expects the mounted certificate (fixed in its code).
_CERT_MOUNT = "/tmp/k8s-webhook-server"


@dataclass(frozen=True)
class Release:
    """An installed training-operator release: where its manager's webhook server listens and
    the certificate it serves (None for a release without webhooks)."""

    version: str
    webhook_port: int | None
    certs: Path | None

    def binary(self, stack: Stack) -> Path:
        return build.TRAINING_OPERATORS[self.version].binary(stack.cache_dir, "training-operator")


def tree(stack: Stack, version: str) -> Path:
    return source(stack, build.TRAINING_OPERATORS[version])


def crd(stack: Stack, version: str, scheme: str = "mxjob") -> Path:
    """The release's own CRD of a scheme (`manifests/base/crds/kubeflow.org_<kind>s.yaml`)."""
    return tree(stack, version) / "manifests" / "base" / "crds" / f"kubeflow.org_{scheme}s.yaml"


def webhook_name(scheme: str) -> str:
    return _WEBHOOK.format(scheme=scheme)


@contextmanager
def installed(stack: Stack, version: str, schemes: Sequence[str]) -> Iterator[Release]:
    """The release's CRDs of `schemes` and, from v1.8, its webhook configuration for them and
    the rotator's Secret; the webhook configuration and the Secret go again when the block
    ends (a webhook with `failurePolicy: Fail` and no server refuses every request), the CRDs
    stay: handing them over is the caller's business."""
    install_crds(stack, *(crd(stack, version, scheme) for scheme in schemes))
    webhooks = tree(stack, version) / "manifests" / "base" / "webhook"
    if not webhooks.is_dir():
        yield Release(version, None, None)
        return
    port, certs = free_port(), stack.run_dir / f"training-operator-{version}-certs"
    pem = pki.write_serving_cert(certs, "127.0.0.1", days=3650, names=_CERT_NAMES)
    stack.kubectl("create", "namespace", NAMESPACE, check=False)
    stack.kubectl("apply", "-f", "-", input=json.dumps(_secret(certs)))
    configuration = _webhook_configuration(stack, webhooks, schemes, port, pem)
    stack.kubectl("apply", "-f", "-", input=configuration)
    try:
        yield Release(version, port, certs)
    finally:
        stack.kubectl(
            "delete", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION,
            "--ignore-not-found", check=False,
        )  # fmt: skip
        stack.kubectl("delete", "secret", "-n", NAMESPACE, _SECRET, "--ignore-not-found")
        with contextlib.suppress(OSError):  # the mount point, once no manager uses it
            Path(_CERT_MOUNT).rmdir()


def _secret(certs: Path) -> dict[str, Any]:
    """What the rotator keeps: the CA and the server certificate, here the same one."""
    crt, key = (
        base64.b64encode((certs / f"tls.{k}").read_bytes()).decode() for k in ("crt", "key")
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": _SECRET, "namespace": NAMESPACE},
        "data": {"ca.crt": crt, "ca.key": key, "tls.crt": crt, "tls.key": key},
    }


def _webhook_configuration(
    stack: Stack, webhooks: Path, schemes: Sequence[str], port: int, pem: bytes
) -> str:
    """The release's webhook configuration, its webhooks of `schemes` only, called by URL."""
    rendered = stack.kubectl("kustomize", str(webhooks)).stdout
    (doc,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"].endswith("Configuration")]
    wanted = {webhook_name(scheme) for scheme in schemes}
    kept = [hook for hook in doc["webhooks"] if hook["name"] in wanted]
    for hook in kept:
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
            "caBundle": base64.b64encode(pem).decode(),
        }
    doc["metadata"]["name"] = WEBHOOK_CONFIGURATION
    doc["webhooks"] = kept
    return yaml.safe_dump(doc)


@dataclass(frozen=True)
class Manager:
    """A running manager: its process (the operator itself, `exec`ed) and its Prometheus
    endpoint (controller-runtime's, with client-go's `rest_client_requests_total`)."""

    process: subprocess.Popen[bytes]
    metrics: str


@contextmanager
def manager(stack: Stack, release: Release, schemes: Sequence[str]) -> Iterator[Manager]:
    """The release's manager with `schemes` enabled (`--enable-scheme`), until the block ends."""
    probe, metrics = free_port(), free_port()
    argv = [
        str(release.binary(stack)),
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{probe}",
        *(f"--enable-scheme={scheme}" for scheme in schemes),
    ]
    if release.webhook_port is not None and release.certs is not None:
        argv = [*_with_certs(release.certs), *argv, f"--webhook-server-port={release.webhook_port}"]
    name = f"training-operator-{release.version}"
    ready = healthz(probe, "/readyz")
    with process(stack, name, argv, ready, kube_env(stack), timeout=180) as proc:
        yield Manager(proc, f"http://127.0.0.1:{metrics}/metrics")


def _with_certs(certs: Path) -> list[str]:
    """A command prefix giving the process its serving certificate at the rotator's fixed path,
    on a tmpfs in a mount namespace of its own (the host's /tmp gets at most an empty mount
    point)."""
    script = (
        'set -e; mkdir -p "$1"; mount -t tmpfs -o size=1m tmpfs "$1"; mkdir "$1/serving-certs";'
        ' cp "$0/tls.crt" "$0/tls.key" "$1/serving-certs/"; shift; exec "$@"'
    )
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        str(certs),
        _CERT_MOUNT,
    ]

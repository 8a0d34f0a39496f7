"""One pass of the certificate keeper: the Secret as `certs.authority` plans it, then the CRD's
`caBundle` equal to the Secret's CA bundle.

Polling, like the TTL loop: two GETs a pass, and a write only when something is due or drifted
(a CRD re-applied from a file without `caBundle` keeps ours under both client- and server-side
apply, but a `kubectl replace` would drop it). A Secret is written with its resourceVersion, so
two keepers racing cannot both win; the loser sees the winner's Secret on its next pass. The CRD
is read before the Secret and patched only if it is still the one read (a JSON patch `test` of
its resourceVersion): a keeper whose Secret is stale finds the CRD patched by the one that
rotated it since, and its patch is refused instead of undoing the rotation. The keeper never adds
a conversion webhook to a CRD that has none: the install says whether the old versions are
served; and a ValidatingAdmissionPolicy lets its account change nothing of the CRD but
`caBundle` (manifests/components/conversion/certs.yaml).
"""

import base64
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from certs.authority import CA_CERT, plan

LOG = logging.getLogger("certs")
HTTP_NOT_FOUND = 404
REQUEST_TIMEOUT_SECONDS = 30
_BUNDLE_PATH = "/spec/conversion/webhook/clientConfig/caBundle"


@dataclass(frozen=True)
class Target:
    """Where the certificate goes: the Secret the webhook's pods mount, the names they are
    called by, and the CRD whose conversion webhook they serve."""

    namespace: str
    secret: str
    dns_names: Sequence[str]
    crd: str


def run_once(api: client.ApiClient, target: Target, now: datetime) -> list[str]:
    """Bring the Secret and the CRD up to date; what was written, in words."""
    core, ext = client.CoreV1Api(api), client.ApiextensionsV1Api(api)
    done = []
    # First the CRD: a bundle another keeper writes from here on changes its resourceVersion.
    crd = ext.read_custom_resource_definition(target.crd, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    secret = _read_secret(core, target)
    data = {k: base64.b64decode(v) for k, v in ((secret.data if secret else None) or {}).items()}
    decided = plan(data or None, target.dns_names, now)
    if decided.data is not None:
        _write_secret(core, target, secret, decided.data)
        data = decided.data
        done.append(f"secret {target.namespace}/{target.secret}: {decided.reason}")
    if patch_bundle(ext, target.crd, crd, data[CA_CERT]):
        done.append(f"crd {target.crd}: caBundle set")
    return done


def run(api: client.ApiClient, target: Target, interval: float, stop: threading.Event) -> None:
    """Passes every `interval` seconds until `stop` is set; a failed pass is logged and retried."""
    while not stop.is_set():
        try:
            for action in run_once(api, target, datetime.now(UTC)):
                LOG.info(action, extra={"fields": {"action": "write"}})
        except Exception:
            LOG.exception("pass failed", extra={"fields": {"action": "error"}})
        stop.wait(interval)


def _read_secret(core: client.CoreV1Api, target: Target) -> client.V1Secret | None:
    try:
        secret: client.V1Secret = core.read_namespaced_secret(
            target.secret, target.namespace, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
    except ApiException as exc:
        if exc.status == HTTP_NOT_FOUND:
            return None
        raise
    return secret


def _write_secret(
    core: client.CoreV1Api,
    target: Target,
    existing: client.V1Secret | None,
    data: dict[str, bytes],
) -> None:
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name=target.secret,
            namespace=target.namespace,
            labels={"app.kubernetes.io/part-of": "mxjob", "app.kubernetes.io/component": "certs"},
            resource_version=existing.metadata.resource_version
            if existing and existing.metadata
            else None,
        ),
        type="kubernetes.io/tls",
        data={k: base64.b64encode(v).decode() for k, v in data.items()},
    )
    if existing is None:
        core.create_namespaced_secret(
            target.namespace, body, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
    else:
        core.replace_namespaced_secret(
            target.secret, target.namespace, body, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )


def patch_bundle(
    ext: client.ApiextensionsV1Api, name: str, crd: client.V1CustomResourceDefinition, pem: bytes
) -> bool:
    """Set the conversion webhook `caBundle` of the CRD as read to `pem` unless it is already,
    if the CRD is still as read (a 422 otherwise); False also when it converts without a
    webhook."""
    conversion = crd.spec.conversion
    if conversion is None or conversion.webhook is None:
        LOG.warning(
            "the CRD has no conversion webhook: nothing to trust",
            extra={"fields": {"action": "skip", "crd": name}},
        )
        return False
    wanted = base64.b64encode(pem).decode()
    client_config = conversion.webhook.client_config
    if client_config is not None and client_config.ca_bundle == wanted:
        return False
    version = crd.metadata.resource_version if crd.metadata else None
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {"op": "add", "path": _BUNDLE_PATH, "value": wanted},
    ]
    ext.patch_custom_resource_definition(name, patch, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    return True

"""One pass of the certificate keeper: the CA and the serving pair as `mxjob.certs.authority` plans
them, each in a Secret of its own, then the CRD's `caBundle` equal to the CA bundle.

Two Secrets, both shipped by the install (manifests/components/conversion, the Helm chart), so
the keeper creates nothing: a keeper that may create Secrets could create a service-account
token Secret, which the token controller fills with another component's token. The CA Secret
(`mxjob-convert-ca`: `ca.crt`, `ca.key`) is read by the keeper alone; the serving Secret
(`mxjob-convert-serving`: `tls.crt`, `tls.key`) is what the webhook's pods mount. Each is written
by a JSON patch of its `data` alone, tested against the resourceVersion read, so two keepers
racing cannot both win (the loser sees the winner's Secret on its next pass) and the labels and
annotations of whoever applied it (kubectl, Helm) stay.

An install of before the split kept both in one Secret, `mxjob-convert-tls`: while the CA Secret
is empty, the keeper takes the CA and the serving pair from it, so an upgraded install keeps the
CA the CRD trusts and the pods still serving the old Secret keep converting.

Polling, like the TTL loop: three GETs a pass, and a write only when something is due or drifted
(a CRD re-applied from a file without `caBundle` keeps ours under both client- and server-side
apply, but a `kubectl replace` would drop it). The CRD is read before the Secrets and patched
only if it is still the one read (a JSON patch `test` of its resourceVersion): a keeper whose
Secrets are stale finds the CRD patched by the one that rotated it since, and its patch is
refused instead of undoing the rotation. The keeper never adds a conversion webhook to a CRD
that has none: the install says whether the old versions are served; and a
ValidatingAdmissionPolicy lets its account change nothing of the CRD but `caBundle`
(manifests/components/conversion/certs.yaml).
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

from mxjob.certs.authority import CA_CERT, CA_KEYS, SERVING_KEYS, plan

LOG = logging.getLogger("certs")
HTTP_NOT_FOUND = 404
REQUEST_TIMEOUT_SECONDS = 30
_BUNDLE_PATH = "/spec/conversion/webhook/clientConfig/caBundle"


@dataclass(frozen=True)
class Target:
    """Where the certificates go: the Secrets of the CA and of the serving pair (the one the
    webhook's pods mount), the single Secret of an earlier install, the names the pods are
    called by, and the CRD whose conversion webhook they serve."""

    namespace: str
    ca_secret: str
    serving_secret: str
    legacy_secret: str
    dns_names: Sequence[str]
    crd: str


class MissingSecretError(LookupError):
    """A Secret the install ships is not there: the keeper creates none."""


def run_once(api: client.ApiClient, target: Target, now: datetime) -> list[str]:
    """Bring the Secrets and the CRD up to date; what was written, in words."""
    core, ext = client.CoreV1Api(api), client.ApiextensionsV1Api(api)
    # First the CRD: a bundle another keeper writes from here on changes its resourceVersion.
    crd = ext.read_custom_resource_definition(target.crd, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    secrets = [
        (name, _shipped(core, target.namespace, name), keys)
        for name, keys in ((target.ca_secret, CA_KEYS), (target.serving_secret, SERVING_KEYS))
    ]
    held, why = _held(core, target, secrets)
    decided = plan(held, target.dns_names, now)
    wanted = decided.data if decided.data is not None else held
    done = [
        f"secret {target.namespace}/{name}: {decided.reason if decided.data else why}"
        for name, secret, keys in secrets
        if _write(core, target.namespace, name, secret, {k: wanted[k] for k in keys if k in wanted})
    ]
    if patch_bundle(ext, target.crd, crd, wanted[CA_CERT]):
        done.append(f"crd {target.crd}: caBundle set")
    return done


Shipped = list[tuple[str, client.V1Secret, tuple[str, str]]]


def _held(core: client.CoreV1Api, target: Target, secrets: Shipped) -> tuple[dict[str, bytes], str]:
    """What the shipped Secrets hold, or while the CA's is empty what the single Secret of an
    earlier install holds, and where that came from in words."""
    held = {key: value for _, secret, keys in secrets for key, value in _data(secret, keys).items()}
    if any(key in held for key in CA_KEYS):
        return held, ""
    legacy = _data(_read(core, target.namespace, target.legacy_secret), (*CA_KEYS, *SERVING_KEYS))
    if not any(key in legacy for key in CA_KEYS):
        return held, ""
    return legacy, f"taken from {target.legacy_secret} (the single Secret of an earlier install)"


def run(api: client.ApiClient, target: Target, interval: float, stop: threading.Event) -> None:
    """Passes every `interval` seconds until `stop` is set; a failed pass is logged and retried."""
    while not stop.is_set():
        try:
            for action in run_once(api, target, datetime.now(UTC)):
                LOG.info(action, extra={"fields": {"action": "write"}})
        except Exception:
            LOG.exception("pass failed", extra={"fields": {"action": "error"}})
        stop.wait(interval)


def _read(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret | None:
    try:
        secret: client.V1Secret = core.read_namespaced_secret(
            name, namespace, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
    except ApiException as exc:
        if exc.status == HTTP_NOT_FOUND:
            return None
        raise
    return secret


def _shipped(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret:
    """A Secret the install ships; raises MissingSecretError when it is not there."""
    secret = _read(core, namespace, name)
    if secret is None:
        raise MissingSecretError(
            f"secret {namespace}/{name} is missing: the install ships it (empty) and the keeper "
            "creates no Secret; apply the install again"
        )
    return secret


def _data(secret: client.V1Secret | None, keys: Sequence[str]) -> dict[str, bytes]:
    """The Secret's values of `keys`, decoded (those it has)."""
    data = secret.data if secret is not None and secret.data else {}
    return {key: base64.b64decode(value) for key, value in data.items() if key in keys}


def _write(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    secret: client.V1Secret,
    data: dict[str, bytes],
) -> bool:
    """Set the Secret's data to `data` unless it holds that already, if it is still the Secret
    read (a 422 otherwise); nothing else of it changes."""
    if _data(secret, list(secret.data or {})) == data:
        return False
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": _version(secret)},
        {"op": "add", "path": "/data", "value": encoded},
    ]
    core.patch_namespaced_secret(name, namespace, patch, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    return True


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
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": _version(crd)},
        {"op": "add", "path": _BUNDLE_PATH, "value": wanted},
    ]
    ext.patch_custom_resource_definition(name, patch, _request_timeout=REQUEST_TIMEOUT_SECONDS)
    return True


def _version(obj: client.V1Secret | client.V1CustomResourceDefinition) -> str | None:
    return obj.metadata.resource_version if obj.metadata else None

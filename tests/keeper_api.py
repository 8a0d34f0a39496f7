"""The API server as the certificate keeper calls it (mxjob/certs/controller.py), in memory:
Secrets and the CRD, JSON patches with their `test` of the resourceVersion, and a record of every
call as (verb, resource, name), which tests/test_manifests.py holds against the keeper's roles.

Each scenario of `SCENARIOS` is an install the keeper may meet; `every_call()` runs them all.
"""

import base64
import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mxjob.certs import controller
from mxjob.certs.authority import plan

NAMESPACE = "mxjob-system"
CRD = "mxjobs.kubeflow.org"
TARGET = controller.Target(
    namespace=NAMESPACE,
    ca_secret="mxjob-convert-ca",
    serving_secret="mxjob-convert-serving",
    legacy_secret="mxjob-convert-tls",
    dns_names=("mxjob-convert.mxjob-system.svc", "mxjob-convert.mxjob-system.svc.cluster.local"),
    crd=CRD,
)
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
#: What a Helm install labels its objects with, which the keeper's writes must keep.
HELM_LABELS = {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "mxjob"}
Call = tuple[str, str, str]


@dataclass
class FakeApi:
    """Secrets of the keeper's namespace by name (metadata and base64 data) and the CRD's
    caBundle; every call recorded."""

    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    bundle: str | None = None
    calls: list[Call] = field(default_factory=list)
    versions: Iterator[int] = field(default_factory=lambda: itertools.count(100))
    crd_version: str = "1"

    def ship(self, name: str, data: dict[str, bytes] | None = None) -> None:
        """A Secret as the install ships it (no data, the labels Helm gives it), or with
        `data`."""
        self.secrets[name] = {
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": dict(HELM_LABELS),
                "resourceVersion": str(next(self.versions)),
            },
            "type": "Opaque",
            "data": {k: base64.b64encode(v).decode() for k, v in (data or {}).items()} or None,
        }

    def data(self, name: str) -> dict[str, bytes]:
        return {k: base64.b64decode(v) for k, v in (self.secrets[name]["data"] or {}).items()}

    # CoreV1Api

    def read_namespaced_secret(self, name: str, namespace: str, **_: Any) -> client.V1Secret:
        self.calls.append(("get", "secrets", name))
        if namespace != NAMESPACE or name not in self.secrets:
            raise ApiException(status=404, reason="Not Found")
        found = self.secrets[name]
        return client.V1Secret(
            metadata=client.V1ObjectMeta(
                name=name,
                namespace=namespace,
                labels=found["metadata"]["labels"],
                resource_version=found["metadata"]["resourceVersion"],
            ),
            type=found["type"],
            data=copy.deepcopy(found["data"]),
        )

    def patch_namespaced_secret(
        self, name: str, namespace: str, body: list[dict[str, Any]], **_: Any
    ) -> None:
        self.calls.append(("patch", "secrets", name))
        found = self.secrets[name]
        test, add = body
        assert (test["op"], test["path"]) == ("test", "/metadata/resourceVersion")
        if test["value"] != found["metadata"]["resourceVersion"]:
            raise ApiException(status=422, reason="the resourceVersion changed")
        assert (add["op"], add["path"]) == ("add", "/data")
        found["data"] = add["value"]
        found["metadata"]["resourceVersion"] = str(next(self.versions))

    # ApiextensionsV1Api

    def read_custom_resource_definition(
        self, name: str, **_: Any
    ) -> client.V1CustomResourceDefinition:
        self.calls.append(("get", "customresourcedefinitions", name))
        config = client.ApiextensionsV1WebhookClientConfig(ca_bundle=self.bundle)
        webhook = client.V1WebhookConversion(
            client_config=config, conversion_review_versions=["v1"]
        )
        return client.V1CustomResourceDefinition(
            metadata=client.V1ObjectMeta(name=name, resource_version=self.crd_version),
            spec=client.V1CustomResourceDefinitionSpec(
                group="kubeflow.org",
                names=client.V1CustomResourceDefinitionNames(kind="MXJob", plural="mxjobs"),
                scope="Namespaced",
                versions=[],
                conversion=client.V1CustomResourceConversion(strategy="Webhook", webhook=webhook),
            ),
        )

    def patch_custom_resource_definition(
        self, name: str, body: list[dict[str, Any]], **_: Any
    ) -> None:
        self.calls.append(("patch", "customresourcedefinitions", name))
        test, add = body
        if test["value"] != self.crd_version:
            raise ApiException(status=422, reason="the resourceVersion changed")
        self.bundle = add["value"]
        self.crd_version = str(int(self.crd_version) + 1)


def run(api: FakeApi, monkeypatch: pytest.MonkeyPatch, now: datetime = NOW) -> list[str]:
    """One pass of the keeper against `api`."""
    monkeypatch.setattr(client, "CoreV1Api", lambda _: api)
    monkeypatch.setattr(client, "ApiextensionsV1Api", lambda _: api)
    return controller.run_once(client.ApiClient(), TARGET, now)


def fresh_install() -> FakeApi:
    """Both Secrets as the install ships them, empty; the CRD trusts nothing yet."""
    api = FakeApi()
    api.ship(TARGET.ca_secret)
    api.ship(TARGET.serving_secret)
    return api


def upgraded_install() -> FakeApi:
    """An install of before the split upgraded: its single Secret (the CA and the serving pair)
    and the CRD trusting that CA; the new Secrets shipped empty."""
    api = fresh_install()
    single = plan(None, TARGET.dns_names, NOW).data
    assert single is not None
    api.ship(TARGET.legacy_secret, single)
    api.bundle = base64.b64encode(single["ca.crt"]).decode()
    return api


def every_call(monkeypatch: pytest.MonkeyPatch) -> set[Call]:
    """Every call the keeper makes in every scenario: a fresh install's first and second pass,
    an upgraded install's first pass."""
    calls: set[Call] = set()
    for make in SCENARIOS:
        api = make()
        run(api, monkeypatch)
        run(api, monkeypatch)
        calls.update(api.calls)
    return calls


SCENARIOS: list[Callable[[], FakeApi]] = [fresh_install, upgraded_install]

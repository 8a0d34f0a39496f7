"""The old API versions through the real API server: the CRD as the install variants build it
(manifests/components/conversion), its webhook the hook's own app under gunicorn with TLS on
127.0.0.1, its certificate and caBundle made by the real certificate keeper (`python -m
mxjob.certs`) through the API, into the Secrets the install ships (docs/api.md#versions).

The one change from the install: the CRD calls the webhook by URL (`https://localhost:<port>`),
since this tier's API server has no pods to route to; the certificate is for `localhost`.
"""

import base64
import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hooks.core.conversion.versions import V1_FIELDS
from mxjob.certs.authority import CA_CERT, CA_KEY, TLS_CERT, TLS_KEY
from mxjob.certs.controller import patch_bundle
from mxjob.component.kube import api_client
from tests.conversion_cases import OLD_EXAMPLES
from tests.e2e.conftest import NAMESPACE, REPO, Cluster, installed_policy, wait_for
from tools.cluster.probes import tcp_open
from tools.ports import free_port

CRD = "mxjobs.kubeflow.org"
#: The keeper's Secrets: the CA (its own), the serving pair (the pods'), an earlier install's one.
CA_SECRET, SECRET, LEGACY = "mxjob-convert-ca", "mxjob-convert-serving", "mxjob-convert-tls"
APP = "hooks.app:create_app()"
OLD_FILES = sorted(OLD_EXAMPLES.glob("*.yaml"))


def keeper(cluster: Cluster, **settings: str) -> list[str]:
    """One pass of the certificate keeper against this tier's API server, with `settings` in
    its environment; its log messages (the JSON lines: this tier's kubeconfig skips TLS
    verification, which urllib3 warns of)."""
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.stack.kubeconfig),
        "CERTS_NAMESPACE": NAMESPACE,
        "CERTS_DNS_NAMES": "localhost",
        **settings,
    }
    stderr = subprocess.run(
        [sys.executable, "-m", "mxjob.certs", "--once"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        # A bound on liveness: one pass took more than 60 s in warm run 19 (a slower machine,
        # this lane niced under a load of ~20).
        timeout=300,
    ).stderr
    return [json.loads(line)["message"] for line in stderr.splitlines() if line.startswith("{")]


def shipped_secrets(cluster: Cluster) -> str:
    """The keeper's Secrets as the install ships them (empty), in this tier's namespace."""
    built = cluster.kubectl("kustomize", str(REPO / "manifests" / "overlays" / "standard")).stdout
    secrets = [d for d in yaml.safe_load_all(built) if d and d["kind"] == "Secret"]
    assert sorted(d["metadata"]["name"] for d in secrets) == [CA_SECRET, SECRET]
    for secret in secrets:
        secret["metadata"]["namespace"] = NAMESPACE
    return "\n---\n".join(yaml.safe_dump(d) for d in secrets)


def installed_crd(cluster: Cluster, url: str) -> dict[str, Any]:
    """The CRD as installed (manifests/crd, with its conversion Component), its webhook at `url`."""
    built = cluster.kubectl("kustomize", str(REPO / "manifests" / "crd")).stdout
    (crd,) = [d for d in yaml.safe_load_all(built) if d and d["kind"] == "CustomResourceDefinition"]
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": url}
    return dict(crd)


@pytest.fixture(scope="module")
def webhook(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[list[str]]]:
    """The converting CRD and its TLS server; the keeper's two passes' log lines."""
    port = free_port()
    crd = installed_crd(cluster, f"https://localhost:{port}/convert")
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=json.dumps(crd))
    server: subprocess.Popen[bytes] | None = None
    shipped = shipped_secrets(cluster)
    cluster.kubectl("apply", "-f", "-", stdin=shipped)
    try:
        passes = [keeper(cluster), keeper(cluster)]
        secret = cluster.get("secret", SECRET)
        assert secret is not None and secret["type"] == "Opaque"
        tls = tmp_path_factory.mktemp("tls")
        for key in (TLS_CERT, TLS_KEY):
            (tls / key).write_bytes(base64.b64decode(secret["data"][key]))
        env = {
            **os.environ,
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "MXJOB_TLS_DIR": str(tls),
            "WEB_CONCURRENCY": "1",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config=hooks/gunicorn_config.py", APP],
            cwd=REPO,
            env=env,
        )
        wait_for("the TLS webhook to accept", lambda: tcp_open("127.0.0.1", port), 30)
        yield passes
    finally:
        cluster.kubectl("delete", "mxjob", "--all", "-n", NAMESPACE, "--wait=true", check=False)
        if server is not None:
            server.terminate()
            server.wait(timeout=15)
        # Back to the CRD of manifests/crd (v1 served alone, no webhook) for the other tests.
        cluster.kubectl("replace", "-f", str(REPO / "manifests" / "crd" / f"{CRD}.yaml"))
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=shipped, check=False)


def test_the_keeper_writes_the_secret_and_the_bundle_once(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    first, second = webhook
    assert first == [
        f"secret {NAMESPACE}/{CA_SECRET}: no readable CA yet: a new one",
        f"secret {NAMESPACE}/{SECRET}: no readable CA yet: a new one",
        f"crd {CRD}: caBundle set",
    ]
    assert second == []  # nothing due, nothing drifted: no write
    crd = cluster.stack.kubectl("get", "crd", CRD, "-o", "json").stdout
    bundle = json.loads(crd)["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
    ca, serving = cluster.get("secret", CA_SECRET), cluster.get("secret", SECRET)
    assert ca is not None and serving is not None
    assert bundle == ca["data"][CA_CERT]
    assert set(ca["data"]) == {CA_CERT, CA_KEY} and set(serving["data"]) == {TLS_CERT, TLS_KEY}


def test_applying_the_install_again_keeps_what_the_keeper_wrote(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """The shipped Secrets name no data: `kubectl apply` of the install again (an upgrade)
    leaves the keeper's, and the keeper's patches left kubectl's own annotation."""
    before = {name: cluster.get("secret", name) for name in (CA_SECRET, SECRET)}
    cluster.kubectl("apply", "-f", "-", stdin=shipped_secrets(cluster))
    for name, was in before.items():
        now = cluster.get("secret", name)
        assert was is not None and now is not None
        assert now["data"] == was["data"], name
        assert "kubectl.kubernetes.io/last-applied-configuration" in now["metadata"]["annotations"]
    assert keeper(cluster) == []


def test_an_install_of_one_secret_upgraded_keeps_its_ca(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """An install of before the split kept the CA and the serving pair in one Secret of type
    kubernetes.io/tls, which the CRD trusts and its webhook's pods mount. Upgraded (the new
    Secrets shipped empty), the keeper takes both from it: the caBundle stays as it is, so pods
    still serving the old Secret keep converting while their Deployment rolls."""
    ca, serving = cluster.get("secret", CA_SECRET), cluster.get("secret", SECRET)
    assert ca is not None and serving is not None
    single = secret_object("e2e-single", {**ca["data"], **serving["data"]}, "kubernetes.io/tls")
    shipped = [secret_object(name) for name in ("e2e-ca", "e2e-serving")]
    text = "\n---\n".join(json.dumps(d) for d in (single, *shipped))
    cluster.kubectl("apply", "-f", "-", stdin=text)
    try:
        names = {"CA": "e2e-ca", "SERVING": "e2e-serving", "LEGACY": "e2e-single"}
        settings = {f"CERTS_{part}_SECRET": name for part, name in names.items()}
        taken = "taken from e2e-single (the single Secret of an earlier install)"
        assert keeper(cluster, **settings) == [
            f"secret {NAMESPACE}/e2e-ca: {taken}",
            f"secret {NAMESPACE}/e2e-serving: {taken}",
        ]  # and no caBundle write: the CRD trusts that CA already
        for name, was in (("e2e-ca", ca), ("e2e-serving", serving)):
            now = cluster.get("secret", name)
            assert now is not None and now["data"] == was["data"], name
        assert keeper(cluster, **settings) == []
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=text, check=False)


def secret_object(
    name: str, data: dict[str, str] | None = None, kind: str = "Opaque"
) -> dict[str, Any]:
    """A Secret of this tier's namespace."""
    metadata = {"name": name, "namespace": NAMESPACE}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": kind,
        **({"data": data} if data else {}),
    }


def subset_problems(wrote: Any, read: Any, path: str = "") -> list[str]:
    """Where `read` differs from what the user `wrote` (fields the server added are fine)."""
    if isinstance(wrote, dict) and isinstance(read, dict):
        return [p for k, v in wrote.items() for p in subset_problems(v, read.get(k), f"{path}.{k}")]
    if isinstance(wrote, list) and isinstance(read, list) and len(wrote) == len(read):
        return [
            p
            for i, pair in enumerate(zip(wrote, read, strict=True))
            for p in subset_problems(*pair, f"{path}[{i}]")
        ]
    return [] if wrote == read else [f"{path}: wrote {wrote!r}, read {read!r}"]


@pytest.mark.parametrize("path", OLD_FILES, ids=[p.stem for p in OLD_FILES])
def test_a_historical_file_applies_at_its_version_and_reads_back_as_written(
    cluster: Cluster, webhook: list[list[str]], path: Path
) -> None:
    """`kubectl apply -f` at v1alpha1 or v1alpha2; read at that version it is what the file
    says; read at v1 it is what the hook's core converts it to; Metacontroller syncs it at v1."""
    wrote = yaml.safe_load(path.read_text())
    version = wrote["apiVersion"].split("/")[1]
    name = wrote["metadata"]["name"]
    applied = cluster.apply(wrote)
    assert "deprecated" in applied.stderr, applied.stderr  # the CRD's deprecationWarning
    at_old = json.loads(
        cluster.kubectl(
            "get", f"mxjobs.{version}.kubeflow.org", name, "-n", NAMESPACE, "-o", "json"
        ).stdout
    )
    assert at_old["apiVersion"] == wrote["apiVersion"]
    assert subset_problems(wrote["spec"], at_old["spec"]) == []
    listed = cluster.kubectl("get", f"mxjobs.{version}.kubeflow.org", "-n", NAMESPACE).stdout
    assert name in listed, listed
    at_v1 = json.loads(
        cluster.kubectl("get", "mxjobs.v1.kubeflow.org", name, "-n", NAMESPACE, "-o", "json").stdout
    )
    assert at_v1["apiVersion"] == "kubeflow.org/v1"
    assert "mxReplicaSpecs" in at_v1["spec"]
    # Metacontroller (a v1 client) syncs it: the hook reads it and writes a status.
    wait_for(f"{name} synced at v1", lambda: cluster.status(name).get("conditions"), 60)
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)


def test_an_old_object_v1_cannot_hold_is_refused_at_its_version_naming_the_field(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """An entry without mxReplicaType beside a WORKER (both are WORKER: v1 holds one spec per
    type). The API server checks the v1alpha1 rules before it converts, so the user reads the
    CRD's message for the field; the webhook would refuse the same object (conversion fixture
    refused-empty-type-beside-worker), but is never asked."""
    job = yaml.safe_load((OLD_EXAMPLES / "v1alpha1_proposal.yaml").read_text())
    del job["spec"]["replicaSpecs"][1]["mxReplicaType"]
    job["spec"]["replicaSpecs"][1]["replicas"] = 1
    job["spec"]["replicaSpecs"][2]["mxReplicaType"] = "WORKER"
    refused = cluster.apply(job, check=False)
    assert refused.returncode != 0
    print(f"\nv1alpha1 job v1 cannot hold, refused: {refused.stderr.strip()}")
    assert "spec.replicaSpecs" in refused.stderr, refused.stderr
    assert cluster.get("mxjob", job["metadata"]["name"]) is None


def test_a_bundle_taken_away_is_set_again_from_the_same_secret(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """What a `kubectl replace` of the CRD from its file does: the next pass repairs it, with
    the Secret it has (the serving pods keep their certificate)."""
    secret = cluster.get("secret", CA_SECRET)
    assert secret is not None
    path = "/spec/conversion/webhook/clientConfig/caBundle"
    cluster.kubectl(
        "patch", "crd", CRD, "--type=json", f'-p=[{{"op": "remove", "path": "{path}"}}]'
    )
    assert keeper(cluster) == [f"crd {CRD}: caBundle set"]
    crd = json.loads(cluster.kubectl("get", "crd", CRD, "-o", "json").stdout)
    assert (
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
        == (secret["data"][CA_CERT])
    )
    after = cluster.get("secret", CA_SECRET)
    assert after is not None
    assert after["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]


# --- what a namespace user or a stolen token could do through the conversion (issue 29) ----

#: A Succeeded status nothing but the hook may write.
FORGED = {
    "conditions": [
        {"type": "Created", "status": "True", "reason": "MXJobCreated"},
        {"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded"},
    ],
}


def stashed_job(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    """The historical v1alpha1 file, its stash holding `entries`."""
    job = yaml.safe_load((OLD_EXAMPLES / "v1alpha1_mx_job_dist.yaml").read_text())
    job["metadata"] = {"name": name, "annotations": {V1_FIELDS: json.dumps(list(entries))}}
    return dict(job)


def test_a_stash_never_writes_the_status(cluster: Cluster, webhook: list[list[str]]) -> None:
    """Once, the API server dropped the create's status at v1alpha1, then stored the one the
    webhook took from the stash: the job read Succeeded at v1 before a pod existed."""
    cluster.apply(stashed_job("e2e-forged", {"at": ["status"], "to": FORGED}))
    stored = cluster.get("mxjobs.v1.kubeflow.org", "e2e-forged")
    assert stored is not None
    types = [c["type"] for c in (stored.get("status") or {}).get("conditions", [])]
    assert "Succeeded" not in types, stored.get("status")
    assert V1_FIELDS not in stored["metadata"].get("annotations", {})
    cluster.delete("mxjob", "e2e-forged")


def test_a_stash_bringing_what_v1_refuses_fails_the_write(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """Once stored as sent: v1alpha1's schema cannot see a v1 field, and the API server checks
    nothing at v1 after the conversion."""
    entry = {"at": ["spec", "runPolicy", "backoffLimit"], "to": -5}
    refused = cluster.apply(stashed_job("e2e-smuggled", entry), check=False)
    assert refused.returncode != 0
    print(f"\na stash bringing in what v1 refuses, refused: {refused.stderr.strip()}")
    assert f"metadata.annotations[{V1_FIELDS}]: brings in what kubeflow.org/v1 refuses" in (
        refused.stderr
    )
    assert "spec.runPolicy.backoffLimit" in refused.stderr
    assert cluster.get("mxjob", "e2e-smuggled") is None


def v1_job(name: str, **spec: Any) -> dict[str, Any]:
    """A one-Worker v1 job, with `spec` fields added."""
    template = {"spec": {"containers": [{"name": "mxnet", "image": "mxjob/mxnet:gpu"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1, "template": template}}, **spec},
    }


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_no_stored_job_fails_a_list_at_an_old_version(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """Once, a KeyError (a stash entry written without was or to) or a RecursionError (a
    template 600 levels deep, which the API server stores) in the webhook failed every list of
    MXJobs at v1alpha1 and v1alpha2 in the namespace, and in the cluster with -A."""
    forged = v1_job("e2e-no-stash")
    forged["metadata"]["annotations"] = {
        "mxjob.kubeflow.org/v1alpha1-fields": json.dumps([{"at": ["spec", "x"]}])
    }
    deep = v1_job("e2e-deep")
    deep["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["x"] = nested(600)
    for job in (forged, deep):
        cluster.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(job))
    try:
        for version in ("v1alpha1", "v1alpha2"):
            listed = cluster.kubectl(
                "get", f"mxjobs.{version}.kubeflow.org", "-n", NAMESPACE, "-o", "json", check=False
            )  # fmt: skip
            assert listed.returncode == 0, listed.stderr
            names = {item["metadata"]["name"] for item in json.loads(listed.stdout)["items"]}
            assert {"e2e-no-stash", "e2e-deep"} <= names
    finally:
        for job in (forged, deep):
            cluster.delete("mxjob", job["metadata"]["name"])


def test_a_stash_cannot_change_the_immutable_managed_by(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """Once, a job read at v1alpha1 and written back with another managedBy in its stash was
    stored with it: v1's rule that it never changes is a v1 rule, which a write at v1alpha1
    skips. Now a stash bringing in managedBy fails the write."""
    job = v1_job("e2e-managed", runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    cluster.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(job))
    try:
        read = cluster.get("mxjobs.v1alpha1.kubeflow.org", "e2e-managed")
        assert read is not None
        annotations = read["metadata"]["annotations"]
        assert "kueue.x-k8s.io/multikueue" in annotations[V1_FIELDS]
        annotations[V1_FIELDS] = annotations[V1_FIELDS].replace(
            "kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"
        )
        written = cluster.kubectl(
            "replace", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(read), check=False
        )
        print(f"\nmanagedBy changed through the stash, refused: {written.stderr.strip()}")
        assert written.returncode != 0
        assert "brings in spec.runPolicy.managedBy, which is immutable" in written.stderr
        stored = cluster.get("mxjobs.v1.kubeflow.org", "e2e-managed")
        assert stored is not None
        assert stored["spec"]["runPolicy"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    finally:
        cluster.delete("mxjob", "e2e-managed")


def test_a_write_at_v1alpha1_over_the_crds_floor_is_refused(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """Once stored: the CRD's floor of the hook's answer is a v1 rule, which v1alpha1's schema
    (10000 replicas, containers unbounded) does not have. 10000 WORKERs of 31 containers."""
    job = stashed_job("e2e-too-large")
    del job["metadata"]["annotations"]
    (worker,) = [r for r in job["spec"]["replicaSpecs"] if r["mxReplicaType"] == "WORKER"]
    worker["replicas"] = 10000
    containers = worker["template"]["spec"]["containers"]
    containers += [{"name": f"side-{i}", "image": "i" * 200} for i in range(30)]
    refused = cluster.apply(job, check=False)
    assert refused.returncode != 0
    assert "spec.mxReplicaSpecs: too many replicas or containers" in refused.stderr, refused.stderr
    assert cluster.get("mxjob", "e2e-too-large") is None


# This tier's kubeconfig skips TLS verification, which urllib3 warns of on every call.
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_a_keeper_with_a_stale_crd_cannot_undo_a_rotation(
    cluster: Cluster, webhook: list[list[str]]
) -> None:
    """The caBundle patch tests the resourceVersion of the CRD the keeper read: once another
    writer has changed it (another keeper's rotation), the patch is refused, not applied."""
    ext = client.ApiextensionsV1Api(api_client(str(cluster.stack.kubeconfig)))
    read = ext.read_custom_resource_definition(CRD)
    cluster.kubectl("annotate", "crd", CRD, "mxjob.test/rotated=yes", "--overwrite")
    with pytest.raises(ApiException) as refused:
        patch_bundle(ext, CRD, read, b"an old CA")
    assert refused.value.status == 422, refused.value.body
    fresh = json.loads(cluster.kubectl("get", "crd", CRD, "-o", "json").stdout)
    bundle = fresh["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
    assert bundle != base64.b64encode(b"an old CA").decode()
    cluster.kubectl("annotate", "crd", CRD, "mxjob.test/rotated-")


KEEPER = "system:serviceaccount:mxjob-system:mxjob-certs"


@pytest.fixture
def keeper_policy(cluster: Cluster) -> Iterator[None]:
    """The ValidatingAdmissionPolicy of the conversion Component (and its binding), as built."""
    with installed_policy(cluster, "mxjob-certs"):
        yield


def as_keeper(cluster: Cluster, patch: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """A merge patch of the CRD as the keeper's account (this tier authorizes impersonation)."""
    return cluster.kubectl(
        "patch", "crd", CRD, f"--as={KEEPER}", "--type=merge", f"-p={json.dumps(patch)}",
        check=False,
    )  # fmt: skip


def test_the_keepers_account_may_change_the_ca_bundle_and_nothing_else(
    cluster: Cluster, webhook: list[list[str]], keeper_policy: None
) -> None:
    """What a stolen keeper token would do with its patch right: repoint the webhook, store
    another version, label the CRD. The API server's policy admits the caBundle alone."""
    before = json.loads(cluster.kubectl("get", "crd", CRD, "-o", "json").stdout)
    bundle = before["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]

    def allowed() -> bool:
        patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}}
        return as_keeper(cluster, patch).returncode == 0

    # The policy takes a moment to reach the admission plugin after it is created: until then
    # a label goes through (a new value each time: a patch that changes nothing passes any
    # policy that compares the object with the old one).
    probes = iter(range(1000))

    def refuses_a_label() -> bool:
        label = {"metadata": {"labels": {"mxjob.test/owned": str(next(probes))}}}
        return as_keeper(cluster, label).returncode != 0

    wait_for("the policy to refuse a label", refuses_a_label, 30)
    cluster.kubectl("label", "crd", CRD, "mxjob.test/owned-")
    repoint = {"spec": {"conversion": {"webhook": {"clientConfig": {"url": "https://evil/x"}}}}}
    versions = copy.deepcopy(before["spec"]["versions"])
    versions[0]["storage"], versions[1]["storage"] = False, True
    for patch in (repoint, {"spec": {"versions": versions}}):
        refused = as_keeper(cluster, patch)
        assert refused.returncode != 0, patch
        assert "the certificate keeper may change only the conversion webhook's caBundle" in (
            refused.stderr
        ), refused.stderr
    assert allowed()
    after = json.loads(cluster.kubectl("get", "crd", CRD, "-o", "json").stdout)
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("labels") == before["metadata"].get("labels")

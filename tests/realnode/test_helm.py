"""The Helm chart on the real node: `helm install` as the README says, a real MXNet job run to
`Succeeded` by what it installed, and `helm uninstall` removing all of it but the CRD and the
jobs.

The session's stack has the project installed with kustomize (conftest.py). The fixture takes it
away first (`kubectl delete -k manifests/overlays/standard`, as a user switching to Helm would:
both install the same cluster-wide objects, so only one can be there; the CRD stays, and is
handed to Helm as charts/mxjob/README.md says) and puts it back afterwards, pass or fail, so the
tests after this one find the install they expect.
"""

import json
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import REPO
from tests.manifest_support import DEPLOYMENTS
from tests.realnode.conftest import HOOK_NAMESPACE, Node
from tests.realnode.test_workloads import FINISHED, dist_job

pytestmark = pytest.mark.alone("replaces the project's kustomize install with the Helm chart's")

CHART = REPO / "charts" / "mxjob"
CRD = "mxjobs.kubeflow.org"
RELEASE = "mxjob"
#: What the chart runs with its default values.
#: The Pod Security level the kustomize install's Namespace enforces (manifests/hook).
RESTRICTED = (
    "pod-security.kubernetes.io/enforce=restricted",
    "pod-security.kubernetes.io/enforce-version=latest",
)


@pytest.fixture
def without_kustomize_install(cluster: Node) -> Iterator[Node]:
    """The kustomize install removed; afterwards the release and its namespace are gone and the
    kustomize install is back (Metacontroller, hook and components running)."""
    stack = cluster.stack
    stack.kubectl(
        "delete", "-k", str(REPO / "manifests" / "overlays" / "standard"),
        "--ignore-not-found", "--timeout=180s", timeout=240,
    )  # fmt: skip
    try:
        yield cluster
    finally:
        stack.helm("uninstall", RELEASE, "-n", HOOK_NAMESPACE, "--ignore-not-found", "--wait",
                   check=False, timeout=240)  # fmt: skip
        stack.kubectl("delete", "namespace", HOOK_NAMESPACE, "--ignore-not-found",
                      "--timeout=180s", timeout=240)  # fmt: skip
        stack.node.install_in_cluster(REPO)


def test_helm_install_runs_a_job_and_uninstall_keeps_only_the_crd_and_jobs(
    without_kustomize_install: Node,
) -> None:
    cluster = without_kustomize_install
    stack = cluster.stack
    repository, _, tag = cluster.image("mxjob").rpartition(":")
    # The CRD the kustomize install left, handed to the release (charts/mxjob/README.md).
    cluster.kubectl("label", "crd", CRD, "app.kubernetes.io/managed-by=Helm", "--overwrite")
    cluster.kubectl(
        "annotate", "crd", CRD, f"meta.helm.sh/release-name={RELEASE}",
        f"meta.helm.sh/release-namespace={HOOK_NAMESPACE}", "--overwrite",
    )  # fmt: skip
    started = time.monotonic()
    stack.helm(
        "install", RELEASE, str(CHART), "-n", HOOK_NAMESPACE, "--create-namespace",
        "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
        "--wait", "--timeout=180s", timeout=240,
    )  # fmt: skip
    installed = time.monotonic() - started
    # As the README says: enforce what the kustomize install's Namespace does. The API server
    # warns about every running pod that would be refused: none may be.
    labelled = cluster.kubectl("label", "namespace", HOOK_NAMESPACE, *RESTRICTED)
    assert "violate" not in labelled.stderr, labelled.stderr

    deployments = json.loads(
        cluster.kubectl("get", "deployments", "-n", HOOK_NAMESPACE, "-o", "json").stdout
    )["items"]
    assert {d["metadata"]["name"] for d in deployments} == DEPLOYMENTS
    for deployment in deployments:
        labels = deployment["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm", deployment["metadata"]["name"]
        status = deployment["status"]
        assert status.get("readyReplicas") == deployment["spec"]["replicas"], status
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == cluster.image("mxjob")

    applied = time.monotonic()
    cluster.apply(dist_job(cluster, "helm-train"))
    _, reason, _ = cluster.wait_condition("helm-train", "Succeeded", timeout=180)
    succeeded = time.monotonic()
    assert reason == "MXJobSucceeded"
    for pod in ("helm-train-worker-0", "helm-train-worker-1"):
        assert FINISHED in cluster.logs(pod)

    stack.helm("uninstall", RELEASE, "-n", HOOK_NAMESPACE, "--wait", "--timeout=180s",
               timeout=240)  # fmt: skip
    uninstalled = time.monotonic() - succeeded
    # helm.sh/resource-policy: keep: the CRD, and so every job, outlives the release.
    assert cluster.kubectl("get", "crd", CRD, check=False).returncode == 0
    assert cluster.get("mxjob", "helm-train") is not None
    cluster.delete("mxjob", "helm-train")
    left = cluster.kubectl(
        "get", "deployments,services,serviceaccounts,networkpolicies,poddisruptionbudgets,roles",
        "-n", HOOK_NAMESPACE, "-l", "app.kubernetes.io/part-of=mxjob", "-o", "name",
    ).stdout.split()  # fmt: skip
    assert left == []
    cluster_wide = cluster.kubectl(
        "get", "clusterroles,clusterrolebindings,compositecontrollers",
        "-l", "app.kubernetes.io/part-of=mxjob", "-o", "name",
    ).stdout.split()  # fmt: skip
    assert cluster_wide == []
    print(
        f"\nhelm install --wait {installed:.1f}s; dist_sync job Succeeded"
        f" {succeeded - applied:.1f}s after kubectl apply, {succeeded - started:.1f}s after"
        f" helm install began; helm uninstall --wait {uninstalled:.1f}s"
    )

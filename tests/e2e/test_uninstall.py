"""Uninstalling keeps every MXJob (README, "Uninstall"): the kustomize install and the Helm
chart, each removed as the README says with a job and its pod in place, leave the CRD, the job
and the pod; only the explicit extra step removes them, and the garbage collector their pods.

On a KWOK stack of its own: installing the project in the cluster replaces the tier's
CompositeController with one that calls the hook's in-cluster Service, and deleting the CRD
would end the tier's jobs. No hook needs to answer here: the job's pod is made by the test, owned
by the job as the hook's are, and the real garbage collector decides its fate.
"""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import mxjob, replica
from tests.e2e.conftest import REPO, wait_for
from tests.required import unavailable
from tools.cluster.build import HELM, KWOK_STACK

CRD = "mxjobs.kubeflow.org"
NAMESPACE = "default"
SYSTEM = "mxjob-system"
#: The uids of each test's job and pod, which the tests after it find still there.
KEPT: dict[str, tuple[str, str]] = {}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tools.cluster import stack as cluster  # noqa: PLC0415 (only when the tier runs)
    from tools.cluster.build import unavailable_reason  # noqa: PLC0415

    reason = unavailable_reason(components=(*KWOK_STACK, HELM))
    if reason:
        unavailable(f"end-to-end tier: {reason}")
    run_dir = tmp_path_factory.mktemp("uninstall")
    started = cluster.Stack(run_dir=run_dir, log=lambda line: print(line, flush=True)).start()
    try:
        started.kubectl("apply", "-k", str(REPO / "manifests" / "crd"))
        _until_the_collector_knows_mxjobs(started)
        yield started
    finally:
        started.stop(remove=True)


def _until_the_collector_knows_mxjobs(stack: Any) -> None:
    """As in a cluster where the CRD has been for a while: the garbage collector learns a new
    resource type from discovery every 30 s, and until then cannot resolve an owner of that kind
    (it never deletes the dependents of an owner whose kind it cannot resolve). Shown by a pod
    owned by a job deleted at once: collected once the collector knows MXJobs."""
    _job_with_a_pod(stack, "probe")
    del KEPT["probe"]
    _kubectl(stack, "delete", "mxjob", "probe", "-n", NAMESPACE)
    wait_for("the probe's pod collected", lambda: _uid(stack, "pod", "probe-worker-0") is None, 90)


def _kubectl(stack: Any, *args: str, stdin: str | None = None, check: bool = True) -> Any:
    return stack.kubectl(*args, input=stdin, check=check, timeout=240)


def _uid(stack: Any, kind: str, name: str) -> str | None:
    proc = _kubectl(stack, "get", kind, name, "-n", NAMESPACE, "-o", "json", check=False)
    return str(json.loads(proc.stdout)["metadata"]["uid"]) if proc.returncode == 0 else None


def _job_with_a_pod(stack: Any, name: str) -> tuple[str, str]:
    """An MXJob and a pod it owns, as Metacontroller makes one (labelled with the job's uid,
    which its generated selector matches: Metacontroller releases an owned child it does not
    select, and the garbage collector then never collects it); their uids."""
    job = mxjob(name=name, replicas={"Worker": replica(1)})
    job["metadata"] = {"name": name}
    _kubectl(stack, "wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=60s")
    _kubectl(stack, "apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(job))
    job_uid = _uid(stack, "mxjob", name)
    assert job_uid is not None
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-worker-0",
            "namespace": NAMESPACE,
            "labels": {"controller-uid": job_uid},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "MXJob",
                    "name": name,
                    "uid": job_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "mxnet", "image": "mxjob/mxnet:gpu"}]},
    }
    _kubectl(stack, "apply", "-f", "-", stdin=json.dumps(pod))
    pod_uid = _uid(stack, "pod", f"{name}-worker-0")
    assert pod_uid is not None
    KEPT[name] = (job_uid, pod_uid)
    return job_uid, pod_uid


def _still_there(stack: Any, name: str, uids: tuple[str, str]) -> None:
    assert _kubectl(stack, "get", "crd", CRD, check=False).returncode == 0, "the CRD is gone"
    assert (_uid(stack, "mxjob", name), _uid(stack, "pod", f"{name}-worker-0")) == uids


def test_kubectl_delete_of_the_variant_keeps_the_crd_the_jobs_and_their_pods(stack: Any) -> None:
    _kubectl(stack, "apply", "-k", str(REPO / "manifests" / "overlays" / "standard"))
    uids = _job_with_a_pod(stack, "kept-by-kustomize")
    _kubectl(stack, "delete", "-k", str(REPO / "manifests" / "overlays" / "standard"))
    _still_there(stack, "kept-by-kustomize", uids)


def test_helm_uninstall_keeps_the_crd_the_jobs_and_their_pods(stack: Any) -> None:
    """After the kustomize install, its CRD handed to Helm as charts/mxjob/README.md says."""
    _kubectl(stack, "label", "crd", CRD, "app.kubernetes.io/managed-by=Helm", "--overwrite")
    _kubectl(
        stack, "annotate", "crd", CRD, "meta.helm.sh/release-name=mxjob",
        f"meta.helm.sh/release-namespace={SYSTEM}", "--overwrite",
    )  # fmt: skip
    chart = str(REPO / "charts" / "mxjob")
    stack.helm("install", "mxjob", chart, "-n", SYSTEM, "--create-namespace", timeout=120)
    uids = _job_with_a_pod(stack, "kept-by-helm")
    done = stack.helm("uninstall", "mxjob", "-n", SYSTEM, timeout=120)
    assert "kept due to the resource policy" in done.stdout, done.stdout
    _still_there(stack, "kept-by-helm", uids)
    _still_there(stack, "kept-by-kustomize", KEPT["kept-by-kustomize"])


def test_only_the_explicit_step_deletes_the_jobs_and_then_their_pods(stack: Any) -> None:
    """`kubectl delete -k manifests/crd`: every MXJob goes with the CRD, and the garbage
    collector deletes the pods they owned."""
    _kubectl(stack, "delete", "-k", str(REPO / "manifests" / "crd"))
    pods = ("kept-by-kustomize-worker-0", "kept-by-helm-worker-0")
    wait_for(
        "the jobs' pods collected",
        lambda: all(_uid(stack, "pod", pod) is None for pod in pods) or None,
        90,
    )

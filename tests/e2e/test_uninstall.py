"""Uninstalling keeps every MXJob (README, "Uninstall"): the kustomize install and the Helm
chart, each removed as the README says with a job and its pod in place, leave the CRD, the job
and the pod; only the explicit extra step removes them, and the garbage collector their pods.

On a KWOK stack of its own: installing the project in the cluster replaces the tier's
CompositeController with one that calls the hook's in-cluster Service, and deleting the CRD
would end the tier's jobs. No hook needs to answer here: the job's pod is made by the test, owned
by the job as the hook's are, and the real garbage collector decides its fate.
"""

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import mxjob, replica
from tests.e2e.conftest import REPO, wait_for
from tools.cluster.build import HELM, default_cache_dir

CRD = "mxjobs.kubeflow.org"
NAMESPACE = "default"
SYSTEM = "mxjob-system"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tools.cluster import stack as cluster  # noqa: PLC0415 (only when the tier runs)
    from tools.cluster.build import unavailable_reason  # noqa: PLC0415

    reason = unavailable_reason() or _no_helm()
    if reason:
        if os.environ.get("E2E") == "required":
            pytest.fail(f"end-to-end tier required but unavailable: {reason}")
        pytest.skip(f"end-to-end tier skipped: {reason}")
    run_dir = tmp_path_factory.mktemp("uninstall")
    started = cluster.Stack(run_dir=run_dir, log=lambda line: print(line, flush=True)).start()
    try:
        yield started
    finally:
        started.stop(remove=True)


def _no_helm() -> str | None:
    if HELM.is_built(default_cache_dir()):
        return None
    return f"helm {HELM.version} is not built (`python -m tools.cluster prepare` builds it)"


def _kubectl(stack: Any, *args: str, stdin: str | None = None, check: bool = True) -> Any:
    return stack.kubectl(*args, input=stdin, check=check, timeout=240)


def _uid(stack: Any, kind: str, name: str) -> str | None:
    proc = _kubectl(stack, "get", kind, name, "-n", NAMESPACE, "-o", "json", check=False)
    return str(json.loads(proc.stdout)["metadata"]["uid"]) if proc.returncode == 0 else None


def _job_with_a_pod(stack: Any, name: str) -> tuple[str, str]:
    """An MXJob and a pod it owns, as the hook makes one; their uids."""
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
    return job_uid, pod_uid


def _still_there(stack: Any, name: str, uids: tuple[str, str]) -> None:
    assert _kubectl(stack, "get", "crd", CRD, check=False).returncode == 0, "the CRD is gone"
    assert (_uid(stack, "mxjob", name), _uid(stack, "pod", f"{name}-worker-0")) == uids


def _gone_with_the_crd(stack: Any, name: str) -> None:
    """The explicit step deletes the job; the garbage collector then deletes its pod."""
    assert _uid(stack, "mxjob", name) is None
    wait_for(
        f"{name}'s pod collected",
        lambda: _uid(stack, "pod", f"{name}-worker-0") is None or None,
        60,
    )


def test_kubectl_delete_of_the_variant_keeps_the_crd_the_jobs_and_their_pods(stack: Any) -> None:
    _kubectl(stack, "apply", "-k", str(REPO / "manifests" / "crd"))
    _kubectl(stack, "apply", "-k", str(REPO / "manifests" / "overlays" / "standard"))
    uids = _job_with_a_pod(stack, "kept-by-kustomize")
    _kubectl(stack, "delete", "-k", str(REPO / "manifests" / "overlays" / "standard"))
    _still_there(stack, "kept-by-kustomize", uids)
    _kubectl(stack, "delete", "-k", str(REPO / "manifests" / "crd"))
    _gone_with_the_crd(stack, "kept-by-kustomize")


def test_helm_uninstall_keeps_the_crd_the_jobs_and_their_pods(stack: Any) -> None:
    chart = str(REPO / "charts" / "mxjob")
    stack.helm("install", "mxjob", chart, "-n", SYSTEM, "--create-namespace", timeout=120)
    uids = _job_with_a_pod(stack, "kept-by-helm")
    done = stack.helm("uninstall", "mxjob", "-n", SYSTEM, timeout=120)
    assert "kept due to the resource policy" in done.stdout, done.stdout
    _still_there(stack, "kept-by-helm", uids)
    _kubectl(stack, "delete", "crd", CRD)
    _gone_with_the_crd(stack, "kept-by-helm")

"""The founding documents' jobs, at the API version each was written for, train on the real node
through the installed project (the standard variant, conversion webhook included).

Each file is applied with `kubectl apply -f` as written but for what no cluster here can give
it: every container's image becomes the test MXNet image, its command the tier's training script
after its cluster check (`python -c <cluster_check.py><train.py>`: the files have no volume here;
the old `args` and `workingDir` named a script that image does not have),
and GPU limits go (the node has no GPU). Nothing else changes: names, replica counts, restart
policies, ports, `jobMode`, `PsRootPort` and the v1 file's inline `cleanPodPolicy` are the
file's own. And with the webhook's Deployment at 0, v1 jobs run on and old-version requests fail
saying why.
"""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import NAMESPACE, REPO, wait_for
from tests.realnode.conftest import HOOK_NAMESPACE, WORKLOADS, Node, waiting_job

FINISHED = "finished 30 rounds"
SEEDS = {
    # seed 000: the design proposal's v1alpha1 job
    "v1alpha1": REPO / "examples" / "legacy" / "v1alpha1_proposal.yaml",
    # seed 001: the v1alpha2 README's distributed job
    "v1alpha2": REPO / "examples" / "legacy" / "v1alpha2_mx_job_dist_gpu.yaml",
    # seed 004: the v1 README's job as `kubectl get -o yaml` printed it
    "v1": REPO / "examples" / "mx_job_dist_gpu.yaml",
}


def templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    spec = job["spec"]
    if "replicaSpecs" in spec:  # v1alpha1: a list
        return [r["template"] for r in spec["replicaSpecs"]]
    return [r["template"] for r in spec["mxReplicaSpecs"].values()]


def runnable(path: Path, image: str) -> dict[str, Any]:
    """The file's job with only image, command and GPU limits swapped (module docstring)."""
    job: dict[str, Any] = yaml.safe_load(path.read_text())
    script = (WORKLOADS / "cluster_check.py").read_text() + (WORKLOADS / "train.py").read_text()
    for template in templates(job):
        for container in template["spec"]["containers"]:
            container["image"] = image
            container["command"] = ["python", "-c", script]
            container.pop("args", None)
            container.pop("workingDir", None)
            limits = container.get("resources", {}).get("limits", {})
            limits.pop("nvidia.com/gpu", None)
    return job


def at_version(cluster: Node, version: str, name: str) -> dict[str, Any]:
    proc = cluster.kubectl(
        "get", f"mxjobs.{version}.kubeflow.org", name, "-n", NAMESPACE, "-o", "json"
    )
    return dict(json.loads(proc.stdout))


@pytest.mark.parametrize("version", list(SEEDS))
def test_a_seed_documents_job_trains_at_the_version_it_was_written_for(
    cluster: Node, version: str
) -> None:
    job = runnable(SEEDS[version], cluster.image("mxjob-mxnet"))
    name = job["metadata"]["name"]
    started = time.monotonic()
    applied = cluster.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(job))
    assert version == "v1" or "deprecated" in applied.stderr, applied.stderr
    _, reason, _ = cluster.wait_condition(name, "Succeeded", timeout=240)
    took = time.monotonic() - started
    assert reason == "MXJobSucceeded"
    workers = [p for p in cluster.pods(name) if "-worker-" in p]
    print(f"\n{version} seed job {name}: Succeeded {took:.1f} s after kubectl apply")
    # The job as the user wrote it, read at its own version: the same apiVersion and spec.
    read = at_version(cluster, version, name)
    assert read["apiVersion"] == job["apiVersion"]
    listed = cluster.kubectl("get", f"mxjobs.{version}.kubeflow.org", "-n", NAMESPACE).stdout
    assert name in listed, listed
    if version == "v1alpha1":
        assert (read["status"]["phase"], read["status"]["state"]) == ("Done", "Succeeded")
        assert [r["mxReplicaType"] for r in read["spec"]["replicaSpecs"]] == [
            "SCHEDULER",
            "SERVER",
            "WORKER",
        ]
        assert read["spec"]["replicaSpecs"][0]["PsRootPort"] == 9000
    v1 = at_version(cluster, "v1", name)["spec"]
    policy = v1.get("runPolicy", {}).get("cleanPodPolicy") or v1.get("cleanPodPolicy")
    if policy == "All":
        # v1alpha1 without cleanupPodPolicy, and the v1 file's inline `cleanPodPolicy: All`.
        wait_for(f"{name}'s pods deleted", lambda: not cluster.pods(name), 60)
    else:
        assert workers
        for pod in workers:
            assert FINISHED in cluster.logs(pod), pod
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)


CONVERT = "deployment/mxjob-convert"


@pytest.fixture
def webhook_down(cluster: Node) -> Iterator[Node]:
    """The conversion webhook's Deployment at 0 and its pods gone; at 2 and ready again after,
    pass or fail."""
    try:
        cluster.kubectl("scale", "-n", HOOK_NAMESPACE, CONVERT, "--replicas=0")
        selector = "app.kubernetes.io/name=mxjob-convert"
        wait_for(
            "no conversion webhook pod",
            lambda: (
                not json.loads(
                    cluster.kubectl(
                        "get", "pods", "-n", HOOK_NAMESPACE, "-l", selector, "-o", "json"
                    ).stdout
                )["items"]
            ),
            60,
        )
        yield cluster
    finally:
        cluster.kubectl("scale", "-n", HOOK_NAMESPACE, CONVERT, "--replicas=2")
        cluster.wait_rollout(HOOK_NAMESPACE, CONVERT)


def test_v1_jobs_run_while_the_conversion_webhook_is_down(webhook_down: Node) -> None:
    """Metacontroller, kubectl and the hook speak v1, which never calls the webhook: a v1 job
    is created, read, synced and finished with no webhook pod; a request at an old version
    fails, and its message says it was the conversion webhook."""
    cluster = webhook_down
    started = time.monotonic()
    cluster.apply(waiting_job(cluster, "no-webhook", workers=1))
    assert cluster.get("mxjob", "no-webhook") is not None
    listed = cluster.kubectl("get", "mxjobs", "-n", NAMESPACE).stdout
    assert "no-webhook" in listed, listed
    pids = cluster.running_pids("no-webhook", 1)
    cluster.wait_condition("no-webhook", "Running")
    cluster.finish(pids["no-webhook-worker-0"])
    cluster.wait_condition("no-webhook", "Succeeded")
    took = time.monotonic() - started
    old = cluster.kubectl(
        "get", "mxjobs.v1alpha1.kubeflow.org", "no-webhook", "-n", NAMESPACE, check=False
    )
    assert old.returncode != 0
    print(f"\nwebhook down: a v1 job Succeeded {took:.1f} s after apply; v1alpha1: {old.stderr}")
    assert "conversion webhook" in old.stderr and "mxjob-convert" in old.stderr, old.stderr
    written = yaml.safe_load((REPO / "examples" / "legacy" / "v1alpha1_proposal.yaml").read_text())
    refused = cluster.apply(written, check=False)
    assert refused.returncode != 0
    assert "conversion webhook" in refused.stderr, refused.stderr
    assert cluster.get("mxjob", written["metadata"]["name"]) is None

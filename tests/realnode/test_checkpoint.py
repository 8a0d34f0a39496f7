"""A checkpoint claim per job with real MXNet 1.9.1 processes (docs/restarts.md#checkpoints):
a `Module.fit` script saving into MXJOB_CHECKPOINT_DIR (workloads/checkpointed.py) on a volume
the test provides, its Server killed mid-training; the whole-job restart's next run resumes
where the checkpoint ends, the status says so, and the claim goes with the job.

The volume is a hostPath PersistentVolume of a class of this test's own (no provisioner,
bound when the first pod is scheduled, as a local volume is), both named after the test's
namespace so sessions sharing the stack do not meet.
"""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE
from tests.realnode.conftest import Node, mxjob, replica

CHECKPOINTED = ["python", "/workloads/checkpointed.py"]
#: Five epochs of 40 batches of at least 0.2 s (about 8 s an epoch), a report every 5 batches.
EPOCHS = {"MXJOB_EPOCHS": "5", "BATCHES": "40", "FREQUENT": "5", "BATCH_SECONDS": "0.2"}
CLASS = f"mxjob-checkpoint-{NAMESPACE}"


@pytest.fixture
def volume(cluster: Node, tmp_path: Path) -> Iterator[str]:
    """A 1 GiB hostPath volume of the class CLASS, removed after the test."""
    name = f"{CLASS}-volume"
    folder = tmp_path / "checkpoints"
    cluster.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": CLASS},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": CLASS,
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(folder), "type": "DirectoryOrCreate"},
            },
        }
    )
    yield name
    cluster.kubectl("delete", "persistentvolume", name, "--ignore-not-found", "--wait=false")
    cluster.kubectl("delete", "storageclass", CLASS, "--ignore-not-found")


def checkpointed_job(cluster: Node, name: str) -> dict[str, Any]:
    """Scheduler, Server and two Workers running checkpointed.py in dist_sync under ExitCode
    (a killed Server restarts the whole job), the checkpoint on CLASS."""
    image = cluster.image("mxjob-mxnet")

    def each(replicas: int = 1) -> dict[str, Any]:
        return replica(
            image, replicas=replicas, policy="ExitCode", command=CHECKPOINTED, env=EPOCHS
        )

    return mxjob(
        name,
        {"Scheduler": each(), "Server": each(), "Worker": each(2)},
        checkpoint={
            "volumeClaimTemplate": {
                "spec": {"storageClassName": CLASS, "resources": {"requests": {"storage": "1Gi"}}}
            }
        },
    )


def test_a_killed_server_resumes_from_the_checkpoint(cluster: Node, volume: str) -> None:
    cluster.apply(checkpointed_job(cluster, "kept"))
    # Killed as epoch 3 begins, by the Worker's own log (the status lags by up to a pass):
    # epochs 0-2 are saved, so the next run begins at 3.
    cluster.wait_log("kept-worker-0", "Epoch[3] Batch", timeout=300)
    began = time.monotonic()
    cluster.kill("kept-server-0")
    cluster.wait_condition("kept", "Succeeded", timeout=300)
    took = time.monotonic() - began
    status = cluster.status("kept")
    resumes = {r["run"]: r["epoch"] for r in status["progress"]["resumes"]}
    print(
        f"\nserver killed as epoch 3 of 5 began: run 1 began at epoch {resumes.get(1)}, "
        f"Succeeded {took:.1f}s later"
    )
    assert resumes == {0: 0, 1: 3}, status["progress"]
    assert status["replicaStatuses"]["Server"]["restarts"] == 1, status["replicaStatuses"]
    worker = next(p for p in cluster.pods("kept") if p.startswith("kept-worker-0-r"))
    assert f"resuming at epoch {resumes[1]}" in cluster.logs(worker)
    claim = cluster.get("persistentvolumeclaim", "kept-checkpoint")
    assert claim is not None and claim["status"]["phase"] == "Bound", claim
    assert claim["spec"]["volumeName"] == volume
    # Deleted with the job (its owner reference): the volume is released, its files kept.
    cluster.delete("mxjob", "kept")
    cluster.wait_gone("persistentvolumeclaim", "kept-checkpoint")

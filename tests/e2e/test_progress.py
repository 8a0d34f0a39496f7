"""Progress through the real API server and Metacontroller (docs/status.md#progress): a note on
a Worker's pod, written as the progress component writes it and as its account, reaches the
job's status, and a look past the progress deadline restarts the job whole; the install's
ValidatingAdmissionPolicy keeps that account's patches to that one annotation on a Worker's pod
(docs/security.md#component-tokens). KWOK pods have no logs: the component's reading of real
logs is proven on the real node (tests/realnode/test_progress.py)."""

import json
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hooks.core.progress import Noted, Report, encode_noted
from tests.builders import replica
from tests.e2e.conftest import NAMESPACE, Cluster, installed_policy, wait_for
from tests.e2e.test_lifecycle import job

ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-progress"
REFUSAL = (
    "the progress component may only note mxjob.kubeflow.org/progress on an MXJob Worker's pod"
)
KEY = "mxjob.kubeflow.org/progress"


@pytest.fixture
def progress_policy(cluster: Cluster) -> Iterator[None]:
    with installed_policy(cluster, "mxjob-progress"):
        yield


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def note(cluster: Cluster, pod: str, noted: Noted, *more: str) -> subprocess.CompletedProcess[str]:
    """`kubectl annotate` of the note on a pod, as the progress component's account."""
    return cluster.kubectl(
        "annotate", "pod", pod, "-n", NAMESPACE, "--overwrite", f"{KEY}={encode_noted(noted)}",
        f"--as={ACCOUNT}", *more, check=False,
    )  # fmt: skip


def test_a_note_reaches_the_status_and_a_look_past_the_deadline_restarts_the_job(
    cluster: Cluster, progress_policy: None
) -> None:
    replicas = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
    cluster.apply(job("e2e-progress", replicas, progressDeadlineSeconds=30))
    cluster.wait_condition("e2e-progress", "Running")
    now = datetime.now(UTC)
    report = Report(epoch=2, batch=140, speed=1834.5, time=stamp(now - timedelta(seconds=50)))
    wait_for(
        "the note admitted",
        lambda: note(cluster, "e2e-progress-worker-1", Noted(report=report)).returncode == 0,
        30,
    )

    def shown() -> dict[str, object] | None:
        found = cluster.status("e2e-progress").get("progress")
        return found if isinstance(found, dict) and found.get("batch") == 140 else None

    progress = wait_for("status.progress", shown, 30)
    assert progress["replicaType"] == "Worker" and progress["replicaIndex"] == 1, progress
    assert cluster.condition("e2e-progress")[0] == "Running"  # type: ignore[index]
    # The clock runs from the newest report or the last start, whichever is later: here the
    # start. Past it by the deadline, a look that saw nothing new stalls the job.
    started = max(
        datetime.fromisoformat(s["state"]["running"]["startedAt"].replace("Z", "+00:00"))
        for p in cluster.pods("e2e-progress").values()
        for s in p["status"]["containerStatuses"]
    )
    time.sleep(max(0.0, (started + timedelta(seconds=31) - datetime.now(UTC)).total_seconds()))
    looked = Noted(report=report, seen=stamp(datetime.now(UTC)))
    assert note(cluster, "e2e-progress-worker-1", looked).returncode == 0
    _, _, message = cluster.wait_condition("e2e-progress", "Restarting", timeout=30)
    assert "no progress from any Worker for 30 s; last: epoch 2 batch 140" in message, message
    cluster.delete("mxjob", "e2e-progress")


def test_the_progress_token_notes_only_its_annotation_on_a_workers_pod(
    cluster: Cluster, progress_policy: None
) -> None:
    """What a stolen progress token would do with its patch right on pods: relabel one (and
    reroute a Service), change another annotation or the image, touch a pod no MXJob Worker
    is. The policy admits only the note, at most 512 bytes, on a Worker's pod."""
    replicas = {"Scheduler": replica(1), "Worker": replica(1)}
    cluster.apply(job("e2e-progress-token", replicas))
    cluster.wait_condition("e2e-progress-token", "Running")
    worker, scheduler = "e2e-progress-token-worker-0", "e2e-progress-token-scheduler-0"
    fine = Noted(seen=stamp(datetime.now(UTC)))
    wait_for("the policy in force", lambda: REFUSAL in note(cluster, scheduler, fine).stderr, 30)
    assert note(cluster, worker, fine).returncode == 0
    image = [{"op": "replace", "path": "/spec/containers/0/image", "value": "evil"}]
    attempts = [
        ("label", "pod", worker, "app=stolen"),
        ("annotate", "pod", worker, "other=x"),
        ("patch", "pod", worker, "--type=json", "-p", json.dumps(image)),
        ("annotate", "pod", worker, "--overwrite", f"{KEY}={'x' * 513}"),
        ("delete", "pod", worker, "--dry-run=server"),
    ]
    for args in attempts:
        proc = cluster.kubectl(*args, "-n", NAMESPACE, f"--as={ACCOUNT}", check=False)
        assert proc.returncode != 0 and REFUSAL in proc.stderr, (args, proc.stderr)
    labels = (cluster.get("pod", worker) or {})["metadata"]["labels"]
    assert "app" not in labels
    cluster.delete("mxjob", "e2e-progress-token")

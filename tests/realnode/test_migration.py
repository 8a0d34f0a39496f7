"""The hand-over from Kubeflow training-operator v1.8.1 to mxjob, as docs/migration.md tells it,
with the real operator and the real API server, Metacontroller and kubelet.

Before: training-operator runs MXJobs (and PyTorchJobs) with its own CRD; mxjob is not installed.
Three MXJobs: one finished, one finished whose Server still runs (training-operator's
`cleanPodPolicy` default was None), one running. Then the procedure: MXJob taken out of
training-operator (its `--enable-scheme` and its webhook entry), the jobs' children labelled
for adoption (`mxjob adopt`), the CRD replaced, mxjob installed. After: the finished jobs keep
their status and pods (but the Server the docs say goes), the running job keeps every pod —
same uid, same container, never restarted — and succeeds under mxjob with nothing made again.
"""

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE, REPO, wait_for
from tests.realnode.conftest import WAITING, Node, mxjob, replica
from tools.cluster import training_operator as operator

pytestmark = pytest.mark.alone(
    "runs training-operator, which would take every MXJob of the cluster"
)

VERSION = "v1.8.1"
FINISHED, SERVER_LEFT, RUNNING = "to-finished", "to-leftover", "to-running"
#: Over the 50 characters mxjob allows (its ConfigMap names): refused by mxjob's CRD on create,
#: but a job training-operator made with it must stay writable once that CRD is in place.
LONG = "to-finished-with-a-name-longer-than-fifty-characters"
JOBS = (FINISHED, LONG, SERVER_LEFT, RUNNING)


def waiting(cluster: Node, name: str, **counts: int) -> dict[str, Any]:
    image = cluster.image("mxjob-base")
    return mxjob(
        name,
        {rtype: replica(image, replicas=n, command=WAITING) for rtype, n in counts.items()},
        jobMode="MXTrain",
    )


def condition_types(cluster: Node, name: str) -> list[str]:
    return [c["type"] for c in cluster.status(name).get("conditions", []) if c["status"] == "True"]


Pod = tuple[str, str, int]


def pods_of(cluster: Node, name: str) -> dict[str, Pod]:
    """The job's pods: name -> (uid, container id, restart count)."""
    found = {}
    for pod_name, pod in cluster.pods(name).items():
        (status,) = pod["status"].get("containerStatuses", [{}])
        found[pod_name] = (
            pod["metadata"]["uid"],
            status.get("containerID", ""),
            status.get("restartCount", 0),
        )
    return found


def mxjob_command(*args: str) -> str:
    """The installed `mxjob` command's output (it must succeed)."""
    command = [str(Path(sys.executable).with_name("mxjob")), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def finish(cluster: Node, *pods: str) -> None:
    for pod in pods:
        cluster.finish(cluster.pid(pod))


def remove_webhook(cluster: Node, webhook: str) -> None:
    """docs/migration.md, step 1: the MXJob entry out of training-operator's webhook
    configuration (by its index, as `kubectl patch --type=json` needs)."""
    configuration = operator.WEBHOOK_CONFIGURATION
    names = cluster.kubectl(
        "get", "validatingwebhookconfiguration", configuration,
        "-o", "jsonpath={.webhooks[*].name}",
    ).stdout.split()  # fmt: skip
    patch = [{"op": "remove", "path": f"/webhooks/{names.index(webhook)}"}]
    cluster.kubectl(
        "patch", "validatingwebhookconfiguration", configuration, "--type=json",
        f"-p={json.dumps(patch)}",
    )  # fmt: skip


@pytest.fixture
def operator_world(cluster: Node) -> Iterator[None]:
    """mxjob uninstalled (its CompositeController gone), training-operator's CRDs in place; the
    standard install back afterwards, passed or failed."""
    stack = cluster.stack
    cluster.kubectl("delete", "compositecontroller", "mxjob-controller", "--ignore-not-found")
    cluster.kubectl("replace", "-f", str(operator.crd(stack, VERSION)))
    try:
        yield
    finally:
        cluster.kubectl("delete", "mxjob", "--all", "-n", NAMESPACE, "--wait=true", check=False)
        cluster.kubectl("replace", "-f", str(REPO / "manifests/crd/mxjobs.kubeflow.org.yaml"))
        stack.node.install_crd(REPO)
        stack.node.install_variant(REPO, "standard")
        cluster.kubectl(
            "delete", "-f", str(operator.crd(stack, VERSION, "pytorchjob")), "--ignore-not-found"
        )
        cluster.kubectl("delete", "namespace", operator.NAMESPACE, "--ignore-not-found")


def run_under_operator(cluster: Node) -> None:
    """The four jobs under training-operator: three finished, one running."""
    cluster.apply(waiting(cluster, FINISHED, Worker=1))
    cluster.apply(waiting(cluster, LONG, Worker=1))
    cluster.apply(waiting(cluster, SERVER_LEFT, Scheduler=1, Server=1, Worker=1))
    cluster.apply(waiting(cluster, RUNNING, Scheduler=1, Server=1, Worker=2))
    for name in (FINISHED, LONG):
        cluster.running_pids(name, 1)
        finish(cluster, f"{name}-worker-0")
    cluster.running_pids(SERVER_LEFT, 3)
    finish(cluster, f"{SERVER_LEFT}-scheduler-0", f"{SERVER_LEFT}-worker-0")
    cluster.running_pids(RUNNING, 4)
    for name in (FINISHED, LONG, SERVER_LEFT):
        cluster.wait_condition(name, "Succeeded", timeout=60)
    cluster.wait_condition(RUNNING, "Running", timeout=60)


def adopt_with_the_cli(cluster: Node) -> str:
    """`mxjob adopt`, first as a dry run that must label nothing."""
    stack = cluster.stack
    kubectl = f"{stack.bin('kubectl')} --kubeconfig {stack.kubeconfig}"
    dry = mxjob_command("adopt", "-n", NAMESPACE, "--dry-run", "--kubectl", kubectl)
    assert all(" would label " in line for line in dry.splitlines()), dry
    assert not cluster.list("pods", "controller-uid"), "the dry run labelled something"
    return mxjob_command("adopt", "-n", NAMESPACE, "--kubectl", kubectl)


def check_finished(
    cluster: Node, before: dict[str, dict[str, Any]], pods: dict[str, dict[str, Pod]]
) -> None:
    """The finished jobs after the hand-over: status as training-operator wrote it, pods kept
    but the running Server of one, which cleanPodPolicy Running (mxjob's default; the
    operator's was None) deletes, as the procedure says."""
    for name in (FINISHED, SERVER_LEFT):  # answered by mxjob: its result record is there
        record = f"{name}-mxjob-result"
        wait_for(record, partial(cluster.get, "configmap", record), 90)
    # The long name: mxjob refuses its spec, yet the status is written (Metacontroller's
    # observedGeneration appears) and kept as it was.
    wait_for(f"{LONG} synced", lambda: "observedGeneration" in cluster.status(LONG), 90)
    for name in (FINISHED, LONG, SERVER_LEFT):
        after = cluster.status(name)
        for key in ("conditions", "startTime", "completionTime"):
            assert after.get(key) == before[name].get(key), (name, key, after)
    assert pods_of(cluster, FINISHED) == pods[FINISHED]
    assert pods_of(cluster, LONG) == pods[LONG]
    leftover = f"{SERVER_LEFT}-server-0"
    cluster.wait_gone("pod", leftover)
    assert pods_of(cluster, SERVER_LEFT) == {
        k: v for k, v in pods[SERVER_LEFT].items() if k != leftover
    }


def check_running(cluster: Node, before: dict[str, Any], pods: dict[str, Pod]) -> dict[str, Any]:
    """The running job: claimed as it is, then run to its end by mxjob; its last status."""
    wait_for(
        "mxjob's status of the running job",
        lambda: "restarts" in cluster.status(RUNNING).get("replicaStatuses", {}).get("Worker", {}),
        90,
    )
    assert pods_of(cluster, RUNNING) == pods, "a running pod was touched"
    assert condition_types(cluster, RUNNING) == ["Created", "Running"]
    finish(cluster, f"{RUNNING}-scheduler-0", f"{RUNNING}-worker-0", f"{RUNNING}-worker-1")
    cluster.wait_condition(RUNNING, "Succeeded", timeout=90)
    made = set(pods_of(cluster, RUNNING)) - set(pods)
    assert not made, f"pods made again: {made}"
    status = cluster.status(RUNNING)
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2, status
    assert status["startTime"] == before["startTime"]
    return status


def test_jobs_of_training_operator_hand_over_without_a_restart(
    cluster: Node, operator_world: None
) -> None:
    stack = cluster.stack
    with operator.installed(stack, VERSION, ["mxjob", "pytorchjob"]) as release:
        with operator.manager(stack, release, ["mxjob", "pytorchjob"]):
            run_under_operator(cluster)
        before = {name: cluster.status(name) for name in JOBS}
        pods = {name: pods_of(cluster, name) for name in JOBS}
        print(f"\nunder training-operator {VERSION}: {json.dumps(before[RUNNING])}")

        # docs/migration.md, the steps: the operator without MXJob, adopt, the CRD, install.
        handed = time.monotonic()
        remove_webhook(cluster, operator.webhook_name("mxjob"))
        with operator.manager(stack, release, ["pytorchjob"]):
            print("mxjob adopt:", adopt_with_the_cli(cluster), sep="\n")
            cluster.kubectl("replace", "-f", str(REPO / "manifests/crd/mxjobs.kubeflow.org.yaml"))
            stack.node.install_crd(REPO)
            stack.node.install_variant(REPO, "standard")
            check_finished(cluster, before, pods)
            print(f"hand-over to the finished jobs' status: {time.monotonic() - handed:.1f}s")
            status = check_running(cluster, before[RUNNING], pods[RUNNING])
            # Only these jobs' events: earlier tests leave SyncErrors of their own (an outage).
            events = [
                f"{e['involvedObject']['name']}: {e['message']}"
                for e in json.loads(
                    cluster.kubectl(
                        "get", "events", "-n", NAMESPACE, "--field-selector=reason=SyncError",
                        "-o", "json",
                    ).stdout
                )["items"]
                if e["involvedObject"]["name"] in JOBS
            ]  # fmt: skip
            assert not events, events
            print(f"under mxjob: {json.dumps(status)}")

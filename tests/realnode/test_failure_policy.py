"""failurePolicy rules (docs/restarts.md#failure-policy) judged on what a real kubelet reports:
a real exit code, a real OOM kill under a container memory limit, a real Eviction API call."""

import json
import time
from typing import Any

from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import WAITING, Node, mxjob, replica

#: Exits 42 after importing MXNet, as a training script that found bad data would.
EXIT_42 = ["python", "-c", "import sys, mxnet; sys.exit(42)"]
#: On run 0, Worker 1 fills 512 MiB under a 96 MiB limit (the kernel's OOM killer ends it);
#: every other pod, and every pod of a later run (`-r<attempt>` names), exits 0 after 3 s.
OOM_ON_FIRST_RUN = [
    "python",
    "-c",
    "import socket, time\n"
    "if socket.gethostname().endswith('-worker-1'):\n"
    "    block = bytearray(512 << 20)\n"
    "    for i in range(0, len(block), 4096): block[i] = 1\n"
    "time.sleep(3)\n",
]


def rules(*each: dict[str, Any]) -> dict[str, Any]:
    return {"runPolicy": {"backoffLimit": 3, "failurePolicy": {"rules": list(each)}}}


def test_exit_42_fails_the_job_at_once(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    bad_data = {
        "name": "bad-data",
        "action": "FailJob",
        "onExitCodes": {"operator": "In", "values": [42]},
    }
    # ExitCode: the pod's restartPolicy is Never, so the kubelet reports the failed pod and
    # the hook judges it; the message shows that the user's rule, not ExitCode, decided.
    job = mxjob(
        "bad-data",
        {"Worker": replica(image, replicas=2, policy="ExitCode", command=EXIT_42)},
        **rules(bad_data),
    )
    started = time.monotonic()
    cluster.apply(job)
    _, reason, message = cluster.wait_condition("bad-data", "Failed", timeout=120)
    assert reason == "MXJobFailed", message
    assert "exited with code 42" in message, message
    assert 'failurePolicy rule "bad-data" (FailJob) does not retry' in message, message
    print(f"\nfailure_policy exit 42: {message}")
    assert cluster.status("bad-data")["replicaStatuses"]["Worker"]["restarts"] == 0
    print(f"\nfailure_policy exit 42: Failed {time.monotonic() - started:.1f}s after apply")


def test_oom_killed_worker_restarts_the_whole_job(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    workers = replica(image, replicas=2, policy="Never", command=OOM_ON_FIRST_RUN)
    (container,) = workers["template"]["spec"]["containers"]
    container["resources"] = {"limits": {"memory": "96Mi"}, "requests": {"memory": "96Mi"}}
    oom = {"name": "oom", "action": "RestartJob", "onReasons": ["OOMKilled"]}
    started = time.monotonic()
    cluster.apply(mxjob("oom", {"Worker": workers}, **rules(oom)))
    _, _, message = cluster.wait_condition("oom", "Restarting", timeout=180)
    print(f"\nfailure_policy OOMKilled worker, {time.monotonic() - started:.1f}s: {message}")
    assert "Worker replica 1" in message, message
    assert "reason OOMKilled" in message, message  # what the kubelet reported
    assert 'failurePolicy rule "oom" (RestartJob)' in message, message
    cluster.wait_condition("oom", "Succeeded", timeout=240)
    status = cluster.status("oom")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 1, status
    print(f"failure_policy OOMKilled worker: Succeeded {time.monotonic() - started:.1f}s after")


def test_evicted_worker_is_ignored(cluster: Node) -> None:
    image = cluster.image("mxjob-base")
    ignore = {
        "name": "disrupted",
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget"}],
    }
    job = mxjob(
        "evicted",
        {"Worker": replica(image, replicas=2, command=WAITING)},
        runPolicy={"backoffLimit": 0, "failurePolicy": {"rules": [ignore]}},
    )
    cluster.apply(job)
    cluster.wait_condition("evicted", "Running", timeout=120)
    wait_for(
        "both Workers running",
        lambda: (
            sum(p["status"].get("phase") == "Running" for p in cluster.pods("evicted").values())
            == 2
        ),
        120,
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evicted-worker-1", "namespace": NAMESPACE},
    }
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/evicted-worker-1/eviction"
    cluster.kubectl("create", "--raw", path, "-f", "-", stdin=json.dumps(eviction))
    # The Eviction API marks the pod before it deletes it (grace period 5 s): the mark the rule
    # matches is on the pod the kubelet then stops.
    marked = cluster.get("pod", "evicted-worker-1")
    assert marked is not None, "the evicted pod is gone before its grace period ended"
    conditions = {c["type"]: c for c in marked["status"].get("conditions", [])}
    assert conditions["DisruptionTarget"]["status"] == "True", conditions
    assert conditions["DisruptionTarget"]["reason"] == "EvictionByEvictionAPI", conditions
    cluster.wait_pods("evicted", {"evicted-worker-1-r1"})
    wait_for(
        "the replacement running",
        lambda: (
            cluster.pods("evicted").get("evicted-worker-1-r1", {}).get("status", {}).get("phase")
            == "Running"
        ),
        120,
    )
    state = cluster.condition("evicted")
    assert state is not None and state[0] != "Failed", cluster.status("evicted")
    status = cluster.status("evicted")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 0, status
    print(f"\nfailure_policy eviction: {state[2]}")
    for pod in ("evicted-worker-0", "evicted-worker-1-r1"):
        cluster.finish(cluster.pid(pod))
    cluster.wait_condition("evicted", "Succeeded", timeout=120)


def test_a_worker_whose_image_is_missing_fails_the_job_in_time(cluster: Node) -> None:
    """The kubelet's own words for an image it may not pull (`ErrImageNeverPull`), named in
    the status at once, and a rule with onStartFailure failing the job 10 s after the pod was
    made, with the reason in the message."""
    workers = replica("localhost/mxjob-no-such-image:0", replicas=1, command=WAITING)
    (container,) = workers["template"]["spec"]["containers"]
    container["imagePullPolicy"] = "Never"
    no_image = {
        "name": "no-image",
        "action": "FailJob",
        "onStartFailure": {"reasons": ["ErrImageNeverPull"], "afterSeconds": 10},
    }
    started = time.monotonic()
    cluster.apply(mxjob("no-image", {"Worker": workers}, **rules(no_image)))

    def named() -> str | None:
        found = cluster.condition("no-image")
        return found[2] if found and "cannot start: ErrImageNeverPull" in found[2] else None

    waiting = wait_for("the status naming the missing image", named, 60)
    seen = time.monotonic() - started
    _, reason, message = cluster.wait_condition("no-image", "Failed", timeout=60)
    assert reason == "MXJobFailed", message
    assert "could not start for 10s (ErrImageNeverPull" in message, message
    assert 'failurePolicy rule "no-image" (FailJob)' in message, message
    print(
        f"\nfailure_policy image missing: named {seen:.1f}s after apply ({waiting});"
        f" Failed {time.monotonic() - started:.1f}s after apply: {message}"
    )

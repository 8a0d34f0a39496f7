"""`kubectl describe mxjob` tells the job's story: the installed Events component turns each
status transition into one Event on the MXJob, and tells none twice after it restarts."""

import json
import time
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import HOOK_NAMESPACE, WAITING, Node, mxjob, replica

pytestmark = pytest.mark.alone(
    "deletes the Events component's pod: other jobs' Events would come late"
)

STORY = ["MXJobCreated", "MXJobRunning", "MXJobRestarting", "MXJobRunning", "MXJobSucceeded"]


def job_events(cluster: Node, name: str) -> list[dict[str, Any]]:
    """The component's Events on the job, oldest first."""
    proc = cluster.kubectl(
        "get", "events", "-n", NAMESPACE, "-o", "json",
        f"--field-selector=involvedObject.kind=MXJob,involvedObject.name={name}",
    )  # fmt: skip
    items = json.loads(proc.stdout)["items"]
    ours = [e for e in items if e.get("source", {}).get("component") == "mxjob"]
    return sorted(ours, key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))


def test_describe_tells_created_running_restarting_and_succeeded_once_each(cluster: Node) -> None:
    image = cluster.image("mxjob-base")
    cluster.apply(mxjob("story", {"Worker": replica(image, policy="ExitCode", command=WAITING)}))
    applied = time.monotonic()
    cluster.running_pids("story", 1)
    cluster.kill("story-worker-0")  # 137: retried under ExitCode, the Worker replaced
    cluster.wait_pods("story", {"story-worker-0-r1"})

    def replacement() -> int | None:
        pod = cluster.pods("story").get("story-worker-0-r1", {})
        running = pod.get("status", {}).get("phase") == "Running"
        return cluster.pid("story-worker-0-r1") if running else None

    cluster.finish(wait_for("the replacement running", replacement, 120))
    cluster.wait_condition("story", "Succeeded", timeout=120)

    # Events carry whole seconds: two transitions in one second (a replacement that runs at
    # once) have no order between them, so the story is compared as a multiset, and in order
    # only where the seconds differ. The restart is told once, even when a sync from a stale
    # copy of the job stamps Restarting afresh (docs/status.md#events).
    deadline, events = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        events = job_events(cluster, "story")
        if sorted(e["reason"] for e in events) == sorted(STORY):
            break
        time.sleep(0.5)
    else:
        told = [(e["reason"], e["firstTimestamp"], e["message"]) for e in events]
        logs = cluster.kubectl("logs", "-n", HOOK_NAMESPACE, "deploy/mxjob-events").stdout
        raise AssertionError(f"Events told: {told}, not {STORY}; the component's log:\n{logs}")
    took = time.monotonic() - applied
    seconds = {
        reason: {e["firstTimestamp"] for e in events if e["reason"] == reason} for reason in STORY
    }
    assert (
        max(seconds["MXJobCreated"])
        <= min(seconds["MXJobRestarting"])
        <= max(seconds["MXJobSucceeded"])
    ), seconds
    assert {e["type"] for e in events if e["reason"] == "MXJobRestarting"} == {"Warning"}
    restarting = next(e for e in events if e["reason"] == "MXJobRestarting")
    assert "story-worker-0" in restarting["message"] and "137" in restarting["message"]
    described = cluster.kubectl("describe", "mxjob", "story", "-n", NAMESPACE).stdout
    assert "MXJobRestarting" in described and "MXJobSucceeded" in described, described

    # A new component process tells nothing again: every Event stays, once.
    old = cluster.get_in(HOOK_NAMESPACE, "deployment", "mxjob-events")
    assert old is not None
    cluster.kubectl(
        "delete", "pod", "-n", HOOK_NAMESPACE, "-l", "app.kubernetes.io/name=mxjob-events",
        "--wait=true",
    )  # fmt: skip
    cluster.wait_rollout(HOOK_NAMESPACE, "deployment/mxjob-events")
    time.sleep(12)  # more than two passes of the new process (EVENTS_INTERVAL_SECONDS 5)
    after = job_events(cluster, "story")
    assert [e["metadata"]["name"] for e in after] == [e["metadata"]["name"] for e in events]
    assert all(e.get("count", 1) == 1 for e in after)
    print(
        f"\nevents: {len(events)} Events told ({', '.join(STORY)}) within {took:.1f} s of"
        " kubectl apply; none told again by a restarted component"
    )
    cluster.delete("mxjob", "story")

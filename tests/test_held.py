"""A pod that restarts in place, read from its barrier and annotations (hooks/core/held.py,
docs/restarts.md#in-place): the run its `go` annotation released it into, or the run its
`restart` annotation holds it for; its restart counts and its mxnet container's last state
count nothing (a RestartAllContainers restart writes them, the run records count it). The
states are those the real node showed (notes/inplace/probe2.py)."""

import json
from typing import Any

import pytest

from hooks.core.observed import PodPhase
from hooks.core.restart.runs import current_run, within_records
from testsupport.observed import observe

#: What the kubelet writes as every container's last state on an in-place restart.
REMOVED = {
    "terminated": {
        "exitCode": 137,
        "reason": "RestartingAllContainers",
        "message": "The container is removed because RestartAllContainers in place",
        "finishedAt": "2026-03-01T12:10:00Z",
    }
}
RUNNING = {"running": {"startedAt": "2026-03-01T12:11:00Z"}}
WAITING = {"waiting": {"reason": "PodInitializing"}}


def passed(message: str) -> dict[str, Any]:
    return {"terminated": {"exitCode": 0, "message": message}}


def pod(
    barrier: dict[str, Any],
    mxnet: dict[str, Any] = RUNNING,
    phase: str = "Running",
    restart: str | None = None,
    *,
    go: str | None = None,
    run: str = "0",
    restarted: bool = True,
) -> dict[str, Any]:
    """mnist-server-0, made in run 0 (its `run` annotation as given), its containers in these
    states; `restarted` in place twice (every restart count 2, every last state REMOVED)."""

    def status(name: str, state: dict[str, Any]) -> dict[str, Any]:
        count = 2 if restarted else 0
        return {"name": name, "restartCount": count, "state": state,
                "lastState": REMOVED if restarted else {}}  # fmt: skip

    annotations = {"mxjob.kubeflow.org/run": run, "mxjob.kubeflow.org/attempt": "0"}
    if restart is not None:
        annotations["mxjob.kubeflow.org/restart"] = restart
    if go is not None:
        annotations["mxjob.kubeflow.org/go"] = go
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mnist-server-0", "annotations": annotations},
        "status": {
            "phase": phase,
            "initContainerStatuses": [
                status("mxjob-restarter", RUNNING),
                status("mxjob-barrier", barrier),
            ],
            "containerStatuses": [status("mxnet", mxnet)],
        },
    }


@pytest.mark.parametrize(
    ("observed", "run", "phase", "held"),
    [
        (pod(passed(""), restarted=False), 0, PodPhase.RUNNING, False),
        (pod(passed("2"), restart="2", go="2"), 2, PodPhase.RUNNING, False),
        (pod(RUNNING, WAITING, "Pending", restart="3"), 3, PodPhase.PENDING, True),
        # Asked for run 3, not restarted yet: still run 2's processes, whatever its run
        # annotation (the restarter writes it with the restart annotation).
        (pod(passed("2"), restart="3", go="2", run="3"), 2, PodPhase.RUNNING, False),
        (pod(passed(""), restart="1", run="1", restarted=False), 0, PodPhase.RUNNING, False),
        # A first start: the barrier about to pass.
        (pod(RUNNING, WAITING, "Pending", restarted=False), 0, PodPhase.PENDING, True),
        # A go that is no number is no run: the run annotation says.
        (pod(passed("2"), restart="2", go="x"), 0, PodPhase.RUNNING, False),
        (pod(RUNNING, WAITING, "Pending", restart="later"), 0, PodPhase.PENDING, True),
    ],
    ids=[
        "first start",
        "released into run 2",
        "held for run 3",
        "asked, not restarted yet",
        "asked for run 1 at its first start, not restarted yet",
        "held at its first start",
        "a go that is no number",
        "held for no number",
    ],
)
def test_an_in_place_pod_runs_the_run_its_go_annotation_released_it_into(
    observed: dict[str, Any], run: int, phase: PodPhase, held: bool
) -> None:
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.held) == (run, phase, held)
    assert (read.restart_count, read.ended_before) == (0, None)


def test_a_failed_in_place_pod_keeps_its_exit_code() -> None:
    """Its mxnet container has no restart rule: the pod fails, its exit code in its state."""
    failed = {"terminated": {"exitCode": 3, "reason": "Error", "message": "started\n"}}
    read = observe("mnist", pod(passed("2"), failed, "Failed", restart="2", go="2"))
    assert read is not None
    assert (read.run, read.phase, read.exit_code, read.held) == (2, PodPhase.FAILED, 3, False)


def test_a_pod_without_a_barrier_is_read_as_before() -> None:
    plain = pod(passed("2"))
    plain["status"]["initContainerStatuses"] = []
    read = observe("mnist", plain)
    assert read is not None
    assert (read.run, read.restart_count, read.held) == (0, 2, False)
    assert read.ended_before is not None and read.ended_before.exit_code == 137


KILLED = {"terminated": {"exitCode": 137, "reason": "Error"}}
TRIGGERED = {"terminated": {"exitCode": 86, "message": "3"}}


@pytest.mark.parametrize(
    "restarting",
    [
        # The restarter has just exited 86; the kubelet shows the killed pod Failed.
        lambda p: p["status"]["initContainerStatuses"][0].update(state=TRIGGERED),
        # The condition the kubelet sets while it restarts every container.
        lambda p: (
            p["status"]
            .setdefault("conditions", [])
            .append({"type": "AllContainersRestarting", "status": "True"})
        ),
        # A container ended for the restart.
        lambda p: p["status"]["containerStatuses"][0].update(state=REMOVED),
        # Its restarter and barrier waiting for the restart (the mxnet container not started).
        lambda p: [
            s.update(state={"waiting": {"reason": "RestartingAllContainers"}})
            for s in p["status"]["initContainerStatuses"]
        ],
    ],
    ids=[
        "restarter exited 86",
        "AllContainersRestarting",
        "RestartingAllContainers",
        "init containers waiting for the restart",
    ],
)
def test_a_pod_restarting_in_place_is_held_not_failed(restarting: Any) -> None:
    """Seen on the real node: a pod whose containers the kubelet restarts in place shows phase
    Failed for a moment. It is held for the run it was asked to restart for, not failed."""
    observed = pod(passed("2"), KILLED, "Failed", restart="3")
    restarting(observed)
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.held, read.exit_code, read.exits) == (
        3,
        PodPhase.PENDING,
        True,
        None,
        (),
    )


def test_a_held_pod_past_the_records_is_held_for_the_current_run() -> None:
    """A restart annotation anyone who may edit the pod could write never moves the job to a
    run no record and no running pod knows (hooks/core/restart/runs.py)."""
    held = observe("mnist", pod(RUNNING, WAITING, "Pending", restart="7"))
    other = pod(passed("1"), go="1")
    other["metadata"]["name"] = "mnist-worker-0"
    running = observe("mnist", other)
    assert held is not None and running is not None and held.run == 7
    pods = {held.slot: [held], running.slot: [running]}
    assert current_run(None, pods) == 1
    assert sorted(p.run for found in within_records(pods, 1).values() for p in found) == [1, 1]


def _noted(minute: int) -> str:
    report = {"epoch": 4, "batch": 5, "time": f"2026-03-01T12:{minute:02}:00Z"}
    return json.dumps({"report": report, "began": 0})


@pytest.mark.parametrize(
    ("minute", "barrier", "kept"),
    [
        (12, passed("2"), True),  # reported by the process running since 12:11
        (10, passed("2"), False),  # by the process before the restart in place
        (12, RUNNING, False),  # held: no process runs
        (12, None, False),  # released, its mxnet container not started yet (the real node)
    ],
    ids=["its own process's note", "a note from before the restart", "held", "not started"],
)
def test_an_in_place_pod_reads_only_a_progress_note_of_its_running_process(
    minute: int, barrier: dict[str, Any] | None, kept: bool
) -> None:
    """The progress component's note stays on a pod restarted in place; the run it was
    released into must not take the run before's report, or where that run began, as its own."""
    held = barrier is RUNNING
    mxnet = WAITING if held or barrier is None else RUNNING
    observed = pod(barrier or passed("2"), mxnet, "Pending" if held else "Running",
                   restart="2", go="2")  # fmt: skip
    observed["metadata"]["annotations"]["mxjob.kubeflow.org/progress"] = _noted(minute)
    read = observe("mnist", observed)
    assert read is not None
    assert (read.noted.report is not None) is kept


def test_a_pod_whose_restarter_exited_is_not_held_while_its_process_runs() -> None:
    """The restarter's exit 86 is in the pod's status before the kubelet stops the mxnet
    container: until it has, the pod runs the run it was released into, and no release may
    count it held (the real node: run 1 started beside a process of run 0)."""
    observed = pod(passed("2"), RUNNING, "Running", "3", go="2")
    observed["status"]["initContainerStatuses"][0]["state"] = TRIGGERED
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.held) == (2, PodPhase.RUNNING, False)
    observed["status"]["containerStatuses"][0]["state"] = REMOVED
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.held) == (3, PodPhase.PENDING, True)


def test_a_restarted_pod_whose_barrier_has_not_started_yet_is_held() -> None:
    """The real node, right after a restart in place: the restarter running again, the
    barrier still waiting (PodInitializing), phase Pending. Read as a pending pod of the old
    run it was left out and deleted; it is held for the run it was asked to restart for."""
    observed = pod(WAITING, WAITING, "Pending", "3", go="2")
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.held) == (3, PodPhase.PENDING, True)
    first = pod(WAITING, WAITING, "Pending", restarted=False)
    read = observe("mnist", first)
    assert read is not None
    assert (read.run, read.held) == (0, False), "a first start waits for its barrier unheld"

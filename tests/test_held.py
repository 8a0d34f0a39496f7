"""A pod that restarts in place, read from what its restarter, barrier and mxnet container say
(hooks/core/held.py, docs/restarts.md#in-place): the run it runs, or the later run it was
stopped for, or the failure that stopped it; its restartCount counts nothing (the run records
do)."""

from typing import Any

import pytest

from hooks.core.observed import PodPhase
from testsupport.observed import observe

RELEASED = "2026-03-01T12:10:00Z"
BEFORE = "2026-03-01T12:05:00Z"
AFTER = "2026-03-01T12:20:00Z"


def ended(code: int, message: str = "", at: str = RELEASED, reason: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": code, "finishedAt": at, "message": message}
    if reason:
        state["reason"] = reason
    return {"terminated": state}


RUNNING = {"running": {"startedAt": RELEASED}}
WAITING = {"waiting": {"reason": "PodInitializing"}}


def pod(
    barrier: dict[str, Any],
    barrier_before: dict[str, Any] | None = None,
    restarter_before: dict[str, Any] | None = None,
    mxnet: dict[str, Any] = RUNNING,
    mxnet_before: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """mnist-server-0 of run 0 (its annotation) with these container states, restarted 3
    times in place."""

    def status(name: str, state: dict[str, Any], last: dict[str, Any] | None) -> dict[str, Any]:
        return {"name": name, "restartCount": 3, "state": state, "lastState": last or {}}

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "mnist-server-0",
            "annotations": {"mxjob.kubeflow.org/run": "0", "mxjob.kubeflow.org/attempt": "0"},
        },
        "status": {
            "phase": "Running",
            "initContainerStatuses": [
                status("mxjob-restarter", RUNNING, restarter_before),
                status("mxjob-barrier", barrier, barrier_before),
            ],
            "containerStatuses": [status("mxnet", mxnet, mxnet_before)],
        },
    }


@pytest.mark.parametrize(
    ("observed", "run", "phase", "exit_code"),
    [
        # First start: the barrier passed with no go annotation; the run of its annotation.
        (pod(ended(0, "")), 0, PodPhase.RUNNING, None),
        # Released into run 2 in place.
        (pod(ended(0, "2")), 2, PodPhase.RUNNING, None),
        # Held, its restarter having exited 86 for run 3: run 3's pod, not started.
        (
            pod(RUNNING, ended(0, "2"), ended(86, "3"), WAITING, ended(137, at=AFTER)),
            3,
            PodPhase.PENDING,
            None,
        ),
        # Held after its mxnet container failed in run 2: run 2's failed pod.
        (
            pod(RUNNING, ended(0, "2"), None, WAITING, ended(137, at=AFTER, reason="OOMKilled")),
            2,
            PodPhase.FAILED,
            137,
        ),
        # Held for a failure, then asked for run 3 too: run 3's pod.
        (
            pod(RUNNING, ended(0, "2"), ended(86, "3"), WAITING, ended(1, at=AFTER)),
            3,
            PodPhase.PENDING,
            None,
        ),
        # Held with an end from before its last release (the previous run's): not started.
        (
            pod(RUNNING, ended(0, "2"), None, WAITING, ended(137, at=BEFORE)),
            2,
            PodPhase.PENDING,
            None,
        ),
        # A restarter's 86 for the run it runs already, or not a number: not a later run.
        (
            pod(RUNNING, ended(0, "2"), ended(86, "2"), WAITING, ended(2, at=AFTER)),
            2,
            PodPhase.FAILED,
            2,
        ),
        (pod(RUNNING, ended(0, "2"), ended(86, "x"), WAITING), 2, PodPhase.PENDING, None),
    ],
    ids=[
        "first start",
        "released into run 2",
        "stopped for run 3",
        "failed in run 2",
        "failed, then stopped for run 3",
        "an end from the run before",
        "asked for its own run",
        "asked for no number",
    ],
)
def test_an_in_place_pod_is_read_from_its_containers(
    observed: dict[str, Any], run: int, phase: PodPhase, exit_code: int | None
) -> None:
    read = observe("mnist", observed)
    assert read is not None
    assert (read.run, read.phase, read.exit_code, read.restart_count) == (run, phase, exit_code, 0)
    if phase is PodPhase.FAILED:
        assert read.exits == (("mxnet", exit_code),)


def test_a_failure_in_place_keeps_the_kubelets_reason() -> None:
    held = pod(RUNNING, ended(0, "2"), None, WAITING, ended(137, at=AFTER, reason="OOMKilled"))
    read = observe("mnist", held)
    assert read is not None and read.reason == "OOMKilled"
    assert read.ended is not None and read.ended.finished is not None


def test_a_pod_without_a_barrier_is_read_as_before() -> None:
    plain = pod(ended(0, "2"))
    plain["status"]["initContainerStatuses"] = []
    read = observe("mnist", plain)
    assert read is not None and (read.run, read.restart_count) == (0, 3)

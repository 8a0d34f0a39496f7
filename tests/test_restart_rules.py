"""Table tests for the rules of docs/status.md, docs/restarts.md behind the fixtures: restart scope
by role, the run
record, the gates a run's plan opens, disruptions, the name-length reserve and successPolicy."""

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import msgspec
import pytest

from hooks.core.api import ReplicaType, RestartPolicy
from hooks.core.children import ConfigMap, decode_child
from hooks.core.failure_policy import Action, judge
from hooks.core.job import Job
from hooks.core.naming import Slot, run_from_record_name, run_record_name
from hooks.core.observed import ObservedPod, judged_deleted
from hooks.core.outcome import deciding_types
from hooks.core.previous import PreviousStatus, read_previous
from hooks.core.restart.runs import (
    RunRecord,
    Step,
    current_run,
    decide_restart,
    observed_record,
    plan_run,
    record_config_map,
)
from hooks.core.restart.slots import RunStart, plan_slot
from hooks.core.spec import load
from hooks.core.validation import validate
from tests.builders import (
    NOW,
    T0,
    cluster_after,
    disrupted,
    mxjob,
    pods_by_name,
    replica,
    request,
    run,
    running,
    terminated,
    terminating,
)
from testsupport.observed import observe

TRAIN = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
TUNE = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}


def job_of(replicas: dict[str, Any], mode: str = "MXTrain", **extra: Any) -> Job:
    spec, problems = load(mxjob(replicas=replicas, mode=mode, **extra)["spec"])
    assert spec is not None and not problems
    return Job("mnist", "default", spec, None, None, None)


def first_pods(replicas: dict[str, Any], mode: str = "MXTrain") -> dict[str, dict[str, Any]]:
    return pods_by_name(cluster_after(run(request(mxjob(replicas=replicas, mode=mode)))))


def with_policy(replicas: dict[str, Any], policy: str) -> dict[str, Any]:
    return {k: {**v, "restartPolicy": policy} for k, v in replicas.items()}


@pytest.mark.parametrize(
    ("mode", "replicas", "pod", "state", "whole"),
    [
        ("MXTrain", TRAIN, "mnist-worker-1", lambda p: terminated(p, 137), False),
        ("MXTrain", TRAIN, "mnist-server-0", lambda p: terminated(p, 137), True),
        ("MXTrain", TRAIN, "mnist-scheduler-0", lambda p: terminated(p, 143), True),
        ("MXTrain", TRAIN, "mnist-server-0", lambda p: terminated(p, 1), False),  # fatal
        ("MXTrain", TRAIN, "mnist-server-0", lambda p: disrupted(terminated(p, None)), True),
        ("MXTrain", TRAIN, "mnist-server-0", lambda p: disrupted(terminating(p)), True),
        ("MXTrain", TRAIN, "mnist-server-0", terminating, True),  # kubectl delete pod: at once
        ("MXTune", TUNE, "mnist-tunerserver-1", lambda p: terminated(p, 137), False),
        ("MXTune", TUNE, "mnist-tunertracker-0", lambda p: terminated(p, 137), True),
        ("MXTune", TUNE, "mnist-tuner-0", lambda p: terminated(p, 130), True),
    ],
)
def test_restart_scope_by_role(
    mode: str, replicas: dict[str, Any], pod: str, state: Any, whole: bool
) -> None:
    replicas = with_policy(replicas, "ExitCode")
    job = job_of(replicas, mode)
    pods = {n: running(p) for n, p in first_pods(replicas, mode).items()}
    pods[pod] = state(pods[pod])
    observed = {n: observe("mnist", p) for n, p in pods.items()}
    plans = [
        plan_slot(
            s,
            RestartPolicy.EXIT_CODE,
            [judged_deleted(o, None) for o in observed.values() if o and o.slot == s],
            RunStart(),
        )
        for s in job.slots()
    ]
    record = decide_restart(job, 0, plans)
    assert (record is not None) is whole
    if record is not None:
        assert record.run == 1 and record.attempt == 1
        assert "restarting the whole job" in record.message(Step.RECORDING)


def test_in_place_restart_of_a_server_counts_once() -> None:
    replicas = with_policy(TRAIN, "OnFailure")
    job = job_of(replicas)
    pods = {n: running(p) for n, p in first_pods(replicas).items()}
    pods["mnist-server-0"] = running(pods["mnist-server-0"], restarts=1)
    observed = [observe("mnist", p) for p in pods.values()]
    plans = [
        plan_slot(
            s, RestartPolicy.ON_FAILURE, [o for o in observed if o and o.slot == s], RunStart()
        )
        for s in job.slots()
    ]
    record = decide_restart(job, 0, plans)
    assert record is not None
    assert record.restarts_before == {Slot(ReplicaType.SERVER, 0): 1}
    assert "restarted in place" in record.cause


def test_run_record_round_trips_through_its_config_map() -> None:
    job = job_of(with_policy(TRAIN, "ExitCode"))
    pods = first_pods(with_policy(TRAIN, "ExitCode"))
    server = observe("mnist", terminated(running(pods["mnist-server-0"]), 137))
    assert server is not None
    plans = [
        plan_slot(s, RestartPolicy.EXIT_CODE, [server] if s == server.slot else [], RunStart())
        for s in job.slots()
    ]
    record = decide_restart(job, 0, plans)
    assert record is not None
    child = decode_child(ConfigMap, record_config_map(job, record))
    read, obj = observed_record(job, {child.metadata.name: child})
    assert read == record and obj is child
    assert current_run(read, {}) == 1


@pytest.mark.parametrize(
    ("data", "edits", "own_config"),
    [
        ({"config": "mnist-mxjob-cfg-1", "edits": "3"}, 3, True),
        ({"config": "mnist-mxjob-cfg-1"}, 0, True),
        ({}, 0, False),
        ({"config": "mnist-mxjob-cfg-1", "edits": "-1"}, 0, True),
        ({"config": "mnist-mxjob-cfg-1", "edits": "1" * 10}, 0, True),
    ],
    ids=["edits in a row", "a failure's", "written before runs had configs", "negative", "huge"],
)
def test_a_run_record_says_what_its_run_reads_back(
    data: dict[str, str], edits: int, own_config: bool
) -> None:
    """The edits in a row that led to the run (a count the hook wrote, else none), and whether
    its pods read a config of their own: a record without `config` was written by an earlier
    version, whose runs all read `<job>-mxjob-config` (docs/restarts.md#upgrading)."""
    job = job_of(with_policy(TRAIN, "ExitCode"))
    base = {"run": "1", "attempt": "1", "restartsBefore": "{}", "cause": "resized"}
    child = decode_child(
        ConfigMap, {"metadata": {"name": "mnist-mxjob-run-1"}, "data": {**base, **data}}
    )
    read, _ = observed_record(job, {child.metadata.name: child})
    assert read is not None and (read.edits, read.own_config) == (edits, own_config)


#: The record of run 1, a restart of run 0 (the pods of `_observed`).
RUN_1 = RunRecord(
    run=1,
    attempt=1,
    restarts_before={},
    cause="MXJob mnist is restarting the whole job: a test",
    moment=None,
)

#: Run 1 as an edit started it, and a moment before it has run its wait (30 s from its pods'
#: creation, T0 + 30 s: hooks/core/restart/resize.py's `edit_waits`).
EDITED, SOON = replace(RUN_1, edits=1), T0 + timedelta(seconds=45)


def _observed(state: str) -> dict[Slot, list[ObservedPod]]:
    """The job's pods: none, run 0's running, with its Server failed, or run 1's running."""
    replicas = with_policy(TRAIN, "ExitCode")
    pods = {n: running(p) for n, p in first_pods(replicas).items()} if state != "none" else {}
    if state == "server failed":
        pods["mnist-server-0"] = terminated(pods["mnist-server-0"], 137)
    found: dict[Slot, list[ObservedPod]] = {}
    for pod in pods.values():
        seen = observe("mnist", pod)
        assert seen is not None
        if state == "run 1":
            seen = msgspec.structs.replace(seen, run=1, attempt=1)
        found[seen.slot] = [seen]
    return found


def _shown(step: Step | None) -> PreviousStatus:
    """A parent status showing the step of run 1's restart (None: no restart)."""
    if step is None:
        return PreviousStatus()
    message = RUN_1.message(step)
    return read_previous(
        {"conditions": [{"type": "Restarting", "status": "True", "message": message}]}
    )


@pytest.mark.parametrize(
    ("pods", "record", "step", "resized", "now", "gates"),
    [
        ("none", None, None, None, NOW, (True, True, True)),
        ("run 0", None, None, None, NOW, (True, False, False)),
        ("server failed", None, None, None, NOW, (False, False, False)),
        ("run 0", RUN_1, None, None, NOW, (False, True, False)),
        ("run 0", RUN_1, Step.RECORDING, None, NOW, (False, True, False)),
        ("run 0", RUN_1, Step.DELETING, None, NOW, (False, False, True)),
        ("none", RUN_1, Step.RECORDING, None, NOW, (False, True, False)),
        ("none", RUN_1, Step.DELETING, None, NOW, (False, False, True)),
        ("none", RUN_1, Step.CREATING, None, NOW, (True, False, True)),
        ("run 1", EDITED, None, None, SOON, (True, False, False)),
        ("run 1", EDITED, None, "resized from 2 to 3 Workers", SOON, (False, False, False)),
    ],
    ids=[
        "a new job: everything made, children made for another spec replaced",
        "a running run: its missing pods made",
        "a restart decided now: nothing made until its creating step is shown",
        "the record observed, the parent status stale: the older pods stay",
        "the record observed, the recording step shown: the older pods stay",
        "the deleting step shown: the older pods go, the run's children are replaced",
        "older pods gone, only the recording step shown: nothing made, nothing replaced",
        "older pods gone, the deleting step shown: nothing made yet",
        "the creating step shown: the new run is made",
        "a run edits started, not edited",
        "an edit waits for the run's wait: nothing made",
    ],
)
def test_a_run_plan_reads_its_gates_in_the_parent_status(
    pods: str,
    record: RunRecord | None,
    step: Step | None,
    resized: str | None,
    now: datetime,
    gates: tuple[bool, bool, bool],
) -> None:
    """What a sync may make, keep and replace (docs/restarts.md#whole-job-restarts): each step of
    a restart is taken only once the parent status shows the one before
    (docs/run-policy.md#stale-cache-safety), and an edit that waits makes nothing."""
    job = job_of(with_policy(TRAIN, "ExitCode"))
    plan = plan_run(job, _observed(pods), record, now, _shown(step), resized=resized)
    assert (plan.creating, plan.keeps_old, plan.replacing) == gates


@pytest.mark.parametrize(
    ("name", "run_number"),
    [
        ("mnist-mxjob-run-1", 1),
        ("mnist-mxjob-run-9999", 9999),
        ("mnist-mxjob-run-0", None),
        ("mnist-mxjob-run-01", None),
        ("other-mxjob-run-1", None),
        ("mnist-mxjob-config", None),
    ],
)
def test_run_record_names(name: str, run_number: int | None) -> None:
    assert run_from_record_name("mnist", name) == run_number
    if run_number is not None:
        assert run_record_name("mnist", run_number) == name


@pytest.mark.parametrize(
    ("exit_code", "disruption", "retryable", "counted"),
    [
        (137, False, True, 1),
        (1, False, False, 1),
        (None, False, True, 1),
        (1, True, True, 0),
        (143, True, True, 0),
    ],
)
def test_disruptions_are_retried_and_not_counted(
    exit_code: int | None, disruption: bool, retryable: bool, counted: int
) -> None:
    pod = terminated(first_pods(TRAIN)["mnist-worker-0"], exit_code)
    observed = observe("mnist", disrupted(pod) if disruption else pod)
    assert observed is not None
    verdict = judge((), RestartPolicy.EXIT_CODE, ReplicaType.WORKER, observed)
    assert (verdict.action is not Action.FAIL_JOB) is retryable
    assert verdict.added == (counted if retryable else 0)


NEVER_NAME = "a-very-long-job-name-for-a-distributed-mnist-rn"  # 47 characters


@pytest.mark.parametrize(
    ("name", "policy", "ok"),
    [
        (NEVER_NAME, "Never", True),  # -worker-99 fits without the -r9999 reserve
        (NEVER_NAME, "ExitCode", False),  # ... not with it
        (NEVER_NAME, "OnFailure", False),  # whole-job restarts rename every replica
        ("a" * 50, "Never", True),  # <name>-mxjob-result is 63
        ("a" * 51, "Never", False),
    ],
)
def test_attempt_suffix_is_reserved_only_when_a_pod_can_be_replaced(
    name: str, policy: str, ok: bool
) -> None:
    replicas = {"Worker": replica(100 if name == NEVER_NAME else 1, "Never")}
    spec, _ = load(mxjob(replicas={**replicas, "Scheduler": replica(1, policy)})["spec"])
    assert spec is not None
    assert (validate(name, spec) == []) is ok


@pytest.mark.parametrize(
    ("replicas", "mode", "policy", "deciding"),
    [
        (TRAIN, "MXTrain", None, (ReplicaType.SCHEDULER, ReplicaType.WORKER)),
        (TRAIN, "MXTrain", "", (ReplicaType.SCHEDULER, ReplicaType.WORKER)),
        (TRAIN, "MXTrain", "AllWorkers", (ReplicaType.WORKER,)),
        ({"Worker": replica(2)}, "MXTrain", "AllWorkers", (ReplicaType.WORKER,)),
        (TUNE, "MXTune", "AllWorkers", (ReplicaType.TUNER,)),
    ],
)
def test_success_policy_decides_which_replicas_count(
    replicas: dict[str, Any], mode: str, policy: str | None, deciding: tuple[ReplicaType, ...]
) -> None:
    extra = {} if policy is None else {"successPolicy": policy}
    assert deciding_types(job_of(replicas, mode, **extra)) == deciding

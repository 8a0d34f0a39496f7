"""Table tests for docs/restarts.md "Rejoining ps-lite" and "Lost nodes": how long a new Worker
waits, which pods the kubelet may restart in place, a wait that could not run, why a pod cannot
start, and when a terminating pod counts as lost."""

from datetime import timedelta
from typing import Any

import pytest

from hooks.core.api import ReplicaType, RestartPolicy
from hooks.core.observed import PodPhase
from hooks.core.restart.rejoin import (
    REJOIN_MARGIN,
    UNREADABLE_TIMEOUT,
    heartbeat_timeout,
    pod_restart_policy,
    rejoin_wait,
    wait_container,
)
from hooks.core.spec import JobSpec, load
from tests.builders import (
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
    unschedulable,
    waiting,
)
from testsupport.observed import observe

TRAIN = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2, "ExitCode")}
TUNE = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}


def spec_of(replicas: dict[str, Any], mode: str = "MXTrain") -> JobSpec:
    spec, problems = load(mxjob(replicas=replicas, mode=mode)["spec"])
    assert spec is not None and not problems
    return spec


def scheduler_env(*env: dict[str, Any]) -> dict[str, Any]:
    return {**TRAIN, "Scheduler": replica(1, env=list(env))}


@pytest.mark.parametrize(
    ("replicas", "timeout"),
    [
        (TRAIN, 2),
        (scheduler_env({"name": "PS_HEARTBEAT_TIMEOUT", "value": "10"}), 10),
        (scheduler_env({"name": "PS_HEARTBEAT_TIMEOUT", "value": " 7 "}), 7),
        (scheduler_env({"name": "PS_HEARTBEAT_TIMEOUT", "value": "0"}), 0),
        (scheduler_env({"name": "PS_HEARTBEAT_TIMEOUT", "value": "2s"}), UNREADABLE_TIMEOUT),
        (scheduler_env({"name": "PS_HEARTBEAT_TIMEOUT", "value": "-1"}), UNREADABLE_TIMEOUT),
        (
            scheduler_env(
                {
                    "name": "PS_HEARTBEAT_TIMEOUT",
                    "valueFrom": {"configMapKeyRef": {"name": "ps", "key": "timeout"}},
                }
            ),
            UNREADABLE_TIMEOUT,
        ),
        # The Scheduler declares Workers dead: a Worker's own setting does not count.
        (
            {**TRAIN, "Worker": replica(2, env=[{"name": "PS_HEARTBEAT_TIMEOUT", "value": "9"}])},
            2,
        ),
    ],
)
def test_the_scheduler_heartbeat_timeout_is_the_one_in_force(
    replicas: dict[str, Any], timeout: int
) -> None:
    assert heartbeat_timeout(spec_of(replicas)) == timeout


@pytest.mark.parametrize(
    ("replicas", "mode", "rtype", "wait"),
    [
        (TRAIN, "MXTrain", ReplicaType.WORKER, 2 + REJOIN_MARGIN),
        # Scheduler and Server failures restart the whole job: a new Scheduler, no race.
        (TRAIN, "MXTrain", ReplicaType.SERVER, None),
        (TRAIN, "MXTrain", ReplicaType.SCHEDULER, None),
        # No Scheduler, no ps-lite; AutoTVM's tracker has no such race.
        ({"Worker": replica(3, "ExitCode")}, "MXTrain", ReplicaType.WORKER, None),
        (TUNE, "MXTune", ReplicaType.TUNER_SERVER, None),
    ],
)
def test_only_ps_lite_workers_wait_before_they_rejoin(
    replicas: dict[str, Any], mode: str, rtype: ReplicaType, wait: int | None
) -> None:
    assert rejoin_wait(spec_of(replicas, mode), rtype) == wait


def test_the_wait_runs_where_the_mxnet_container_may_run() -> None:
    """Same image, pull policy and security settings (PodSecurity checks init containers too),
    after the user's own init containers, nothing else of the mxnet container."""
    secure = {"runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}
    worker = replica(2, "ExitCode", image="registry.example/mx:1", securityContext=secure)
    worker["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    worker["template"]["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    job = mxjob(replicas={**TRAIN, "Worker": worker})
    made = cluster_after(run(request(job)))
    pods = pods_by_name(run(request(job, killed(made, "mnist-worker-1"))).children)
    assert pods["mnist-worker-1-r1"]["spec"]["initContainers"] == [
        {"name": "fetch", "image": "busybox"},
        {
            "name": "mxjob-rejoin-wait",
            "image": "registry.example/mx:1",
            "imagePullPolicy": "Always",
            "securityContext": secure,
            "command": ["sleep", "5"],
        },
    ]
    assert pods["mnist-worker-0"]["spec"]["initContainers"] == [
        {"name": "fetch", "image": "busybox"}
    ]
    assert "initContainers" not in pods["mnist-server-0"]["spec"]
    assert "initContainers" not in pods["mnist-scheduler-0"]["spec"]


def killed(children: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The children with every pod running but `name`, SIGKILLed."""
    return [
        (terminated(running(c), 137) if c["metadata"]["name"] == name else running(c))
        if c["kind"] == "Pod"
        else c
        for c in children
    ]


def without(children: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The children with every pod running and `name` gone from the API."""
    return [
        running(c) if c["kind"] == "Pod" else c for c in children if c["metadata"]["name"] != name
    ]


def first_sync(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return []


def waits(pod: dict[str, Any]) -> bool:
    return any(c["name"] == "mxjob-rejoin-wait" for c in pod["spec"].get("initContainers", []))


@pytest.mark.parametrize(
    ("observed", "waiting_pods"),
    [
        # The run's first pods: ps-lite's Scheduler waits for all of them before it starts.
        (first_sync, set()),
        # A replacement, and the first attempts kept beside it (listed as they were made).
        (lambda made: killed(made, "mnist-worker-1"), {"mnist-worker-1-r1"}),
        # A pod gone from the API before any sync saw it end is made again under its name,
        # while the run's other pods run: its process may meet a Scheduler that has started.
        (lambda made: without(made, "mnist-worker-1"), {"mnist-worker-1"}),
    ],
    ids=["first-sync", "replacement", "made-again-after-vanishing"],
)
def test_only_a_pod_made_while_its_run_has_pods_waits(
    observed: Any, waiting_pods: set[str]
) -> None:
    """docs/restarts.md#rejoining-ps-lite: the wait where ps-lite can race, nowhere else."""
    job = mxjob(replicas=TRAIN)
    made = cluster_after(run(request(job)))
    pods = pods_by_name(run(request(job, observed(made))).children)
    assert {name for name, pod in pods.items() if waits(pod)} == waiting_pods


@pytest.mark.parametrize(
    ("replicas", "mode", "policy", "pod_policy"),
    [
        (TRAIN, "MXTrain", RestartPolicy.ON_FAILURE, "Never"),
        (TRAIN, "MXTrain", RestartPolicy.ALWAYS, "Never"),
        (TRAIN, "MXTrain", RestartPolicy.EXIT_CODE, "Never"),
        ({"Worker": replica(2)}, "MXTrain", RestartPolicy.ON_FAILURE, "OnFailure"),
        ({"Worker": replica(2)}, "MXTrain", RestartPolicy.ALWAYS, "Always"),
        (TUNE, "MXTune", RestartPolicy.ON_FAILURE, "OnFailure"),
    ],
)
def test_the_kubelet_restarts_in_place_only_outside_ps_lite(
    replicas: dict[str, Any], mode: str, policy: RestartPolicy, pod_policy: str
) -> None:
    assert pod_restart_policy(spec_of(replicas, mode), policy) == pod_policy


def worker(state: Any = running) -> dict[str, Any]:
    pods = pods_by_name(cluster_after(run(request(mxjob(replicas=TRAIN)))))
    pod: dict[str, Any] = state(pods["mnist-worker-1"])
    return pod


@pytest.mark.parametrize(
    ("seconds_after_deadline", "lost"),
    [(-10, False), (0, False), (14, False), (15, True), (600, True)],
)
def test_a_terminating_pod_is_lost_15_s_past_its_grace_period(
    seconds_after_deadline: int, lost: bool
) -> None:
    observed = observe("mnist", worker(lambda p: terminating(running(p), minutes=20)))
    assert observed is not None
    now = T0 + timedelta(minutes=20, seconds=seconds_after_deadline)
    settled = observed.settled(now)
    assert settled.lost is lost
    assert settled.phase is (PodPhase.FAILED if lost else PodPhase.RUNNING)


def test_a_finished_pod_is_never_lost() -> None:
    pod = worker(lambda p: terminating(terminated(p, 0, minutes=20), minutes=20))
    observed = observe("mnist", pod)
    assert observed is not None
    assert observed.settled(T0 + timedelta(days=1)).phase is PodPhase.SUCCEEDED


def with_wait(pod: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """The pod with its rejoin wait in `state`."""
    pod["status"]["initContainerStatuses"] = [{"name": "mxjob-rejoin-wait", "state": state}]
    return pod


@pytest.mark.parametrize(
    ("pod", "failed"),
    [
        (
            worker(
                lambda p: with_wait(
                    terminated(p, None),
                    {
                        "terminated": {
                            "exitCode": 128,
                            "reason": "StartError",
                            "message": 'exec: "sleep": executable file not found in $PATH',
                        }
                    },
                )
            ),
            'StartError: exec: "sleep": executable file not found in $PATH',
        ),
        (
            worker(lambda p: with_wait(terminated(p, None), {"terminated": {"exitCode": 2}})),
            "exit code 2",
        ),
        (worker(lambda p: with_wait(running(p), {"terminated": {"exitCode": 0}})), None),
        (worker(running), None),
    ],
)
def test_a_rejoin_wait_that_could_not_run(pod: dict[str, Any], failed: str | None) -> None:
    observed = observe("mnist", pod)
    assert observed is not None
    assert observed.wait_failed == failed


@pytest.mark.parametrize(
    ("pod", "blocked"),
    [
        (
            worker(lambda p: waiting(p, "ImagePullBackOff", 'Back-off pulling image "x"')),
            'ImagePullBackOff: Back-off pulling image "x"',
        ),
        (worker(lambda p: waiting(p, "ErrImageNeverPull", "")), "ErrImageNeverPull"),
        # The wait runs the same image first: an image that cannot be pulled shows there.
        (
            worker(
                lambda p: with_wait(
                    waiting(p, "PodInitializing", ""),
                    {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
                )
            ),
            "ErrImagePull: not found",
        ),
        (worker(lambda p: waiting(p, "ContainerCreating", "")), None),
        (
            worker(lambda p: unschedulable(p, "0/1 nodes are available.")),
            "Unschedulable: 0/1 nodes are available.",
        ),
        # At most 200 bytes of UTF-8, `…` (3 bytes) included, as every quoted pod's words.
        (worker(lambda p: unschedulable(p, "x" * 500)), "Unschedulable: " + "x" * 197 + "…"),
        (worker(running), None),
        (worker(lambda p: disrupted(running(p))), None),
    ],
)
def test_why_a_pod_cannot_start(pod: dict[str, Any], blocked: str | None) -> None:
    observed = observe("mnist", pod)
    assert observed is not None
    assert observed.blocked == blocked


@pytest.mark.parametrize(
    ("resources", "declared"),
    [
        (None, None),
        ({}, None),
        ({"limits": {"nvidia.com/gpu": 1}}, None),
        (
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        ),
        (
            {"limits": {"cpu": 2, "nvidia.com/gpu": 1, "ephemeral-storage": "1Gi"}},
            {"limits": {"cpu": 2, "ephemeral-storage": "1Gi"}},
        ),
    ],
    ids=["none", "empty", "a GPU alone", "cpu and memory", "no GPU copied"],
)
def test_the_rejoin_wait_declares_the_mxnet_containers_cpu_memory_and_storage(
    resources: dict[str, Any] | None, declared: dict[str, Any] | None
) -> None:
    """What a ResourceQuota counts, as the mxnet container declares it: admitted wherever that
    container is, at no cost to the pod (docs/restarts.md#rejoining-ps-lite); a device the wait
    does not use is not asked for."""
    extra = {} if resources is None else {"resources": resources}
    spec = spec_of({**TRAIN, "Worker": replica(2, "ExitCode", **extra)})
    wait = wait_container(spec, ReplicaType.WORKER)
    assert wait is not None and wait.get("resources") == declared

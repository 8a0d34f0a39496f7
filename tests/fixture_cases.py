"""The fixture cases: each builds a sync request by walking a job through a real lifecycle.

`python -m tests.fixture_cases` writes `tests/fixtures/<case>/request.json` and records the
hook's answer as `response.json`; review the diff of every recorded response before committing.
`tests/test_fixtures.py` compares the hook's answer with the recorded one, whole.
"""

import copy
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.builders import (
    CONTROLLER,
    NOW,
    at,
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

FIXTURES = Path(__file__).parent / "fixtures"
Case = Callable[[], tuple[dict[str, Any], datetime]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def first_cluster(
    job: dict[str, Any], controller: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The children a cluster holds after the hook's first sync of `job`."""
    return cluster_after(run(request(job, controller=controller)))


def status_after(
    job: dict[str, Any], children: list[dict[str, Any]], now: datetime = NOW
) -> dict[str, Any]:
    """The status the hook would have written for this state (what the next sync observes)."""
    return run(request(job, children), now).status


def with_states(
    children: list[dict[str, Any]], **states: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Apply a state function to named pods (`mnist_worker_0=running`); `_` in keys is `-`."""
    named = {k.replace("_", "-"): fn for k, fn in states.items()}
    return [
        named[c["metadata"]["name"]](c)
        if c["kind"] == "Pod" and c["metadata"]["name"] in named
        else c
        for c in children
    ]


def all_pods(
    children: list[dict[str, Any]], fn: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    return [fn(c) if c["kind"] == "Pod" else c for c in children]


# --- docs/environment.md, docs/status.md: a distributed MXTrain job through its life --------------


@case
def dist_first_sync() -> tuple[dict[str, Any], datetime]:
    """1 Scheduler, 2 Servers, 3 Workers, seen for the first time: every child is created."""
    return request(mxjob()), NOW


@case
def dist_all_running() -> tuple[dict[str, Any], datetime]:
    job = mxjob()
    children = all_pods(first_cluster(job), running)
    return request(mxjob(status=status_after(job, first_cluster(job))), children), NOW


def _dist_running() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = mxjob()
    children = all_pods(first_cluster(job), running)
    return mxjob(status=status_after(job, children)), children


@case
def dist_succeeded() -> tuple[dict[str, Any], datetime]:
    """Scheduler and Workers exit 0; Servers still run: the job has succeeded."""
    job, children = _dist_running()
    done = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(
        children,
        mnist_scheduler_0=done,
        mnist_worker_0=done,
        mnist_worker_1=done,
        mnist_worker_2=done,
    )
    return request(job, children), NOW


@case
def dist_succeeded_cleanup_running() -> tuple[dict[str, Any], datetime]:
    """The parent status shows Succeeded: cleanPodPolicy Running removes the running Servers."""
    job, children = _dist_running()
    done = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(
        children,
        mnist_scheduler_0=done,
        mnist_worker_0=done,
        mnist_worker_1=done,
        mnist_worker_2=done,
    )
    response = run(request(job, children))
    children = children + cluster_after(response)[-1:]
    return request(mxjob(status=response.status), children), NOW


@case
def all_workers_succeeded() -> tuple[dict[str, Any], datetime]:
    """successPolicy AllWorkers: every Worker exited 0, Scheduler and Servers still run:
    Succeeded (the BytePS Scheduler may never exit); cleanup follows once the status shows it."""
    job = mxjob(successPolicy="AllWorkers")
    children = all_pods(first_cluster(job), running)
    job = mxjob(successPolicy="AllWorkers", status=status_after(job, children))
    done = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(children, mnist_worker_0=done, mnist_worker_1=done, mnist_worker_2=done)
    return request(job, children), NOW


@case
def invalid_success_policy() -> tuple[dict[str, Any], datetime]:
    """An unknown successPolicy is an invalid spec naming the field, not silently ignored."""
    return request(mxjob(successPolicy="AllServers")), NOW


def _exitcode_running() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A running 1/2/3 job whose Workers have restartPolicy ExitCode, status written."""
    replicas = {"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3, "ExitCode")}
    children = all_pods(first_cluster(mxjob(replicas=replicas)), running)
    return mxjob(
        replicas=replicas, status=status_after(mxjob(replicas=replicas), children)
    ), children


@case
def exitcode_worker_killed_137() -> tuple[dict[str, Any], datetime]:
    """ExitCode policy, a Worker killed (137): a replacement pod `-r1`, Restarting=True."""
    job, children = _exitcode_running()
    children = with_states(children, mnist_worker_1=lambda p: terminated(p, 137, minutes=20))
    return request(job, children), NOW


@case
def exitcode_replacement_running() -> tuple[dict[str, Any], datetime]:
    """The replacement of the killed Worker runs: Running again, restarts 1, failed pod kept."""
    body, now = exitcode_worker_killed_137()
    response = run(body, now)
    children = [c for group in body["children"].values() for c in group.values()]
    replacement = pods_by_name(cluster_after(response, minutes=21))["mnist-worker-1-r1"]
    children.append(running(replacement, minutes=22))
    parent = copy.deepcopy(body["parent"])
    parent["status"] = response.status
    return request(parent, children), NOW


@case
def exitcode_worker_exit_1() -> tuple[dict[str, Any], datetime]:
    """ExitCode policy, a Worker exits 1 (permanent): Failed, the message names replica and code."""
    job, children = _exitcode_running()
    children = with_states(children, mnist_worker_2=lambda p: terminated(p, 1, minutes=15))
    return request(job, children), NOW


@case
def never_worker_failure() -> tuple[dict[str, Any], datetime]:
    """Never policy: even a retryable exit (143) fails the job."""
    job, children = _dist_running()
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 143, minutes=15))
    return request(job, children), NOW


@case
def onfailure_backoff_limit() -> tuple[dict[str, Any], datetime]:
    """OnFailure restarts in place; 3 restarts exceed backoffLimit 2: BackoffLimitExceeded."""
    replicas = {"Worker": replica(2, "OnFailure")}
    job = mxjob(replicas=replicas, run_policy={"backoffLimit": 2})
    children = all_pods(first_cluster(job), running)
    job = mxjob(
        replicas=replicas, run_policy={"backoffLimit": 2}, status=status_after(job, children)
    )
    children = with_states(
        children,
        mnist_worker_0=lambda p: running(p, minutes=9, restarts=2),
        mnist_worker_1=lambda p: running(p, minutes=8, restarts=1),
    )
    return request(job, children), NOW


@case
def evicted_worker_replaced() -> tuple[dict[str, Any], datetime]:
    """ExitCode policy, a Worker evicted (no exit code): retryable, replaced."""
    replicas = {"Worker": replica(2, "ExitCode")}
    job = mxjob(replicas=replicas, run_policy={"backoffLimit": 3})
    children = all_pods(first_cluster(job), running)
    job = mxjob(
        replicas=replicas, run_policy={"backoffLimit": 3}, status=status_after(job, children)
    )
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, None, reason="Evicted"))
    return request(job, children), NOW


@case
def single_worker() -> tuple[dict[str, Any], datetime]:
    """One Worker and nothing else: no Scheduler, DMLC_PS_ROOT_URI empty, port 0."""
    return request(mxjob(replicas={"Worker": replica(1)})), NOW


@case
def four_workers_no_scheduler_succeeded() -> tuple[dict[str, Any], datetime]:
    """Worker-only job with 4 Workers: succeeded once every Worker succeeded."""
    job = mxjob(replicas={"Worker": replica(4)})
    children = all_pods(first_cluster(job), running)
    job = mxjob(replicas={"Worker": replica(4)}, status=status_after(job, children))
    children = all_pods(children, lambda p: terminated(p, 0, minutes=40))
    return request(job, children), NOW


TUNE_REPLICAS = {
    "TunerTracker": replica(1),
    "TunerServer": replica(2),
    "Tuner": replica(1),
}


def _tune_job(**extra: Any) -> dict[str, Any]:
    replicas = copy.deepcopy(TUNE_REPLICAS)
    replicas["TunerServer"]["template"]["metadata"] = {
        "annotations": {"tuner-server-key": "gpu-v100"}
    }
    return mxjob(name="autotvm", replicas=replicas, mode="MXTune", **extra)


@case
def tune_created() -> tuple[dict[str, Any], datetime]:
    """MXTune: TunerTracker, 2 TunerServers, Tuner; `labels` carries tuner-server-key."""
    return request(_tune_job()), NOW


@case
def tune_succeeded() -> tuple[dict[str, Any], datetime]:
    """MXTune succeeds when the Tuner succeeds."""
    job = _tune_job()
    children = all_pods(first_cluster(job), running)
    job = _tune_job(status=status_after(job, children))
    children = with_states(children, autotvm_tuner_0=lambda p: terminated(p, 0, minutes=50))
    return request(job, children), NOW


@case
def byteps_worker_ids() -> tuple[dict[str, Any], datetime]:
    """A BytePS job: each Worker gets DMLC_WORKER_ID; user env is kept after ours."""
    bps = "bytepsimage/mxnet"
    env = [{"name": "BYTEPS_LOG_LEVEL", "value": "INFO"}, {"name": "DMLC_ROLE", "value": "bogus"}]
    replicas = {
        "Scheduler": replica(1, image=bps),
        "Server": replica(1, image=bps),
        "Worker": replica(2, image=bps, env=env, command=["bpslaunch"]),
    }
    return request(mxjob(name="byteps", replicas=replicas)), NOW


# --- docs/api.md: invalid specs ---------------------------------------------------------------


@case
def invalid_no_mxnet_container() -> tuple[dict[str, Any], datetime]:
    replicas = {
        "Worker": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}},
        }
    }
    return request(mxjob(replicas=replicas)), NOW


@case
def invalid_two_schedulers() -> tuple[dict[str, Any], datetime]:
    return request(mxjob(replicas={"Scheduler": replica(2), "Worker": replica(1)})), NOW


@case
def invalid_server_without_scheduler() -> tuple[dict[str, Any], datetime]:
    return request(mxjob(replicas={"Server": replica(1), "Worker": replica(1)})), NOW


@case
def invalid_name_too_long() -> tuple[dict[str, Any], datetime]:
    """ExitCode can replace a Worker: `-r<attempt>` is reserved, 50 characters are too many."""
    replicas = {"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3, "ExitCode")}
    name = "a-very-long-training-job-name-for-the-imagenet-run"
    return request(mxjob(name=name, replicas=replicas)), NOW


@case
def invalid_spec_keeps_running_pods() -> tuple[dict[str, Any], datetime]:
    """A running job edited into an invalid spec: Failed, and nothing running is deleted."""
    job, children = _dist_running()
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    return request(job, children), NOW


# --- docs/http.md, docs/metacontroller.md: protocol details ---------------------------------------


@case
def hook_v2_request() -> tuple[dict[str, Any], datetime]:
    """Hook v2 keys children by namespace/name; the answer is the same as for v1."""
    job, children = _dist_running()
    return request(job, children, v2=True), NOW


@case
def terminating_pods() -> tuple[dict[str, Any], datetime]:
    """A deleted, still-terminating Worker is neither active nor re-created under its name."""
    job, children = _dist_running()
    children = with_states(children, mnist_worker_2=terminating)
    return request(job, children), NOW


@case
def lowercase_replica_keys() -> tuple[dict[str, Any], datetime]:
    """Replica keys match case-insensitively (`worker` == `Worker`)."""
    return request(mxjob(replicas={"scheduler": replica(1), "worker": replica(2)})), NOW


# --- docs/run-policy.md: run policy ---------------------------------------------------------------


def _finished_job(
    run_policy: dict[str, Any], exit_code: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A 1 Scheduler / 1 Server / 2 Worker job whose Workers ended with `exit_code`, and
    whose parent status already shows the decision (cleanup may proceed)."""
    replicas = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
    job = mxjob(replicas=replicas, run_policy=run_policy)
    children = all_pods(first_cluster(job), running)
    end = lambda pod: terminated(pod, exit_code, minutes=30)  # noqa: E731
    children = with_states(children, mnist_scheduler_0=end, mnist_worker_0=end, mnist_worker_1=end)
    decided = run(request(mxjob(replicas=replicas, run_policy=run_policy), children))
    children += [c for c in cluster_after(decided) if c["metadata"]["name"].endswith("-result")]
    return mxjob(replicas=replicas, run_policy=run_policy, status=decided.status), children


@case
def cleanup_all_after_success() -> tuple[dict[str, Any], datetime]:
    """cleanPodPolicy All: every pod and Service goes; ConfigMaps (and the record) stay."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 0)
    return request(job, children), NOW


@case
def cleanup_none_after_failure() -> tuple[dict[str, Any], datetime]:
    """cleanPodPolicy None: everything stays, the running Server too."""
    job, children = _finished_job({"cleanPodPolicy": "None"}, 1)
    return request(job, children), NOW


@case
def cleanup_waits_for_parent_status() -> tuple[dict[str, Any], datetime]:
    """Finished, but the parent status is still old: the decision is recorded, nothing deleted."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 0)
    del job["status"]
    children = [c for c in children if not c["metadata"]["name"].endswith("-result")]
    return request(job, children), NOW


@case
def stale_cache_pods_gone_parent_old() -> tuple[dict[str, Any], datetime]:
    """The dangerous case: cleanup removed the pods, the parent cache still shows Running.
    The result record restores the final status and nothing is created again."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 0)
    running_status = run(
        request(
            mxjob(replicas=job["spec"]["mxReplicaSpecs"]),
            all_pods(
                [
                    c
                    for c in children
                    if c["kind"] != "ConfigMap" or "config" in c["metadata"]["name"]
                ],
                running,
            ),
        )
    ).status
    job["status"] = running_status
    children = [c for c in children if c["kind"] == "ConfigMap"]
    return request(job, children), NOW


@case
def deadline_running() -> tuple[dict[str, Any], datetime]:
    """activeDeadlineSeconds 7200 from a start 30 s after T0: resync when it runs out."""
    job = mxjob(run_policy={"activeDeadlineSeconds": 7200})
    children = all_pods(first_cluster(job), running)
    return request(mxjob(run_policy={"activeDeadlineSeconds": 7200}), children), NOW


@case
def deadline_exceeded() -> tuple[dict[str, Any], datetime]:
    """Past startTime + 600 s: Failed DeadlineExceeded at exactly that moment; pods kept until
    the parent status shows it."""
    job = mxjob(run_policy={"activeDeadlineSeconds": 600})
    children = all_pods(first_cluster(job), running)
    return request(mxjob(run_policy={"activeDeadlineSeconds": 600}), children), NOW


@case
def deadline_exceeded_config_gone() -> tuple[dict[str, Any], datetime]:
    """Past the deadline with the job's config ConfigMap gone (deleted by hand): the answer that
    records DeadlineExceeded lists it again, as the cleanup after it does, so that the next
    sync only deletes (found by `make fuzz`: it was not a fixpoint)."""
    job = mxjob(replicas={"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 600})
    children = [c for c in all_pods(first_cluster(job), running) if c["kind"] != "ConfigMap"]
    return request(job, children), NOW


@case
def deadline_exceeded_cleanup() -> tuple[dict[str, Any], datetime]:
    """The parent status shows DeadlineExceeded: every pod goes, whatever cleanPodPolicy says."""
    policy = {"activeDeadlineSeconds": 600, "cleanPodPolicy": "None"}
    children = all_pods(first_cluster(mxjob(run_policy=policy)), running)
    decided = run(request(mxjob(run_policy=policy), children))
    children += [c for c in cluster_after(decided) if c["metadata"]["name"].endswith("-result")]
    return request(mxjob(run_policy=policy, status=decided.status), children), NOW


@case
def suspend_running_job() -> tuple[dict[str, Any], datetime]:
    """suspend: true on a running job: no pods, no Services; Suspended, Running=False."""
    job, children = _dist_running()
    job["spec"]["runPolicy"] = {"suspend": True}
    job["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "time": at(45)},
        {
            "manager": "metacontroller",
            "operation": "Update",
            "time": at(46),
            "subresource": "status",
        },
    ]
    return request(job, children), NOW


@case
def resume_suspended_job() -> tuple[dict[str, Any], datetime]:
    """suspend: false again: Suspended=False (MXJobResumed), pods come back, startTime reset."""
    body, now = suspend_running_job()
    suspended = run(body, now)
    job = copy.deepcopy(body["parent"])
    job["spec"]["runPolicy"] = {"suspend": False}
    job["metadata"]["managedFields"][0]["time"] = at(55)
    job["status"] = suspended.status
    return request(job, cluster_after(suspended)), now


@case
def exitcode_backoff_after_replacements() -> tuple[dict[str, Any], datetime]:
    """backoffLimit 1 counts replacements: the replacement is killed again, the job fails."""
    replicas = {"Worker": replica(2, "ExitCode")}
    policy = {"backoffLimit": 1}
    job = mxjob(replicas=replicas, run_policy=policy)
    children = all_pods(first_cluster(job), running)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 137, minutes=5))
    first = run(request(job, children))
    replacement = pods_by_name(cluster_after(first, minutes=6))["mnist-worker-0-r1"]
    children.append(terminated(replacement, 143, minutes=9, started=7))
    return request(mxjob(replicas=replicas, run_policy=policy, status=first.status), children), NOW


@case
def inline_run_policy_layout() -> tuple[dict[str, Any], datetime]:
    """The kubeflow/mxnet-operator v1 layout: run-policy fields directly under spec."""
    job = mxjob(
        replicas={"Worker": replica(1, "ExitCode")},
        cleanPodPolicy="All",
        backoffLimit=0,
        activeDeadlineSeconds=300,
    )
    children = all_pods(first_cluster(job), running)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 137, minutes=3))
    return request(job, children), NOW


# --- docs/restarts.md: whole-job restarts ---------------------------------------------------------

WHOLE = {
    "Scheduler": replica(1, "ExitCode"),
    "Server": replica(1, "ExitCode"),
    "Worker": replica(2, "ExitCode"),
}


def _whole_running(
    replicas: dict[str, Any] | None = None, run_policy: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A running 1/1/2 job, status written, every replica restartable."""
    replicas = replicas or WHOLE
    job = mxjob(replicas=replicas, run_policy=run_policy)
    children = all_pods(first_cluster(job), running)
    return mxjob(replicas=replicas, run_policy=run_policy, status=status_after(job, children)), (
        children
    )


def _killed_server() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job, children = _whole_running()
    return job, with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))


@case
def whole_job_server_killed_137() -> tuple[dict[str, Any], datetime]:
    """A Server killed (137) under ExitCode: ps-lite cannot replace it alone. The run record
    `mnist-mxjob-run-1` is created, every pod still listed, Restarting names the whole job."""
    job, children = _killed_server()
    return request(job, children), NOW


def _recorded(stale: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The record of the Server's restart is observed; the parent status shows the decision,
    or (stale) still the Running status from before it."""
    job, children = _killed_server()
    decided = run(request(job, children))
    record = [
        c for c in cluster_after(decided, minutes=21) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    if not stale:  # the status written by the sync that observed the record
        job = mxjob(replicas=WHOLE, status=status_after(job, children + record))
    return job, children + record


@case
def whole_job_waits_for_parent_status() -> tuple[dict[str, Any], datetime]:
    """Record observed, parent status still stale (Running): nothing is deleted yet."""
    job, children = _recorded(stale=True)
    return request(job, children), NOW


@case
def whole_job_deletes_the_run() -> tuple[dict[str, Any], datetime]:
    """Record observed and the parent status shows the restart: every pod of run 0 goes
    (running ones too); no new pod while any of them is observed."""
    job, children = _recorded(stale=False)
    return request(job, children), NOW


@case
def whole_job_old_pods_terminating() -> tuple[dict[str, Any], datetime]:
    """Run 0's pods still terminate (deletionTimestamp): still no pod of run 1."""
    job, children = _recorded(stale=False)
    children = [terminating(c, minutes=22) if c["kind"] == "Pod" else c for c in children]
    children = [c for c in children if c["metadata"]["name"] != "mnist-server-0"]
    return request(job, children), NOW


@case
def whole_job_stale_parent_pods_gone() -> tuple[dict[str, Any], datetime]:
    """Run 0 is gone and the parent status is stale (Running, no restart): the record alone says
    run 1 and one restart; nothing of run 0 comes back, and run 1 waits for the parent status."""
    job, children = _recorded(stale=True)
    children = [c for c in children if c["kind"] != "Pod"]
    return request(job, children), NOW


@case
def whole_job_creates_next_run() -> tuple[dict[str, Any], datetime]:
    """Run 0 is gone and the parent status shows it: every replica of run 1 is created, names
    `-r1`, annotations run 1 and restarts-before (Server 1), Services unchanged."""
    body, now = whole_job_stale_parent_pods_gone()
    children = [c for group in body["children"].values() for c in group.values()]
    job = mxjob(replicas=WHOLE, status=status_after(body["parent"], children))
    return request(job, children), now


@case
def whole_job_next_run_running() -> tuple[dict[str, Any], datetime]:
    """Run 1 runs: Running again, Server restarts 1, the record kept, no run-0 pod."""
    body, now = whole_job_creates_next_run()
    response = run(body, now)
    children = [c for c in cluster_after(response, minutes=25)]
    children = all_pods(children, lambda p: running(p, minutes=26))
    parent = copy.deepcopy(body["parent"])
    parent["status"] = response.status
    return request(parent, children), now


@case
def whole_job_scheduler_restarted_in_place() -> tuple[dict[str, Any], datetime]:
    """Scheduler under OnFailure restarted in place by the kubelet (restartCount 1): the whole
    job restarts; the in-place restart is the one restart counted."""
    replicas = {**WHOLE, "Scheduler": replica(1, "OnFailure")}
    job, children = _whole_running(replicas)
    children = with_states(children, mnist_scheduler_0=lambda p: running(p, minutes=15, restarts=1))
    return request(job, children), NOW


@case
def whole_job_evicted_server() -> tuple[dict[str, Any], datetime]:
    """A Server preempted (DisruptionTarget, failed without exit code): whole job restarts,
    and the disruption is not counted toward backoffLimit."""
    job, children = _whole_running(run_policy={"backoffLimit": 0})
    children = with_states(
        children,
        mnist_server_0=lambda p: disrupted(terminated(p, None, minutes=20, reason="Preempted")),
    )
    return request(job, children), NOW


@case
def whole_job_backoff_exceeded() -> tuple[dict[str, Any], datetime]:
    """backoffLimit 1: run 1 already counts one restart; its Server killed again is the second:
    BackoffLimitExceeded, no run 2."""
    policy = {"backoffLimit": 1}
    job, children = _whole_running(run_policy=policy)
    children = with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))
    decided = run(request(job, children))
    record = [
        c for c in cluster_after(decided, minutes=21) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    job = mxjob(replicas=WHOLE, run_policy=policy, status=status_after(job, record))
    created_run = run(request(job, record))
    run1 = all_pods(cluster_after(created_run, minutes=25), lambda p: running(p, minutes=26))
    run1 = with_states(run1, mnist_server_0_r1=lambda p: terminated(p, 137, minutes=40))
    job = mxjob(replicas=WHOLE, run_policy=policy, status=created_run.status)
    return request(job, run1), NOW


def _gang_controller(api_version: str) -> dict[str, Any]:
    controller = copy.deepcopy(CONTROLLER)
    controller["spec"]["childResources"].append(
        {"apiVersion": api_version, "resource": "podgroups"}
    )
    return controller


VOLCANO = _gang_controller("scheduling.volcano.sh/v1beta1")
PLUGINS = _gang_controller("scheduling.x-k8s.io/v1alpha1")
GANG_POLICY = {
    "schedulingPolicy": {
        "minAvailable": 4,
        "queue": "training",
        "priorityClass": "high",
        "minResources": {"cpu": "4", "memory": "8Gi"},
        "scheduleTimeoutSeconds": 120,
    }
}


@case
def volcano_podgroup_pending() -> tuple[dict[str, Any], datetime]:
    """Volcano: the PodGroup is created first; no pod while it is Pending."""
    job = mxjob(run_policy=GANG_POLICY)
    first = run(request(job, controller=VOLCANO))
    children = cluster_after(first)
    for child in children:
        if child["kind"] == "PodGroup":
            child["status"] = {"phase": "Pending"}
    return request(job, children, VOLCANO), NOW


@case
def volcano_podgroup_inqueue() -> tuple[dict[str, Any], datetime]:
    """Volcano: once the PodGroup is Inqueue the pods come, with schedulerName volcano."""
    body, now = volcano_podgroup_pending()
    for group in body["children"].values():
        for child in group.values():
            if child["kind"] == "PodGroup":
                child["status"] = {"phase": "Inqueue"}
    return body, now


@case
def scheduler_plugins_podgroup() -> tuple[dict[str, Any], datetime]:
    """scheduler-plugins: a PodGroup with minMember and scheduleTimeoutSeconds; pods labelled."""
    return request(mxjob(run_policy=GANG_POLICY), controller=PLUGINS), NOW


def write() -> None:
    """Write every case's request and record the hook's response."""
    FIXTURES.mkdir(exist_ok=True)
    for name, build in CASES.items():
        body, now = build()
        folder = FIXTURES / name
        folder.mkdir(exist_ok=True)
        (folder / "request.json").write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
        (folder / "now.txt").write_text(now.strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")
        response = run(body, now).to_json()
        (folder / "response.json").write_text(json.dumps(response, indent=2, sort_keys=True) + "\n")
        print(f"wrote {folder}", file=sys.stderr)


if __name__ == "__main__":
    write()

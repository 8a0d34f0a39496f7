"""The golden cases: each builds the sync request of one moment in a job's real lifecycle.

A case is a function decorated with `@case`, named after what it shows; the first line of its
docstring is its reason, a sentence a reviewer reads in the case's digest. `python -m
tests.fixture_cases` writes every case to `tests/fixtures/<case>/` (tests/golden.py) with the
hook's answer recorded; review the diff of each `digest.txt`, then of the responses, before
committing. `tests/test_fixtures.py` compares the hook's answer with the recorded one, whole.
"""

import copy
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hooks.core.restart.runs import InPlaceOrder
from hooks.core.status import JobStatus
from tests import builders, golden
from tests.builders import (
    CONTROLLER,
    NOW,
    T0,
    at,
    cluster_after,
    created,
    disrupted,
    mxjob,
    oom_killed,
    pods_by_name,
    replica,
    reporting,
    restarted_in_place,
    run,
    running,
    saying,
    terminated,
    terminating,
    unschedulable,
    waiting,
)
from testsupport.jobs import as_sent
from testsupport.observed import held_in_place, released_in_place

Json = dict[str, Any]
Build = Callable[[], Json]


@dataclass(frozen=True)
class Case:
    """One golden case: why it exists, how its request is built, and when it is synced (a case
    synced at another moment than NOW is registered with its own `now`)."""

    name: str
    reason: str
    build: Build
    now: datetime = NOW


CASES: dict[str, Case] = {}


def reason_of(build: Build) -> str:
    """The first line of a case's docstring; empty when it has none."""
    return (build.__doc__ or "").strip().split("\n", 1)[0].strip()


def case(build: Build) -> Build:
    """Register a case under its function's name, `_` written `-`."""
    name = build.__name__.replace("_", "-")
    CASES[name] = Case(name, reason_of(build), build)
    return build


def case_at(minutes: float) -> Callable[[Build], Build]:
    """Register a case synced `minutes` after T0 rather than at NOW."""

    def register(build: Build) -> Build:
        name = build.__name__.replace("_", "-")
        CASES[name] = Case(name, reason_of(build), build, T0 + timedelta(minutes=minutes))
        return build

    return register


def request(
    parent: Json, children: list[Json] | None = None, controller: Json | None = None
) -> Json:
    """A sync request as the CompositeController of metacontroller/base asks for it: hook v2,
    children keyed by `namespace/name`."""
    return builders.request(parent, children, controller, v2=True)


def first_cluster(job: Json, controller: Json | None = None) -> list[Json]:
    """The children a cluster holds after the hook's first sync of `job`."""
    return cluster_after(run(request(job, controller=controller)))


def status_after(job: Json, children: list[Json]) -> JobStatus:
    """The status the hook would have written for this state (what the next sync observes)."""
    return run(request(job, children)).status


def with_states(children: list[Json], **states: Callable[[Json], Json]) -> list[Json]:
    """Apply a state function to named pods (`mnist_worker_0=running`); `_` in keys is `-`."""
    named = {k.replace("_", "-"): fn for k, fn in states.items()}
    return [
        named[c["metadata"]["name"]](c)
        if c["kind"] == "Pod" and c["metadata"]["name"] in named
        else c
        for c in children
    ]


def all_pods(children: list[Json], fn: Callable[[Json], Json]) -> list[Json]:
    return [fn(c) if c["kind"] == "Pod" else c for c in children]


# --- docs/environment.md, docs/status.md: a distributed MXTrain job through its life --------------


@case
def dist_first_sync() -> Json:
    """1 Scheduler, 2 Servers, 3 Workers, seen for the first time: every child is created."""
    return request(mxjob())


@case
def dist_all_running() -> Json:
    """Every pod of the 1/2/3 job runs: Running, the counts show 6 active, nothing created."""
    job = mxjob()
    children = all_pods(first_cluster(job), running)
    return request(mxjob(status=status_after(job, first_cluster(job))), children)


#: The smallest distributed job: what a case needs when the number of replicas is not its point.
SMALL = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}


def _running(**spec: Any) -> tuple[Json, list[Json]]:
    """The job `mxjob(**spec)` with every pod running and the status of that written."""
    job = mxjob(**spec)
    children = all_pods(first_cluster(job), running)
    return mxjob(**spec, status=status_after(job, children)), children


@case
def dist_succeeded() -> Json:
    """Scheduler and Workers exit 0; Servers still run: the job has succeeded."""
    job, children = _running()
    done = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(
        children,
        mnist_scheduler_0=done,
        mnist_worker_0=done,
        mnist_worker_1=done,
        mnist_worker_2=done,
    )
    return request(job, children)


@case
def dist_succeeded_cleanup_running() -> Json:
    """The parent status shows Succeeded: cleanPodPolicy Running removes the running Servers."""
    job, children = _running()
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
    return request(mxjob(status=response.status), children)


@case
def all_workers_succeeded() -> Json:
    """successPolicy AllWorkers: every Worker exited 0 while Scheduler and Server run: Succeeded.

    The BytePS Scheduler may never exit; cleanup follows once the parent status shows it."""
    job, children = _running(replicas=SMALL, successPolicy="AllWorkers")
    done = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(children, mnist_worker_0=done, mnist_worker_1=done)
    return request(job, children)


@case
def invalid_success_policy() -> Json:
    """An unknown successPolicy is an invalid spec naming the field, not silently ignored."""
    return request(mxjob(successPolicy="AllServers"))


#: SMALL with restartPolicy ExitCode for the Workers.
EXITCODE_WORKERS = {**SMALL, "Worker": replica(2, "ExitCode")}


@case
def exitcode_worker_killed_137() -> Json:
    """ExitCode policy, a Worker killed (137): a replacement pod `-r1`, Restarting=True."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(children, mnist_worker_1=lambda p: terminated(p, 137, minutes=20))
    return request(job, children)


@case
def rejoin_wait_cannot_run() -> Json:
    """A Worker whose rejoin wait cannot run (no `sleep` in the image) fails the job at once.

    Every replacement would fail the same way, so ExitCode does not retry it."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(children, mnist_worker_1=_wait_not_found)
    return request(job, children)


def _wait_not_found(
    pod: Json,
    reason: str = "StartError",
    message: str = 'exec: "sleep": executable file not found in $PATH',
) -> Json:
    failed = terminated(pod, None, minutes=2)
    failed["status"]["initContainerStatuses"] = [
        {
            "name": "mxjob-rejoin-wait",
            "state": {
                "terminated": {
                    "exitCode": 128,
                    "reason": reason,
                    "message": message,
                    "finishedAt": at(2),
                }
            },
        }
    ]
    return failed


#: What the job's own image can make its rejoin wait's termination message (the wait runs the
#: mxnet container's image): escape sequences that set the clipboard and move the cursor, a
#: bidirectional override, a bell, line breaks.
HOSTILE_WAIT = (
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[Hsleep: \u202enot found\u202c\x07\n"
    "\x1b[1A\x1b[Kall good\r\ngo on"
)


@case
def rejoin_wait_says_what_a_terminal_would_do() -> Json:
    """The rejoin wait's message, the image's to write, is quoted clean: no escape sequence left.

    Its clipboard and cursor sequences, the bidirectional override and the bell are gone, line
    breaks are spaces; the reason is cleaned as well."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(
        children,
        mnist_worker_1=lambda pod: _wait_not_found(pod, "Start\x1b[31mError", HOSTILE_WAIT),
    )
    return request(job, children)


@case
def oom_killed_worker_replaced() -> Json:
    """ExitCode, a Worker OOM-killed (137, reason OOMKilled): replaced, the message says why."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(
        children, mnist_worker_1=lambda p: _oom_killed(terminated(p, 137, minutes=20))
    )
    return request(job, children)


def _oom_killed(pod: Json) -> Json:
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    return pod


@case
def onfailure_worker_replaced_by_the_hook() -> Json:
    """OnFailure in a ps-lite job: pods are restartPolicy Never, the hook replaces the Worker.

    The kubelet would restart the Worker that exited 1 at once, inside ps-lite's race; the hook
    replaces it after the rejoin wait."""
    replicas = {**SMALL, "Worker": replica(2, "OnFailure")}
    job, children = _running(replicas=replicas)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 1, minutes=20))
    return request(job, children)


@case
def exitcode_replacement_running() -> Json:
    """The replacement of the killed Worker runs: Running again, restarts 1, failed pod kept."""
    return _replacement_running(exitcode_worker_killed_137(), "mnist-worker-1-r1")


def _replacement_running(body: Json, replacement: str) -> Json:
    """The next sync of `body`: the replacement it asked for created and running, the status
    it answered written."""
    response = run(body)
    children = [c for group in body["children"].values() for c in group.values()]
    created = pods_by_name(cluster_after(response, minutes=21))[replacement]
    children.append(running(created, minutes=22))
    parent = copy.deepcopy(body["parent"])
    parent["status"] = response.status
    return request(parent, children)


@case
def exitcode_replacement_pending_stale_parent() -> Json:
    """Replacement pending, parent still Running from before the kill: Restarting at the kill.

    A parent copy older than the last status write stamps the condition afresh; its moment is
    the killed Worker's end, as with the fresh parent, so the Events component tells it once."""
    body = exitcode_worker_killed_137()
    children = [c for group in body["children"].values() for c in group.values()]
    response = run(body)
    children.append(pods_by_name(cluster_after(response, minutes=21))["mnist-worker-1-r1"])
    return request(copy.deepcopy(body["parent"]), children)


@case
def second_worker_failure_restarts_the_whole_job() -> Json:
    """A second Worker failing in a run that replaced one already restarts the whole job.

    MXNet 1.9.1's ps-lite Scheduler takes back one replaced node in its life: the next one
    makes it abort (van.cc: recovery_nodes keeps growing), so a new run brings a new
    Scheduler."""
    body = exitcode_replacement_running()
    children = [c for group in body["children"].values() for c in group.values()]
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 137, minutes=30))
    parent = copy.deepcopy(body["parent"])
    parent["status"] = status_after(parent, children)
    return request(parent, children)


@case
def exitcode_worker_exit_1() -> Json:
    """ExitCode policy, a Worker exits 1 (permanent): Failed, the message names replica and code."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(children, mnist_worker_1=lambda p: terminated(p, 1, minutes=15))
    return request(job, children)


@case
def never_worker_failure() -> Json:
    """Never policy: even a retryable exit (143) fails the job."""
    job, children = _running(replicas=SMALL)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 143, minutes=15))
    return request(job, children)


@case
def onfailure_backoff_limit() -> Json:
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
    return request(job, children)


@case
def evicted_worker_replaced() -> Json:
    """ExitCode policy, a Worker evicted (no exit code): retryable, replaced."""
    replicas = {"Worker": replica(2, "ExitCode")}
    job = mxjob(replicas=replicas, run_policy={"backoffLimit": 3})
    children = all_pods(first_cluster(job), running)
    job = mxjob(
        replicas=replicas, run_policy={"backoffLimit": 3}, status=status_after(job, children)
    )
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, None, reason="Evicted"))
    return request(job, children)


@case
def single_worker() -> Json:
    """One Worker and nothing else: no Scheduler, DMLC_PS_ROOT_URI empty, port 0."""
    return request(mxjob(replicas={"Worker": replica(1)}))


@case
def four_workers_no_scheduler_succeeded() -> Json:
    """Worker-only job with 4 Workers: succeeded once every Worker succeeded."""
    job = mxjob(replicas={"Worker": replica(4)})
    children = all_pods(first_cluster(job), running)
    job = mxjob(replicas={"Worker": replica(4)}, status=status_after(job, children))
    children = all_pods(children, lambda p: terminated(p, 0, minutes=40))
    return request(job, children)


TUNE_REPLICAS = {
    "TunerTracker": replica(1),
    "TunerServer": replica(2),
    "Tuner": replica(1),
}


def _tune_job(**extra: Any) -> Json:
    replicas = copy.deepcopy(TUNE_REPLICAS)
    replicas["TunerServer"]["template"]["metadata"] = {
        "annotations": {"tuner-server-key": "gpu-v100"}
    }
    return mxjob(name="autotvm", replicas=replicas, mode="MXTune", **extra)


@case
def tune_created() -> Json:
    """MXTune: TunerTracker, 2 TunerServers, Tuner; `labels` carries tuner-server-key."""
    return request(_tune_job())


@case
def tune_succeeded() -> Json:
    """MXTune succeeds when the Tuner succeeds."""
    job = _tune_job()
    children = all_pods(first_cluster(job), running)
    job = _tune_job(status=status_after(job, children))
    children = with_states(children, autotvm_tuner_0=lambda p: terminated(p, 0, minutes=50))
    return request(job, children)


@case
def byteps_worker_ids() -> Json:
    """A BytePS job: each Worker gets DMLC_WORKER_ID; user env is kept after ours."""
    bps = "bytepsimage/mxnet"
    env = [{"name": "BYTEPS_LOG_LEVEL", "value": "INFO"}, {"name": "DMLC_ROLE", "value": "bogus"}]
    replicas = {
        "Scheduler": replica(1, image=bps),
        "Server": replica(1, image=bps),
        "Worker": replica(2, image=bps, env=env, command=["bpslaunch"]),
    }
    return request(mxjob(name="byteps", replicas=replicas))


# --- docs/api.md: invalid specs ---------------------------------------------------------------


@case
def invalid_no_mxnet_container() -> Json:
    """No container is named `mxnet`: Failed MXJobInvalidSpec naming the containers' path."""
    replicas = {
        "Worker": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}},
        }
    }
    return request(mxjob(replicas=replicas))


@case
def invalid_two_schedulers() -> Json:
    """Two Schedulers: Failed MXJobInvalidSpec (ps-lite has exactly one), nothing created."""
    return request(mxjob(replicas={"Scheduler": replica(2), "Worker": replica(1)}))


@case
def invalid_server_without_scheduler() -> Json:
    """Servers without a Scheduler: Failed MXJobInvalidSpec, nothing created."""
    return request(mxjob(replicas={"Server": replica(1), "Worker": replica(1)}))


@case
def invalid_name_too_long() -> Json:
    """ExitCode can replace a Worker: `-r<attempt>` is reserved, 50 characters are too many."""
    replicas = {"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3, "ExitCode")}
    name = "a-very-long-training-job-name-for-the-imagenet-run"
    return request(mxjob(name=name, replicas=replicas))


@case
def invalid_spec_keeps_running_pods() -> Json:
    """A running job edited into an invalid spec: Failed, and nothing running is deleted."""
    job, children = _running(replicas=SMALL)
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    return request(job, children)


# --- docs/http.md, docs/metacontroller.md: protocol details ---------------------------------------


@case
def hook_v1_request() -> Json:
    """Hook v1 keys children by name; the answer is the same as for v2."""
    job, children = _running(replicas=SMALL)
    return builders.request(job, children, v2=False)


@case
def terminating_pods() -> Json:
    """ExitCode, a deleted, still-terminating Worker is neither active nor re-created yet.

    Its grace period ends now: the answer asks to be called back when it would count as lost.
    Its replacement waits for its end (docs/restarts.md#rejoining-ps-lite)."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(children, mnist_worker_1=lambda p: terminating(p, minutes=60))
    return request(job, children)


@case
def worker_lost_with_node() -> Json:
    """A Worker still Terminating 15 s past its grace period is lost with its node: replaced.

    The taint-eviction controller marked it DisruptionTarget, so the restart is not counted;
    the replacement gets the next attempt name, beside the pod that never goes away."""
    job, children = _running(replicas=EXITCODE_WORKERS, run_policy={"backoffLimit": 0})
    children = with_states(
        children,
        mnist_worker_1=lambda p: terminating(
            disrupted(p, reason="DeletionByTaintManager"), minutes=30
        ),
    )
    return request(job, children)


@case
def never_worker_deleted() -> Json:
    """Never policy, a Worker removed with `kubectl delete pod`: Failed, saying it was deleted.

    The kubelet's 137 and reason Error alone would suggest it ran out of memory."""
    job, children = _running(replicas=SMALL)
    children = with_states(
        children, mnist_worker_1=lambda p: terminating(terminated(p, 137, minutes=20), 20.5)
    )
    return request(job, children)


@case
def worker_image_pull_backoff() -> Json:
    """A Worker whose image cannot be pulled: the Running message names it and the reason."""
    job, children = _running(replicas=SMALL)
    message = 'Back-off pulling image "mxjob/mxnet:gpu-typo"'
    children = with_states(
        children, mnist_worker_1=lambda p: waiting(p, "ImagePullBackOff", message)
    )
    return request(job, children)


@case
def worker_waiting_says_what_a_terminal_would_do() -> Json:
    """The kubelet's waiting message quoted in the condition is cleaned as a pod's words are.

    A registry's error can carry what the image reference held: escape sequences and a
    zero-width space are dropped, the line break made a space."""
    job, children = _running(replicas=SMALL)
    message = 'Back-off pulling image "mxjob/\x1b[8mmxnet\u200b:gpu"\n\x1b]0;owned\x07 denied'
    children = with_states(
        children, mnist_worker_1=lambda p: waiting(p, "ImagePullBackOff", message)
    )
    return request(job, children)


@case
def unschedulable_job() -> Json:
    """No pod fits a node: Created, its message naming a replica and the scheduler's words."""
    job = mxjob(replicas=SMALL)
    message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    children = all_pods(first_cluster(job), lambda p: unschedulable(p, message))
    return request(mxjob(replicas=SMALL, status=status_after(job, children)), children)


@case
def lowercase_replica_keys() -> Json:
    """Replica keys match case-insensitively (`worker` == `Worker`)."""
    return request(mxjob(replicas={"scheduler": replica(1), "worker": replica(2)}))


# --- docs/run-policy.md: run policy ---------------------------------------------------------------


def _finished_job(
    run_policy: Json, exit_code: int, message: str | None = None
) -> tuple[Json, list[Json]]:
    """A 1 Scheduler / 1 Server / 2 Worker job whose Workers ended with `exit_code` (leaving
    `message`), and whose parent status already shows the decision (cleanup may proceed)."""
    replicas = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
    job = mxjob(replicas=replicas, run_policy=run_policy)
    children = all_pods(first_cluster(job), running)
    end = lambda pod: terminated(pod, exit_code, minutes=30)  # noqa: E731
    if message is not None:
        end = _said(exit_code, message, minutes=30)
    children = with_states(children, mnist_scheduler_0=end, mnist_worker_0=end, mnist_worker_1=end)
    decided = run(request(mxjob(replicas=replicas, run_policy=run_policy), children))
    children += [c for c in cluster_after(decided) if c["metadata"]["name"].endswith("-result")]
    return mxjob(replicas=replicas, run_policy=run_policy, status=decided.status), children


@case
def cleanup_all_after_success() -> Json:
    """cleanPodPolicy All: every pod and Service goes; ConfigMaps (and the record) stay."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 0)
    return request(job, children)


@case
def cleanup_none_after_failure() -> Json:
    """cleanPodPolicy None: everything stays, the running Server too."""
    job, children = _finished_job({"cleanPodPolicy": "None"}, 1)
    return request(job, children)


@case
def cleanup_waits_for_parent_status() -> Json:
    """Finished, but the parent status is still old: the decision is recorded, nothing deleted."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 0)
    del job["status"]
    children = [c for c in children if not c["metadata"]["name"].endswith("-result")]
    return request(job, children)


@case
def stale_cache_pods_gone_parent_old() -> Json:
    """Pods cleaned up, parent cache still Running: the result record restores the status.

    The dangerous case: without the record every pod would be created again."""
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
    return request(job, children)


@case
def deadline_running() -> Json:
    """activeDeadlineSeconds 7200 from a start 30 s after T0: resync when it runs out."""
    job = mxjob(replicas=SMALL, run_policy={"activeDeadlineSeconds": 7200})
    return request(job, all_pods(first_cluster(job), running))


@case
def deadline_exceeded() -> Json:
    """Past startTime + 600 s: Failed DeadlineExceeded at that moment; pods kept for now.

    They go once the parent status shows the decision (deadline-exceeded-cleanup)."""
    job = mxjob(replicas=SMALL, run_policy={"activeDeadlineSeconds": 600})
    return request(job, all_pods(first_cluster(job), running))


@case
def deadline_exceeded_config_gone() -> Json:
    """Past the deadline, the config ConfigMap deleted by hand: DeadlineExceeded makes the result.

    A finished job starts no pod, so its config is not made again, and the cleanup after it
    makes none either: the next sync only deletes (`make fuzz` found a time when one answer made
    it and the next did not)."""
    job = mxjob(replicas={"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 600})
    children = [c for c in all_pods(first_cluster(job), running) if c["kind"] != "ConfigMap"]
    return request(job, children)


@case
def deadline_exceeded_cleanup() -> Json:
    """The parent status shows DeadlineExceeded: every pod goes, whatever cleanPodPolicy says."""
    policy = {"activeDeadlineSeconds": 600, "cleanPodPolicy": "None"}
    children = all_pods(first_cluster(mxjob(replicas=SMALL, run_policy=policy)), running)
    decided = run(request(mxjob(replicas=SMALL, run_policy=policy), children))
    children += [c for c in cluster_after(decided) if c["metadata"]["name"].endswith("-result")]
    return request(mxjob(replicas=SMALL, run_policy=policy, status=decided.status), children)


@case
def suspend_running_job() -> Json:
    """suspend: true on a running job: no pods, no Services; Suspended, Running=False."""
    job, children = _running(replicas=SMALL)
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
    return request(job, children)


@case
def resume_suspended_job() -> Json:
    """suspend: false again: Suspended=False (MXJobResumed), pods come back, startTime reset."""
    body = suspend_running_job()
    suspended = run(body)
    job = copy.deepcopy(body["parent"])
    job["spec"]["runPolicy"] = {"suspend": False}
    job["metadata"]["managedFields"][0]["time"] = at(55)
    job["status"] = suspended.status
    return request(job, cluster_after(suspended))


@case
def exitcode_backoff_after_replacements() -> Json:
    """backoffLimit 1 counts replacements: the replacement is killed again, the job fails."""
    replicas = {"Worker": replica(2, "ExitCode")}
    policy = {"backoffLimit": 1}
    job = mxjob(replicas=replicas, run_policy=policy)
    children = all_pods(first_cluster(job), running)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 137, minutes=5))
    first = run(request(job, children))
    replacement = pods_by_name(cluster_after(first, minutes=6))["mnist-worker-0-r1"]
    children.append(terminated(replacement, 143, minutes=9, started=7))
    return request(mxjob(replicas=replicas, run_policy=policy, status=first.status), children)


@case
def inline_run_policy_layout() -> Json:
    """The kubeflow/mxnet-operator v1 layout: run-policy fields directly under spec."""
    job = mxjob(
        replicas={"Worker": replica(1, "ExitCode")},
        cleanPodPolicy="All",
        backoffLimit=0,
        activeDeadlineSeconds=300,
    )
    children = all_pods(first_cluster(job), running)
    children = with_states(children, mnist_worker_0=lambda p: terminated(p, 137, minutes=3))
    return request(job, children)


# --- docs/restarts.md: whole-job restarts ---------------------------------------------------------

WHOLE = {
    "Scheduler": replica(1, "ExitCode"),
    "Server": replica(1, "ExitCode"),
    "Worker": replica(2, "ExitCode"),
}


def _killed_server() -> tuple[Json, list[Json]]:
    job, children = _running(replicas=WHOLE)
    return job, with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))


@case
def whole_job_server_killed_137() -> Json:
    """A Server killed (137) under ExitCode restarts the whole job: run record 1 comes first.

    ps-lite cannot replace a Server alone. `mnist-mxjob-run-1` is created, every pod still
    listed, Restarting names the whole job."""
    job, children = _killed_server()
    return request(job, children)


def _recorded(*, stale: bool) -> tuple[Json, list[Json]]:
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
def whole_job_waits_for_parent_status() -> Json:
    """Record observed, parent status still stale (Running): nothing is deleted yet."""
    job, children = _recorded(stale=True)
    return request(job, children)


@case
def whole_job_deletes_the_run() -> Json:
    """Record observed, parent status shows the restart: every pod of run 0 goes, none comes.

    Running pods go too, and run 0's config with them (a pod being deleted never starts a
    container again); no new pod while any pod of run 0 is observed."""
    job, children = _recorded(stale=False)
    return request(job, children)


@case
def whole_job_old_pods_terminating() -> Json:
    """Run 0's pods still terminate (deletionTimestamp): still no pod of run 1."""
    job, children = _recorded(stale=False)
    children = [terminating(c, minutes=60) if c["kind"] == "Pod" else c for c in children]
    children = [c for c in children if c["metadata"]["name"] != "mnist-server-0"]
    return request(job, children)


@case
def whole_job_old_pods_lost() -> Json:
    """Run 0's pods Terminating 15 s past their grace period are lost: the restart goes on.

    Run 1's processes meet only at run 1's Scheduler, so the lost ones cannot disturb it."""
    job, children = _recorded(stale=False)
    children = [terminating(c, minutes=22) if c["kind"] == "Pod" else c for c in children]
    children = [c for c in children if c["metadata"]["name"] != "mnist-server-0"]
    return request(job, children)


@case
def whole_job_stale_parent_pods_gone() -> Json:
    """Run 0 gone, parent status stale: the record alone says run 1 and one restart.

    Nothing of run 0 comes back, and run 1 waits for the parent status."""
    job, children = _recorded(stale=True)
    children = [c for c in children if c["kind"] != "Pod"]
    return request(job, children)


@case
def whole_job_creates_next_run() -> Json:
    """Run 0 gone and the parent status shows it: every replica of run 1 is created.

    Names `-r1`, annotations run 1 and restarts-before (Server 1), label run 1; the Services
    are made again, selecting run 1's pods only."""
    body = whole_job_stale_parent_pods_gone()
    # The answer to that left out run 0's Services, which select no run: they are gone.
    children = [
        c for group in body["children"].values() for c in group.values() if c["kind"] != "Service"
    ]
    job = mxjob(replicas=WHOLE, status=status_after(body["parent"], children))
    return request(job, children)


@case
def whole_job_next_run_running() -> Json:
    """Run 1 runs: Running again, Server restarts 1, the record kept, no run-0 pod."""
    body = whole_job_creates_next_run()
    response = run(body)
    children = [c for c in cluster_after(response, minutes=25)]
    children = all_pods(children, lambda p: running(p, minutes=26))
    parent = copy.deepcopy(body["parent"])
    parent["status"] = response.status
    return request(parent, children)


@case
def whole_job_scheduler_restarted_in_place() -> Json:
    """A Scheduler restarted in place by the kubelet (OnFailure) restarts the whole job.

    Its restartCount 1 is the one restart counted."""
    replicas = {**WHOLE, "Scheduler": replica(1, "OnFailure")}
    job, children = _running(replicas=replicas)
    children = with_states(children, mnist_scheduler_0=lambda p: running(p, minutes=15, restarts=1))
    return request(job, children)


@case
def whole_job_evicted_server() -> Json:
    """A Server preempted (DisruptionTarget) restarts the whole job, not counted as a restart.

    The pod failed without an exit code; backoffLimit 0 is not exceeded."""
    job, children = _running(replicas=WHOLE, run_policy={"backoffLimit": 0})
    children = with_states(
        children,
        mnist_server_0=lambda p: disrupted(terminated(p, None, minutes=20, reason="Preempted")),
    )
    return request(job, children)


def _into_run_1(
    job: Json, children: list[Json], recorded: float, created: float
) -> tuple[Json, list[Json]]:
    """A whole-job restart decided for `job` (with `children`) carried into run 1: its record
    made at `recorded`, the status of seeing it written, run 1's pods made at `created` and
    running a minute later; returns the job with the status of that creation, and run 1."""
    spec = {"replicas": job["spec"]["mxReplicaSpecs"], "run_policy": job["spec"].get("runPolicy")}
    if "checkpoint" in job["spec"]:
        spec["checkpoint"] = job["spec"]["checkpoint"]
    decided = run(request(job, children))
    record = [
        c
        for c in cluster_after(decided, minutes=recorded)
        if "-mxjob-run-" in c["metadata"]["name"]
    ]
    record += [c for c in children if c["kind"] == "PersistentVolumeClaim"]
    seen = mxjob(**spec, status=status_after(job, record))
    created_run = run(request(seen, record))
    run1 = all_pods(
        cluster_after(created_run, minutes=created), lambda p: running(p, minutes=created + 1)
    )
    return mxjob(**spec, status=created_run.status), run1


@case
def whole_job_backoff_exceeded() -> Json:
    """backoffLimit 1, run 1's Server killed again (the second restart): BackoffLimitExceeded.

    No run 2 is recorded."""
    policy = {"backoffLimit": 1}
    job, children = _running(replicas=WHOLE, run_policy=policy)
    children = with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))
    job, run1 = _into_run_1(job, children, recorded=21, created=25)
    run1 = with_states(run1, mnist_server_0_r1=lambda p: terminated(p, 137, minutes=40))
    return request(job, run1)


# --- docs/restarts.md#resizing: a replica count edited on a running job -------------------------


def _edited(job: Json, minutes: float) -> Json:
    """The job as the API server holds it after a spec edit at `minutes` (its managedFields)."""
    job["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "time": at(minutes)},
        {
            "manager": "metacontroller",
            "operation": "Update",
            "time": at(2),
            "subresource": "status",
        },
    ]
    return job


def _resized(workers: int) -> tuple[Json, list[Json]]:
    """The running ExitCode job of 2 Workers, its Worker count edited at minute 30."""
    job, children = _running(replicas=WHOLE)
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = workers
    return _edited(job, 30), children


@case
def resize_running_job_grows() -> Json:
    """Worker replicas 2 to 3 on a running ps-lite job: a whole-job restart at the new size.

    ps-lite fixed the run's membership at its start, so no Worker is added beside it: the run
    record comes first (every pod kept), dated by the edit, and the restart is not counted."""
    job, children = _resized(3)
    return request(job, children)


@case
def resize_running_job_shrinks() -> Json:
    """Worker replicas 2 to 1: the pod of the Worker the spec no longer has stays with its run.

    It goes when the run goes (the next step), not before the record is made."""
    job, children = _resized(1)
    return request(job, children)


def _resized_run_gone(workers: int) -> tuple[Json, list[Json]]:
    """The resize's record observed and shown, run 0's pods and Services gone."""
    job, children = _resized(workers)
    decided = run(request(job, children))
    record = [
        c for c in cluster_after(decided, minutes=31) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    kept = [c for c in children if c["kind"] == "ConfigMap"] + record
    job["status"] = status_after(job, children + record)
    return job, kept


@case
def resize_next_run_reads_a_config_of_its_own() -> Json:
    """The resized job between runs: run 1's pods and their own config mnist-mxjob-cfg-1 are made.

    Every process of run 1 reads DMLC_NUM_WORKER 3 and a cluster of 3 Workers; run 0's config
    (2 Workers) goes. A kubelet may keep serving an immutable ConfigMap it has read after it was
    deleted and made again under its name, so no run reads a name an earlier run read."""
    job, children = _resized_run_gone(3)
    job["status"] = status_after(job, children)
    return request(job, children)


@case
def resize_again_between_runs_replaces_the_runs_config() -> Json:
    """Run 1's config made for 3 Workers, none of its pods, the spec now 4: the config goes first.

    It is immutable and never updated, so it is left out (Metacontroller deletes it) and no pod
    of run 1 is made until it is listed again, for 4 Workers (here the pods' creation was
    refused, so the run had none when the second edit came)."""
    job, children = _resized_run_gone(3)
    job["status"] = status_after(job, children)
    made = cluster_after(run(request(job, children)), minutes=31)
    children = [c for c in made if c["kind"] == "ConfigMap"]
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 4
    return request(_edited(job, 32), children)


def _run_one_of_an_edit() -> tuple[Json, list[Json]]:
    """Run 1 of the job resized to 3 Workers at minute 30, its pods made at minute 32 and
    running, the parent status showing it."""
    job, children = _resized_run_gone(3)
    job["status"] = status_after(job, children)
    made = run(request(job, children))
    children = all_pods(cluster_after(made, minutes=32), lambda p: running(p, minutes=32.1))
    job["status"] = status_after(job, children)
    return job, children


def _edited_again(workers: int, minutes: float) -> Json:
    """Run 1 of the edit (`_run_one_of_an_edit`), the Worker count edited again at `minutes`."""
    job, children = _run_one_of_an_edit()
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = workers
    return request(_edited(job, minutes), children)


@case_at(32.25)
def edit_waits_after_an_edit_restart() -> Json:
    """Edited again 12 s into a run an edit started: it restarts the job only at 12:32:30.

    Two writers flipping a replica count would otherwise restart every pod on each flip: a run
    an edit started runs 30 s first (docs/restarts.md#edits-in-a-row). The job keeps running, its
    condition says when the edit will restart it, and the hook asks to be called back then."""
    return _edited_again(4, 32.2)


@case_at(32.5)
def edit_restarts_once_the_wait_is_over() -> Json:
    """At 12:32:30 the edit restarts the job: run 2's record counts 2 restarts for edits in a row.

    The next edit in the row will wait 60 s after run 2 starts, uncounted still."""
    return _edited_again(4, 32.2)


@case
def edit_of_a_settled_run_starts_a_new_row() -> Json:
    """An edit 18 minutes into a run an edit started restarts it at once, a row of 1 again.

    A run that ran 10 minutes had settled: the edit is no flip of two writers."""
    return _edited_again(4, 50)


@case
def edit_of_a_never_job_whose_name_has_no_room_waits() -> Json:
    """restartPolicy Never, a 50-character name: a resize cannot restart it, and says so.

    Never spared the name the `-r<attempt>` of restarted pods; a new run's pods would be named
    past 63 characters, which the API server refuses, after every pod of the running run was
    deleted. So the run keeps running at its size and the condition says why."""
    name = "a" * 50
    replicas = {"Worker": replica(2)}
    job = mxjob(name=name, replicas=replicas)
    children = all_pods(first_cluster(job), running)
    job = mxjob(name=name, replicas=replicas, status=status_after(job, children))
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    return request(_edited(job, 30), children)


# --- docs/restarts.md#upgrading: runs an earlier version of the hook began ---------------------


def _made_before_runs_had_names_of_their_own(children: list[Json]) -> list[Json]:
    """The children as the hook made them before each run had a config of its own and the job's
    one Service a name of its own: `mnist-mxjob-config` for every run, run records naming no
    config, the one Service named `mnist`, the pods' subdomain and addresses in it."""
    text = json.dumps(children)
    text = re.sub(r"mnist-mxjob-cfg-[0-9]+", "mnist-mxjob-config", text)
    text = text.replace(".mnist-mxjob", ".mnist").replace('mnist-mxjob"', 'mnist"')
    made: list[Json] = json.loads(text)
    for child in made:
        if "-mxjob-run-" in child["metadata"]["name"]:
            child["data"].pop("config")
            child["data"].pop("edits", None)
    return made


@case
def upgrade_keeps_the_config_of_a_run_begun_before() -> Json:
    """Run 1 began before runs had configs of their own: its replacement reads mnist-mxjob-config.

    Its record names no config, so the run goes on as it began: no pod of it is changed or
    restarted by the upgrade, and a Worker replaced reads the cluster its run started with."""
    body = whole_job_next_run_running()
    observed = [c for group in body["children"].values() for c in group.values()]
    children = _made_before_runs_had_names_of_their_own(observed)
    children = with_states(children, mnist_worker_1_r1=lambda p: terminated(p, 137, minutes=40))
    return request(body["parent"], children)


@case
def upgrade_keeps_the_per_job_service_named_after_the_job() -> Json:
    """serviceMode PerJob, a run begun when its one Service was named mnist: the run keeps it.

    Its processes reach each other as `<slot>.mnist`, so the Service stays, and a Worker
    replaced gets that subdomain; the run's next restart moves to mnist-mxjob, a name no other
    job's Service can have (docs/environment.md#services)."""
    job, children = _running(replicas=EXITCODE_WORKERS, **PER_JOB)
    children = _made_before_runs_had_names_of_their_own(children)
    return request(job, with_states(children, mnist_worker_1=lambda p: terminated(p, 137, 20)))


@case
def template_edit_reaches_only_new_pods() -> Json:
    """A running job's Worker image edited, then a Worker killed: only its replacement has it.

    Pods are never updated in place, and no restart is needed: the running pods keep their
    image; replacements and every pod of a later run are made from the template as it is."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    container = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["image"] = "mxjob/mxnet:gpu-fixed"
    children = with_states(children, mnist_worker_1=lambda p: terminated(p, 137, minutes=40))
    return request(_edited(job, 30), children)


@case
def tune_tuner_servers_resized_in_place() -> Json:
    """MXTune, TunerServer replicas 2 to 3: only a third TunerServer is made, nothing restarts.

    TVM's RPC tracker takes servers as they come and go."""
    job = _tune_job()
    children = all_pods(first_cluster(job), running)
    job = _tune_job(status=status_after(job, children))
    job["spec"]["mxReplicaSpecs"]["TunerServer"]["replicas"] = 3
    return request(_edited(job, 30), children)


# --- docs/restarts.md#deleted-pods: kubectl delete pod ------------------------------------------


def _deleted(pod: Json, minutes: float, grace: int = 30) -> Json:
    """The pod deleted at `minutes` with a grace period of `grace` seconds, still terminating."""
    obj = copy.deepcopy(pod)
    obj["metadata"]["deletionTimestamp"] = at(minutes + grace / 60)
    obj["metadata"]["deletionGracePeriodSeconds"] = grace
    return obj


@case
def never_worker_deleted_still_terminating() -> Json:
    """Never policy, a Worker deleted and still terminating: Failed at once, as when it ended.

    What the process does with SIGTERM, and whether the hook sees it end, changes nothing; the
    moment is the deletion's (its deletionTimestamp less its grace period)."""
    job, children = _running(replicas=SMALL)
    children = with_states(children, mnist_worker_1=lambda p: _deleted(p, minutes=59.5))
    return request(job, children)


@case
def exitcode_server_deleted_restarts_the_whole_job() -> Json:
    """ExitCode, a Server deleted with `kubectl delete pod`: the whole job restarts at once.

    Counted, without waiting for the pod to end: ps-lite cannot take a Server back."""
    job, children = _running(replicas=WHOLE)
    children = with_states(children, mnist_server_0=lambda p: _deleted(p, minutes=59.5))
    return request(job, children)


@case
def never_resumed_while_suspended_pods_terminate() -> Json:
    """Never policy, resumed while the pods the suspension deleted still terminate: not judged.

    The hook deleted them itself (before the resume); they go, and the replicas come back
    under their names once they are gone."""
    job, children = _running(replicas=SMALL)
    job["spec"]["runPolicy"] = {"suspend": True}
    _edited(job, 57)
    suspended = run(request(job, children))
    job["spec"]["runPolicy"] = {"suspend": False}
    _edited(job, 59)
    job["status"] = suspended.status
    kept = {c["metadata"]["name"] for c in suspended.children}
    children = [
        _deleted(c, minutes=57.5, grace=180) if c["kind"] == "Pod" else c
        for c in children
        if c["kind"] == "Pod" or c["metadata"]["name"] in kept
    ]
    return request(job, children)


@case
def invalid_spec_pods_ended() -> Json:
    """A running job edited into an invalid spec whose pods have all ended: completionTime.

    The TTL component counts from it; while a pod still ran, the status had none."""
    job, children = _running(replicas=SMALL)
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    _edited(job, 30)
    children = all_pods(children, lambda p: terminated(p, 0, minutes=40))
    return request(job, children)


# --- docs/restarts.md#failure-policy: rules users write -------------------------------------------

BAD_DATA = {
    "name": "bad-data",
    "action": "FailJob",
    "onExitCodes": {"operator": "In", "values": [42]},
}
OOM_RESTARTS_JOB = {"name": "oom", "action": "RestartJob", "onReasons": ["OOMKilled"]}
ONFAILURE_WORKERS = {**SMALL, "Worker": replica(2, "OnFailure")}


def _failing(
    replicas: Json, rules: list[Json], backoff: int, **states: Callable[[Json], Json]
) -> Json:
    """The job with `failurePolicy.rules` and every pod running, then `states` applied."""
    policy = {"backoffLimit": backoff, "failurePolicy": {"rules": rules}}
    job, children = _running(replicas=replicas, run_policy=policy)
    return request(job, with_states(children, **states))


@case
def failure_policy_exit_42_fails_job() -> Json:
    """Rule bad-data (FailJob on exit 42): a Worker exiting 42 fails the job at once.

    restartPolicy OnFailure and backoffLimit 3 would retry it; the message names the rule."""
    return _failing(
        ONFAILURE_WORKERS,
        [BAD_DATA],
        3,
        mnist_worker_1=lambda p: terminated(p, 42, minutes=15),
    )


#: FailJob once a pod could not pull its image for 5 minutes.
NO_IMAGE = {
    "name": "no-image",
    "action": "FailJob",
    "onStartFailure": {"reasons": ["ErrImagePull", "ImagePullBackOff"], "afterSeconds": 300},
}
PULL_BACKOFF = 'Back-off pulling image "mxjob/mxnet:gpu-typo"'


@case
def failure_policy_image_pull_fails_job_in_time() -> Json:
    """Rule no-image (onStartFailure, 300 s): a Worker without its image fails the job in time.

    It fails at the pod's creation + 300 s; without the rule the job would wait for the image
    for ever, naming it in its status."""
    return _failing(
        SMALL,
        [NO_IMAGE],
        3,
        mnist_worker_1=lambda p: waiting(p, "ImagePullBackOff", PULL_BACKOFF),
    )


@case
def failure_policy_image_pull_waits() -> Json:
    """Rule onStartFailure of 2 hours: the job still waits and names the replica that waits.

    The answer asks to be called back when the rule's time is up."""
    rule = {**NO_IMAGE, "onStartFailure": {"afterSeconds": 7200}}
    return _failing(
        SMALL, [rule], 3, mnist_worker_1=lambda p: waiting(p, "ImagePullBackOff", PULL_BACKOFF)
    )


@case
def failure_policy_oom_worker_restarts_job() -> Json:
    """Rule oom (RestartJob on OOMKilled): an OOMKilled Worker restarts the whole job, counted.

    A Worker alone would be replaced; the rule records run 1 with Worker 1's restart."""
    return _failing(WHOLE, [BAD_DATA, OOM_RESTARTS_JOB], 3, mnist_worker_1=oom_killed)


@case
def failure_policy_disruption_ignored() -> Json:
    """Rule Ignore on DisruptionTarget under restartPolicy Never: replaced, not counted.

    Never alone would fail the job; backoffLimit 0 is not exceeded."""
    rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    return _failing(
        {"Worker": replica(2)},
        [rule],
        0,
        mnist_worker_0=lambda p: disrupted(terminated(p, 143, minutes=12), "EvictionByEvictionAPI"),
    )


@case
def failure_policy_not_in_fails_job() -> Json:
    """An unnamed FailJob rule on exit codes NotIn [130, 137, 143]: exit 3 fails the job.

    The message names the rule by its place, failurePolicy.rules[0]."""
    rule = {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [130, 137, 143]}}
    return _failing(
        ONFAILURE_WORKERS, [rule], 3, mnist_worker_0=lambda p: terminated(p, 3, minutes=15)
    )


@case
def failure_policy_replica_types_scope() -> Json:
    """A FailJob rule for Servers only: a Worker exiting 1 under OnFailure is replaced (Count)."""
    rule = {
        "action": "FailJob",
        "replicaTypes": ["Server"],
        "onExitCodes": {"operator": "In", "values": [1]},
    }
    return _failing(
        ONFAILURE_WORKERS, [rule], 3, mnist_worker_0=lambda p: terminated(p, 1, minutes=15)
    )


@case
def failure_policy_first_match_wins() -> Json:
    """Ignore on OOMKilled comes before FailJob on 137: the OOMKilled Worker is replaced, uncounted.

    backoffLimit 0 is not exceeded."""
    rules: list[Json] = [
        {"name": "retry-oom", "action": "Ignore", "onReasons": ["OOMKilled"]},
        {
            "name": "no-kill",
            "action": "FailJob",
            "onExitCodes": {"operator": "In", "values": [137]},
        },
    ]
    return _failing(ONFAILURE_WORKERS, rules, 0, mnist_worker_1=oom_killed)


@case
def failure_policy_no_match_counts() -> Json:
    """No rule matches exit 137: the restartPolicy decides (OnFailure: Count), restarts 1."""
    return _failing(
        ONFAILURE_WORKERS,
        [BAD_DATA],
        3,
        mnist_worker_0=lambda p: terminated(p, 137, minutes=15),
    )


@case
def failure_policy_count_under_never() -> Json:
    """Count on exit 143 under restartPolicy Never: the Worker is replaced and counted.

    backoffLimit 0 is then exceeded: BackoffLimitExceeded."""
    rule = {
        "name": "sigterm",
        "action": "Count",
        "onExitCodes": {"operator": "In", "values": [143]},
    }
    return _failing(
        {"Worker": replica(2)}, [rule], 0, mnist_worker_0=lambda p: terminated(p, 143, minutes=15)
    )


def _gang_controller(api_version: str) -> Json:
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
def volcano_podgroup_pending() -> Json:
    """Volcano: the PodGroup is created first; no pod while it is Pending."""
    job = mxjob(run_policy=GANG_POLICY)
    first = run(request(job, controller=VOLCANO))
    children = cluster_after(first)
    for child in children:
        if child["kind"] == "PodGroup":
            child["status"] = {"phase": "Pending"}
    return request(job, children, VOLCANO)


@case
def volcano_resized_gang_made_again() -> Json:
    """Volcano, a resized job between runs: its PodGroup of the old size is gone, a new one is made.

    The parent status shows the creating step extended by what the job waits for (the
    PodGroup's admission): that is the step all the same, so the PodGroup is listed (minMember
    4 now) and the pods wait for Volcano to admit it."""
    replicas = {
        "Scheduler": replica(1, "ExitCode"),
        "Server": replica(1, "ExitCode"),
        "Worker": replica(1, "ExitCode"),
    }
    job = mxjob(replicas=replicas, run_policy=GANG_POLICY)
    children = cluster_after(run(request(job, controller=VOLCANO)))
    for child in children:
        if child["kind"] == "PodGroup":
            child["status"] = {"phase": "Running"}
    children = all_pods(cluster_after(run(request(job, children, VOLCANO))), running)
    for child in children:
        if child["kind"] == "PodGroup":
            child["status"] = {"phase": "Running"}
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2
    _edited(job, 30)
    decided = run(request(job, children, VOLCANO))
    record = [
        c for c in cluster_after(decided, minutes=31) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    # Run 0 deleted with its Services, config and PodGroup of 3 (whole-job restart, step 2).
    left = [
        c for c in children if c["kind"] == "ConfigMap" and "-config" not in c["metadata"]["name"]
    ]
    job["status"] = run(request(job, children + record, VOLCANO)).status
    job["status"] = run(request(job, left + record, VOLCANO)).status
    return request(job, left + record, VOLCANO)


@case
def volcano_podgroup_inqueue() -> Json:
    """Volcano: once the PodGroup is Inqueue the pods come, with schedulerName volcano."""
    body = volcano_podgroup_pending()
    for group in body["children"].values():
        for child in group.values():
            if child["kind"] == "PodGroup":
                child["status"] = {"phase": "Inqueue"}
    return body


@case
def scheduler_plugins_podgroup() -> Json:
    """scheduler-plugins: a PodGroup with minMember and scheduleTimeoutSeconds; pods labelled."""
    return request(mxjob(run_policy=GANG_POLICY), controller=PLUGINS)


@case
def volcano_min_resources_from_requests() -> Json:
    """Volcano, no minResources given: the PodGroup asks for what its pods request.

    Scheduler 1 CPU, Server 2 CPUs and 1Gi (a limit standing in for a request), 2 Workers of
    1500m: 5 CPUs and 1Gi, so Volcano holds a gang that cannot fit before any pod exists."""
    cpu = {"requests": {"cpu": "1"}}
    replicas = {
        "Scheduler": replica(1, resources=cpu),
        "Server": replica(1, resources={"requests": {"cpu": "2"}, "limits": {"memory": "1Gi"}}),
        "Worker": replica(2, resources={"requests": {"cpu": "1500m"}}),
    }
    return request(
        mxjob(replicas=replicas, run_policy={"schedulingPolicy": {}}), controller=VOLCANO
    )


@case
def scheduler_plugins_waiting_for_gang() -> Json:
    """scheduler-plugins: one pod bound, three held back by coscheduling: the status says so.

    The message names the scheduler, how many of how many are bound, and the pod's reason."""
    body = scheduler_plugins_podgroup()
    job = body["parent"]
    children = cluster_after(run(body))
    held = "0/4 nodes are available: pod group is not ready"
    children = with_states(
        children,
        mnist_scheduler_0=lambda p: {**running(p), "spec": {**p["spec"], "nodeName": "node-1"}},
        mnist_server_0=lambda p: unschedulable(p, held),
        mnist_server_1=lambda p: unschedulable(p, held),
        mnist_worker_0=lambda p: unschedulable(p, held),
    )
    return request(job, children, PLUGINS)


def _queued_job(**spec: Any) -> Json:
    job = mxjob(**spec)
    job["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": "team-a",
        "kueue.x-k8s.io/priority-class": "low",
    }
    return job


@case
def kueue_pod_group() -> Json:
    """A job labelled with a Kueue queue: every pod joins run 0's Pod group.

    Labels queue-name, pod-group-name mnist-mxjob-run-0 and the priority class; annotations
    pod-group-total-count 6 and retriable-in-group false."""
    return request(_queued_job())


def _gated(pod: Json) -> Json:
    """A pod as Kueue's webhook leaves it: gated until its group is admitted."""
    obj = copy.deepcopy(pod)
    obj["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    obj["metadata"].setdefault("finalizers", []).append("kueue.x-k8s.io/managed")
    obj["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
    }
    return obj


@case
def kueue_queued() -> Json:
    """Every pod gated by Kueue: Created, the message names the queue, and no startTime yet."""
    job = _queued_job()
    return request(job, all_pods(first_cluster(job), _gated))


def _admitted(pod: Json) -> Json:
    """A pod of an admitted group: ungated, bound at minute 5, running from minute 5.5."""
    obj = running(pod, minutes=5.5)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if k != "schedulingGates"}
    obj["spec"]["nodeName"] = "node-1"
    obj["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(5)}
    ]
    return obj


@case
def kueue_admitted_starts_the_clock() -> Json:
    """Queued, then admitted: startTime is when its first pod was scheduled (12:05), not created.

    Time spent in the queue does not count toward activeDeadlineSeconds: the 3600 s deadline
    falls due at 13:05, so the answer asks to be synced again in 300 s."""
    policy = {"activeDeadlineSeconds": 3600}
    job = _queued_job(run_policy=policy)
    children = all_pods(first_cluster(job), _gated)
    job = _queued_job(run_policy=policy, status=status_after(job, children))
    return request(job, all_pods(children, _admitted))


def _stopped_by_kueue(pod: Json) -> Json:
    """A pod of a preempted group: Kueue's TerminationTarget condition, then its deletion."""
    obj = terminating(terminated(pod, 143, minutes=20), minutes=20)
    obj["status"].setdefault("conditions", []).append(
        {
            "type": "TerminationTarget",
            "status": "True",
            "reason": "WorkloadEvictedDueToPreempted",
            "message": "Preempted to accommodate a workload due to prioritization",
        }
    )
    return obj


@case
def kueue_preempted() -> Json:
    """Kueue preempted the job's group: the whole job restarts, not counted, even under Never.

    restartPolicy Never and backoffLimit 0 would fail the job for any counted failure."""
    job = _queued_job(run_policy={"backoffLimit": 0})
    children = all_pods(first_cluster(job), running)
    job = _queued_job(run_policy={"backoffLimit": 0}, status=status_after(job, children))
    return request(job, all_pods(children, _stopped_by_kueue))


@case
def whole_job_old_pods_ended() -> Json:
    """Run 0's pods have all ended but a finalizer keeps them: run 1 is created anyway.

    Ended pods cannot run again, and Kueue lets go of a failed pod only once its replacement
    exists."""
    job, children = _recorded(stale=False)
    children = [
        terminated(c, 143, minutes=21)
        if c["kind"] == "Pod" and c["status"].get("phase") == "Running"
        else c
        for c in children
    ]
    children = [terminating(c, minutes=60) if c["kind"] == "Pod" else c for c in children]
    # Run 0's Services went with its pods (whole-job-deletes-the-run).
    children = [c for c in children if c["kind"] != "Service"]
    job = mxjob(replicas=WHOLE, status=status_after(job, children))
    return request(job, children)


@case
def managed_by_multikueue() -> Json:
    """runPolicy.managedBy names MultiKueue: nothing is created and the status is kept as is."""
    job = mxjob(run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}, status={"startTime": at(1)})
    return request(job)


# --- docs/status.md#the-last-failure: the failure's own words in the job ------------------------

#: The end of a failed Worker's log, as the kubelet copies it into the termination message under
#: FallbackToLogsOnError: more lines than the status keeps.
TRACEBACK = (
    "worker 1/2 (dist_sync) starts at round 0 of 30\n"
    "Traceback (most recent call last):\n"
    '  File "/workloads/train.py", line 128, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/workloads/train.py", line 104, in main\n'
    '    raise FloatingPointError(f"loss is nan at round {step}")\n'
    "FloatingPointError: loss is nan at round 7\n"
)
#: A log written to fool a terminal and fill the status: colours, a title sequence, a
#: right-to-left override, NUL and BEL, a progress bar's carriage returns, a 5000-character line
#: and a last line of 300 two-byte characters, then blank lines.
HOSTILE = (
    "\x1b[31mred\x1b[0m " + "x" * 5000 + "\n"
    "progress 10%\rprogress 100%\n"
    "\u202eevil\u202c\x00\x07bell\n"
    "\x1b]0;pwned\x07after the title\n"
    "tab\there\n"
    "ValueError: " + "é" * 300 + "\n\n\n"
)


def _said(code: int, message: str, minutes: float = 15) -> Callable[[Json], Json]:
    """A pod state: the mxnet container exited with `code`, leaving `message`."""
    return lambda pod: saying(terminated(pod, code, minutes=minutes), message)


@case
def worker_traceback_fails_the_job() -> Json:
    """A Worker's exception fails the job: its last line in Failed, the tail in lastFailure.

    ExitCode does not retry exit 1. The message quotes the traceback's last line; lastFailure
    keeps its last five lines, with the replica, pod, attempt, exit code, reason and time."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = with_states(children, mnist_worker_1=_said(1, TRACEBACK))
    return request(job, children)


@case
def worker_traceback_in_the_restart() -> Json:
    """A Worker replaced after an exception: Restarting quotes the exception's last line."""
    replicas = {**SMALL, "Worker": replica(2, "OnFailure")}
    job, children = _running(replicas=replicas)
    children = with_states(children, mnist_worker_0=_said(1, TRACEBACK, minutes=20))
    return request(job, children)


@case
def replacement_running_keeps_last_failure() -> Json:
    """The replacement runs: Running again, and lastFailure still names the failed attempt."""
    return _replacement_running(worker_traceback_in_the_restart(), "mnist-worker-0-r1")


@case
def last_failure_outlives_the_pods() -> Json:
    """cleanPodPolicy All deletes the failed pods; the frozen status keeps the failure's words."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 1, TRACEBACK)
    return request(job, children)


@case
def last_failure_from_the_record_when_pods_are_gone() -> Json:
    """Pods cleaned up, parent cache from before the failure: the result record restores it."""
    job, children = _finished_job({"cleanPodPolicy": "All"}, 1, TRACEBACK)
    del job["status"]
    children = [c for c in children if c["kind"] == "ConfigMap"]
    return request(job, children)


@case
def hostile_termination_message() -> Json:
    """A log of escape sequences and long lines: five clean lines of at most 200 bytes each.

    Nothing a terminal would interpret is kept; the long lines keep their start."""
    job, children = _running(replicas=SMALL)
    children = with_states(children, mnist_worker_0=_said(1, HOSTILE))
    return request(job, children)


@case
def in_place_restart_is_the_last_failure() -> Json:
    """A Worker the kubelet restarted in place (worker-only, OnFailure): its lastState is kept.

    Without a ps-lite Scheduler the kubelet restarts it; the failure before the restart is
    the job's last, from `lastState.terminated`."""
    replicas = {"Worker": replica(2, "OnFailure")}
    job, children = _running(replicas=replicas)
    children = with_states(
        children, mnist_worker_1=lambda p: restarted_in_place(p, 1, TRACEBACK, minutes=12)
    )
    return request(job, children)


@case
def whole_job_restart_quotes_the_server() -> Json:
    """A Server's exception restarts the whole job (OnFailure): the run record's cause quotes it."""
    replicas = {**WHOLE, "Server": replica(1, "OnFailure")}
    job, children = _running(replicas=replicas)
    message = "Traceback (most recent call last):\nMXNetError: ps-lite server out of memory\n"
    children = with_states(children, mnist_server_0=_said(1, message, minutes=20))
    return request(job, children)


@case
def deleted_pods_do_not_replace_the_last_failure() -> Json:
    """Run 0's pods end as the restart deletes them: lastFailure still names the Server.

    A pod being deleted ends by the deletion's signal; its words are not the job's failure."""
    body = whole_job_restart_quotes_the_server()
    response = run(body)
    children = [c for group in body["children"].values() for c in group.values()]
    record = [
        c for c in cluster_after(response, minutes=21) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    children = with_states(
        children,
        mnist_worker_0=lambda p: terminating(_said(143, "Terminated\n", minutes=22)(p), 22),
        mnist_worker_1=lambda p: terminating(_said(143, "Terminated\n", minutes=22)(p), 22),
    )
    parent = copy.deepcopy(body["parent"])
    parent["status"] = response.status
    return request(parent, children + record)


# --- docs/migration.md: jobs training-operator ran, seen by this hook for the first time ----


def _operator_pod(pod: Json) -> Json:
    """A pod as training-operator v1.8 made it, labelled for adoption: the same name, labels
    and Service, but none of this hook's annotations and no rejoin wait."""
    obj = copy.deepcopy(pod)
    meta = obj["metadata"]
    meta["annotations"] = {
        k: v for k, v in meta.get("annotations", {}).items() if not k.startswith("mxjob.")
    }
    obj["spec"].pop("initContainers", None)
    return obj


_OPERATOR_RUNNING: Json = {
    "conditions": [
        {
            "type": "Created",
            "status": "True",
            "reason": "MXJobCreated",
            "message": "MXJob mnist is created.",
            "lastUpdateTime": at(0),
            "lastTransitionTime": at(0),
        },
        {
            "type": "Running",
            "status": "True",
            "reason": "MXJobRunning",
            "message": "MXJob mnist is running.",
            "lastUpdateTime": at(1),
            "lastTransitionTime": at(1),
        },
    ],
    "replicaStatuses": {
        "Scheduler": {"active": 1},
        "Server": {"active": 1},
        "Worker": {"active": 2},
    },
    "startTime": at(0.5),
}


def _adopted() -> tuple[Json, list[Json]]:
    """A running job training-operator made, its pods and Services labelled for adoption, its
    status as training-operator wrote it; none of this hook's ConfigMaps yet."""
    job = mxjob(replicas=WHOLE)
    made = [c for c in first_cluster(job) if c["kind"] != "ConfigMap"]
    children = [_operator_pod(running(c)) if c["kind"] == "Pod" else c for c in made]
    return mxjob(replicas=WHOLE, status=_OPERATOR_RUNNING), children


@case
def adopted_running_job() -> Json:
    """A running training-operator job after the hand-over: its pods and Services are kept.

    Nothing is deleted or made again; only this hook's config ConfigMap is created (for pods it
    may make later), and the status takes this hook's shape."""
    return request(*_adopted())


@case
def adopted_worker_failure_restarts_the_whole_job() -> Json:
    """A Worker of an adopted job fails: the whole job restarts, not the Worker alone.

    Its Scheduler, made by training-operator without ps-lite heartbeats, could not take a
    replaced Worker back (docs/environment.md#ps-lite-heartbeats)."""
    job, children = _adopted()
    children = with_states(children, mnist_worker_1=lambda p: terminated(p, 137, minutes=20))
    return request(job, children)


@case
def finished_operator_job_with_a_refused_spec() -> Json:
    """A job training-operator ran to Succeeded, with a spec this hook refuses: status kept.

    Two Scheduler replicas (training-operator counted Scheduler keys, not replicas): the job is
    not marked Failed after the fact, its completionTime stays, and nothing is deleted."""
    replicas = {**WHOLE, "Scheduler": replica(2, "ExitCode")}
    done: Json = {
        **_OPERATOR_RUNNING,
        "conditions": [
            *_OPERATOR_RUNNING["conditions"][:1],
            {**_OPERATOR_RUNNING["conditions"][1], "status": "False"},
            {
                "type": "Succeeded",
                "status": "True",
                "reason": "MXJobSucceeded",
                "message": "MXJob mnist is successfully completed.",
                "lastUpdateTime": at(30),
                "lastTransitionTime": at(30),
            },
        ],
        "replicaStatuses": {
            "Scheduler": {"succeeded": 1},
            "Server": {"succeeded": 1},
            "Worker": {"succeeded": 2},
        },
        "completionTime": at(30),
    }
    job = mxjob(replicas=WHOLE)
    children = [
        _operator_pod(terminated(c, 0, minutes=30)) if c["kind"] == "Pod" else c
        for c in first_cluster(job)
        if c["kind"] != "ConfigMap"
    ]
    return request(mxjob(replicas=replicas, status=done), children)


# --- docs/restarts.md#rejoining-ps-lite: which pods wait ---------------------------------------


@case
def worker_made_again_after_vanishing() -> Json:
    """A Worker's pod gone from the API unseen, the run's others running: made again with a wait.

    Its process may register with a Scheduler that has started the job, so the pod made again
    under its name waits as a replacement does; the kept first pods are listed without it."""
    job, children = _running(replicas=EXITCODE_WORKERS)
    children = [c for c in children if c["metadata"]["name"] != "mnist-worker-1"]
    return request(job, children)


# --- docs/environment.md#services: one Service per job --------------------------------------------

PER_JOB: Json = {"serviceMode": "PerJob"}


@case
def per_job_service_first_sync() -> Json:
    """serviceMode PerJob: one headless Service mnist-mxjob; each pod its slot name as hostname.

    DMLC_PS_ROOT_URI is mnist-scheduler-0.mnist-mxjob and MX_CONFIG's cluster lists every replica
    as <slot>.mnist-mxjob; no Service per replica; the first pods have no rejoin wait. The name
    ends in `-mxjob`, which no replica's Service of any job ends in (a job named a-scheduler-0
    would otherwise own job a's Scheduler Service)."""
    return request(mxjob(**PER_JOB))


@case
def per_job_service_worker_replaced() -> Json:
    """serviceMode PerJob, a Worker killed: `-r1` keeps the slot's hostname, so its address stays.

    The replacement waits before its process starts; the job's one Service is kept."""
    job, children = _running(replicas=EXITCODE_WORKERS, **PER_JOB)
    return request(job, with_states(children, mnist_worker_1=lambda p: terminated(p, 137, 20)))


@case
def per_job_service_replaced_between_runs() -> Json:
    """serviceMode PerJob, resized, between runs: the job's Service of run 0 is left out.

    It selects run 0's pods, so it is deleted and made again for run 1 before any pod of run 1;
    run 1's own config is made now."""
    job, children = _running(replicas=WHOLE, **PER_JOB)
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
    _edited(job, 30)
    decided = run(request(job, children))
    record = [
        c for c in cluster_after(decided, minutes=31) if "-mxjob-run-" in c["metadata"]["name"]
    ]
    kept = [c for c in children if c["kind"] in ("ConfigMap", "Service")] + record
    job["status"] = status_after(job, children + record)
    job["status"] = status_after(job, kept)
    return request(job, kept)


@case
def service_mode_change_restarts_the_whole_job() -> Json:
    """A running job edited to serviceMode PerJob: a whole-job restart, not counted.

    Every process was started with the per-replica addresses; the run record comes first."""
    job, children = _running(replicas=WHOLE)
    job["spec"]["serviceMode"] = "PerJob"
    return request(_edited(job, 30), children)


# --- docs/scheduling.md#topology: placement by topology ------------------------------------------

BLOCK = "example.com/block"


def _topology(**topology: Any) -> Json:
    return {"schedulingPolicy": {"topology": {"level": BLOCK, **topology}}}


@case
def kueue_topology_one_pod_set() -> Json:
    """Kueue, Servers and Workers in one block: one PodSet server-worker requiring the block.

    Their pods ask the same, so they are one PodSet (role-hash server-worker) with
    podset-required-topology example.com/block; the Scheduler is a PodSet of its own, anywhere."""
    return request(_queued_job(run_policy=_topology()))


@case
def kueue_topology_leader_and_workers() -> Json:
    """Kueue, 1 Server and 3 Workers asking differently, preferred: a PodSet group of two.

    Each type its own PodSet (role-hash server, worker), both podset-preferred-topology and
    podset-group-name server-worker: Kueue places a single pod and its workers in one domain."""
    replicas = {
        "Scheduler": replica(1),
        "Server": replica(1, resources={"requests": {"cpu": "2"}}),
        "Worker": replica(3, resources={"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}),
    }
    return request(_queued_job(replicas=replicas, run_policy=_topology(mode="Preferred")))


@case
def kueue_topology_cannot_be_placed() -> Json:
    """Kueue, 2 Servers and 3 Workers asking differently: refused, naming replicaTypes.

    Kueue v0.17 places pod sets in one domain only as one pod set or as a pair of which one is
    a single pod: nothing is created."""
    replicas = {
        "Scheduler": replica(1),
        "Server": replica(2, resources={"requests": {"cpu": "2"}}),
        "Worker": replica(3, resources={"requests": {"cpu": "1"}}),
    }
    return request(_queued_job(replicas=replicas, run_policy=_topology()))


@case
def topology_without_kueue_or_volcano() -> Json:
    """A topology with neither a Kueue queue nor Volcano: refused, naming the field.

    The default scheduler places pods one by one; nothing would keep them in one block."""
    return request(mxjob(run_policy=_topology()))


@case
def topology_level_missing() -> Json:
    """A topology without a level: refused, naming schedulingPolicy.topology.level."""
    job = _queued_job(run_policy={"schedulingPolicy": {"topology": {"mode": "Required"}}})
    return request(job)


@case
def volcano_network_topology() -> Json:
    """Volcano: the PodGroup asks for one domain, networkTopology hard at tier example.com/block.

    Volcano's label discovery names each HyperNode tier after its node label; the whole gang
    is placed in one domain of it."""
    return request(mxjob(run_policy=_topology()), controller=VOLCANO)


# --- docs/run-policy.md#progressdeadlineseconds: progress and the stall watchdog -----------


def _reporting(
    run_policy: Json | None = None, epochs: str | None = None, **states: Callable[[Json], Json]
) -> tuple[Json, list[Json]]:
    """The SMALL job with every pod running since minute 1, its Workers' templates saying
    MXJOB_EPOCHS when `epochs` is given, `states` applied to named pods, and the status
    written when every pod ran (at minute 2, before any deadline)."""
    env = [{"name": "MXJOB_EPOCHS", "value": epochs}] if epochs is not None else None
    replicas = {**SMALL, "Worker": replica(2, env=env) if env else replica(2)}
    job = mxjob(replicas=replicas, run_policy=run_policy)
    children = all_pods(first_cluster(job), running)
    status = run(request(job, children), T0 + timedelta(minutes=2)).status
    children = with_states(children, **states)
    return mxjob(replicas=replicas, run_policy=run_policy, status=status), children


def _epoch_2(
    minutes: float, batch: int | None = 140, seen: float | None = None
) -> Callable[[Json], Json]:
    """Running, its newest report epoch 2 (batch 140) at `minutes`, nothing moving `seen`."""
    return lambda pod: reporting(running(pod), 2, batch, minutes, epoch_seconds=600.0, seen=seen)


def _silent(seen: float) -> Callable[[Json], Json]:
    """Running, no report yet, and the progress component saw none at `seen`."""
    return lambda pod: reporting(running(pod), None, None, 0, seen=seen)


#: A progress deadline of five minutes.
DEADLINE = {"progressDeadlineSeconds": 300}


@case
def progress_in_the_status() -> Json:
    """Both Workers report: the newest (Worker 1, epoch 2 batch 140) is the job's progress.

    MXJOB_EPOCHS 5 gives 40 % (two epochs done) and a completion three epochs of 600 s after the
    report.
    Without a progress deadline nothing is judged and no resync is asked for."""
    job, children = _reporting(
        epochs="5", mnist_worker_0=_epoch_2(58, batch=120), mnist_worker_1=_epoch_2(59)
    )
    return request(job, children)


@case
def progress_deadline_ahead() -> Json:
    """A report 2 minutes ago under a 300 s deadline: not stalled, resync in 180 s."""
    job, children = _reporting(DEADLINE, mnist_worker_1=_epoch_2(58))
    return request(job, children)


@case
def progress_stalled_restarts_the_whole_job() -> Json:
    """No report for 10 minutes under a 300 s deadline, seen so: the whole job restarts, counted.

    The progress component saw nothing new at minute 59 (after the deadline ran out at 55, the
    last report at 50 plus 300 s): run record 1 comes first, dated 55; Restarting says which
    Worker reported last and what; the restart is counted on Worker 0, toward backoffLimit."""
    job, children = _reporting(DEADLINE, mnist_worker_1=_epoch_2(50, seen=59))
    return request(job, children)


@case
def progress_unseen_is_not_stalled() -> Json:
    """Past the deadline, but the progress component has not looked since: not stalled.

    A component that stopped (or lags) leaves jobs unjudged, never restarts a healthy one; its
    last look (minute 53) was before the deadline ran out (55)."""
    job, children = _reporting(DEADLINE, mnist_worker_1=_epoch_2(50, seen=53))
    return request(job, children)


@case
def progress_stalled_before_any_report() -> Json:
    """No first report 300 s after every replica ran (minute 1), seen so: restarted at 6.

    firstProgressDeadlineSeconds judges a run until it first reports."""
    policy = {**DEADLINE, "firstProgressDeadlineSeconds": 300}
    job, children = _reporting(policy, mnist_worker_0=_silent(7))
    return request(job, children)


@case
def progress_first_report_not_judged_without_its_deadline() -> Json:
    """No report yet after an hour, a look seen: without firstProgressDeadlineSeconds, running.

    A startup (loading data, connecting) may take far longer than the steps between two reports:
    progressDeadlineSeconds judges a run only once it has reported."""
    job, children = _reporting(DEADLINE, mnist_worker_0=_silent(59))
    return request(job, children)


@case
def progress_stalled_fails_with_an_onstall_rule() -> Json:
    """An onStall rule with FailJob: the stalled job fails, ProgressDeadlineExceeded.

    The message names the stall and the rule; nothing is restarted."""
    policy = {
        **DEADLINE,
        "failurePolicy": {"rules": [{"name": "hung", "action": "FailJob", "onStall": {}}]},
    }
    job, children = _reporting(policy, mnist_worker_1=_epoch_2(50, seen=56))
    return request(job, children)


@case
def progress_not_judged_while_a_replica_waits() -> Json:
    """A Worker not running yet: the watchdog waits, whatever the clock and the look say."""
    job, children = _reporting(DEADLINE, mnist_worker_0=_silent(30))
    children = [created(c) if c["metadata"]["name"] == "mnist-worker-1" else c for c in children]
    return request(job, children)


@case
def progress_after_a_stall_restart() -> Json:
    """The run after a stall restart reports epoch 0 again: no stall, the progress moves back.

    Run 0 stalled (its last report, epoch 2 batch 140 at minute 50); run 1's pods run since
    minute 57 and Worker 0 reported epoch 0 batch 20 at 59: the report is run 1's, so the
    clock stands at 59 (due at 64) and the status shows epoch 0."""
    job, children = _reporting(DEADLINE, mnist_worker_1=_epoch_2(50, seen=56))
    job, run1 = _into_run_1(job, children, recorded=55, created=56)
    run1 = with_states(
        run1, mnist_worker_0_r1=lambda p: reporting(p, 0, 20, 59, epoch_seconds=None)
    )
    return request(job, run1)


# --- docs/restarts.md#checkpoints: a checkpoint claim per job ----------------------------------

#: A checkpoint of 1 GiB on the tier's local class, mounted in Servers and Workers by default.
CHECKPOINT = {
    "volumeClaimTemplate": {
        "metadata": {"labels": {"team": "vision"}},
        "spec": {"storageClassName": "local", "resources": {"requests": {"storage": "1Gi"}}},
    }
}


def _claimed(phase: str = "Bound", replicas: Json = SMALL, **spec: Any) -> tuple[Json, list[Json]]:
    """A job with a checkpoint, after its first sync made the claim (now in `phase`)."""
    spec = {"replicas": replicas, "checkpoint": CHECKPOINT, **spec}
    job = mxjob(**spec)
    children = [
        {**c, "status": {"phase": phase}} if c["kind"] == "PersistentVolumeClaim" else c
        for c in first_cluster(job)
    ]
    return mxjob(**spec, status=status_after(job, children)), children


def _running_claimed(replicas: Json = SMALL, **spec: Any) -> tuple[Json, list[Json]]:
    """A job with a checkpoint, its claim bound and every pod running."""
    job, children = _claimed(replicas=replicas, **spec)
    made = cluster_after(run(request(job, children)))
    children = [*children, *(running(c) for c in made if c["kind"] == "Pod")]
    spec = {"replicas": replicas, "checkpoint": CHECKPOINT, **spec}
    return mxjob(**spec, status=status_after(job, children)), children


@case
def checkpoint_claim_made_first() -> Json:
    """A job with spec.checkpoint, first seen: its claim mnist-checkpoint is made, nothing else.

    Nothing else is made before the claim is the job's own (observed as its child): no pod may
    mount a claim of that name that is not the job's. The status says what it waits for."""
    return request(mxjob(replicas=SMALL, checkpoint=CHECKPOINT))


@case
def checkpoint_mounted_once_claimed() -> Json:
    """The claim observed: the pods are made, Servers and Workers mounting it with its path.

    The claim is Pending (a WaitForFirstConsumer class binds it with its first pod). Servers and
    Workers mount it at /mxjob/checkpoint, MXJOB_CHECKPOINT_DIR saying so; the Scheduler holds
    no model state and does not."""
    job, children = _claimed("Pending")
    return request(job, children)


@case
def checkpoint_kept_after_cleanup() -> Json:
    """cleanPodPolicy All after success: every pod and Service goes, the claim stays.

    The checkpoints are the user's until the job is deleted (the claim's owner reference)."""
    policy = {"cleanPodPolicy": "All"}
    job, children = _running_claimed(run_policy=policy)
    end = lambda pod: terminated(pod, 0, minutes=30)  # noqa: E731
    children = with_states(children, mnist_scheduler_0=end, mnist_worker_0=end, mnist_worker_1=end)
    spec: Json = {"replicas": SMALL, "checkpoint": CHECKPOINT, "run_policy": policy}
    decided = run(request(mxjob(**spec, status=job["status"]), children))
    children += [c for c in cluster_after(decided) if c["metadata"]["name"].endswith("-result")]
    return request(mxjob(**spec, status=decided.status), children)


@case
def checkpoint_kept_across_a_whole_job_restart() -> Json:
    """A Server killed: run 1's Servers and Workers mount the same claim, kept as observed.

    A whole-job restart loses what the Servers held in memory, not what the Workers saved."""
    job, children = _running_claimed(replicas=WHOLE)
    children = with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))
    job, run1 = _into_run_1(job, children, recorded=21, created=25)
    return request(job, run1)


@case
def checkpoint_kept_when_the_spec_drops_it() -> Json:
    """spec.checkpoint removed from a running job: its claim is still listed, as observed.

    An edit never deletes the user's checkpoints; the claim goes with the job."""
    job, children = _running_claimed()
    del job["spec"]["checkpoint"]
    return request(job, children)


@case
def checkpoint_kept_while_suspended() -> Json:
    """A job with a checkpoint suspended: the pods and Services go, the claim stays."""
    job, children = _running_claimed()
    job["spec"]["runPolicy"] = {"suspend": True}
    return request(job, children)


@case
def checkpoint_claim_lost() -> Json:
    """The claim's volume is gone (phase Lost): the job keeps running and says so.

    Kubernetes does not bring a lost volume back; the message tells the user."""
    job, children = _running_claimed()
    children = [
        {**c, "status": {"phase": "Lost"}} if c["kind"] == "PersistentVolumeClaim" else c
        for c in children
    ]
    return request(job, children)


@case
def checkpoint_resume_points_in_the_status() -> Json:
    """Run 1 began at epoch 2: the status keeps where each run began, run 0 at epoch 0.

    Run 0's Workers reported epoch 0 at minute 5 and epoch 2 at 19; its Server was killed at
    20; run 1 restored the checkpoint of epoch 2: its Worker 0's newest report is epoch 3
    batch 10 at 27, the first the component read in its log epoch 2, which the status shows
    (docs/restarts.md#checkpoints)."""
    job, children = _running_claimed(replicas=WHOLE)
    early = lambda pod: reporting(pod, 0, 20, 5, epoch_seconds=None)  # noqa: E731
    children = with_states(children, mnist_worker_0=early)
    job = {**job, "status": status_after(job, children)}
    late = lambda pod: reporting(pod, 2, 140, 19, epoch_seconds=420.0)  # noqa: E731
    children = with_states(
        children,
        mnist_worker_0=late,
        mnist_server_0=lambda p: terminated(p, 137, minutes=20),
    )
    job, run1 = _into_run_1(job, children, recorded=21, created=25)
    run1 = with_states(
        run1, mnist_worker_0_r1=lambda p: reporting(p, 3, 10, 27, epoch_seconds=None, began=2)
    )
    return request(job, run1)


@case
def invalid_checkpoint_template() -> Json:
    """A claim template Kubernetes would refuse, or a checkpoint cannot use: Failed, by field.

    No storage request, a Block volume, ReadOnlyMany, a field mxjob does not pass on, a
    relative mount path and a retention policy StatefulSet's words do not have."""
    broken = {
        "mountPath": "checkpoints",
        "retentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Retain"},
        "volumeClaimTemplate": {
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "volumeMode": "Block",
                "resources": {"requests": {"cpu": "1"}},
                "storage": "1Gi",
            }
        },
    }
    return request(mxjob(replicas=SMALL, checkpoint=broken))


@case
def invalid_checkpoint_against_the_job() -> Json:
    """A checkpoint the job's replicas cannot mount: Failed, naming each field.

    It names Tuners (not this job's), a Worker template mounts something at its path, and the
    Server template has a volume of its name."""
    worker = replica(2, volumeMounts=[{"name": "data", "mountPath": "/mxjob/checkpoint/"}])
    worker["template"]["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    server = replica(1)
    server["template"]["spec"]["volumes"] = [{"name": "mxjob-checkpoint", "emptyDir": {}}]
    saved = {**CHECKPOINT, "replicaTypes": ["Worker", "Server", "Tuner"]}
    return request(mxjob(replicas={**SMALL, "Server": server, "Worker": worker}, checkpoint=saved))


# --- docs/restarts.md#in-place: whole-job restarts in place -------------------------------------

IN_PLACE = {"restartStrategy": "InPlace"}


@case
def in_place_pods() -> Json:
    """restartStrategy InPlace, first seen: every pod carries the restarter and the barrier.

    The restarter's rule restarts every container when the pod's restart annotation changes;
    the barrier holds a restarted pod; their two volumes. The mxnet container has no rule: a
    failed pod fails with its exit code."""
    return request(mxjob(replicas=WHOLE, run_policy=IN_PLACE))


def _in_place_syncs(*, queued: bool = False) -> list[tuple[Json, list[Json]]]:
    """Each request of an InPlace job (in a Kueue queue if `queued`) whose Server was killed at
    minute 20: the cluster after each answer as Metacontroller and the kubelet leave it, the
    restarter component carrying `status.inPlaceRestart` to the pods (restarted, then
    released)."""
    make = _queued_job if queued else mxjob
    job = make(replicas=WHOLE, run_policy=IN_PLACE)
    children = all_pods(first_cluster(job), running)
    job = make(replicas=WHOLE, run_policy=IN_PLACE, status=status_after(job, children))
    children = with_states(children, mnist_server_0=lambda p: terminated(p, 137, minutes=20))
    found = [(job, children)]
    for step in range(5):
        minutes = 21 + step
        answer = run(request(job, children))
        order = answer.status.get("inPlaceRestart")
        kept = {(c["kind"], c["metadata"]["name"]): c for c in children}
        made = cluster_after(answer, minutes)
        children = [
            kept.get((c["kind"], c["metadata"]["name"])) or _started(c, minutes) for c in made
        ]
        if order is not None:
            children = [_carried(c, order, minutes) for c in children]
        job = make(replicas=WHOLE, run_policy=IN_PLACE, status=answer.status)
        found.append((job, children))
    return found


def _started(child: Json, minutes: float) -> Json:
    """A child the answer made: a pod running a minute later."""
    return running(child, minutes + 1) if child["kind"] == "Pod" else child


def _carried(child: Json, order: InPlaceOrder, minutes: float) -> Json:
    """What the restarter component and the kubelet make of a pod under `order`."""
    if child["kind"] != "Pod":
        return child
    annotations = child["metadata"].get("annotations", {})
    held = child["status"].get("phase") == "Pending" and "mxjob.kubeflow.org/restart" in annotations
    if order["go"] and held:
        return released_in_place(child, order["run"], minutes)
    if (
        child["status"].get("phase") == "Running"
        and int(
            annotations.get(
                "mxjob.kubeflow.org/restart", annotations.get("mxjob.kubeflow.org/run", "0")
            )
        )
        < order["run"]
    ):
        return held_in_place(child, order["run"], minutes)
    return child


@case
def in_place_restart_recorded() -> Json:
    """InPlace, the Server killed (137): the restart is recorded first, as restarting in place.

    The record's strategy key and the status message say so."""
    return request(*_in_place_syncs()[0])


@case
def in_place_old_run_restarts() -> Json:
    """The step shown: the running pods are kept and ordered to restart in place for run 1.

    status.inPlaceRestart says run 1, go false; the failed Server, which cannot restart in
    place, is deleted, to be made again."""
    return request(*_in_place_syncs()[2])


@case
def in_place_every_pod_held() -> Json:
    """Every pod of run 0 restarted in place, held by its barrier: run 0's Services go.

    No process of run 0 runs; run 1 is released once the status shows it (go still false)."""
    return request(*_in_place_syncs()[3])


@case
def in_place_run_released() -> Json:
    """The release shown: go true for the held pods, and the Server made again for run 1.

    The new Server carries run 1's restart and go annotations; run 1's Services select run 1's
    pods."""
    return request(*_in_place_syncs()[4])


@case
def in_place_run_running() -> Json:
    """Every pod of run 1 running, three of them the pods of run 0: the restart is over.

    No inPlaceRestart any more; the Server's restart counted once."""
    return request(*_in_place_syncs()[5])


@case
def in_place_queued_pod_joins_the_admitted_group() -> Json:
    """In a Kueue queue, the Server made again for run 1 joins run 0's Pod group.

    Its pod-group-name is mnist-mxjob-run-0: the Workload Kueue admitted for the pods restarted
    in place, which stays admitted, takes it as a replacement (a group of run 1 would wait for
    pods that never come). The run record says group 0."""
    return request(*_in_place_syncs(queued=True)[4])


@case
def in_place_restarting_pod_shown_failed_is_held() -> Json:
    """A pod restarting in place shown Failed for a moment is held for run 1, not failed.

    Seen on the real node: the restarter has just exited 86 and the kubelet shows the pod
    Failed; no run 2 is recorded."""
    job, children = _in_place_syncs()[2]
    moment = {"terminated": {"exitCode": 86, "message": "1"}}

    def shown_failed(pod: Json) -> Json:
        pod = held_in_place(pod, 1, 22)
        pod["status"]["phase"] = "Failed"
        pod["status"]["initContainerStatuses"][0]["state"] = moment
        pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 137}}
        return pod

    return request(job, with_states(children, mnist_scheduler_0=shown_failed))


@case
def invalid_restart_strategy() -> Json:
    """A restartStrategy that is neither Recreate nor InPlace: Failed, naming the field."""
    return request(mxjob(replicas=WHOLE, run_policy={"restartStrategy": "InPlaced"}))


@case
def invalid_in_place_with_kubelet_restarts() -> Json:
    """InPlace with a Server under OnFailure: Failed, naming runPolicy.restartStrategy.

    The kubelet would restart the Server's container alone, a restart the in-place reading
    does not count and that would not restart the whole job."""
    replicas = {**WHOLE, "Server": replica(1, "OnFailure")}
    return request(mxjob(replicas=replicas, run_policy=IN_PLACE))


def write() -> None:
    """Record every case: its request, the hook's answer and the digest of both."""
    for name, each in CASES.items():
        body = each.build()
        answer = as_sent(run(body, each.now))
        golden.write(golden.FIXTURES / name, each.reason, body, each.now, answer)
        print(f"wrote {golden.FIXTURES / name}", file=sys.stderr)


if __name__ == "__main__":
    write()

"""Runs and edits played through the hook with Metacontroller and a kubelet around it.

A resized job starts one cluster, not two (docs/restarts.md#resizing): every process of a new
run reads, in MX_CONFIG, the cluster its DMLC_* variables count, even on a kubelet that keeps
serving an immutable ConfigMap it has read for as long as a pod that reads it is on the node,
though it was deleted and made again under its name (kubernetes/kubernetes#131589). And two
writers flipping a replica count restart the job a bounded number of times
(docs/restarts.md#edits-in-a-row).

`Node` plays Metacontroller and one such kubelet around the hook, a tick at a time: a pod
deleted ends on the next tick and stays on the node (its API object, a registered pod) a few
ticks more, as a kubelet cleans up after a pod that ended; a pending pod starts with its
environment resolved through the kubelet's cache (testsupport/kubelet_env.py).
"""

import copy
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hooks.core.restart.resize import edit_waits
from testsupport.jobs import T0, at, mxjob, replica, run
from testsupport.jobs import request as sync_request
from testsupport.kubelet_env import resolve
from testsupport.observed import created, running, terminated

#: Ticks a pod that ended stays on the node before the kubelet lets it go.
LINGERS = 4


@dataclass
class Node:
    """One job, Metacontroller and one kubelet that caches immutable ConfigMaps."""

    job: dict[str, Any]
    children: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: Immutable ConfigMaps the kubelet has read, by name, while a pod on the node reads them.
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The environment each pod's mxnet container started with, by pod name.
    started: dict[str, dict[str, str]] = field(default_factory=dict)
    ended_at: dict[str, float] = field(default_factory=dict)
    #: Seconds a tick lasts.
    step: float = 60.0

    def tick(self, minute: float) -> None:
        self._kubelet(minute)
        self._sync(minute)

    def _pods(self) -> dict[str, dict[str, Any]]:
        return {name: obj for (kind, name), obj in self.children.items() if kind == "Pod"}

    def _kubelet(self, minute: float) -> None:
        for name, pod in self._pods().items():
            if name in self.ended_at:
                if minute - self.ended_at[name] >= LINGERS * self.step / 60:
                    del self.children["Pod", name]
            elif "deletionTimestamp" in pod["metadata"]:
                ended = terminated(pod, 143, minutes=minute)
                ended["metadata"] = pod["metadata"]
                self.children["Pod", name], self.ended_at[name] = ended, minute
            elif pod["status"]["phase"] == "Pending":
                self.started[name] = self._start(pod)
                self.children["Pod", name] = running(pod, minutes=minute)
        read = {
            ref["configMapKeyRef"]["name"]
            for pod in self._pods().values()
            for var in pod["spec"]["containers"][0]["env"]
            if "configMapKeyRef" in (ref := var.get("valueFrom", {}))
        }
        self.cache = {name: obj for name, obj in self.cache.items() if name in read}

    def _start(self, pod: dict[str, Any]) -> dict[str, str]:
        """The mxnet container's environment, its ConfigMaps read through the cache."""
        for var in pod["spec"]["containers"][0]["env"]:
            ref = var.get("valueFrom", {}).get("configMapKeyRef")
            if ref is not None and ref["name"] not in self.cache:
                self.cache[ref["name"]] = self.children["ConfigMap", ref["name"]]
        return resolve(pod, pod["spec"]["containers"][0], self.cache)

    def _sync(self, minute: float) -> None:
        body = sync_request(self.job, list(self.children.values()), v2=True)
        answer = run(body, T0 + timedelta(minutes=minute))
        self.job["status"] = answer.status
        listed = {(c["kind"], c["metadata"]["name"]): c for c in answer.children}
        for key, obj in list(self.children.items()):
            if key not in listed and key[0] == "Pod":
                obj["metadata"].setdefault("deletionTimestamp", at(minute + self.step / 120))
                obj["metadata"].setdefault("deletionGracePeriodSeconds", 30)
            elif key not in listed:
                del self.children[key]
        for key, child in listed.items():
            if key not in self.children:
                self.children[key] = created(child, minutes=minute)


def _job(workers: int) -> dict[str, Any]:
    replicas = {
        "Scheduler": replica(1, "ExitCode"),
        "Server": replica(1, "ExitCode"),
        "Worker": replica(workers, "ExitCode"),
    }
    return mxjob(replicas=replicas)


def _edited(node: Node, workers: int, minute: float) -> None:
    """The job's Worker count written as `workers` at `minute`, its status as it was."""
    edited = _job(workers)
    edited["status"] = copy.deepcopy(node.job["status"])
    edited["metadata"]["managedFields"] = [{"manager": "kubectl", "time": at(minute)}]
    node.job = edited


def _workers(env: dict[str, str]) -> int:
    return len(json.loads(env["MX_CONFIG"])["cluster"].get("worker", []))


def test_every_process_of_a_resized_run_reads_the_cluster_its_dmlc_variables_count() -> None:
    node = Node(_job(2))
    for minute in range(1, 6):
        node.tick(minute)
    assert {n for n, env in node.started.items() if env["DMLC_NUM_WORKER"] == "2"} == {
        "mnist-scheduler-0",
        "mnist-server-0",
        "mnist-worker-0",
        "mnist-worker-1",
    }
    _edited(node, 3, 5)
    for minute in range(6, 30):
        node.tick(minute)
    run_one = {n: env for n, env in node.started.items() if env["MXJOB_RUN"] == "1"}
    assert len(run_one) == 5, sorted(node.started)
    for name, env in sorted(run_one.items()):
        assert env["DMLC_NUM_WORKER"] == "3", name
        assert _workers(env) == 3, f"{name} started with DMLC_NUM_WORKER 3 and {env['MX_CONFIG']}"


def test_two_writers_flipping_the_workers_restart_the_job_a_bounded_number_of_times() -> None:
    """A writer sets 3 Workers, another 2, each every 10 s, for 15 minutes: the job restarts
    at once, then each run an edit started runs 30 s, 60 s, 120 s, 240 s, then 300 s before
    the next edit restarts it, and its condition says when meanwhile: 5 restarts here, where
    every flip that found its run started restarted it before (28 times)."""
    node = Node(_job(2), step=5.0)
    starts: dict[int, float] = {}
    said = []
    for tick in range(1, 15 * 12 + 1):
        minute = tick * node.step / 60
        if tick >= 12 and tick % 2 == 0:
            _edited(node, 3 if tick % 4 == 0 else 2, minute)
        node.tick(minute)
        for env in node.started.values():
            starts.setdefault(int(env["MXJOB_RUN"]), minute * 60)
        said.append(node.job["status"]["conditions"][-1]["message"])
    assert 4 <= max(starts) <= 6, starts
    for run_ in range(1, max(starts)):
        ran = starts[run_ + 1] - starts[run_]
        assert ran >= edit_waits(run_).total_seconds(), (run_, starts)
    assert any("restarts the whole job at" in message for message in said)

"""The scenario matrix: one MXJob file each and the steps the test takes, the same for every
controller.

Pods are ended the way a kubelet ends them under the restart policy the controller wrote into
the pod (`spec.restartPolicy`, which each controller derives from the replica's): `Never` (the
controllers' `ExitCode` too) ends the pod, `OnFailure` restarts a failed container in place
and lets a successful one end the pod, `Always` restarts it in place whatever its exit code
(`exit_patch`, `restart_patch` of tools/cluster/stack.py, sent in-process so that the moment
of the exit is known within milliseconds). KWOK runs no container: the test is the kubelet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.compare.observe import NAMESPACE, PatchError, Pod, Watcher
from testsupport.jobs import replica
from tools.cluster.stack import Stack, exit_patch, restart_patch

#: Order in which `finish` ends a job's pods: as MXNet's processes end.
FINISH_ORDER = ("worker", "scheduler", "server")
IMAGE = "mxjob/mxnet:1.9.1"
POLICIES = ("Never", "OnFailure", "Always", "ExitCode")
#: 0 success, 1 permanent, 137 and 143 retryable (SIGKILL, SIGTERM) in docs/restarts.md.
EXIT_CODES = (0, 1, 137, 143)


class StuckError(Exception):
    """A step could not go on (a pod never came): the scenario ends there, noted."""


@dataclass
class Run:
    """One scenario under one controller: the cluster, what is seen, what the test did."""

    stack: Stack
    watch: Watcher
    job: dict[str, Any]
    marks: list[tuple[float, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Seconds from each exit to the job's next status write: how fast the controller answers.
    answers: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    def mark(self, what: str) -> None:
        self.marks.append((time.monotonic(), what))

    def slots(self) -> list[tuple[str, int]]:
        """Every replica of the job's file: (lower-case type, index)."""
        specs = self.job["spec"]["mxReplicaSpecs"]
        return [(t.lower(), i) for t, s in specs.items() for i in range(s.get("replicas", 1))]

    def state(self) -> str:
        """What the job looks like now, in a few words."""
        left = self.watch.left()
        pods = ", ".join(f"{n} {phase or '?'}" for phase, n in sorted(left.items())) or "none"
        text = f"{self.watch.condition() or 'no condition'}; pods: {pods}"
        if replaced := self.watch.replaced():
            text += f"; {replaced} made again"
        if restarts := sum(p.restarts for p in self.watch.pods.values() if p.live):
            text += f"; {restarts} in-place restarts"
        return text


Step = Callable[[Run], None]


@dataclass(frozen=True)
class Scenario:
    """A job file, the steps taken, and how long to wait for an outcome after the last one."""

    name: str
    checks: str
    job: dict[str, Any]
    steps: tuple[Step, ...]
    timeout: float = 20.0
    #: Apply again with `--validate=false` when the API server refuses a field (what a user
    #: with an older CRD does to get the job in).
    unvalidated_retry: bool = False
    #: Time the outcome from the apply rather than from the last step.
    from_apply: bool = False


# -- steps ------------------------------------------------------------------------------------


def _running(run: Run, timeout: float = 60.0) -> None:
    if run.watch.finished():
        return
    slots = run.slots()
    if not run.watch.wait(lambda: run.watch.running(slots), timeout):
        raise StuckError(f"not every pod Running after {timeout:.0f} s ({run.state()})")


def _end(rtype: str, index: int, code: int, run: Run) -> None:
    """The replica's current pod exits with `code`, as the kubelet handles it."""
    if run.watch.finished():
        return
    found: list[Pod] = []

    def running() -> bool:
        pod = run.watch.live(rtype, index)
        found[:] = [pod] if pod is not None and pod.phase == "Running" else []
        return bool(found) or run.watch.finished()

    if not run.watch.wait(running, 30) or not found:
        if run.watch.finished():
            return
        raise StuckError(f"no Running {rtype}-{index} to end ({run.state()})")
    pod = found[0]
    in_place = pod.policy == "Always" or (pod.policy == "OnFailure" and code != 0)
    patch = (restart_patch if in_place else exit_patch)(pod.obj, code)
    sent = time.monotonic()
    try:
        run.watch.patch_status(pod.name, patch)
    except PatchError as refused:
        if refused.status != 404:
            raise
        run.notes.append(f"{pod.name} deleted by the controller before it could exit {code}")
        return
    run.marks.append((sent, f"{rtype}-{index} exits {code}" + (", in place" if in_place else "")))
    # One exit at a time: the controller answers it before the next (1 s without an event).
    run.watch.quiet(1.0, 5.0)
    answered = run.watch.answered(sent)
    if answered is not None:
        run.answers.append(answered)


def _settle(label: str, run: Run) -> None:
    """Wait until nothing moves (2 s quiet, at most 20 s), then note the job's state."""
    run.watch.quiet(2.0, 20.0)
    run.notes.append(f"{label}: {run.state()}")


def _finish(run: Run) -> None:
    """Every replica still running exits 0, Workers first, unless the job finished. Unless a
    replica's pod failed and was neither made again nor restarted: then the other processes
    would wait for it for ever (ps-lite), and they are left running."""
    run.watch.quiet(1.0, 10.0)
    newest = [run.watch.live(*slot) for slot in run.slots()]
    lost = [p.name for p in newest if p is not None and p.phase == "Failed"]
    if lost and not run.watch.finished():
        run.notes.append(f"{', '.join(lost)} failed, not made again: the others wait for it")
        return
    slots = sorted(run.slots(), key=lambda s: (*FINISH_ORDER, s[0]).index(s[0]))
    for rtype, index in slots:

        def settled(slot: tuple[str, int] = (rtype, index)) -> bool:
            pod = run.watch.live(*slot)
            return run.watch.finished() or (pod is not None and pod.phase != "Pending")

        run.watch.wait(settled, 10)
        pod = run.watch.live(rtype, index)
        if pod is not None and pod.phase == "Running":
            _end(rtype, index, 0, run)


def _patch(spec: dict[str, Any], label: str, run: Run) -> None:
    run.mark(label)
    run.stack.kubectl(
        "patch", "mxjob", run.name, "-n", NAMESPACE, "--type=merge",
        "-p", json.dumps({"spec": spec}),
    )  # fmt: skip


def _await_outcome(timeout: float, run: Run) -> None:
    """Wait for Succeeded or Failed with no help; note it if none came."""
    if not run.watch.wait(run.watch.finished, timeout):
        run.notes.append(f"nothing by itself in {timeout:.0f} s: {run.state()}")


def _poke(run: Run) -> None:
    """An unrelated change to a pod (an annotation): an event for the controller."""
    if run.watch.finished():
        return
    pod = next((p for p in run.watch.pods.values() if p.live), None)
    if pod is not None:
        run.mark("a pod annotated")
        run.stack.kubectl("annotate", "pod", "-n", NAMESPACE, pod.name, "compare/poke=1")


def _events(run: Run) -> None:
    """Note the job's Warning events (what `kubectl describe mxjob` shows)."""
    run.watch.quiet(3.0, 10.0)
    out = run.stack.kubectl(
        "get", "events", "-n", NAMESPACE, "-o", "json",
        f"--field-selector=involvedObject.name={run.name},type=Warning",
    )  # fmt: skip
    seen = {f"{e['reason']}: {e['message']}" for e in json.loads(out.stdout)["items"]}
    run.notes.append("events: " + ("; ".join(sorted(seen)) or "none"))


running: Step = _running
finish: Step = _finish
poke: Step = _poke
events: Step = _events


def end(rtype: str, code: int = 0, index: int = 0) -> Step:
    """The replica's current process exits with `code` (as the kubelet handles it)."""
    return partial(_end, rtype, index, code)


def settle(label: str) -> Step:
    """Wait until nothing moves, then note the job's state under `label`."""
    return partial(_settle, label)


def patch(label: str, **spec: Any) -> Step:
    """Merge `spec` into the job's spec (`kubectl patch --type=merge`)."""
    return partial(_patch, spec, label)


def await_outcome(timeout: float) -> Step:
    """Wait up to `timeout` for Succeeded or Failed, doing nothing."""
    return partial(_await_outcome, timeout)


# -- jobs -------------------------------------------------------------------------------------


def job(
    name: str,
    policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
    **counts: int,
) -> dict[str, Any]:
    """An MXJob file as a user writes it: replica types and counts, one restart policy."""
    counts = counts or {"Scheduler": 1, "Server": 1, "Worker": 2}
    spec: dict[str, Any] = {
        "jobMode": "MXTrain",
        "mxReplicaSpecs": {
            rtype: replica(n, policy, image=IMAGE, command=["python", "train.py"])
            for rtype, n in counts.items()
        },
    }
    if run_policy:
        spec["runPolicy"] = run_policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def _byteps() -> dict[str, Any]:
    byteps = job("byteps-allworkers")
    byteps["spec"]["successPolicy"] = "AllWorkers"
    return byteps


def _no_mxnet_container() -> dict[str, Any]:
    bad = job("invalid-no-mxnet", Worker=1)
    bad["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    return bad


def _matrix() -> list[Scenario]:
    return [
        Scenario(
            f"exit-{code}-{policy.lower()}",
            f"a Worker exits {code} under restartPolicy {policy}, then the rest exit 0",
            job(f"exit-{code}-{policy.lower()}", policy),
            (running, end("worker", code), settle(f"after the exit {code}"), finish),
        )
        for policy in POLICIES
        for code in EXIT_CODES
    ]


def scenarios() -> list[Scenario]:
    """Every scenario but the large job, in the order they run."""
    backoff = {"backoffLimit": 1}
    kills = (end("worker", 137), settle("after a kill"), running)
    return [
        Scenario(
            "dist-clean",
            "Scheduler, Server, 2 Workers; Workers, then Scheduler, then Server exit 0",
            job("dist-clean"),
            (running, end("worker"), end("worker", index=1), end("scheduler"), end("server")),
        ),
        Scenario(
            "scheduler-first",
            "the Scheduler exits 0 while both Workers still run; then the rest exit 0",
            job("scheduler-first"),
            (running, end("scheduler"), settle("Scheduler done, Workers running"), finish),
        ),
        Scenario(
            "worker-only-1",
            "one Worker, no Scheduler; it exits 0",
            job("worker-only-1", Worker=1),
            (running, end("worker")),
        ),
        Scenario(
            "worker-only-3",
            "three Workers, no Scheduler; Worker 0 exits 0, then the others",
            job("worker-only-3", Worker=3),
            (running, settle("all Running"), end("worker"), settle("Worker 0 done"), finish),
        ),
        Scenario(
            "byteps-allworkers",
            "successPolicy AllWorkers (BytePS): both Workers exit 0, Scheduler and Server run on",
            _byteps(),
            (running, end("worker"), end("worker", index=1)),
            unvalidated_retry=True,
        ),
        *_matrix(),
        Scenario(
            "server-137-exitcode",
            "restartPolicy ExitCode, the Server exits 137 (ps-lite cannot take a new Server)",
            job("server-137-exitcode", "ExitCode"),
            (running, end("server", 137), settle("after the Server's exit"), finish),
        ),
        Scenario(
            "backoff-exitcode",
            "backoffLimit 1, restartPolicy ExitCode: Worker 0 killed (137) three times",
            job("backoff-exitcode", "ExitCode", backoff),
            (running, *kills, *kills, *kills),
        ),
        Scenario(
            "backoff-onfailure",
            "backoffLimit 1, restartPolicy OnFailure: Worker 0 killed (137) three times",
            job("backoff-onfailure", "OnFailure", backoff),
            (running, *kills, *kills, *kills),
        ),
        Scenario(
            "deadline-quiet",
            "activeDeadlineSeconds 10, nothing happens; after 40 s a pod is annotated",
            job("deadline-quiet", run_policy={"activeDeadlineSeconds": 10}, Worker=1),
            (running, await_outcome(40), poke),
            from_apply=True,
        ),
        Scenario(
            "suspend-resume",
            "suspend: true while Running, then suspend: false, then every replica exits 0",
            job("suspend-resume"),
            (
                running,
                patch("suspended", runPolicy={"suspend": True}),
                settle("suspended"),
                patch("resumed", runPolicy={"suspend": False}),
                running,
                settle("resumed"),
                finish,
            ),
        ),
        *(
            Scenario(
                f"cleanup-{policy.lower()}",
                f"cleanPodPolicy {policy}: Workers and Scheduler exit 0, the Server runs on",
                job(f"cleanup-{policy.lower()}", run_policy={"cleanPodPolicy": policy}),
                (running, end("worker"), end("worker", index=1), end("scheduler")),
            )
            for policy in ("All", "Running", "None")
        ),
        Scenario(
            "cleanup-default",
            "no cleanPodPolicy: Workers and Scheduler exit 0, the Server runs on",
            job("cleanup-default"),
            (running, end("worker"), end("worker", index=1), end("scheduler")),
        ),
        Scenario(
            "invalid-no-mxnet",
            "invalid: the Worker's only container is named `main`, not `mxnet`",
            _no_mxnet_container(),
            (events,),
            timeout=5,
        ),
        Scenario(
            "invalid-two-schedulers",
            "invalid: Scheduler replicas 2 (ps-lite has one Scheduler)",
            job("invalid-two-schedulers", Scheduler=2, Server=1, Worker=1),
            (events,),
            timeout=5,
        ),
    ]

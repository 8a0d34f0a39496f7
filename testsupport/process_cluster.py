"""A cluster whose pods are processes on this machine, for the rejoin harness
(`tests/test_rejoin.py`, docs/testing.md): Metacontroller and the kubelet played around the
hook's pure core, as fast as a cluster can ever be.

Metacontroller: `sync` sends the job and its observed children through `hooks.core.sync.sync`
with the real clock, creates every listed child that is not observed, deletes every observed
one that is not listed, and stores the status, like Metacontroller between two syncs.

The kubelet: a created pod starts at once: its init containers in order, then its mxnet
container, each a real process with the environment the kubelet gives it (configMapKeyRef,
annotations by fieldRef, `$(VAR)` expansion: `testsupport/kubelet_env.py`). An ended process
is reported as the kubelet reports it (exit code, 128 + signal for a signal, `finishedAt` in
whole seconds, phase); a deleted pod gets SIGTERM, SIGKILL after its grace period, and is gone
from the API as soon as its processes are, which is sooner than a real kubelet removes it.

The one deliberate difference is DNS: the Scheduler's Service name resolves to 127.0.0.1, and
every process binds there (`DMLC_NODE_HOST`). `bypass_wait` skips the pods' init containers:
the control that shows what the rejoin wait prevents.
"""

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hooks.core.request import parse_request
from hooks.core.sync import sync
from testsupport.jobs import request
from testsupport.kubelet_env import resolve

#: Seconds a deleted pod's process gets between SIGTERM and SIGKILL (the pods' grace period).
GRACE = 1.0
ROUND = re.compile(r"^worker \d+ round (\d+) ok", re.MULTILINE)


def stamp(moment: float) -> str:
    """A Kubernetes timestamp: whole seconds, truncated, as the API server and kubelet write."""
    return datetime.fromtimestamp(int(moment), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Pod:
    """One pod: its API object and the processes the kubelet runs for it, in order."""

    obj: dict[str, Any]
    steps: list[tuple[str, list[str], dict[str, str]]]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    step: int = -1
    kill_at: float | None = None
    gone: bool = False

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


@dataclass
class ProcessCluster:
    """One MXJob on this machine; `tick()` advances the kubelet and Metacontroller once."""

    job: dict[str, Any]
    python: Path
    workdir: Path
    bypass_wait: bool = False
    pods: dict[str, Pod] = field(default_factory=dict)
    others: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: When each pod ever made was made (monotonic clock), by name.
    made: dict[str, float] = field(default_factory=dict)

    def tick(self) -> None:
        """The kubelet reports what its processes did, then Metacontroller syncs once."""
        for pod in list(self.pods.values()):
            self._advance(pod)
        self.sync()

    def sync(self) -> None:
        children = [p.obj for p in self.pods.values()] + list(self.others.values())
        body = request(self.job, children, v2=True)
        answer = sync(parse_request(body), datetime.now(UTC))
        self.job["status"] = answer.status
        listed = {(c["kind"], c["metadata"]["name"]): c for c in answer.children}
        for name, pod in list(self.pods.items()):
            if ("Pod", name) not in listed:
                self._delete(pod)
        for key in [k for k in self.others if k not in listed]:
            del self.others[key]
        for key, child in listed.items():
            if key[0] == "Pod" and key[1] not in self.pods:
                self._create(child)
            elif key[0] != "Pod" and key not in self.others:
                self.others[key] = _created(child)

    def condition(self) -> str:
        """The type of the job's latest condition."""
        conditions = self.job.get("status", {}).get("conditions", [])
        return str(conditions[-1]["type"]) if conditions else ""

    def rounds(self, made_after: float = 0.0) -> int:
        """Rounds completed so far by the Worker processes of the job, all runs together; only
        those of pods made after `made_after` (monotonic clock) when given."""
        return sum(
            len(ROUND.findall(path.read_text(errors="replace")))
            for path in self.workdir.glob("*-worker-*.log")
            if self.made.get(path.stem, 0.0) >= made_after
        )

    def run(self) -> int:
        """The newest run any pod of the job belongs to (whole-job restarts so far)."""
        runs = (p.obj["metadata"]["annotations"].get(_RUN, "0") for p in self.pods.values())
        return max((int(r) for r in runs), default=0)

    def current(self, slot: str) -> Pod:
        """The newest pod of a slot (`mnist-worker-1`): the one a kill should hit."""
        pods = [p for n, p in self.pods.items() if n == slot or n.startswith(f"{slot}-r")]
        return max(pods, key=lambda p: int(p.obj["metadata"]["annotations"][_ATTEMPT]))

    def kill(self, pod: Pod, sig: signal.Signals = signal.SIGKILL) -> None:
        assert pod.proc is not None and pod.step == len(pod.steps) - 1, pod.name
        pod.proc.send_signal(sig)

    def close(self) -> None:
        for pod in self.pods.values():
            if pod.proc is not None and pod.proc.poll() is None:
                pod.proc.kill()
                pod.proc.wait()

    # --- the kubelet ------------------------------------------------------------------------

    def _create(self, desired: dict[str, Any]) -> None:
        obj = _created(desired)
        obj["status"] = {"phase": "Pending"}
        config_maps = {n: c for (k, n), c in self.others.items() if k == "ConfigMap"}
        spec = obj["spec"]
        inits = [] if self.bypass_wait else spec.get("initContainers", [])
        steps = [
            (c["name"], self._argv(c), self._env(obj, c, config_maps))
            for c in [*inits, *spec["containers"]]
        ]
        name = obj["metadata"]["name"]
        pod = Pod(obj=obj, steps=steps, log=self.workdir / f"{name}.log")
        self.pods[name] = pod
        self.made[name] = time.monotonic()
        self._next(pod)

    def _argv(self, container: dict[str, Any]) -> list[str]:
        argv = [*container.get("command", []), *container.get("args", [])]
        return [str(self.python), *argv[1:]] if argv and argv[0] == "python" else argv

    def _env(
        self, pod: dict[str, Any], container: dict[str, Any], config_maps: dict[str, Any]
    ) -> dict[str, str]:
        env = resolve(pod, container, config_maps)
        if env.get("DMLC_PS_ROOT_URI"):
            env["DMLC_PS_ROOT_URI"] = "127.0.0.1"  # the Scheduler's Service, as DNS answers
        return {
            **env,
            "DMLC_NODE_HOST": "127.0.0.1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
        }

    def _next(self, pod: Pod) -> None:
        """Start the pod's next process, or report the pod finished after its last."""
        pod.step += 1
        name, argv, env = pod.steps[pod.step]
        with pod.log.open("ab") as out:
            pod.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        if pod.step == len(pod.steps) - 1:
            status = pod.obj["status"]
            status["phase"] = "Running"
            status["containerStatuses"] = [
                {
                    "name": name,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": stamp(time.time())}},
                }
            ]

    def _advance(self, pod: Pod) -> None:
        if pod.proc is None or pod.gone:
            return
        if pod.kill_at is not None and time.monotonic() >= pod.kill_at and pod.proc.poll() is None:
            pod.proc.kill()
        code = pod.proc.poll()
        if code is None:
            return
        exit_code = 128 - code if code < 0 else code
        if code == 0 and pod.step < len(pod.steps) - 1 and pod.kill_at is None:
            self._next(pod)
            return
        status = pod.obj["status"]
        status["phase"] = (
            "Succeeded" if exit_code == 0 and pod.step == len(pod.steps) - 1 else "Failed"
        )
        name = pod.steps[pod.step][0]
        status["containerStatuses"] = [
            {
                "name": name,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": exit_code, "finishedAt": stamp(time.time())}},
            }
        ]
        pod.proc = None
        if pod.kill_at is not None:
            pod.gone = True  # deleted: gone from the API once its processes are
            del self.pods[pod.name]

    def _delete(self, pod: Pod) -> None:
        if pod.kill_at is not None:
            return
        meta = pod.obj["metadata"]
        meta["deletionTimestamp"] = stamp(time.time() + GRACE)
        pod.kill_at = time.monotonic() + GRACE
        if pod.proc is not None and pod.proc.poll() is None:
            pod.proc.terminate()
        elif pod.proc is None:
            pod.gone = True
            del self.pods[pod.name]


_ATTEMPT = "mxjob.kubeflow.org/attempt"
_RUN = "mxjob.kubeflow.org/run"


def _created(desired: dict[str, Any]) -> dict[str, Any]:
    """A listed child as the API server stores it: with a uid and its creation time."""
    meta = desired["metadata"]
    return {
        **desired,
        "metadata": {
            **meta,
            "uid": f"uid-{meta['name']}-{time.monotonic_ns()}",
            "creationTimestamp": stamp(time.time()),
        },
    }


def run_job(
    cluster: ProcessCluster,
    kills: list[tuple[int, str]],
    hang_after: float = 25.0,
    timeout: float = 240.0,
) -> "Outcome":
    """Drive the job to its end; after `kills[i][0]` more rounds, SIGKILL the newest pod of
    slot `kills[i][1]`. A hang: no round completed for `hang_after` seconds once the job has
    trained (its first start, importing MXNet in four processes, is bounded by `timeout` only:
    a loaded machine can take longer than `hang_after` to start them)."""
    outcome = Outcome()
    pending = list(kills)
    mark = 0
    last_rounds, last_progress = 0, None
    killed_at: float | None = None
    run_at_kill = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            cluster.tick()
            rounds = cluster.rounds()
            now = time.monotonic()
            if rounds > last_rounds:
                last_rounds, last_progress = rounds, now
            if killed_at is not None and cluster.rounds(made_after=killed_at):
                # A round by a process made after the kill: the job trains again, in a new run
                # (a whole-job restart) or with the killed Worker replaced alone.
                whole = cluster.run() > run_at_kill
                outcome.recovered.append((WHOLE_JOB if whole else ALONE, now - killed_at))
                killed_at = None
            if cluster.condition() in ("Succeeded", "Failed"):
                outcome.condition = cluster.condition()
                return outcome
            if last_progress is not None and now - last_progress > hang_after:
                outcome.hung = True
                return outcome
            if pending and killed_at is None and rounds - mark >= pending[0][0]:
                after, slot = pending.pop(0)
                pod = cluster.current(slot)
                if pod.proc is not None and pod.step == len(pod.steps) - 1:
                    run_at_kill = cluster.run()
                    cluster.kill(pod)
                    outcome.killed.append(pod.name)
                    killed_at = time.monotonic()
                    last_progress = killed_at
                    mark = rounds
                else:
                    pending.insert(0, (after, slot))
            time.sleep(0.1)
        outcome.hung = True
        return outcome
    finally:
        cluster.close()


@dataclass
class Outcome:
    """How a job driven by `run_job` ended."""

    condition: str = ""
    hung: bool = False
    killed: list[str] = field(default_factory=list)
    #: For each kill, how the job recovered (`ALONE`, `WHOLE_JOB`) and the seconds from the kill
    #: to the first round completed by a Worker made after it.
    recovered: list[tuple[str, float]] = field(default_factory=list)


#: How a job recovers from a kill: the killed Worker replaced alone, or a new run of every pod.
ALONE, WHOLE_JOB = "a Worker rejoined alone", "a whole-job restart"

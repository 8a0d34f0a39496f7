"""A checkpoint claim per job with real MXNet 1.9.1 processes (docs/restarts.md#checkpoints):
a `Module.fit` script saving into MXJOB_CHECKPOINT_DIR (workloads/checkpointed.py) on a volume
the test provides, its Server killed mid-training; the whole-job restart's next run resumes
where the checkpoint ends, the status says so, and the claim goes with the job. A claim whose
retention policy says Retain is kept when its job is deleted, with its files, and a job of the
same name resumes on it once the user hands it over.

Each volume is a hostPath PersistentVolume of a class of this file's own (no provisioner,
bound when the first pod is scheduled, as a local volume is), named after the test's namespace
and the test, so sessions sharing the stack do not meet; a claim selects its own by a label.
"""

import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hooks.core.api import BARRIER_CONTAINER, MXNET_CONTAINER, RESTARTER_CONTAINER
from hooks.core.public import RETAIN_FINALIZER, RETAINED_FROM
from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import HOOK_NAMESPACE, WAITING, Node, mxjob, replica
from testsupport.restarter_log import patch_kind

CHECKPOINTED = ["python", "/workloads/checkpointed.py"]
#: Five epochs of 40 batches of at least 0.2 s (about 8 s an epoch), a report every 5 batches;
#: ps-lite's connection lines (PS_VERBOSE=1), so each process shows when it joined the run.
EPOCHS = {
    "MXJOB_EPOCHS": "5",
    "BATCHES": "40",
    "FREQUENT": "5",
    "BATCH_SECONDS": "0.2",
    "PS_VERBOSE": "1",
}
#: What a process of the next run prints on its way to training, and the moment each line names.
MARKS = (
    ("bound", "Bind to role="),
    ("connected", "connected to"),
    ("resumed", "resuming at epoch"),
)
CLASS = f"mxjob-checkpoint-{NAMESPACE}"
#: The label a claim selects its volume by.
VOLUME_LABEL = "mxjob-checkpoint-test/volume"


@pytest.fixture
def volumes(cluster: Node, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Makes 1 GiB hostPath volumes of the class CLASS, each labelled with a key a claim selects
    it by (`selecting`), its files in `tmp_path/<which>`; all removed after the test."""
    made: list[str] = []
    cluster.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": CLASS},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )

    def make(which: str) -> str:
        key = re.sub("[^a-z0-9]+", "-", f"{tmp_path.name}-{which}".lower())[-40:].strip("-")
        name = f"{CLASS}-{key}"
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": {VOLUME_LABEL: key}},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": CLASS,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": str(tmp_path / which), "type": "DirectoryOrCreate"},
                },
            }
        )
        made.append(name)
        return name

    yield make
    for name in made:
        cluster.kubectl("delete", "persistentvolume", name, "--ignore-not-found", "--wait=false")
    cluster.kubectl("delete", "storageclass", CLASS, "--ignore-not-found")


def selecting(cluster: Node, volume: str) -> dict[str, Any]:
    """A claim template of CLASS that binds the volume `volume` alone (by its label), when its
    first pod is scheduled."""
    key = (cluster.get("persistentvolume", volume) or {})["metadata"]["labels"][VOLUME_LABEL]
    return {
        "spec": {
            "storageClassName": CLASS,
            "selector": {"matchLabels": {VOLUME_LABEL: key}},
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }


def checkpointed_job(cluster: Node, name: str, strategy: str, volume: str) -> dict[str, Any]:
    """Scheduler, Server and two Workers running checkpointed.py in dist_sync under ExitCode
    (a killed Server restarts the whole job) with the restart strategy given, the checkpoint on
    `volume`, and the default grace period."""
    image = cluster.image("mxjob-mxnet")

    def each(replicas: int = 1) -> dict[str, Any]:
        spec = replica(
            image, replicas=replicas, policy="ExitCode", command=CHECKPOINTED, env=EPOCHS
        )
        # The grace period a pod has unless its user sets one (30 s), not the tier's 5 s: a
        # process that ignores SIGTERM (Python as PID 1 does) holds a deleted pod that long,
        # and an in-place restart does not wait for it (docs/restarts.md#in-place).
        del spec["template"]["spec"]["terminationGracePeriodSeconds"]
        return spec

    return mxjob(
        name,
        {"Scheduler": each(), "Server": each(), "Worker": each(2)},
        checkpoint={"volumeClaimTemplate": selecting(cluster, volume)},
        runPolicy={"restartStrategy": strategy},
    )


@dataclass
class Restart:
    """One job of the pair: its restart strategy, and its Server's kill."""

    strategy: str
    name: str
    volume: str
    folder: Path
    #: Its pods (UID, IP) just before the kill, and once run 1 trained its first round (not
    #: later: once the job ends, its cleanPodPolicy may delete the Server's pod).
    before: dict[str, tuple[str, str]] = field(default_factory=dict)
    after: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Its Server's process (the host's pid), found before the kill: finding it asks the API
    #: and runc (12 s under load in warm run 18), which must not count as the restart's time.
    pid: int | None = None
    #: When its Server was killed: Unix seconds, and the test's monotonic clock.
    killed: float = 0.0
    began: float = 0.0
    #: The newest epoch saved when its Server died.
    saved: int = 0

    def kill(self, cluster: Node, watch: "Watch") -> None:
        """SIGKILL its Server's process, and start watching what the API shows of it."""
        assert self.pid, f"{self.name}: its Server's process was never found"
        self.before = identities(cluster, self.name)
        self.began, self.killed = time.monotonic(), time.time()
        os.kill(self.pid, signal.SIGKILL)
        watch.add(self.name, self.killed, set(self.before) - {f"{self.name}-server-0"})
        # The epochs saved when the Server died (the volume's folder, on this host): a loaded
        # machine's kill may land past epoch 3 (warm run 18: at 4).
        self.saved = newest_checkpoint(self.folder)


@pytest.mark.alone(
    "weighs the two restart strategies against each other: another test's pods on the node "
    "would slow the kubelet for one more than for the other"
)
def test_both_strategies_resume_from_the_checkpoint_side_by_side(
    cluster: Node, volumes: Callable[[str], str], tmp_path: Path
) -> None:
    """Both restart strategies at once, so they share the machine's load of the moment
    (docs/restarts.md#in-place): two jobs, each Server killed as its epoch 3 begins; from the
    kill to Worker 0's first round of the next run. InPlace keeps the Scheduler's and the
    Workers' pods (UID and IP); the failed Server is made again either way."""
    jobs = [
        Restart(strategy, f"kept-{strategy.lower()}", volumes(strategy), tmp_path / strategy)
        for strategy in ("Recreate", "InPlace")
    ]
    for job in jobs:
        cluster.apply(checkpointed_job(cluster, job.name, job.strategy, job.volume))
    for job in jobs:
        job.pid = cluster.pid(f"{job.name}-server-0", timeout=300)
    watch = Watch(cluster)
    # Each killed as its epoch 3 begins, by its Worker's own log (the status lags by up to a
    # pass): epochs 0-2 are saved, so the next run begins at 3 (or later, if the kill lands
    # later).
    waiting = list(jobs)

    def kill_those_at_epoch_3() -> bool:
        for job in list(waiting):
            if "Epoch[3] Batch" in cluster.logs(f"{job.name}-worker-0"):
                job.kill(cluster, watch)
                waiting.remove(job)
        return not waiting

    first: dict[str, tuple[str, float]] = {}

    def first_rounds() -> bool:
        for job in jobs:
            worker = None if job.strategy in first else resumed(cluster, job.name)
            if worker:
                first[job.strategy] = (worker, time.monotonic() - job.began)
                job.after = identities(cluster, job.name)
        return len(first) == len(jobs)

    with watch:
        wait_for("epoch 3 of both jobs", kill_those_at_epoch_3, 300)
        # A bound on liveness, not a goal: loaded runs took up to 74 s (the figures in
        # docs/restarts.md#measured).
        wait_for("both jobs' first round of run 1", first_rounds, 300)
    rounds: dict[str, float] = {}
    for job in jobs:
        worker, resumed_after = first[job.strategy]
        cluster.wait_condition(job.name, "Succeeded", timeout=300)
        took = time.monotonic() - job.began
        status = cluster.status(job.name)
        resumes = {r["run"]: r["epoch"] for r in status["progress"]["resumes"]}
        print(
            f"\n{job.strategy}: server killed as epoch 3 of 5 began ({job.saved} saved): run 1 "
            f"began at epoch {resumes.get(1)}, its first round {resumed_after:.1f}s later, "
            f"Succeeded {took:.1f}s later"
        )
        apart = job.killed - min(j.killed for j in jobs)
        print(f"{job.strategy}: where the restart's time went, seconds after the kill:")
        print(f"  its kill: {apart:.1f}s after the first of the two")
        print(f"  the API showed: {watch.seen.get(job.name)}")
        print(f"  the hook's syncs: {hook_syncs(cluster, job.name, job.killed, resumed_after)}")
        if job.strategy == "InPlace":
            print(f"  the restarter's patches: {restarter_patches(cluster, job.name, job.killed)}")
        for pod, obj in sorted(cluster.pods(job.name).items()):
            seen = moments(cluster, obj, job.killed)
            print(f"  {pod}: {seen}")
            if pod == worker:
                rounds[job.strategy] = seen.get("first round", resumed_after)
        check_resumed(cluster, job, status, resumes, worker)
    print(
        f"\nfrom the kill to Worker 0's first round (its log): {rounds}; InPlace took "
        f"{rounds['InPlace'] / rounds['Recreate']:.2f} times Recreate's"
    )


def check_resumed(
    cluster: Node, job: Restart, status: dict[str, Any], resumes: dict[int, int], worker: str
) -> None:
    """At most the epoch the kill cut short is done again: the next run begins after the newest
    checkpoint saved before the kill, or after the one Worker 0 was saving as it landed; the
    pods kept as the strategy says; the claim bound to its volume, and deleted with the job."""
    assert set(resumes) == {0, 1} and resumes[0] == 0, status["progress"]
    assert resumes[1] in (job.saved, job.saved + 1), (job.saved, status["progress"])
    assert resumes[1] >= 3, status["progress"]
    assert status["replicaStatuses"]["Server"]["restarts"] == 1, status["replicaStatuses"]
    assert f"resuming at epoch {resumes[1]}" in cluster.logs(worker)
    if job.strategy == "InPlace":
        kept = {pod: uid_ip for pod, uid_ip in job.before.items() if "-server-" not in pod}
        assert {pod: job.after.get(pod) for pod in kept} == kept
        assert set(job.after) == {*kept, f"{job.name}-server-0-r1"}
    else:
        assert not set(job.before) & set(job.after), (job.before, job.after)
    claim = cluster.get("persistentvolumeclaim", f"{job.name}-checkpoint")
    assert claim is not None and claim["status"]["phase"] == "Bound", claim
    assert claim["spec"]["volumeName"] == job.volume
    # Deleted with the job (its owner reference): the volume is released, its files kept.
    cluster.delete("mxjob", job.name)
    cluster.wait_gone("persistentvolumeclaim", f"{job.name}-checkpoint")


class Watch:
    """What the API showed of each killed job, read from a thread every half second plus the
    read's own time: the first moment each sign (`signs`) was seen, in seconds after that
    job's kill."""

    def __init__(self, cluster: Node) -> None:
        self.cluster = cluster
        self.killed: dict[str, float] = {}
        self.others: dict[str, set[str]] = {}
        self.seen: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def add(self, job: str, killed: float, others: set[str]) -> None:
        """Watch `job`, its Server killed at `killed` (Unix seconds), beside `others` (the
        other pods it had)."""
        self.seen[job], self.others[job] = {}, others
        self.killed[job] = killed

    def __enter__(self) -> "Watch":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=90)  # longer than one kubectl call may take

    def _run(self) -> None:
        """Read while the test runs, once a job was killed; a read that fails is noted (in
        `seen`, as `read failed`) and the next one goes on."""
        while not self._stop.wait(0.5):
            if not self.killed:
                continue
            started = time.time()
            try:
                read = self.cluster.kubectl(
                    "get", "pods,mxjobs", "-n", NAMESPACE, "-o", "json", check=False
                )
                items = json.loads(read.stdout)["items"] if read.returncode == 0 else None
            except Exception:  # a measurement: the test's checks go on
                items = None
            # The API answered at some moment of the call: its middle, within half the call.
            now = (started + time.time()) / 2
            for job, killed in list(self.killed.items()):
                if killed > started:
                    continue
                for sign in (
                    signs(job, self.others[job], items) if items is not None else {"read failed"}
                ):
                    self.seen[job].setdefault(sign, round(now - killed, 1))


def signs(job: str, others: set[str], items: list[dict[str, Any]]) -> set[str]:
    """What a list of pods and MXJobs shows of a restart of `job` after its Server's kill: its
    killed Server's exit, failure, deletion and absence; any pod of it deleted; the process of
    one, then all of the `others` (its other pods) stopped or gone; the job's Restarting
    condition; the order and `go` of an in-place restart."""
    found: set[str] = set()
    server = f"{job}-server-0"
    pods = {i["metadata"]["name"]: i for i in items if i.get("kind") == "Pod"}
    killed = pods.get(server)
    if killed is None:
        found.add("server gone")
    else:
        if not running(killed):
            found.add("server exit shown")
        if killed.get("status", {}).get("phase") == "Failed":
            found.add("server Failed")
    for name, pod in pods.items():
        if name.startswith(f"{job}-") and pod["metadata"].get("deletionTimestamp"):
            found.add("a pod deleted")
    stopped = {name for name in others if not running(pods.get(name, {}))}
    if stopped:
        found.add("a process stopped")
    if stopped == others:
        found.add("every process stopped")
    mxjob = next(
        (i for i in items if i.get("kind") == "MXJob" and i["metadata"]["name"] == job), {}
    )
    status = mxjob.get("status") or {}
    if any(
        c.get("type") == "Restarting" and c.get("status") == "True"
        for c in status.get("conditions") or []
    ):
        found.add("Restarting")
    order = status.get("inPlaceRestart") or {}
    if order:
        found.add("go" if order.get("go") else "order")
    return found


def running(pod: dict[str, Any]) -> bool:
    """Whether the pod's mxnet container runs, as its status says."""
    statuses = pod.get("status", {}).get("containerStatuses", [])
    return any(c["name"] == MXNET_CONTAINER and "running" in c.get("state", {}) for c in statuses)


def moments(cluster: Node, pod: dict[str, Any], since: float) -> dict[str, float]:
    """Where a restart's time went for one pod, in seconds after `since`: when it was made, its
    restarter sidecar last started (in place: when the kubelet restarted every container), its
    barrier let it go, its mxnet container started (its status), and its process
    printed its first line, each of MARKS and its first round after resuming (its log's
    timestamps). The test prints them for every pod (docs/restarts.md#in-place)."""
    status = pod.get("status", {})
    containers = {
        c["name"]: c.get("state", {})
        for key in ("initContainerStatuses", "containerStatuses")
        for c in status.get(key, [])
    }
    mxnet: dict[str, Any] = next(iter(containers.get(MXNET_CONTAINER, {}).values()), {})
    restarter: dict[str, Any] = next(iter(containers.get(RESTARTER_CONTAINER, {}).values()), {})
    stamps = {
        "made": pod["metadata"]["creationTimestamp"],
        "restarted": restarter.get("startedAt"),
        "released": containers.get(BARRIER_CONTAINER, {}).get("terminated", {}).get("finishedAt"),
        "started": mxnet.get("startedAt"),
    }
    found = {key: after(stamp, since) for key, stamp in stamps.items() if stamp}
    for stamp, text in cluster.stamped_log(pod["metadata"]["name"]):
        moment = round(stamp.timestamp() - since, 1)
        found.setdefault("first line", moment)
        for key, line in MARKS:
            if line in text:
                found.setdefault(key, moment)
        if "Batch [" in text and "resumed" in found:
            found.setdefault("first round", moment)
    return found


def restarter_patches(cluster: Node, job: str, since: float) -> dict[str, list[float]]:
    """When the restarter component patched the job's pods, by what it wrote (the order, go, a
    nudge), in seconds after `since` (its log: docs/restarts.md#in-place)."""
    found: dict[str, list[float]] = {}
    for entry in logged(cluster, job, "deployment/mxjob-restarter"):
        what = patch_kind(entry)
        if what is not None:
            found.setdefault(what, []).append(after(entry["time"], since))
    return found


def hook_syncs(cluster: Node, job: str, since: float, until: float) -> list[tuple[float, str]]:
    """The hook's calls for the job from `since` to `until` seconds after it (each with the
    outcome it logged), from the logs of every hook pod."""
    target = ("-l", "app.kubernetes.io/name=mxjob-hook", "--tail=-1")
    calls = (
        (after(e["time"], since), str(e.get("outcome"))) for e in logged(cluster, job, *target)
    )
    return sorted(call for call in calls if 0 <= call[0] <= until)


def logged(cluster: Node, job: str, *target: str) -> list[dict[str, Any]]:
    """The JSON log lines of a component (`target`: what `kubectl logs` is given) that name
    this very job (its uid), from the last 15 minutes."""
    uid = (cluster.get("mxjob", job) or {}).get("metadata", {}).get("uid")
    log = cluster.kubectl("logs", "-n", HOOK_NAMESPACE, *target, "--since=15m", check=False)
    entries = (json.loads(line) for line in log.stdout.splitlines() if line.startswith("{"))
    return [entry for entry in entries if entry.get("uid") == uid]


def after(stamp: str, since: float) -> float:
    """Seconds from `since` (Unix seconds) to a timestamp of the API server or of a log line,
    to a tenth."""
    return round(datetime.fromisoformat(stamp).timestamp() - since, 1)


def newest_checkpoint(folder: Path) -> int:
    """The highest epoch saved in `folder` (`model-<epoch>.params`, workloads/checkpointed.py)."""
    return max((int(p.stem.rpartition("-")[2]) for p in folder.glob("model-*.params")), default=0)


def identities(cluster: Node, name: str) -> dict[str, tuple[str, str]]:
    """Each pod of the job not deleted: its UID and IP."""
    return {
        pod: (obj["metadata"]["uid"], obj["status"].get("podIP", ""))
        for pod, obj in cluster.pods(name).items()
        if not obj["metadata"].get("deletionTimestamp")
    }


def resumed(cluster: Node, name: str) -> str | None:
    """Worker 0's pod once its running process resumed and trained a round (a Speedometer
    line after "resuming at epoch"): the same pod restarted in place, or its next attempt."""
    for pod in sorted(cluster.pods(name)):
        if pod.startswith(f"{name}-worker-0"):
            log = cluster.logs(pod)
            if "Batch [" in log.partition("resuming at epoch")[2]:
                return pod
    return None


def test_a_retained_claim_outlives_its_job_and_serves_the_next(
    cluster: Node, volumes: Callable[[str], str]
) -> None:
    """Retain: the job is deleted, its claim stays Bound to the same volume with the file its
    Worker wrote; a job of the same name resumes on it once the user labels it with the new
    job's uid (Metacontroller adopts it); edited to Delete, that job takes the claim with it."""
    volume = volumes("retained")
    checkpoint = {
        "volumeClaimTemplate": selecting(cluster, volume),
        "retentionPolicy": {"whenDeleted": "Retain"},
    }
    writes = ["sh", "-c", 'echo 7 >> "$MXJOB_CHECKPOINT_DIR/epochs"; ' + WAITING[-1]]
    job = mxjob(
        "retained",
        {"Worker": replica(cluster.image("mxjob-base"), command=writes)},
        checkpoint=checkpoint,
    )
    cluster.apply(job)
    first = cluster.get("mxjob", "retained")
    assert first is not None and first["metadata"]["finalizers"] == [RETAIN_FINALIZER]
    cluster.wait_condition("retained", "Running", timeout=120)
    claim = cluster.get("persistentvolumeclaim", "retained-checkpoint")
    assert claim is not None and claim["status"]["phase"] == "Bound", claim

    cluster.delete("mxjob", "retained")
    cluster.wait_gone("mxjob", "retained")  # the retention component released the claim
    wait_for("the Worker gone", lambda: not cluster.pods("retained"), 60)
    kept = cluster.get("persistentvolumeclaim", "retained-checkpoint")
    assert kept is not None and kept["metadata"]["uid"] == claim["metadata"]["uid"]
    assert kept["status"]["phase"] == "Bound" and kept["spec"]["volumeName"] == volume
    assert "ownerReferences" not in kept["metadata"], kept["metadata"]
    assert kept["metadata"]["annotations"][RETAINED_FROM] == first["metadata"]["uid"]

    # The same job again: it waits for a claim of its name it does not own, until the user
    # hands the kept one over; then its Worker finds the first run's file.
    cluster.apply(job)
    second = cluster.get("mxjob", "retained")
    assert second is not None
    handed = json.dumps({"metadata": {"labels": {"controller-uid": second["metadata"]["uid"]}}})
    cluster.kubectl(
        "patch", "persistentvolumeclaim", "retained-checkpoint", "-n", NAMESPACE,
        "--type=merge", "-p", handed,
    )  # fmt: skip
    cluster.wait_condition("retained", "Running", timeout=120)
    worker = next(iter(cluster.pods("retained")))
    read = cluster.kubectl(
        "exec", "-n", NAMESPACE, worker, "--", "sh", "-c", 'cat "$MXJOB_CHECKPOINT_DIR/epochs"'
    )
    assert read.stdout.split() == ["7", "7"], read.stdout
    adopted = cluster.get("persistentvolumeclaim", "retained-checkpoint")
    assert adopted is not None and adopted["metadata"]["uid"] == claim["metadata"]["uid"]

    delete = json.dumps({"spec": {"checkpoint": {"retentionPolicy": {"whenDeleted": "Delete"}}}})
    cluster.kubectl("patch", "mxjob", "retained", "-n", NAMESPACE, "--type=merge", "-p", delete)
    assert "finalizers" not in (cluster.get("mxjob", "retained") or {})["metadata"]
    cluster.delete("mxjob", "retained")
    cluster.wait_gone("persistentvolumeclaim", "retained-checkpoint")

"""The restarter component (`mxjob/restarter/`): the in-place restart order an MXJob's status
carries reaches its pods' annotations and run label, and nothing else of theirs.

The decisions (`mxjob.restarter.plan`) are tested as tables. The loop
(`mxjob.restarter.controller`) runs against an in-memory stand-in for the calls it makes: the MXJob
watch as the API server streams it (read by the client's own `kubernetes.watch`), the pod list
(label selector, pages) and the pod patch, applied as the API server applies a JSON patch. Each
patch it makes is checked against the install's ValidatingAdmissionPolicy, so that the component
and the policy that fences its token agree.
"""

import copy
import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from hooks.core.public import (
    ANNOTATION_GO,
    ANNOTATION_NUDGE,
    ANNOTATION_RESTART,
    ANNOTATION_RUN,
    LABEL_JOB_NAME,
    LABEL_RUN,
)
from hooks.logs import JsonFormatter
from mxjob.component import runtime
from mxjob.restarter import __main__ as cli
from mxjob.restarter import controller
from mxjob.restarter.controller import (
    MAX_NUDGES,
    MAX_PATCHES,
    PARALLEL_PATCHES,
    WATCH_SECONDS,
    Result,
    act,
    run_once,
)
from mxjob.restarter.plan import (
    NUDGE_SECONDS,
    Order,
    OrderError,
    Patch,
    Plan,
    controlled,
    order,
    plan,
    selector,
    writes,
)
from tests.manifest_support import policy_admits
from testsupport.component_cli import against
from testsupport.patching import apply_patch, refused
from testsupport.restarter_log import patch_kind

REPO = Path(__file__).resolve().parent.parent
RESTART = "/metadata/annotations/mxjob.kubeflow.org~1restart"
GO = "/metadata/annotations/mxjob.kubeflow.org~1go"
RUN = "/metadata/labels/mxjob.kubeflow.org~1run"
NUDGE = "/metadata/annotations/mxjob.kubeflow.org~1nudge"
#: The moment the decisions are made at (Unix seconds), the fake cluster's clock's too.
NOW = 1000.0
NOTE_RUN = "/metadata/annotations/mxjob.kubeflow.org~1run"


def mxjob(name: str = "train", restart: object = None, namespace: str = "team-a") -> dict[str, Any]:
    """An MXJob as the API server sends it; `restart`: its status.inPlaceRestart, if any."""
    status: dict[str, Any] = {"conditions": []}
    if restart is not None:
        status["inPlaceRestart"] = restart
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "7"}
    spec = {"mxReplicaSpecs": {"Worker": {"replicas": 2}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": meta, "spec": spec,
            "status": status}  # fmt: skip


def owner(uid: str, *, kind: str = "MXJob", controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "train", "uid": uid,
            "controller": controller, "blockOwnerDeletion": True}  # fmt: skip


def pod(
    name: str = "train-worker-0",
    *,
    job: str = "train",
    namespace: str = "team-a",
    uid: str | None = None,
    owners: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    """A pod of the MXJob `job` (owned by `uid-<job>`) as the API server lists it; without
    annotations unless given, with the job's name label and those given."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"pod-{name}",
        "resourceVersion": "11",
        "labels": {LABEL_JOB_NAME: job, "training.kubeflow.org/replica-type": "worker",
                   **(labels or {})},
        "ownerReferences": [owner(f"uid-{job}")] if owners is None else owners,
    }  # fmt: skip
    if annotations is not None:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2026-03-01T12:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "mxnet", "image": "mxnet:1.9"}]},
    }


def held(candidate: dict[str, Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The pod with its barrier in `state` (running: the barrier holds it), as the kubelet
    reports it."""
    barrier = {"name": "mxjob-barrier", "state": state or {"running": {}}}
    candidate["status"] = {"phase": "Pending", "initContainerStatuses": [barrier]}
    return candidate


def running(candidate: dict[str, Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The pod let go by its barrier once, its mxnet container in `state` (running)."""
    barrier = {"name": "mxjob-barrier", "state": {"terminated": {"exitCode": 0}}}
    mxnet = {"name": "mxnet", "state": state or {"running": {}}}
    candidate["status"] = {"phase": "Running", "initContainerStatuses": [barrier],
                           "containerStatuses": [mxnet]}  # fmt: skip
    return candidate


def made_at(candidate: dict[str, Any], moment: str) -> dict[str, Any]:
    """The pod made at `moment` (NOW is 1970-01-01T00:16:40Z)."""
    candidate["metadata"]["creationTimestamp"] = moment
    return candidate


def ordered(run: int = 3, *, go: bool = False, name: str = "train") -> Order:
    return Order("team-a", name, f"uid-{name}", run, go)


# --- the decisions ----------------------------------------------------------------------------

ORDER_CASES = [
    ("no order", mxjob(), None),
    ("no status", {"metadata": mxjob()["metadata"]}, None),
    ("not an object", "train", None),
    ("run and go", mxjob(restart={"run": 3, "go": True}), ordered(3, go=True)),
    ("not yet go", mxjob(restart={"run": 1, "go": False}), ordered(1)),
    ("the largest run", mxjob(restart={"run": 999_999_999, "go": False}), ordered(999_999_999)),
]  # fmt: skip


@pytest.mark.parametrize(("why", "job", "want"), ORDER_CASES, ids=[c[0] for c in ORDER_CASES])
def test_order(why: str, job: object, want: Order | None) -> None:
    assert order(job) == want, why


BAD_ORDERS = [
    ("run 0", {"run": 0, "go": False}),
    ("run too large", {"run": 1_000_000_000, "go": False}),
    ("run negative", {"run": -1, "go": False}),
    ("run a string", {"run": "3", "go": False}),
    ("run a bool", {"run": True, "go": False}),
    ("run a float", {"run": 3.0, "go": False}),
    ("no run", {"go": True}),
    ("go a string", {"run": 3, "go": "true"}),
    ("go a number", {"run": 3, "go": 1}),
    ("no go", {"run": 3}),
    ("not an object", "run 3"),
    ("null inside", {"run": None, "go": None}),
]  # fmt: skip


@pytest.mark.parametrize(("why", "restart"), BAD_ORDERS, ids=[c[0] for c in BAD_ORDERS])
def test_a_malformed_order_is_refused(why: str, restart: object) -> None:
    with pytest.raises(OrderError):
        order(mxjob(restart=restart))


def test_an_order_of_a_job_without_uid_is_refused() -> None:
    job = mxjob(restart={"run": 3, "go": False})
    del job["metadata"]["uid"]
    with pytest.raises(OrderError, match="uid"):
        order(job)


def test_the_pods_are_selected_by_the_jobs_name() -> None:
    assert selector(ordered()) == "training.kubeflow.org/job-name=train"


def _without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    del obj["metadata"][key]
    return obj


CONTROLLED_CASES = [
    ("the job's pod", pod(), True),
    (
        "the job among other owners",
        pod(owners=[owner("cm", kind="ConfigMap", controller=False), owner("uid-train")]),
        True,
    ),
    ("a pod of an older job of the same name", pod(owners=[owner("uid-older")]), False),
    ("owned, not controlled", pod(owners=[owner("uid-train", controller=False)]), False),
    ("controlled by another kind", pod(owners=[owner("uid-train", kind="ReplicaSet")]), False),
    ("no owners", pod(owners=[]), False),
    ("another job's name label", pod(job="other", owners=[owner("uid-train")]), False),
    ("being deleted", pod(deleting=True), False),
    ("no uid", _without(pod(), "uid"), False),
    ("no labels", _without(pod(), "labels"), False),
    ("not an object", None, False),
]


@pytest.mark.parametrize(
    ("why", "candidate", "want"), CONTROLLED_CASES, ids=[c[0] for c in CONTROLLED_CASES]
)
def test_controlled(why: str, candidate: object, want: bool) -> None:
    assert controlled(candidate, ordered()) is want, why


TEST_UID = {"op": "test", "path": "/metadata/uid", "value": "pod-train-worker-0"}
IN_STEP = {ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3", ANNOTATION_GO: "3"}
#: A pod of run 2 (or of no run one can read) raised to run 3, and go.
RAISED = [
    TEST_UID,
    {"op": "replace", "path": RESTART, "value": "3"},
    {"op": "replace", "path": NOTE_RUN, "value": "3"},
    {"op": "replace", "path": GO, "value": "3"},
    {"op": "add", "path": NUDGE, "value": "1000"},
    {"op": "replace", "path": RUN, "value": "3"},
]

PLAN_CASES = [
    (
        "a pod with no annotations: they are added whole with the nudge's moment, the label"
        " beside the others",
        pod(), ordered(3),
        Plan([TEST_UID, {"op": "add", "path": "/metadata/annotations",
                         "value": {ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3",
                                   ANNOTATION_NUDGE: "1000"}},
              {"op": "add", "path": RUN, "value": "3"}]),
    ),
    (
        "go: the three annotations and the nudge's moment, in one add of the annotations",
        pod(), ordered(3, go=True),
        Plan([TEST_UID, {"op": "add", "path": "/metadata/annotations",
                         "value": {ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3",
                                   ANNOTATION_GO: "3", ANNOTATION_NUDGE: "1000"}},
              {"op": "add", "path": RUN, "value": "3"}]),
    ),
    (
        "older values replaced, others' keys untouched",
        pod(annotations={ANNOTATION_RESTART: "2", ANNOTATION_RUN: "2", ANNOTATION_GO: "2",
                         "team": "vision"},
            labels={LABEL_RUN: "2"}),
        ordered(3, go=True),
        Plan(RAISED),
    ),
    (
        "not go: the go annotation is left as it is",
        pod(annotations={ANNOTATION_GO: "2"}), ordered(3),
        Plan([TEST_UID, {"op": "add", "path": RESTART, "value": "3"},
              {"op": "add", "path": NOTE_RUN, "value": "3"},
              {"op": "add", "path": NUDGE, "value": "1000"},
              {"op": "add", "path": RUN, "value": "3"}]),
    ),
    (
        "go given after the restart: only the go annotation, with the nudge's moment",
        pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3"}, labels={LABEL_RUN: "3"}),
        ordered(3, go=True),
        Plan([TEST_UID, {"op": "add", "path": GO, "value": "3"},
              {"op": "add", "path": NUDGE, "value": "1000"}]),
    ),
    (
        "in step: no patch",
        pod(annotations=IN_STEP, labels={LABEL_RUN: "3"}), ordered(3, go=True),
        Plan([]),
    ),
    (
        "in step but for go, which the order does not give yet: no patch",
        pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3"}, labels={LABEL_RUN: "3"}),
        ordered(3),
        Plan([]),
    ),
    (
        "a larger number is kept, the smaller ones raised",
        pod(annotations={ANNOTATION_RESTART: "12", ANNOTATION_RUN: "2", ANNOTATION_GO: "2"},
            labels={LABEL_RUN: "2"}),
        ordered(3, go=True),
        Plan([TEST_UID, {"op": "replace", "path": NOTE_RUN, "value": "3"},
              {"op": "replace", "path": GO, "value": "3"},
              {"op": "add", "path": NUDGE, "value": "1000"},
              {"op": "replace", "path": RUN, "value": "3"}], (ANNOTATION_RESTART,)),
    ),
    (
        "every number larger: no patch, each key said",
        pod(annotations={ANNOTATION_RESTART: "4", ANNOTATION_RUN: "4", ANNOTATION_GO: "4"},
            labels={LABEL_RUN: "4"}),
        ordered(3, go=True),
        Plan([], (ANNOTATION_RESTART, ANNOTATION_RUN, ANNOTATION_GO, LABEL_RUN)),
    ),
    (
        "what is not a number is replaced, leading zeros too",
        pod(annotations={ANNOTATION_RESTART: "later", ANNOTATION_RUN: "", ANNOTATION_GO: "0003"},
            labels={LABEL_RUN: "+9"}),
        ordered(3, go=True),
        Plan(RAISED),
    ),
    (
        "no labels at all: added whole",
        _without(pod(annotations=IN_STEP), "labels"), ordered(3, go=True),
        Plan([TEST_UID, {"op": "add", "path": "/metadata/labels", "value": {LABEL_RUN: "3"}}]),
    ),
    (
        "held by its barrier NUDGE_SECONDS after go: the nudge alone, at the moment",
        held(pod(annotations={**IN_STEP, ANNOTATION_NUDGE: "995"}, labels={LABEL_RUN: "3"})),
        ordered(3, go=True),
        Plan([TEST_UID, {"op": "replace", "path": NUDGE, "value": "1000"}], nudge=True),
    ),
    (
        "held, go written less than NUDGE_SECONDS ago: no patch yet",
        held(pod(annotations={**IN_STEP, ANNOTATION_NUDGE: "996"}, labels={LABEL_RUN: "3"})),
        ordered(3, go=True),
        Plan([]),
    ),
    (
        "held, go written without a moment (or not a number): nudged at once",
        held(pod(annotations={**IN_STEP, ANNOTATION_NUDGE: "soon"}, labels={LABEL_RUN: "3"})),
        ordered(3, go=True),
        Plan([TEST_UID, {"op": "replace", "path": NUDGE, "value": "1000"}], nudge=True),
    ),
    (
        "held, made by the hook with go 2 s ago (no moment): its making is the moment, not yet",
        made_at(held(pod(annotations=IN_STEP, labels={LABEL_RUN: "3"})), "1970-01-01T00:16:38Z"),
        ordered(3, go=True),
        Plan([]),
    ),
    (
        "held, made by the hook with go 6 s ago (no moment): nudged",
        made_at(held(pod(annotations=IN_STEP, labels={LABEL_RUN: "3"})), "1970-01-01T00:16:34Z"),
        ordered(3, go=True),
        Plan([TEST_UID, {"op": "add", "path": NUDGE, "value": "1000"}], nudge=True),
    ),
    (
        "held with its run label behind: the label, and the nudge beside it",
        held(pod(annotations=IN_STEP, labels={LABEL_RUN: "2"})), ordered(3, go=True),
        Plan([TEST_UID, {"op": "add", "path": NUDGE, "value": "1000"},
              {"op": "replace", "path": RUN, "value": "3"}]),
    ),
    (
        "released: its barrier has ended, no nudge",
        held(pod(annotations={**IN_STEP, ANNOTATION_NUDGE: "900"}, labels={LABEL_RUN: "3"}),
             {"terminated": {"exitCode": 0}}),
        ordered(3, go=True),
        Plan([]),
    ),
    (
        "before go, its process still running unheld 5 s after restart: nudged",
        running(pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3",
                                 ANNOTATION_NUDGE: "995"}, labels={LABEL_RUN: "3"})),
        ordered(3),
        Plan([TEST_UID, {"op": "replace", "path": NUDGE, "value": "1000"}], nudge=True),
    ),
    (
        "before go, its process running, restart written 4 s ago: no patch yet",
        running(pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3",
                                 ANNOTATION_NUDGE: "996"}, labels={LABEL_RUN: "3"})),
        ordered(3),
        Plan([]),
    ),
    (
        "before go, its process ended (a failed pod, or one restarting): no nudge",
        running(pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3",
                                 ANNOTATION_NUDGE: "900"}, labels={LABEL_RUN: "3"}),
                {"terminated": {"exitCode": 137}}),
        ordered(3),
        Plan([]),
    ),
    (
        "held before go: the barrier waits as it should, no nudge",
        held(pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3", ANNOTATION_GO: "2"},
                 labels={LABEL_RUN: "3"})),
        ordered(3),
        Plan([]),
    ),
    (
        "held, its go a later run's: kept, no nudge",
        held(pod(annotations={ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3", ANNOTATION_GO: "4"},
                 labels={LABEL_RUN: "3"})),
        ordered(3, go=True),
        Plan([], (ANNOTATION_GO,)),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("why", "candidate", "job", "want"), PLAN_CASES,
                         ids=[c[0] for c in PLAN_CASES])  # fmt: skip
def test_plan(why: str, candidate: dict[str, Any], job: Order, want: Plan) -> None:
    assert plan(candidate, job, NOW) == want, why
    if want.patch:
        patched = apply_patch(candidate, want.patch)
        assert plan(patched, job, NOW) == Plan([], want.ahead), "one patch puts the pod in step"


WRITES_CASES = [
    ("a field the pod has: what it holds replaced, what it lacks added", {"a": "2"}, ["a", "b"],
     [{"op": "replace", "path": "/metadata/labels/a", "value": "3"},
      {"op": "add", "path": "/metadata/labels/b", "value": "3"}]),
    ("a field the pod lacks: added whole", None, ["a", "b"],
     [{"op": "add", "path": "/metadata/labels", "value": {"a": "3", "b": "3"}}]),
    ("a field that is not a mapping: added whole over it", "a=2", ["a"],
     [{"op": "add", "path": "/metadata/labels", "value": {"a": "3"}}]),
    ("nothing to set: nothing, even without the field", None, [], []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("why", "present", "keys", "want"), WRITES_CASES, ids=[c[0] for c in WRITES_CASES]
)
def test_writes(why: str, present: object, keys: list[str], want: Patch) -> None:
    assert writes("labels", present, dict.fromkeys(keys, "3")) == want, why


# --- the loop ---------------------------------------------------------------------------------


@dataclass
class Streamed:
    """The HTTP response of a watch as urllib3 gives it to `kubernetes.watch`: JSON lines."""

    lines: list[bytes]
    #: Called once the last line is read: the API server ends the watch at its timeout.
    ended: Callable[[], None]
    status: int = 200

    def stream(self, amt: int | None = None, *, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.lines
        self.ended()

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


@dataclass
class FakeCluster:
    """In-memory MXJobs and pods behind the calls `mxjob.restarter.controller` makes.

    `calls` records each call as (verb, resource, what): the namespace of a job list, the
    timeout of a watch, the selector of a pod list, the name of a patched pod; `patches` each
    patch body; `updates` each pod a patch changed, before and after (what admission sees).
    `fail` makes the next such call raise (once), keyed as `calls` records it. A watch sends
    every job as ADDED, then the changes `changes` holds for it (one list per watch, in order),
    and moves the clock on by its timeout once all is read; `before_watch` runs before it, with
    the watch's number; from watch number `stop_after` on, the loop's `stop` is set.
    `before_patch` runs just before a patch lands (a race). `page_size` makes pod pages smaller
    than the limit asked.
    """

    jobs: list[dict[str, Any]]
    pods: list[dict[str, Any]] = field(default_factory=list)
    fail: dict[tuple[str, str, object], Exception] = field(default_factory=dict)
    changes: list[list[dict[str, Any]]] = field(default_factory=list)
    before_watch: Callable[[int], None] | None = None
    before_patch: Callable[[], None] | None = None
    watches: int = 0
    stop_after: int = 1_000_000
    stop: threading.Event = field(default_factory=threading.Event)
    now: float = 1000.0
    calls: list[tuple[str, str, object]] = field(default_factory=list)
    patches: list[tuple[str, Patch]] = field(default_factory=list)
    updates: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    page_size: int | None = None

    def _call(self, verb: str, resource: str, what: object) -> None:
        self.calls.append((verb, resource, what))
        failure = self.fail.pop((verb, resource, what), None)
        if failure is not None:
            raise failure

    def clock(self) -> float:
        return self.now

    def _jobs(self, namespace: str | None, options: dict[str, Any]) -> object:
        if not options.get("watch"):
            self._call("list", "mxjobs", namespace)
            items = [j for j in self.jobs if namespace in (None, j["metadata"]["namespace"])]
            return {"kind": "MXJobList", "metadata": {}, "items": copy.deepcopy(items)}
        assert options.get("resource_version") is None, "each watch lists every job first"
        assert options["_preload_content"] is False
        self.watches += 1
        if self.before_watch is not None:
            self.before_watch(self.watches)
        self._call("watch", "mxjobs", options["timeout_seconds"])
        listed = [{"type": "ADDED", "object": j} for j in self.jobs
                  if namespace in (None, j["metadata"]["namespace"])]  # fmt: skip
        changes = self.changes.pop(0) if self.changes else []
        if self.watches >= self.stop_after:
            self.stop.set()

        def ended() -> None:
            self.now += options["timeout_seconds"]

        return Streamed([json.dumps(e).encode() + b"\n" for e in listed + changes], ended)

    def list_cluster_custom_object(
        self, group: str, version: str, plural: str, **options: Any
    ) -> Any:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        return self._jobs(None, options)

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **options: Any
    ) -> Any:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        return self._jobs(namespace, options)

    def list_namespaced_pod(
        self, namespace: str, *, label_selector: str | None = None, limit: int | None = None,
        _continue: str | None = None, _preload_content: bool = True, **_: Any,
    ) -> Any:  # fmt: skip
        assert _preload_content is False, "pods are read as JSON, as the API server sends them"
        assert limit is not None and label_selector is not None
        self._call("list", "pods", label_selector)
        key, value = label_selector.split("=")
        matching = [p for p in self.pods if p["metadata"]["namespace"] == namespace
                    and p["metadata"].get("labels", {}).get(key) == value]  # fmt: skip
        size = min(limit, self.page_size or limit)
        start = int(_continue or 0)
        more = start + size < len(matching)
        page = {"metadata": {"continue": str(start + size) if more else ""},
                "items": copy.deepcopy(matching[start : start + size])}  # fmt: skip
        return SimpleNamespace(data=json.dumps(page).encode())

    def patch_namespaced_pod(
        self, name: str, namespace: str, body: Patch, *, _content_type: str | None = None, **_: Any
    ) -> object:
        # Without it the client may send the list as a merge patch, which the API server refuses.
        assert _content_type == "application/json-patch+json"
        self._call("patch", "pods", name)
        self.patches.append((name, body))
        if self.before_patch is not None:
            self.before_patch()
        for i, found in enumerate(self.pods):
            if (found["metadata"]["namespace"], found["metadata"]["name"]) == (namespace, name):
                patched = apply_patch(found, body)
                self.updates.append((found, patched))
                self.pods[i] = patched
                return patched
        raise refused(404)

    def run_once(self, namespace: str | None = None) -> Result:
        return run_once(self, self, namespace, self.clock)

    def run(self, interval: float = 2.0, namespace: str | None = None) -> None:
        controller.run(self, self, interval, self.stop, namespace, self.clock, self.clock)

    def pod(self, name: str) -> dict[str, Any]:
        (found,) = [p for p in self.pods if p["metadata"]["name"] == name]
        return found


SELECT = ("list", "pods", "training.kubeflow.org/job-name=train")
LIST = ("list", "mxjobs", None)


def in_step(candidate: dict[str, Any], run: int, go: bool) -> bool:
    meta = candidate["metadata"]
    notes, labels = meta.get("annotations", {}), meta.get("labels", {})
    return (
        notes.get(ANNOTATION_RESTART) == str(run)
        and labels.get(LABEL_RUN) == str(run)
        and (notes.get(ANNOTATION_GO) == str(run)) is go
    )


def test_a_pass_puts_every_pod_of_an_ordered_job_in_step_with_one_patch_each() -> None:
    pods = [pod("train-worker-0"), pod("train-worker-1", annotations={"team": "vision"})]
    api = FakeCluster([mxjob(restart={"run": 3, "go": False}), mxjob("idle")], pods)
    assert api.run_once() == Result(patched=2)
    assert api.calls == [LIST, SELECT, ("patch", "pods", "train-worker-0"),
                         ("patch", "pods", "train-worker-1")]  # fmt: skip
    assert api.patches[1] == ("train-worker-1", [
        {"op": "test", "path": "/metadata/uid", "value": "pod-train-worker-1"},
        {"op": "add", "path": RESTART, "value": "3"},
        {"op": "add", "path": NOTE_RUN, "value": "3"},
        {"op": "add", "path": NUDGE, "value": "1000"},
        {"op": "add", "path": RUN, "value": "3"},
    ])  # fmt: skip
    assert all(in_step(p, 3, go=False) for p in api.pods)
    assert api.pods[1]["metadata"]["annotations"]["team"] == "vision"
    api.calls.clear()
    assert api.run_once() == Result(), "in step: listed, not patched"
    assert api.calls == [LIST, SELECT]


def test_go_is_written_only_once_the_order_says_go() -> None:
    job = mxjob(restart={"run": 3, "go": False})
    api = FakeCluster([job], [pod()])
    api.run_once()
    assert ANNOTATION_GO not in api.pods[0]["metadata"]["annotations"]
    job["status"]["inPlaceRestart"]["go"] = True
    assert api.run_once() == Result(patched=1)
    assert api.patches[-1][1][1:] == [
        {"op": "add", "path": GO, "value": "3"}, {"op": "replace", "path": NUDGE, "value": "1000"},
    ]  # fmt: skip
    assert in_step(api.pods[0], 3, go=True)


def test_a_pod_its_barrier_still_holds_after_go_is_nudged_every_nudge_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The kubelet may leave the go file stale (plan.py): the pod is edited again until its
    barrier lets it go, once per NUDGE_SECONDS, and each nudge is logged and counted."""
    job = mxjob(restart={"run": 3, "go": True})
    api = FakeCluster([job], [held(pod()), pod("train-worker-1")])
    assert api.run_once() == Result(patched=2), "go written, with the moment, to both"
    api.now += NUDGE_SECONDS - 1
    assert api.run_once() == Result(), "too soon"
    api.now += 1
    with caplog.at_level(logging.INFO, logger="restarter"):
        assert api.run_once() == Result(patched=1, nudged=1)
    assert api.patches[-1] == ("train-worker-0", [
        TEST_UID, {"op": "replace", "path": NUDGE, "value": str(int(api.now))}])  # fmt: skip
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [(line["action"], line.get("pod")) for line in lines] == [("nudge", "train-worker-0")]
    assert [patch_kind(line) for line in lines] == ["nudge"], "as the bench and the test read it"
    api.pods[0]["status"]["initContainerStatuses"][0]["state"] = {"terminated": {"exitCode": 0}}
    api.now += NUDGE_SECONDS
    assert api.run_once() == Result(), "released: left alone"


def test_nudges_wait_for_the_whole_order_and_are_bounded_per_act() -> None:
    """A stale file is one pod's mishap: no nudge goes out while a pod of the job still needs
    its order, and an act sends MAX_NUDGES of them at most, to the pods waiting longest (a
    1000-pod job on the KWOK tier had 1640 before the bound, restarting 37 s slower)."""
    count = MAX_NUDGES + 5
    api = FakeCluster([mxjob(restart={"run": 3, "go": True})], [])
    api.pods = [held(pod(f"train-worker-{i:02}")) for i in range(count)]
    assert api.run_once() == Result(patched=count), "go written to all"
    api.pods.append(held(pod("train-worker-99")))
    longest = [f"train-worker-{i:02}" for i in range(count - 5, count)]
    for waiting in api.pods:
        if waiting["metadata"]["name"] in longest:
            waiting["metadata"]["annotations"][ANNOTATION_NUDGE] = str(int(NOW) - 10)
    api.now += NUDGE_SECONDS
    assert api.run_once() == Result(patched=1), "the late pod's go first, no nudge beside it"
    assert api.run_once() == Result(patched=MAX_NUDGES, nudged=MAX_NUDGES)
    nudged = [name for name, _ in api.patches[-MAX_NUDGES:]]
    assert set(longest) <= set(nudged), "those waiting longest first, whatever their names"
    assert api.run_once() == Result(patched=5, nudged=5), "the rest at the next act"
    assert api.run_once() == Result(), "each nudged once per NUDGE_SECONDS"


def test_pods_not_of_this_job_are_untouched() -> None:
    others = [
        pod("other-worker-0", job="other"),
        pod("train-worker-0", owners=[owner("uid-of-an-older-train")]),
        pod("train-worker-1", deleting=True),
        pod("train-worker-2", namespace="team-b"),
        pod("train-worker-3", owners=[owner("uid-train", controller=False)]),
    ]
    api = FakeCluster([mxjob(restart={"run": 3, "go": True})], copy.deepcopy(others))
    assert api.run_once() == Result()
    assert api.pods == others
    assert api.calls == [LIST, SELECT]


def test_a_larger_number_on_a_pod_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    ahead = pod(annotations={ANNOTATION_RESTART: "5"}, labels={LABEL_RUN: "5"})
    api = FakeCluster([mxjob(restart={"run": 3, "go": True})], [ahead])
    with caplog.at_level(logging.DEBUG, logger="restarter"):
        assert api.run_once() == Result(patched=1)
    meta = api.pods[0]["metadata"]
    assert meta["annotations"] == {ANNOTATION_RESTART: "5", ANNOTATION_RUN: "3", ANNOTATION_GO: "3",
                                   ANNOTATION_NUDGE: "1000"}  # fmt: skip
    assert meta["labels"][LABEL_RUN] == "5"
    kept = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [(line["level"], line["action"]) for line in kept if line["action"] == "ahead"] == [
        ("debug", "ahead"), ("debug", "ahead"),
    ]  # fmt: skip


@pytest.mark.parametrize("status", [404, 409, 422])
def test_a_race_on_a_patch_is_not_an_error(status: int, caplog: pytest.LogCaptureFixture) -> None:
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], [pod()],
                      fail={("patch", "pods", "train-worker-0"): refused(status)})  # fmt: skip
    with caplog.at_level(logging.DEBUG, logger="restarter"):
        assert api.run_once() == Result(races=1)
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.levelno < 20]
    assert (line["level"], line["action"], line["pod"]) == ("debug", "race", "train-worker-0")


def test_a_pod_replaced_since_listed_is_not_patched_and_the_next_act_patches_its_successor() -> (
    None
):
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], [pod()])
    successor = pod(uid="pod-successor")

    def replace() -> None:
        api.pods[:] = [copy.deepcopy(successor)]

    api.before_patch = replace
    assert api.run_once() == Result(races=1), "its uid `test` fails: 422"
    assert api.pods == [successor]
    api.before_patch = None
    assert api.run_once() == Result(patched=1)
    assert in_step(api.pods[0], 3, go=False)


@pytest.mark.parametrize("failure", [refused(403), refused(500), TimeoutError("timed out")])
def test_one_failing_pod_stops_no_other(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    pods = [pod("train-worker-0"), pod("train-worker-1")]
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], pods,
                      fail={("patch", "pods", "train-worker-0"): failure})  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="restarter"):
        assert api.run_once() == Result(patched=1, errors=1)
    assert in_step(api.pod("train-worker-1"), 3, go=False)
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["namespace"], line["name"], line["pod"]) == ("team-a", "train", "train-worker-0")


def test_one_failing_job_stops_no_other(caplog: pytest.LogCaptureFixture) -> None:
    jobs = [mxjob("a", restart={"run": 2, "go": True}), mxjob(restart={"run": 3, "go": False})]
    api = FakeCluster(jobs, [pod("a-worker-0", job="a"), pod()],
                      fail={("list", "pods", f"{LABEL_JOB_NAME}=a"): refused(500)})  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="restarter"):
        assert api.run_once() == Result(patched=1, errors=1)
    assert "annotations" not in api.pod("a-worker-0")["metadata"]
    assert in_step(api.pod("train-worker-0"), 3, go=False)
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["namespace"], line["name"], line["action"]) == ("team-a", "a", "error")


def test_a_malformed_order_is_logged_and_skips_its_job_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = [mxjob("a", restart={"run": "2", "go": True}), mxjob(restart={"run": 3, "go": False})]
    api = FakeCluster(jobs, [pod("a-worker-0", job="a"), pod()])
    with caplog.at_level(logging.WARNING, logger="restarter"):
        assert api.run_once() == Result(patched=1, skipped=1)
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["level"], line["name"], line["action"]) == ("warning", "a", "skip")
    assert "run" in line["reason"]


def test_the_pods_are_read_a_page_at_a_time_and_patched_a_bounded_number_per_act(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A job of more pods than an act patches is put in step over several acts, every pod
    patched once, the pods already in step passed over."""
    pods = [pod(f"train-worker-{i:04}") for i in range(MAX_PATCHES * 2 + 3)]
    api = FakeCluster([], pods, page_size=400)
    with caplog.at_level(logging.INFO, logger="restarter"):
        assert act(api, ordered(3), NOW) == Result(patched=MAX_PATCHES)
    assert api.calls.count(SELECT) == 3, "1000 patched by the third page of 400"
    assert not any(in_step(p, 3, go=False) for p in api.pods[MAX_PATCHES:])
    bound = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [(line["name"], line["action"]) for line in bound if line["action"] != "patch"] == [
        ("train", "bound")
    ]
    assert act(api, ordered(3), NOW) == Result(patched=MAX_PATCHES)
    assert act(api, ordered(3), NOW) == Result(patched=3)
    assert all(in_step(p, 3, go=False) for p in api.pods)
    patched = [name for name, _ in api.patches]
    assert sorted(patched) == [p["metadata"]["name"] for p in pods], "each pod once (8 at once)"
    assert act(api, ordered(3), NOW) == Result(), "in step: listed, nothing patched"


def test_one_namespace() -> None:
    here, there = mxjob(namespace="b", restart={"run": 3, "go": False}), mxjob(namespace="a")
    api = FakeCluster([there, here], [pod(namespace="a"), pod(namespace="b")])
    assert api.run_once(namespace="b") == Result(patched=1)
    assert api.calls[0] == ("list", "mxjobs", "b")
    assert [in_step(p, 3, go=False) for p in api.pods] == [False, True]


# --- the watch --------------------------------------------------------------------------------


def watches(api: FakeCluster) -> list[object]:
    """The timeouts of the watches the loop started, in order."""
    return [what for verb, _, what in api.calls if verb == "watch"]


def test_the_watch_acts_at_once_and_again_every_interval_while_the_order_stands() -> None:
    """The list brings the order: its pod is patched at once, and the long watch gives way to
    short ones, after each of which the job is acted on again: a pod created since is put in
    step within the interval."""
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], [pod("train-worker-0")],
                      stop_after=3)  # fmt: skip
    late = pod("train-worker-1")

    def create(number: int) -> None:
        if number == 2:
            api.pods.append(copy.deepcopy(late))

    api.before_watch = create
    api.run(interval=2.0)
    assert watches(api) == [WATCH_SECONDS, 2, 2]
    assert [name for name, _ in api.patches] == ["train-worker-0", "train-worker-1"]
    assert all(in_step(p, 3, go=False) for p in api.pods)
    # Listed by each watch, the job is acted on as its order came, then once an interval.
    assert api.calls.count(SELECT) == 2


def test_a_changed_order_is_acted_on_as_it_comes() -> None:
    job = mxjob(restart={"run": 3, "go": False})
    go = copy.deepcopy(job)
    go["status"]["inPlaceRestart"]["go"] = True
    api = FakeCluster([job], [pod()], changes=[[], [{"type": "MODIFIED", "object": go}]],
                      stop_after=3)  # fmt: skip
    api.run(interval=2.0)
    assert in_step(api.pods[0], 3, go=True)
    go_at = float(api.pods[0]["metadata"]["annotations"][ANNOTATION_NUDGE])
    assert 1000 <= go_at <= api.now, "the nudge's moment: the wall clock's as go was written"
    assert [body[1:] for _, body in api.patches] == [
        [{"op": "add", "path": "/metadata/annotations",
          "value": {ANNOTATION_RESTART: "3", ANNOTATION_RUN: "3", ANNOTATION_NUDGE: "1000"}},
         {"op": "add", "path": RUN, "value": "3"}],
        [{"op": "add", "path": GO, "value": "3"},
         {"op": "replace", "path": NUDGE, "value": str(int(go_at))}],
    ]  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {"type": "MODIFIED", "object": mxjob()},
        {"type": "DELETED", "object": mxjob(restart={"run": 3, "go": False})},
        None,  # deleted between two watches: the next one does not list it
    ],
    ids=["order gone", "deleted", "not listed"],
)
def test_a_job_without_an_order_is_forgotten(change: dict[str, Any] | None) -> None:
    """Listed with its order by the second watch, then changed, deleted, or not listed: the
    third watch is a long one again, and the job is not acted on again."""
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], [pod()], stop_after=4)

    def forget(number: int) -> None:
        if change is None:
            if number == 2:
                api.jobs.clear()
        elif number == 2:
            api.changes[:] = [[change]]
        elif number == 3:
            api.jobs[:] = [] if change["type"] == "DELETED" else [change["object"]]

    api.before_watch = forget
    api.run(interval=2.0)
    assert watches(api) == [WATCH_SECONDS, 2, WATCH_SECONDS, WATCH_SECONDS]
    assert api.calls.count(SELECT) == 1


def test_the_loop_survives_a_failed_watch_and_stops_on_request() -> None:
    unreachable: dict[tuple[str, str, object], Exception] = {
        ("watch", "mxjobs", WATCH_SECONDS): ConnectionError("unreachable")
    }
    api = FakeCluster([mxjob(restart={"run": 3, "go": False})], [pod()], stop_after=2,
                      fail=unreachable)  # fmt: skip
    api.run(interval=0.01)
    assert watches(api) == [WATCH_SECONDS, WATCH_SECONDS], "started again after the interval"
    assert in_step(api.pods[0], 3, go=False)


def test_the_loop_watches_one_namespace() -> None:
    here, there = mxjob(namespace="b", restart={"run": 3, "go": False}), mxjob(namespace="a")
    api = FakeCluster([there, here], [pod(namespace="b")], stop_after=1)
    controller.run(api, api, 2.0, api.stop, "b", api.clock)
    assert in_step(api.pods[0], 3, go=False)


# --- what the install's ValidatingAdmissionPolicy admits (manifests/components/restarter) -----

ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-restarter"
POLICY = REPO / "manifests" / "components" / "restarter" / "restarter.yaml"


def admitted(
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    *,
    operation: str = "UPDATE",
    sub: str = "",
    username: str = ACCOUNT,
) -> bool:
    """Whether the component's policy admits this request on a pod."""
    objects = {d["kind"]: d for d in yaml.safe_load_all(POLICY.read_text()) if d}
    spec: dict[str, Any] = objects["ValidatingAdmissionPolicy"]["spec"]
    assert objects["ValidatingAdmissionPolicyBinding"]["spec"] == {
        "policyName": "mxjob-restarter", "validationActions": ["Deny"]}  # fmt: skip
    assert spec["failurePolicy"] == "Fail"
    request = {"operation": operation, "userInfo": {"username": username}, "subResource": sub,
               "resource": {"group": "", "version": "v1", "resource": "pods"}}  # fmt: skip
    return policy_admits(spec, request, object=new, oldObject=old)


def test_the_policy_holds_every_request_of_the_component() -> None:
    rules = yaml.safe_load_all(POLICY.read_text())
    spec = next(d for d in rules if d and d["kind"] == "ValidatingAdmissionPolicy")["spec"]
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["operations"] == ["CREATE", "UPDATE", "DELETE"]
    assert rule["resources"] == ["pods", "pods/status", "pods/ephemeralcontainers", "pods/resize"]


LOOP_CASES = {
    "first restart": ([pod()], {"run": 1, "go": False}),
    "go": (
        [pod(annotations={ANNOTATION_RESTART: "4", "team": "vision"}, labels={LABEL_RUN: "4"})],
        {"run": 4, "go": True},
    ),
    "a later run": (
        [pod(annotations={ANNOTATION_RESTART: "4", ANNOTATION_GO: "4"}, labels={LABEL_RUN: "4"})],
        {"run": 999_999_999, "go": True},
    ),
    "a number kept": (
        [pod(annotations={ANNOTATION_RESTART: "9"}, labels={LABEL_RUN: "2"})],
        {"run": 3, "go": True},
    ),
}


@pytest.mark.parametrize(("pods", "restart"), LOOP_CASES.values(), ids=LOOP_CASES)
def test_every_patch_the_loop_makes_is_admitted_and_nothing_beside_it(
    pods: list[dict[str, Any]], restart: dict[str, Any]
) -> None:
    api = FakeCluster([mxjob(restart=restart)], pods)
    assert api.run_once().patched == len(pods)
    assert api.updates
    for old, new in api.updates:
        assert admitted(old, new), new["metadata"]
        relabelled = copy.deepcopy(new)
        relabelled["metadata"]["labels"]["app"] = "elsewhere"
        respecced = copy.deepcopy(new)
        respecced["spec"]["containers"][0]["image"] = "evil:latest"
        assert not admitted(old, relabelled), "another label beside it"
        assert not admitted(old, respecced), "a spec change beside it"


def _changed(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    new = copy.deepcopy(BEFORE)
    edit(new["metadata"])
    return new


BEFORE = pod(annotations={ANNOTATION_RESTART: "2", "team": "vision"}, labels={LABEL_RUN: "2"})

REFUSED = {
    "not a number": _changed(lambda m: m["annotations"].update({ANNOTATION_RESTART: "2x"})),
    "ten digits": _changed(lambda m: m["annotations"].update({ANNOTATION_GO: "1234567890"})),
    "empty": _changed(lambda m: m["labels"].update({LABEL_RUN: ""})),
    "another annotation": _changed(lambda m: m["annotations"].update({"team": "other"})),
    "an annotation added": _changed(lambda m: m["annotations"].update({"extra": "1"})),
    "an annotation removed": _changed(lambda m: m["annotations"].pop("team")),
    "the restart annotation removed": _changed(lambda m: m["annotations"].pop(ANNOTATION_RESTART)),
    "the run label removed": _changed(lambda m: m["labels"].pop(LABEL_RUN)),
    "the job's label changed": _changed(lambda m: m["labels"].update({LABEL_JOB_NAME: "x"})),
    "the run annotation not a number": _changed(
        lambda m: m["annotations"].update({ANNOTATION_RUN: "three"})
    ),
    "a nudge not a moment": _changed(lambda m: m["annotations"].update({ANNOTATION_NUDGE: "now"})),
    "a nudge of 13 digits": _changed(
        lambda m: m["annotations"].update({ANNOTATION_NUDGE: "1234567890123"})
    ),
    "the nudge's moment on a label": _changed(
        lambda m: m["labels"].update({ANNOTATION_NUDGE: "1765100000"})
    ),
    "an owner changed": _changed(lambda m: m.update(ownerReferences=[owner("uid-other")])),
    "a finalizer added": _changed(lambda m: m.update(finalizers=["example.com/hold"])),
}


@pytest.mark.parametrize("new", REFUSED.values(), ids=REFUSED)
def test_the_policy_refuses_any_other_change(new: dict[str, Any]) -> None:
    assert not admitted(BEFORE, new)


def test_the_policy_admits_what_it_should_and_only_for_mxjob_pods() -> None:
    raised = _changed(lambda m: (m["annotations"].update({ANNOTATION_RESTART: "3",
                                                          ANNOTATION_RUN: "3",
                                                          ANNOTATION_GO: "3"}),
                                 m["labels"].update({LABEL_RUN: "3"})))  # fmt: skip
    assert admitted(BEFORE, raised)
    nudged = _changed(lambda m: m["annotations"].update({ANNOTATION_NUDGE: "1765100000"}))
    assert admitted(BEFORE, nudged), "a nudge: a moment, ten digits"
    assert admitted(BEFORE, copy.deepcopy(BEFORE)), "an update that changes nothing"
    orphan = copy.deepcopy(BEFORE)
    orphan["metadata"]["ownerReferences"] = [owner("uid-train", kind="ReplicaSet")]
    orphan_raised = copy.deepcopy(raised)
    orphan_raised["metadata"]["ownerReferences"] = orphan["metadata"]["ownerReferences"]
    assert not admitted(orphan, orphan_raised), "a pod no MXJob controls"
    assert not admitted(BEFORE, raised, sub="status")
    assert not admitted(BEFORE, raised, sub="ephemeralcontainers")
    assert not admitted(None, BEFORE, operation="CREATE")
    assert not admitted(BEFORE, None, operation="DELETE")
    assert admitted(BEFORE, orphan_raised, username="system:serviceaccount:x:other"), (
        "another account is not this policy's to judge"
    )


# --- the command line -------------------------------------------------------------------------


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    """`python -m mxjob.restarter` against a FakeCluster whose job has an order for its pod; the
    loop stops at its first watch."""
    cluster = FakeCluster([mxjob(restart={"run": 3, "go": True})], [pod()], stop_after=1)
    monkeypatch.setattr(runtime, "stop_on_signals", lambda: cluster.stop)
    with against(monkeypatch, controller, cluster, "RESTARTER_NAMESPACE",
                 "RESTARTER_INTERVAL_SECONDS"):  # fmt: skip
        yield cluster


PATCH_POD = ("patch", "pods", "train-worker-0")
EXIT_CASES = [
    ("a clean pass", ["--once"], {}, None, 0),
    ("a pod that failed", ["--once"], {}, (PATCH_POD, refused(403)), 1),
    ("the list that failed", ["--once"], {}, (LIST, refused(503)), 1),
    ("a race is no failure", ["--once"], {}, (PATCH_POD, refused(409)), 0),
    ("the loop, stopped", [], {}, None, 0),
    ("a bad log level", ["--once"], {"LOG_LEVEL": "loud"}, None, 2),
]  # fmt: skip


@pytest.mark.parametrize(("why", "argv", "env", "failure", "code"), EXIT_CASES,
                         ids=[c[0] for c in EXIT_CASES])  # fmt: skip
def test_the_exit_code(
    fake_cluster: FakeCluster,
    monkeypatch: pytest.MonkeyPatch,
    why: str,
    argv: list[str],
    env: dict[str, str],
    failure: tuple[tuple[str, str, object], Exception] | None,
    code: int,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if failure is not None:
        fake_cluster.fail[failure[0]] = failure[1]
    assert cli.main(argv) == code, why
    assert in_step(fake_cluster.pods[0], 3, go=True) is (code == 0 and failure is None), why


def test_a_malformed_order_fails_no_pass(fake_cluster: FakeCluster) -> None:
    fake_cluster.jobs.append(mxjob("a", restart={"run": 0, "go": True}))
    assert cli.main(["--once"]) == 0


SETTING_CASES = [
    ("defaults: all namespaces, every 2 s", [], {}, (None, 2.0)),
    ("flags", ["--namespace", "b", "--interval", "0.5"], {}, ("b", 0.5)),
    ("the environment", [], {"RESTARTER_NAMESPACE": "c", "RESTARTER_INTERVAL_SECONDS": "7"},
     ("c", 7.0)),
    ("a flag over the environment", ["--namespace", "d"], {"RESTARTER_NAMESPACE": "c"},
     ("d", 2.0)),
]  # fmt: skip


@pytest.mark.parametrize(("why", "argv", "env", "want"), SETTING_CASES,
                         ids=[c[0] for c in SETTING_CASES])  # fmt: skip
@pytest.mark.parametrize("once", [True, False], ids=["once", "loop"])
def test_the_namespace_and_the_interval_reach_the_pass_and_the_loop(
    fake_cluster: FakeCluster,
    monkeypatch: pytest.MonkeyPatch,
    why: str,
    argv: list[str],
    env: dict[str, str],
    want: tuple[str | None, float],
    once: bool,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen: list[tuple[str | None, float | None]] = []

    def run_once(jobs: object, pods: object, namespace: str | None) -> Result:
        seen.append((namespace, None))
        return Result()

    monkeypatch.setattr(controller, "run_once", run_once)
    monkeypatch.setattr(controller, "run", lambda jobs, pods, interval, stop, namespace:
                        seen.append((namespace, interval)))  # fmt: skip
    assert cli.main([*argv, "--once"] if once else argv) == 0
    assert seen == [(want[0], None if once else want[1])], why


FLAG_CASES = [(["--interval", "0"], 2), (["--interval", "soon"], 2), (["--what"], 2),
              (["--help"], 0)]  # fmt: skip


@pytest.mark.parametrize(("argv", "code"), FLAG_CASES, ids=[" ".join(c[0]) for c in FLAG_CASES])
def test_a_bad_flag_or_the_help_ends_the_command_before_any_call(
    fake_cluster: FakeCluster, capsys: pytest.CaptureFixture[str], argv: list[str], code: int
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == code
    assert fake_cluster.calls == []
    shown = capsys.readouterr().out
    words = ("--namespace", "--interval", "--kubeconfig", "--once", "RESTARTER_INTERVAL_SECONDS",
             "RESTARTER_NAMESPACE")  # fmt: skip
    assert all(word in shown for word in words) is (code == 0)


def test_an_acts_patches_are_in_flight_together() -> None:
    """PARALLEL_PATCHES patches wait for each other here: sent one after another, the first
    would wait in vain, and the act would count errors."""
    pods = [pod(f"train-worker-{i}") for i in range(PARALLEL_PATCHES)]
    api = FakeCluster([], pods)
    together = threading.Barrier(PARALLEL_PATCHES, timeout=10)

    def wait() -> None:
        together.wait()

    api.before_patch = wait
    assert act(api, ordered(3), NOW) == Result(patched=PARALLEL_PATCHES)

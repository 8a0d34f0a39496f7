"""The retention component (`mxjob/retention/`): a deleted MXJob that retains its checkpoint claim
gives the claim up, and only then loses its retain finalizer.

The decisions (`mxjob.retention.release`) are tested as tables. The loop
(`mxjob.retention.controller`) runs against an in-memory stand-in for the four calls it makes,
which records them and applies each JSON patch as the API server does (a failed `test` is a 422; a
job being deleted goes when its last finalizer does); its behaviour against a real API server is
the end-to-end tier's job (tests/e2e/test_retention.py). Each update it makes is checked against
the install's ValidatingAdmissionPolicy, so that the component and the policy that fences its token
agree.
"""

import copy
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel

from hooks.core.public import RETAIN_FINALIZER, RETAINED_FROM
from hooks.logs import JsonFormatter
from mxjob.retention import __main__ as cli
from mxjob.retention import controller
from mxjob.retention.controller import Result, run_once
from mxjob.retention.release import (
    Patch,
    Pending,
    finalizer_patch,
    owned_by,
    pending,
    pointer,
    release_patch,
)
from tests.manifest_support import cel_program, policy_admits
from testsupport.component_cli import against
from testsupport.patching import apply_patch, refused

REPO = Path(__file__).resolve().parent.parent
DELETED_AT = "2026-03-01T12:00:00Z"
ANNOTATION_PATH = "/metadata/annotations/mxjob.kubeflow.org~1retained-from"


def mxjob(
    name: str = "train",
    *,
    namespace: str = "team-a",
    uid: str | None = None,
    deleting: bool = True,
    finalizers: tuple[str, ...] = (RETAIN_FINALIZER,),
    when_deleted: str | None = "Retain",
) -> dict[str, Any]:
    """An MXJob as the API server lists it: by default being deleted, holding the finalizer and
    retaining its claim."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{name}",
        "resourceVersion": "7",
        "finalizers": list(finalizers),
    }
    if deleting:
        metadata["deletionTimestamp"] = DELETED_AT
    checkpoint: dict[str, Any] = {"template": {"spec": {"accessModes": ["ReadWriteOnce"]}}}
    if when_deleted is not None:
        checkpoint["retentionPolicy"] = {"whenDeleted": when_deleted}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": metadata,
        "spec": {"checkpoint": checkpoint, "mxReplicaSpecs": {"Worker": {"replicas": 1}}},
    }


def owner(uid: str, name: str = "train") -> dict[str, Any]:
    """The owner reference Metacontroller gives a child of the MXJob `uid`."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def claim_of(
    job: dict[str, Any],
    *,
    uid: str = "claim-uid",
    owners: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The checkpoint claim Metacontroller made for `job`: owned by it and labelled with its
    uid, unless told otherwise."""
    meta = job["metadata"]
    metadata: dict[str, Any] = {
        "name": f"{meta['name']}-checkpoint",
        "namespace": meta["namespace"],
        "uid": uid,
        "resourceVersion": "3",
        "ownerReferences": [owner(meta["uid"], meta["name"])] if owners is None else owners,
        "labels": {"controller-uid": meta["uid"], "team": "vision"} if labels is None else labels,
    }
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def work(job: dict[str, Any], *, retains: bool = True, finalizer: int = 0) -> Pending:
    meta = job["metadata"]
    return Pending(meta["namespace"], meta["name"], meta["uid"], retains, finalizer)


# --- the decisions ----------------------------------------------------------------------------


def _with(job: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """`job` with these metadata fields set, or removed where the value is None."""
    for key, value in metadata.items():
        if value is None:
            del job["metadata"][key]
        else:
            job["metadata"][key] = value
    return job


PENDING_CASES = [
    ("deleting, finalizer held, Retain", mxjob(), work(mxjob())),
    (
        "the finalizer's place is where it stands",
        mxjob(finalizers=("example.com/other", RETAIN_FINALIZER)),
        work(mxjob(), finalizer=1),
    ),
    ("Delete keeps nothing", mxjob(when_deleted="Delete"), work(mxjob(), retains=False)),
    ("no retentionPolicy: Delete", mxjob(when_deleted=None), work(mxjob(), retains=False)),
    ("not being deleted", mxjob(deleting=False), None),
    ("deleting without the finalizer", mxjob(finalizers=("example.com/other",)), None),
    ("deleting without finalizers", _with(mxjob(), finalizers=None), None),
    ("finalizers not a list", _with(mxjob(), finalizers=RETAIN_FINALIZER), None),
    ("no uid", _with(mxjob(), uid=None), None),
    ("an empty name", _with(mxjob(), name=""), None),
    ("not an object", "train", None),
]  # fmt: skip


@pytest.mark.parametrize(("why", "job", "want"), PENDING_CASES, ids=[c[0] for c in PENDING_CASES])
def test_pending(why: str, job: object, want: Pending | None) -> None:
    assert pending(job) == want, why


@pytest.mark.parametrize(
    ("owners", "want"),
    [
        ([owner("uid-train")], True),
        ([owner("other"), owner("uid-train")], True),
        ([owner("other")], False),
        ([], False),
        (None, False),
        ("uid-train", False),
    ],
)
def test_owned_by(owners: object, want: bool) -> None:
    claim = {"metadata": {"ownerReferences": owners}}
    assert owned_by(claim, "uid-train") is want


@pytest.mark.parametrize(
    ("keys", "want"),
    [
        (("metadata", "uid"), "/metadata/uid"),
        (("metadata", "annotations", RETAINED_FROM), ANNOTATION_PATH),
        (("metadata", "labels", "a~b/c"), "/metadata/labels/a~0b~1c"),
        (("metadata", "finalizers", "0"), "/metadata/finalizers/0"),
    ],
)
def test_pointer_escapes_keys(keys: tuple[str, ...], want: str) -> None:
    assert pointer(*keys) == want


TEST_UID = {"op": "test", "path": "/metadata/uid", "value": "claim-uid"}
NO_OWNERS = {"op": "remove", "path": "/metadata/ownerReferences"}
NO_LABEL = {"op": "remove", "path": "/metadata/labels/controller-uid"}
ANNOTATE = {"op": "add", "path": ANNOTATION_PATH, "value": "uid-train"}
FIRST_ANNOTATION = {"op": "add", "path": "/metadata/annotations",
                    "value": {RETAINED_FROM: "uid-train"}}  # fmt: skip

RELEASE_CASES = [
    (
        "the job's only owner reference and label go; the annotation is the first",
        claim_of(mxjob()),
        [TEST_UID, NO_OWNERS, NO_LABEL, FIRST_ANNOTATION],
    ),
    (
        "the annotation joins those there",
        claim_of(mxjob(), annotations={"team": "vision"}),
        [TEST_UID, NO_OWNERS, NO_LABEL, ANNOTATE],
    ),
    (
        "another owner stays",
        claim_of(mxjob(), owners=[owner("other", "keeper"), owner("uid-train")], annotations={}),
        [TEST_UID, {"op": "replace", "path": "/metadata/ownerReferences",
                    "value": [owner("other", "keeper")]}, NO_LABEL, ANNOTATE],
    ),
    (
        "every reference to the job goes",
        claim_of(mxjob(), owners=[owner("uid-train"), owner("other"), owner("uid-train")]),
        [TEST_UID, {"op": "replace", "path": "/metadata/ownerReferences",
                    "value": [owner("other")]}, NO_LABEL, FIRST_ANNOTATION],
    ),
    (
        "a selector label of another uid stays",
        claim_of(mxjob(), labels={"controller-uid": "other"}, annotations={}),
        [TEST_UID, NO_OWNERS, ANNOTATE],
    ),
    (
        "no labels: none removed",
        claim_of(mxjob(), labels={}, annotations={}),
        [TEST_UID, NO_OWNERS, ANNOTATE],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("why", "claim", "want"), RELEASE_CASES, ids=[c[0] for c in RELEASE_CASES])
def test_release_patch(why: str, claim: dict[str, Any], want: Patch) -> None:
    assert release_patch(claim, "uid-train") == want, why


def test_finalizer_patch_tests_the_uid_and_the_finalizers_place() -> None:
    assert finalizer_patch(work(mxjob(), finalizer=2)) == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-train"},
        {"op": "test", "path": "/metadata/finalizers/2", "value": RETAIN_FINALIZER},
        {"op": "remove", "path": "/metadata/finalizers/2"},
    ]


# --- the loop ---------------------------------------------------------------------------------


@dataclass
class FakeCluster:
    """In-memory MXJobs and claims behind the four calls `mxjob.retention.controller` makes.

    `calls` records each call as (verb, resource, name); `patches` the body of each patch;
    `updates` each object a patch changed, before and after (what admission sees).
    `fail` makes a call raise: keyed by (verb, resource, name). `before_claim_patch` runs just
    before a claim patch lands (a race).
    """

    jobs: list[dict[str, Any]]
    claims: list[dict[str, Any]] = field(default_factory=list)
    fail: dict[tuple[str, str, str | None], Exception] = field(default_factory=dict)
    before_claim_patch: Any = None
    calls: list[tuple[str, str, str | None]] = field(default_factory=list)
    patches: list[tuple[str, str, Patch]] = field(default_factory=list)
    updates: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def _call(self, verb: str, resource: str, name: str | None) -> None:
        self.calls.append((verb, resource, name))
        failure = self.fail.get((verb, resource, name))
        if failure is not None:
            raise failure

    @staticmethod
    def _find(objects: list[dict[str, Any]], namespace: str, name: str) -> int:
        for i, obj in enumerate(objects):
            if (obj["metadata"]["namespace"], obj["metadata"]["name"]) == (namespace, name):
                return i
        raise refused(404)

    def _list(self, namespace: str | None) -> object:
        self._call("list", "mxjobs", namespace)
        items = [j for j in self.jobs if namespace in (None, j["metadata"]["namespace"])]
        return {"kind": "MXJobList", "metadata": {}, "items": copy.deepcopy(items)}

    def list_cluster_custom_object(self, group: str, version: str, plural: str, **_: Any) -> object:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        return self._list(None)

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **_: Any
    ) -> object:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        return self._list(namespace)

    def patch_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: Patch,
        *, _content_type: str | None = None, **_: Any,
    ) -> object:  # fmt: skip
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        # Without it the client sends a list as a merge patch: 400 (seen on the real node).
        assert _content_type == "application/json-patch+json"
        self._call("patch", "mxjobs", name)
        self.patches.append(("mxjobs", name, body))
        i = self._find(self.jobs, namespace, name)
        patched = apply_patch(self.jobs[i], body)
        self.updates.append(("mxjobs", self.jobs[i], patched))
        if "deletionTimestamp" in patched["metadata"] and not patched["metadata"]["finalizers"]:
            del self.jobs[i]  # the last finalizer gone: the API server deletes the job
        else:
            self.jobs[i] = patched
        return patched

    def read_namespaced_persistent_volume_claim(
        self, name: str, namespace: str, *, _preload_content: bool = True, **_: Any
    ) -> Any:
        assert _preload_content is False, "the claim is read as JSON, as the API server has it"
        self._call("get", "persistentvolumeclaims", name)
        found = self.claims[self._find(self.claims, namespace, name)]
        return SimpleNamespace(data=json.dumps(found).encode())

    def patch_namespaced_persistent_volume_claim(
        self, name: str, namespace: str, body: Patch, *, _content_type: str | None = None, **_: Any
    ) -> object:
        assert _content_type == "application/json-patch+json"
        self._call("patch", "persistentvolumeclaims", name)
        self.patches.append(("persistentvolumeclaims", name, body))
        if self.before_claim_patch is not None:
            self.before_claim_patch()
        i = self._find(self.claims, namespace, name)
        patched = apply_patch(self.claims[i], body)
        self.updates.append(("persistentvolumeclaims", self.claims[i], patched))
        self.claims[i] = patched
        return patched

    def run_once(self, namespace: str | None = None) -> Result:
        return run_once(self, self, namespace)


LIST = ("list", "mxjobs", None)
GET_CLAIM = ("get", "persistentvolumeclaims", "train-checkpoint")
PATCH_CLAIM = ("patch", "persistentvolumeclaims", "train-checkpoint")
PATCH_JOB = ("patch", "mxjobs", "train")
REMOVE_FINALIZER = finalizer_patch(work(mxjob()))


def test_a_retained_claim_is_released_then_the_finalizer_removed() -> None:
    job = mxjob()
    claim = claim_of(job)
    api = FakeCluster([job], [claim])
    result = api.run_once()
    assert result == Result(released=[work(job)], finalized=[work(job)], errors=0)
    assert api.calls == [LIST, GET_CLAIM, PATCH_CLAIM, PATCH_JOB]
    assert api.patches == [
        ("persistentvolumeclaims", "train-checkpoint",
         [TEST_UID, NO_OWNERS, NO_LABEL, FIRST_ANNOTATION]),
        ("mxjobs", "train", REMOVE_FINALIZER),
    ]  # fmt: skip
    (kept,) = api.claims
    expected = copy.deepcopy(claim)
    del expected["metadata"]["ownerReferences"]
    expected["metadata"]["labels"] = {"team": "vision"}
    expected["metadata"]["annotations"] = {RETAINED_FROM: "uid-train"}
    assert kept == expected, "nothing else of the claim changes"
    assert api.jobs == [], "its last finalizer gone, the job goes"


def test_a_job_that_deletes_its_claim_only_loses_the_finalizer() -> None:
    job = mxjob(when_deleted="Delete", finalizers=("example.com/other", RETAIN_FINALIZER))
    claim = claim_of(job)
    api = FakeCluster([job], [claim])
    assert api.run_once() == Result(finalized=[work(job, retains=False, finalizer=1)])
    assert api.calls == [LIST, PATCH_JOB]
    assert api.claims == [claim], "the garbage collector deletes it once the job goes"
    assert api.jobs[0]["metadata"]["finalizers"] == ["example.com/other"]


@pytest.mark.parametrize(
    "job",
    [
        mxjob(deleting=False),
        mxjob(finalizers=()),
        mxjob(finalizers=("example.com/other",)),
        mxjob(deleting=False, when_deleted="Delete"),
    ],
)
def test_a_job_not_deleting_or_without_the_finalizer_gets_no_call(job: dict[str, Any]) -> None:
    claim = claim_of(job)
    api = FakeCluster([job], [claim])
    assert api.run_once() == Result()
    assert api.calls == [LIST]
    assert (api.jobs, api.claims) == ([job], [claim])


@pytest.mark.parametrize(
    "claims",
    [
        [claim_of(mxjob(), owners=[owner("uid-of-an-older-train")])],
        [claim_of(mxjob(), owners=[])],
        [],
    ],
    ids=["owned by another uid", "owned by nobody", "absent"],
)
def test_a_claim_not_the_jobs_is_untouched_and_the_finalizer_removed(
    claims: list[dict[str, Any]],
) -> None:
    api = FakeCluster([mxjob()], copy.deepcopy(claims))
    assert api.run_once() == Result(finalized=[work(mxjob())])
    assert api.calls == [LIST, GET_CLAIM, PATCH_JOB]
    assert api.claims == claims


@pytest.mark.parametrize("status", [403, 500])
def test_a_failed_release_keeps_the_finalizer_until_a_pass_releases(status: int) -> None:
    job = mxjob()
    api = FakeCluster([job], [claim_of(job)], fail={PATCH_CLAIM: refused(status)})
    assert api.run_once() == Result(errors=1)
    assert api.calls == [LIST, GET_CLAIM, PATCH_CLAIM]
    assert api.jobs == [job], "finalizer kept"
    api.fail.clear()
    assert api.run_once() == Result(released=[work(job)], finalized=[work(job)])
    assert api.jobs == []


def test_a_claim_that_cannot_be_read_keeps_the_finalizer() -> None:
    job = mxjob()
    api = FakeCluster([job], [claim_of(job)], fail={GET_CLAIM: refused(403)})
    assert api.run_once() == Result(errors=1)
    assert api.calls == [LIST, GET_CLAIM]
    assert api.jobs == [job]


def test_a_claim_replaced_since_read_is_not_patched_and_keeps_the_finalizer() -> None:
    """The claim's uid `test` fails (422): not counted, and the next pass reads it again."""
    job = mxjob()
    api = FakeCluster([job], [claim_of(job)])
    replacement = claim_of(job, uid="another-claim")

    def replace() -> None:
        api.claims[:] = [replacement]

    api.before_claim_patch = replace
    assert api.run_once() == Result()
    assert api.claims == [replacement]
    assert api.jobs == [job]
    api.before_claim_patch = None
    assert api.run_once().released == [work(job)]


def test_a_release_whose_finalizer_patch_failed_is_not_released_twice() -> None:
    job = mxjob()
    api = FakeCluster([job], [claim_of(job)], fail={PATCH_JOB: refused(500)})
    assert api.run_once() == Result(released=[work(job)], errors=1)
    released = copy.deepcopy(api.claims)
    api.fail.clear()
    api.calls.clear()
    assert api.run_once() == Result(finalized=[work(job)])
    assert api.calls == [LIST, GET_CLAIM, PATCH_JOB]
    assert api.claims == released


@pytest.mark.parametrize("status", [404, 409, 422])
def test_a_race_on_the_finalizer_patch_is_not_an_error(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    api = FakeCluster([mxjob(when_deleted="Delete")], fail={PATCH_JOB: refused(status)})
    with caplog.at_level(logging.DEBUG, logger="retention"):
        assert api.run_once() == Result()
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["level"], line["action"], line["name"]) == ("debug", "race", "train")


def test_a_finalizer_moved_since_listed_is_not_removed_blindly() -> None:
    """The list put the finalizer first; it stands second now: the `test` refuses the patch,
    and the next pass removes it from where it is."""
    listed = mxjob(when_deleted="Delete")
    api = FakeCluster([listed])

    class Stale(FakeCluster):
        def _list(self, namespace: str | None) -> object:
            page = super()._list(namespace)
            self.jobs[0]["metadata"]["finalizers"].insert(0, "example.com/other")
            return page

    stale = Stale(api.jobs)
    assert stale.run_once() == Result()
    assert stale.jobs[0]["metadata"]["finalizers"] == ["example.com/other", RETAIN_FINALIZER]
    assert api.run_once().finalized == [work(listed, retains=False, finalizer=1)]
    assert api.jobs[0]["metadata"]["finalizers"] == ["example.com/other"]


def test_one_job_raising_stops_no_other(caplog: pytest.LogCaptureFixture) -> None:
    first, second = mxjob("a"), mxjob("train")
    api = FakeCluster(
        [first, second],
        [claim_of(first), claim_of(second)],
        fail={("get", "persistentvolumeclaims", "a-checkpoint"): TimeoutError("read timed out")},
    )
    with caplog.at_level(logging.ERROR, logger="retention"):
        result = api.run_once()
    assert result == Result(released=[work(second)], finalized=[work(second)], errors=1)
    assert api.jobs == [first]
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["namespace"], line["name"], line["action"]) == ("team-a", "a", "error")
    assert "read timed out" in line["error"]


def test_one_namespace() -> None:
    here, there = mxjob("train", namespace="b"), mxjob("train", namespace="a")
    api = FakeCluster([there, here], [claim_of(there), claim_of(here)])
    result = api.run_once(namespace="b")
    assert result.finalized == [work(here)]
    assert api.calls == [("list", "mxjobs", "b"), GET_CLAIM, PATCH_CLAIM, PATCH_JOB]
    assert api.jobs == [there]


class Waits(threading.Event):
    """The loop's stop: its first wait between passes lifts the cluster's failures, its second
    stops the loop; each interval waited is kept."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__()
        self.cluster, self.waited = cluster, list[float | None]()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout)
        self.cluster.fail.clear()
        if len(self.waited) == 2:
            self.set()
        return self.is_set()


def test_the_loop_survives_a_failed_pass_and_stops_on_request() -> None:
    api = FakeCluster([mxjob()], [claim_of(mxjob())],
                      fail={LIST: ConnectionError("API server unreachable")})  # fmt: skip
    stop = Waits(api)
    controller.run(api, api, 5.0, stop)
    assert stop.waited == [5.0, 5.0]
    assert api.calls == [LIST, LIST, GET_CLAIM, PATCH_CLAIM, PATCH_JOB]
    assert api.jobs == []


# --- what the install's ValidatingAdmissionPolicy admits (manifests/components/retention) -----

ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-retention"
POLICY = REPO / "manifests" / "components" / "retention" / "retention.yaml"


def plain(value: Any) -> Any:
    """A CEL value as the JSON it stands for (a bool read back as JSON would be an int)."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return str(value) if isinstance(value, str) else value


def admitted(resource: str, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the component's policy admits this update by its account: its `variables`
    evaluated in order, as kube-apiserver does, then its conditions and validations."""
    objects = {d["kind"]: d for d in yaml.safe_load_all(POLICY.read_text()) if d}
    spec = objects["ValidatingAdmissionPolicy"]["spec"]
    request = {"operation": "UPDATE", "userInfo": {"username": ACCOUNT},
               "resource": {"group": "", "version": "v1", "resource": resource}}  # fmt: skip
    activation: dict[str, Any] = {"request": json_to_cel(request), "object": json_to_cel(new),
                                  "oldObject": json_to_cel(old)}  # fmt: skip
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = json_to_cel(variables)
        variables[variable["name"]] = plain(
            cel_program(variable["expression"]).evaluate(activation)
        )
    return policy_admits(spec, request, object=new, oldObject=old, variables=variables)


#: An owner that is no MXJob: it stays on a released claim.
CONFIG_OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "uid": "cm-uid"}


@pytest.mark.parametrize(
    ("job", "claims"),
    [
        (mxjob(), [claim_of(mxjob())]),
        (
            mxjob(),
            [
                claim_of(
                    mxjob(),
                    owners=[CONFIG_OWNER, owner("uid-train")],
                    annotations={"team": "vision"},
                )
            ],
        ),
        (
            mxjob(),
            [
                claim_of(
                    mxjob(),
                    owners=[owner("uid-other", "other"), owner("uid-train")],
                    labels={"controller-uid": "uid-other"},
                )
            ],
        ),
        (mxjob(when_deleted="Delete", finalizers=("example.com/other", RETAIN_FINALIZER)), []),
        (mxjob(), []),
    ],
    ids=[
        "released",
        "another owner and annotations kept",
        "another MXJob's owner reference and selector label kept",
        "Delete",
        "no claim",
    ],
)
def test_every_update_the_loop_makes_is_admitted(
    job: dict[str, Any], claims: list[dict[str, Any]]
) -> None:
    api = FakeCluster([job], claims)
    assert api.run_once().errors == 0
    assert api.updates
    for resource, old, new in api.updates:
        assert admitted(resource, old, new), (resource, new["metadata"])
        changed = copy.deepcopy(new)
        changed["spec"]["touched"] = True
        assert not admitted(resource, old, changed), "the policy is read, not waved through"


# --- the command line -------------------------------------------------------------------------


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    """`python -m mxjob.retention` against a FakeCluster; the root logger as it was afterwards."""
    cluster = FakeCluster([])
    with against(monkeypatch, controller, cluster, "RETENTION_NAMESPACE",
                 "RETENTION_INTERVAL_SECONDS"):  # fmt: skip
        yield cluster


def test_once_exits_0_after_a_clean_pass(fake_cluster: FakeCluster) -> None:
    fake_cluster.jobs[:] = [mxjob()]
    fake_cluster.claims[:] = [claim_of(mxjob())]
    assert cli.main(["--once"]) == 0
    assert fake_cluster.calls == [LIST, GET_CLAIM, PATCH_CLAIM, PATCH_JOB]


def test_once_exits_1_when_a_job_failed(fake_cluster: FakeCluster) -> None:
    fake_cluster.jobs[:] = [mxjob()]
    fake_cluster.fail[PATCH_JOB] = refused(403)
    assert cli.main(["--once"]) == 1


def test_once_exits_1_when_the_list_failed(fake_cluster: FakeCluster) -> None:
    fake_cluster.fail[LIST] = refused(503)
    assert cli.main(["--once"]) == 1


def test_the_namespace_comes_from_the_flag_or_the_environment(
    fake_cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli.main(["--once", "--namespace", "b"]) == 0
    monkeypatch.setenv("RETENTION_NAMESPACE", "c")
    assert cli.main(["--once"]) == 0
    assert cli.main(["--namespace", "d", "--once"]) == 0
    assert [c[2] for c in fake_cluster.calls] == ["b", "c", "d"]


def test_a_bad_log_level_is_refused(
    fake_cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "loud")
    assert cli.main(["--once"]) == 2
    assert fake_cluster.calls == []


def test_the_help_names_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--namespace", "--interval", "--kubeconfig", "--once", "RETENTION_INTERVAL"):
        assert flag in text

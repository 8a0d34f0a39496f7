"""Conversion invariants over generated MXJobs of every served version (hypothesis).

Round trips are exact both ways but for the status, which no stash holds: it comes back as the
other version shows it, and exactly from then on (a valid v1 job through each old version and
back; an old job as users wrote it or the old operators stored it, through v1 and back, and
through the other old version); a field edited in one version wins over the stash while
everything else of the other version is kept; conversion is total on any JSON and changes
nothing but apiVersion, spec, status and annotations; an old job means to the hook what it
meant to its operator.
"""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hooks.app import create_app
from hooks.core.api import TYPE_BY_FOLDED_NAME, ReplicaType
from hooks.core.conversion import stash, v1alpha1, v1alpha2
from hooks.core.conversion.versions import V1, V1_FIELDS, UnconvertibleError
from hooks.core.spec import load
from tests.builders import cluster_after, request, run, running, terminated
from tests.conversion_cases import comes_back, review, without_status
from tests.manifest_support import admit_mxjob
from tests.test_properties import PROFILE, jobs

OLD = {"v1alpha1": v1alpha1, "v1alpha2": v1alpha2}
CLIENT = create_app({"TESTING": True}).test_client()
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
POD_POLICIES = ("Always", "OnFailure", "Never")
CLEAN_POLICIES = ("All", "Running", "None")
TIMES = ("2018-09-04T10:00:00Z", "2018-09-04T11:30:00Z")
names = st.text("abcdefghij-", min_size=1, max_size=8).map(lambda s: f"j{s}0")
words = st.text("abcdefgh", min_size=1, max_size=6)
maybe = st.booleans()


# --- generated jobs ------------------------------------------------------------------------


def metadata(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """An MXJob's metadata as the API server sends it (never an empty `annotations`)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": "u-1", "generation": 2}
    if draw(maybe):
        meta["labels"] = draw(st.dictionaries(words, words, min_size=1, max_size=2))
    if draw(maybe):
        meta["annotations"] = draw(st.dictionaries(words, words, min_size=1, max_size=2))
    return meta


def pod_template(draw: st.DrawFn, policies: tuple[str, ...] = ()) -> dict[str, Any]:
    """A template with an `mxnet` container and, sometimes, what templates carry."""
    container: dict[str, Any] = {"name": "mxnet", "image": draw(st.sampled_from(["mx:1", "mx:2"]))}
    ports = []
    if draw(maybe):
        ports.append({"containerPort": 8080, "name": "http"})
    if draw(maybe):
        ports.insert(draw(st.integers(0, len(ports))), port(draw))
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {"containers": [container]}
    if draw(maybe):
        spec["containers"].append({"name": "sidecar", "image": "busybox"})
    if draw(maybe) and policies:
        spec["restartPolicy"] = draw(st.sampled_from(policies))
    if draw(maybe):
        spec["schedulerName"] = draw(st.sampled_from(["volcano", "default-scheduler"]))
    template: dict[str, Any] = {"spec": spec}
    if draw(maybe):
        template["metadata"] = {"labels": {"team": draw(words)}}
    return template


def port(draw: st.DrawFn) -> dict[str, Any]:
    found: dict[str, Any] = {"containerPort": draw(st.integers(1, 65535)), "name": "mxjob-port"}
    if draw(st.integers(0, 4)) == 0:
        found["protocol"] = "TCP"
    return found


#: Moments of a job's life whose status a v1 job is generated with: its pods created, running,
#: the Worker 0 failed (Restarting or Failed, as its policy says), every pod done.
MOMENTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "created": lambda pod: pod,
    "running": running,
    "worker-failed": lambda pod: (
        terminated(pod, 1) if pod["metadata"]["name"].endswith("-0") else running(pod)
    ),
    "done": lambda pod: terminated(pod, 0),
}


def status_at(job: dict[str, Any], moment: str) -> dict[str, Any]:
    """The status the hook writes when every pod of the job is in the state of `moment`."""
    pods = [
        MOMENTS[moment](c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))
    ]
    return dict(run(request(job, pods)).status)


@st.composite
def v1_jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid v1 MXJob (tests/test_properties.py), sometimes with the status the hook wrote at
    one moment of its life, in any layout v1 takes: inline run policy, lower-case keys, labels,
    template schedulers."""
    job = draw(jobs())
    spec = job["spec"]
    moment = draw(st.sampled_from([None, *MOMENTS]))
    if moment is not None:
        job["status"] = status_at(job, moment)
    job["metadata"] = {**job["metadata"], **metadata(draw, job["metadata"]["name"])}
    if draw(maybe):
        del spec["jobMode"]
    if draw(maybe):
        spec["successPolicy"] = draw(st.sampled_from(["", "AllWorkers"]))
    run_policy = spec["runPolicy"]
    if draw(maybe):
        run_policy["ttlSecondsAfterFinished"] = draw(st.integers(0, 100))
    if draw(maybe):
        run_policy["suspend"] = draw(maybe)
    if draw(maybe):
        del run_policy["cleanPodPolicy"]
    if draw(maybe):  # kubeflow/mxnet-operator v1: directly under spec
        spec.update(spec.pop("runPolicy"))
    scheduler = draw(st.sampled_from([None, "volcano"]))
    for key in list(spec["mxReplicaSpecs"]):
        replica = spec["mxReplicaSpecs"].pop(key)
        replica["template"] = pod_template(draw, POD_POLICIES)
        if scheduler:
            replica["template"]["spec"]["schedulerName"] = scheduler
        if draw(maybe):
            del replica["restartPolicy"]
        if draw(maybe):
            replica["label"] = draw(words)
            if draw(maybe):
                replica["template"].setdefault("metadata", {})["annotations"] = {
                    "tuner-server-key": draw(st.sampled_from([replica["label"], "other"]))
                }
        spec["mxReplicaSpecs"][key.lower() if draw(st.integers(0, 5)) == 0 else key] = replica
    return job


def old_job(
    draw: st.DrawFn, version: str, spec: dict[str, Any], status: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """An MXJob of an old version with this spec and, sometimes, the status `status` makes."""
    job: dict[str, Any] = {"apiVersion": f"kubeflow.org/{version}", "kind": "MXJob"}
    job["metadata"] = metadata(draw, draw(names))
    job["spec"] = spec
    if draw(maybe):
        job["status"] = status()
    return job


@st.composite
def v1alpha1_jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A v1alpha1 MXJob as users wrote it (kubeflow/mxnet-operator examples/mx_job_dist.yaml)
    or the old operator stored it (RuntimeId, mxImage, terminationPolicy, PsRootPort and
    replicas on every spec, its phase and state), in any order."""
    kinds = draw(st.lists(st.sampled_from(["SCHEDULER", "SERVER", "WORKER"]), unique=True))
    entries = []
    for kind in kinds:
        entry: dict[str, Any] = {"mxReplicaType": kind}
        if kind == "WORKER" and draw(maybe):
            entry["mxReplicaType"] = ""  # the old defaulter's WORKER
        if draw(maybe):
            entry["replicas"] = draw(st.integers(0, 4))
        if draw(maybe):
            entry["PsRootPort"] = draw(st.sampled_from([9000, 9091, 2222]))
        if draw(st.integers(0, 9)):
            entry["template"] = pod_template(draw, POD_POLICIES)
        entries.append(entry)
    spec: dict[str, Any] = {"replicaSpecs": entries}
    if draw(maybe):
        spec["RuntimeId"] = draw(
            st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=4, max_size=4)
        )
        spec["mxImage"] = "mxjob/mxnet:gpu"
        chief = draw(st.sampled_from(["WORKER", "SCHEDULER"]))
        spec["terminationPolicy"] = {"chief": {"replicaName": chief, "replicaIndex": 0}}
    if draw(maybe):
        spec["cleanupPodPolicy"] = draw(st.sampled_from(["", *CLEAN_POLICIES]))
    if draw(maybe):
        spec["schedulerName"] = draw(st.sampled_from(["", "volcano"]))
    if draw(maybe):
        spec["jobMode"] = draw(st.sampled_from(["dist", "local"]))
    return old_job(draw, "v1alpha1", spec, lambda: v1alpha1_status(draw, kinds))


def v1alpha1_status(draw: st.DrawFn, kinds: list[str]) -> dict[str, Any]:
    phase, state = draw(
        st.sampled_from(
            [
                ("", ""),
                ("Creating", "Running"),
                ("Running", "Running"),
                ("CleanUp", "Succeeded"),
                ("Done", "Succeeded"),
                ("Done", "Failed"),
                ("Failed", "Failed"),
            ]
        )
    )
    statuses = []
    for kind in draw(st.permutations(kinds)):
        counts = draw(
            st.dictionaries(
                st.sampled_from(["Running", "Succeeded", "Failed"]), st.integers(1, 3), max_size=2
            )
        )
        state_of = draw(st.sampled_from(["Running", "Succeeded", "Failed", "Unknown"]))
        statuses.append({"ReplicasStates": counts, "mx_replica_type": kind, "state": state_of})
    reason = draw(st.sampled_from(["", "Missing ReplicaSpec for chief: WORKER"]))
    status: dict[str, Any] = {"phase": phase, "reason": reason, "state": state}
    if statuses:
        status["replicaStatuses"] = statuses
    return status


@st.composite
def v1alpha2_jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A v1alpha2 MXJob as users wrote it (examples/mxnet-operator.v2) or the operator stored it
    (cleanPodPolicy All, mxjob-port appended), tuning jobs with a `label`, the first kubeflow
    v1alpha2's schedulerName, and the keys of the ksonnet prototype (`WORKER`)."""
    tune = draw(maybe)
    types = ["TunerTracker", "TunerServer", "Tuner"] if tune else ["Scheduler", "Server", "Worker"]
    chosen = draw(st.lists(st.sampled_from(types), unique=True, min_size=1))
    replicas: dict[str, Any] = {}
    for rtype in chosen:
        replica: dict[str, Any] = {}
        if draw(maybe):
            replica["replicas"] = draw(st.integers(0, 3))
        if draw(maybe):
            replica["restartPolicy"] = draw(st.sampled_from(RESTART_POLICIES))
        replica["template"] = pod_template(draw, POD_POLICIES)
        if draw(maybe):
            replica["label"] = draw(st.sampled_from(["2080ti", ""]))
        replicas[rtype.upper() if draw(st.integers(0, 5)) == 0 else rtype] = replica
    spec: dict[str, Any] = {"mxReplicaSpecs": replicas}
    if draw(maybe):
        spec["jobMode"] = draw(st.sampled_from(["", "MXTrain", "MXTune"]))
    if draw(maybe):
        spec["cleanPodPolicy"] = draw(st.sampled_from(CLEAN_POLICIES))
    if draw(maybe):
        spec["ttlSecondsAfterFinished"] = draw(st.integers(0, 600))
    if draw(maybe):
        spec["schedulerName"] = draw(st.sampled_from(["", "kube-batch"]))
    return old_job(draw, "v1alpha2", spec, lambda: v1alpha2_status(draw, list(replicas)))


def v1alpha2_status(draw: st.DrawFn, keys: list[str]) -> dict[str, Any]:
    condition = {"type": "Created", "status": "True", "reason": "MXJobCreated"}
    status: dict[str, Any] = {
        "conditions": [{**condition, "lastUpdateTime": TIMES[0], "lastTransitionTime": TIMES[0]}],
        "mxReplicaStatuses": {
            key: draw(
                st.dictionaries(
                    st.sampled_from(["active", "succeeded", "failed"]), st.integers(0, 2)
                )
            )
            for key in keys
        },
    }
    for key in ("startTime", "completionTime", "lastReconcileTime"):
        if draw(maybe):
            status[key] = draw(st.sampled_from(TIMES))
    return status


OLD_JOBS = {"v1alpha1": v1alpha1_jobs(), "v1alpha2": v1alpha2_jobs()}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.sampled_from(["", "WORKER", "mxnet", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=12,
)


def old_jobs(version: str) -> st.SearchStrategy[dict[str, Any]]:
    return OLD_JOBS[version]


# --- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(job=v1_jobs())
def test_a_v1_job_comes_back_exactly(version: str, job: dict[str, Any]) -> None:
    module = OLD[version]
    comes_back(lambda v1: module.to_v1(module.from_v1(v1)), job)


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(data=st.data())
def test_an_old_job_comes_back_exactly(version: str, data: st.DataObject) -> None:
    module = OLD[version]
    job = data.draw(old_jobs(version))
    comes_back(lambda old: module.from_v1(module.to_v1(old)), job)


@PROFILE
@given(job=v1alpha1_jobs())
def test_v1alpha1_through_v1alpha2_comes_back_exactly(job: dict[str, Any]) -> None:
    comes_back(
        lambda old: v1alpha1.from_v1(v1alpha2.to_v1(v1alpha2.from_v1(v1alpha1.to_v1(old)))), job
    )


@PROFILE
@given(job=v1alpha2_jobs())
def test_v1alpha2_through_v1alpha1_comes_back_exactly(job: dict[str, Any]) -> None:
    comes_back(
        lambda old: v1alpha2.from_v1(v1alpha1.to_v1(v1alpha1.from_v1(v1alpha2.to_v1(old)))), job
    )


# --- edits win over the stash --------------------------------------------------------------


@PROFILE
@given(job=v1_jobs(), replicas=st.integers(5, 9), data=st.data())
def test_replicas_edited_at_v1alpha1_win_and_v1_fields_stay(
    job: dict[str, Any], replicas: int, data: st.DataObject
) -> None:
    """GET at v1alpha1, change one type's replicas, PUT back: the v1 job has the new count and
    everything else it had (backoffLimit, failure rules, ExitCode, labels, …)."""
    # The edit, not v1's lower-case keys (the round trips above cover those): keys as v1 names
    # them, so the v1 job to expect names the edited type as v1alpha1 does.
    specs = job["spec"]["mxReplicaSpecs"]
    job["spec"]["mxReplicaSpecs"] = {
        TYPE_BY_FOLDED_NAME[k.lower()].value: v for k, v in specs.items()
    }
    old = v1alpha1.from_v1(job)
    assume(old["spec"]["replicaSpecs"])
    entry = data.draw(st.sampled_from(old["spec"]["replicaSpecs"]))
    entry["replicas"] = replicas
    want = copy.deepcopy(job)
    want["spec"]["mxReplicaSpecs"][entry["mxReplicaType"].capitalize()]["replicas"] = replicas
    assert without_status(v1alpha1.to_v1(old)) == without_status(want)


@PROFILE
@given(job=v1_jobs(), replicas=st.integers(5, 9), data=st.data())
def test_replicas_edited_at_v1alpha2_win_and_v1_fields_stay(
    job: dict[str, Any], replicas: int, data: st.DataObject
) -> None:
    old = v1alpha2.from_v1(job)
    key = data.draw(st.sampled_from(sorted(old["spec"]["mxReplicaSpecs"])))
    old["spec"]["mxReplicaSpecs"][key]["replicas"] = replicas
    want = copy.deepcopy(job)
    want["spec"]["mxReplicaSpecs"][key]["replicas"] = replicas
    assert without_status(v1alpha2.to_v1(old)) == without_status(want)


def scaled(version: str, job: dict[str, Any], key: str, replicas: int) -> dict[str, Any]:
    """The old job with the replicas of the type stored under `key` at v1 changed."""
    scaled = copy.deepcopy(job)
    if version == "v1alpha2":
        scaled["spec"]["mxReplicaSpecs"][key]["replicas"] = replicas
    for entry in scaled["spec"].get("replicaSpecs", []):
        if (entry["mxReplicaType"] or "WORKER") == key.upper():
            entry["replicas"] = replicas
    return scaled


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(data=st.data(), replicas=st.integers(5, 9))
def test_replicas_edited_at_v1_win_and_old_fields_stay(
    version: str, data: st.DataObject, replicas: int
) -> None:
    """An old job stored at v1 and scaled there reads at its version with the new count and
    every field only it holds (RuntimeId, mxImage, jobMode dist, …)."""
    module = OLD[version]
    job = data.draw(old_jobs(version))
    stored = module.to_v1(job)
    listed_as_written = not any(
        entry["at"] == ["spec", "replicaSpecs"]
        for entry in stash.take(stored, module.MAPPING.fields_key)[0]
    )
    specs = stored["spec"]["mxReplicaSpecs"]
    assume(specs)
    key = data.draw(st.sampled_from(sorted(specs)))
    specs[key]["replicas"] = replicas
    read, want = module.from_v1(stored), without_status(scaled(version, job, key, replicas))
    read = without_status(read)
    if listed_as_written:
        assert read == want
        return
    # A list v1alpha1 cannot write back as it was (its order, an empty mxReplicaType, …) is
    # kept only while unchanged; now it reads as v1alpha1 lists it, with the new count.
    (entry,) = [e for e in read["spec"]["replicaSpecs"] if e["mxReplicaType"] == key.upper()]
    assert entry["replicas"] == replicas
    assert {**read["spec"], "replicaSpecs": None} == {**want["spec"], "replicaSpecs": None}
    assert v1alpha1.to_v1(read)["spec"] == stored["spec"]


# --- totality and what a conversion may change ---------------------------------------------


def only_allowed_changes(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The API server refuses a conversion that changes other metadata than labels and
    annotations, or anything but apiVersion, spec and status."""
    for key in before.keys() | after.keys():
        if key not in ("apiVersion", "spec", "status", "metadata"):
            assert before.get(key) == after.get(key), key
    meta_before, meta_after = before.get("metadata", {}), after.get("metadata", {})
    for key in meta_before.keys() | meta_after.keys():
        if key not in ("labels", "annotations"):
            assert meta_before.get(key) == meta_after.get(key), key
    assert meta_before.get("labels") == meta_after.get("labels")


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(spec=json_values, status=json_values, extra=json_values)
def test_reading_any_v1_object_at_an_old_version_never_fails(
    version: str, spec: object, status: object, extra: object
) -> None:
    """Every stored job can be read at every version, whatever its spec and status hold."""
    module = OLD[version]
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob"}
    job["metadata"] = {"name": "j"}
    job.update(spec=spec, status=status, extra=extra)
    old = module.from_v1(job)
    only_allowed_changes(job, old)
    comes_back(lambda v1: module.to_v1(module.from_v1(v1)), job)


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(spec=json_values, status=json_values)
def test_any_old_object_converts_or_is_refused_with_a_field(
    version: str, spec: object, status: object
) -> None:
    module = OLD[version]
    job: dict[str, Any] = {"apiVersion": f"kubeflow.org/{version}", "kind": "MXJob"}
    job["metadata"] = {"name": "j"}
    job.update(spec=spec, status=status)
    try:
        converted = module.to_v1(job)
    except UnconvertibleError as exc:
        assert exc.path.startswith("spec")
        return
    only_allowed_changes(job, converted)
    comes_back(lambda old: module.from_v1(module.to_v1(old)), job)


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(data=st.data())
def test_conversions_change_only_what_the_api_server_allows(
    version: str, data: st.DataObject
) -> None:
    module = OLD[version]
    job = data.draw(v1_jobs())
    only_allowed_changes(job, module.from_v1(job))
    old = data.draw(old_jobs(version))
    only_allowed_changes(old, module.to_v1(old))


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(job=v1_jobs())
def test_an_old_version_holds_all_a_v1_job_reads_as(version: str, job: dict[str, Any]) -> None:
    """The old version's schema and rules take it: the API server prunes nothing of the
    conversion, and a client may write back what it read."""
    assert admit_mxjob(OLD[version].from_v1(job))[1] == []


@pytest.mark.parametrize("version", OLD)
@PROFILE
@given(job=v1_jobs())
def test_the_stash_is_json_of_entries(version: str, job: dict[str, Any]) -> None:
    text = OLD[version].from_v1(job)["metadata"].get("annotations", {}).get(V1_FIELDS)
    if text is not None:
        entries = json.loads(text)
        assert entries and all(set(e) <= {"at", "was", "to"} and e["at"] for e in entries)


@st.composite
def reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A ConversionReview of objects of any served version holding any JSON."""
    versions = st.sampled_from([f"kubeflow.org/{v}" for v in ("v1alpha1", "v1alpha2", "v1")])
    objects = []
    for _ in range(draw(st.integers(0, 3))):
        obj: dict[str, Any] = {"apiVersion": draw(versions), "kind": "MXJob"}
        obj["metadata"] = {"name": draw(names)}
        obj.update(spec=draw(json_values), status=draw(json_values))
        objects.append(obj)
    return review(draw(versions), *objects)


@PROFILE
@given(body=st.one_of(json_values, reviews(), v1alpha1_jobs().map(lambda j: review(V1, j))))
def test_convert_answers_every_body_without_a_bug(body: object) -> None:
    """200 or 422 with the error shape, never a 500: the test client raises on a bug."""
    answer = CLIENT.post("/convert", data=json.dumps(body), content_type="application/json")
    assert answer.status_code in (200, 422)
    if answer.status_code == 422:
        assert set(answer.get_json()) == {"error", "message"}


# --- what an old job means -----------------------------------------------------------------


@PROFILE
@given(job=v1alpha1_jobs())
def test_a_v1alpha1_job_means_to_the_hook_what_it_meant(job: dict[str, Any]) -> None:
    """Replicas, the pod's restartPolicy (absent: Always), PsRootPort as the mxjob-port (9091
    by default), the job's schedulerName on every pod, cleanupPodPolicy (absent: All)."""
    entries = [e for e in job["spec"]["replicaSpecs"] if "template" in e]
    assume(entries and len(entries) == len(job["spec"]["replicaSpecs"]))
    spec, problems = load(v1alpha1.to_v1(job)["spec"])
    assert problems == [] and spec is not None
    policy = job["spec"].get("cleanupPodPolicy") or "All"
    assert spec.run_policy.clean_pod_policy.value == policy
    for entry in entries:
        rtype = ReplicaType((entry["mxReplicaType"] or "WORKER").capitalize())
        replica = spec.replicas[rtype]
        assert replica.replicas == entry.get("replicas", 1)
        assert replica.restart_policy.value == entry["template"]["spec"].get(
            "restartPolicy", "Always"
        )
        assert replica.mxnet_port == entry.get("PsRootPort", replica.mxnet_port)
        scheduler = job["spec"].get("schedulerName")
        if scheduler:
            assert replica.template["spec"]["schedulerName"] == scheduler


@PROFILE
@given(job=v1alpha2_jobs())
def test_a_v1alpha2_job_means_to_the_hook_what_it_meant(job: dict[str, Any]) -> None:
    """The mode (empty: MXTune with tuning types), cleanPodPolicy (absent: All), the label as
    the MX_CONFIG label unless the template's annotation gives one."""
    spec, problems = load(v1alpha2.to_v1(job)["spec"])
    assert problems == [] and spec is not None
    tune = any(key.lower().startswith("tuner") for key in job["spec"]["mxReplicaSpecs"])
    mode = job["spec"].get("jobMode") or ("MXTune" if tune else "MXTrain")
    assert spec.mode.value == mode
    assert spec.run_policy.clean_pod_policy.value == job["spec"].get("cleanPodPolicy", "All")
    for key, replica in job["spec"]["mxReplicaSpecs"].items():
        read = spec.replicas[TYPE_BY_FOLDED_NAME[key.lower()]]
        annotations = read.template.get("metadata", {}).get("annotations", {})
        own = replica["template"].get("metadata", {}).get("annotations", {}).get("tuner-server-key")
        assert annotations.get("tuner-server-key") == (own or replica.get("label") or None)

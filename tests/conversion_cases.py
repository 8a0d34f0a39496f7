"""The golden conversion cases: each builds the ConversionReview the API server sends at one
moment (docs/api.md#versions), or a body that is none.

A case is a function decorated with `@case`, named after what it shows; the first line of its
docstring is its reason. `python -m tests.conversion_cases` writes every case to
`tests/conversion_fixtures/<case>/` (`request.json`, the answer in `response.json`, and
`digest.txt`: the answer's status, each object's versions, what went into or came out of a
stash, and whether converting the answer back gives the object sent); review the digests, then
the answers, before committing. `tests/test_fixtures.py` compares the hook's answer
with the recorded one, whole; `tests/test_http.py` replays every case through `POST /convert`.

The old objects are the historical ones (examples/legacy/, each naming its source): the
design proposal's job, kubeflow/mxnet-operator's v1alpha1 `examples/mx_job_dist.yaml`, its
README's `kubectl get -o yaml` of a stored job (built here from the proposal's), and the
v1alpha2 examples.
"""

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from hooks.app import v1_spec_schema
from hooks.body import NotAConversionReviewError
from hooks.core.conversion import stash
from hooks.core.conversion.review import ReviewError, answer, convert, parse_review
from hooks.core.conversion.versions import V1, V1_FIELDS
from tests import golden
from tests.builders import cluster_after, mxjob, replica, request, run, running
from tests.fixture_cases import Build, Case, Json, reason_of

FIXTURES = Path(__file__).parent / "conversion_fixtures"
#: The historical jobs, each file naming where it comes from.
OLD_EXAMPLES = Path(__file__).parents[1] / "examples" / "legacy"
REGENERATE = ".venv/bin/python -m tests.conversion_cases"
V1ALPHA1 = "kubeflow.org/v1alpha1"
V1ALPHA2 = "kubeflow.org/v1alpha2"
UID = "705ab4f5-6393-11e8-b7cc-42010a800002"
#: The annotations a stash may be kept in, on the converted object or the one sent.
STASHES = (V1_FIELDS, "mxjob.kubeflow.org/v1alpha1-fields", "mxjob.kubeflow.org/v1alpha2-fields")

CASES: dict[str, Case] = {}


#: What the webhook checks a stash against (hooks/app.py reads it the same way).
V1_SPEC = v1_spec_schema()


def without_status(obj: Json) -> Json:
    return {key: value for key, value in obj.items() if key != "status"}


def comes_back(there_and_back: Callable[[Json], Json], obj: Json) -> None:
    """Through another version and back, an object is itself but for its status, which comes
    back as that version shows it (a stash never holds one: docs/security.md#the-conversion-stash),
    and from then on exactly."""
    back = there_and_back(copy.deepcopy(obj))
    assert without_status(back) == without_status(obj)
    assert there_and_back(copy.deepcopy(back)) == back


def case(build: Build) -> Build:
    """Register a conversion case under its function's name, `_` written `-`."""
    name = build.__name__.replace("_", "-")
    CASES[name] = Case(name, reason_of(build), build)
    return build


def review(desired: str, *objects: Json, uid: str = UID) -> Json:
    """A ConversionReview as the API server sends it."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": list(objects)},
    }


def stored(job: Json, uid: str = "e800b1ed-9c6c-11e8-962f-704d7b2c0a63") -> Json:
    """A job as the API server holds it: in a namespace, with its identity."""
    stamped = copy.deepcopy(job)
    stamped["metadata"] = {
        **stamped["metadata"],
        "namespace": "default",
        "uid": uid,
        "generation": 1,
        "resourceVersion": "491499",
        "creationTimestamp": "2018-08-10T07:13:39Z",
    }
    return stamped


def old_example(name: str) -> Json:
    """One of the historical jobs in examples/legacy/."""
    job: Json = yaml.safe_load((OLD_EXAMPLES / name).read_text())
    return job


def answered(body: object) -> Json:
    """The hook's answer to a body: the review's, or the 422 error of one that is none."""
    try:
        return dict(answer(parse_review(body), V1_SPEC))
    except ReviewError as exc:
        return {"error": NotAConversionReviewError.error, "message": str(exc)}


# --- v1alpha1: the first operator's jobs ---------------------------------------------------

PROPOSAL = old_example("v1alpha1_proposal.yaml")

KUBEFLOW_EXAMPLE = old_example("v1alpha1_mx_job_dist.yaml")


def stored_by_the_old_operator() -> Json:
    """The README's `kubectl get -o yaml` of the proposal's job (kubeflow 8d73e16), with
    kubeflow's own defaults: no jobMode (its type had none) and the chief WORKER 0."""
    job = stored(PROPOSAL)
    spec = job["spec"]
    del spec["jobMode"]
    spec["RuntimeId"] = "aycw"
    spec["mxImage"] = "mxjob/mxnet:gpu"
    spec["terminationPolicy"] = {"chief": {"replicaIndex": 0, "replicaName": "WORKER"}}
    for entry in spec["replicaSpecs"][1:]:
        entry["PsRootPort"] = 9091
    for entry in spec["replicaSpecs"]:
        entry["template"]["metadata"] = {"creationTimestamp": None}
        entry["template"]["spec"]["containers"][0]["resources"] = {}
    counts = [
        {"ReplicasStates": {"Running": 1}, "mx_replica_type": kind, "state": "Running"}
        for kind in ("SCHEDULER", "SERVER", "WORKER")
    ]
    job["status"] = {
        "phase": "Running",
        "reason": "",
        "replicaStatuses": counts,
        "state": "Running",
    }
    return job


@case
def v1alpha1_proposal_example() -> Json:
    """The design proposal's v1alpha1 job as v1: PsRootPort 9000 is the Scheduler's mxjob-port."""
    return review(V1, stored(PROPOSAL))


@case
def v1alpha1_kubeflow_example() -> Json:
    """kubeflow's v1alpha1 example as v1: OnFailure stays, cleanup All, jobMode dist kept aside."""
    return review(V1, stored(KUBEFLOW_EXAMPLE))


@case
def v1alpha1_stored_by_the_old_operator() -> Json:
    """A job the v1alpha1 operator stored: RuntimeId, mxImage, terminationPolicy kept aside.

    Its status (phase Running) reads as the conditions Created and Running, its counts as
    v1's."""
    return review(V1, stored_by_the_old_operator())


@case
def v1alpha1_finished_job() -> Json:
    """A v1alpha1 job that failed: Done and Failed read as a Failed condition with its reason."""
    job = stored_by_the_old_operator()
    job["status"] = {
        "phase": "Done",
        "reason": "chief WORKER 0 exited with code 1",
        "replicaStatuses": [
            {"ReplicasStates": {"Failed": 1}, "mx_replica_type": "WORKER", "state": "Failed"}
        ],
        "state": "Failed",
    }
    return review(V1, job)


def exit_code_job() -> Json:
    """A v1 job whose every pod runs, written as the hook wrote its status."""
    replicas = {
        "Scheduler": replica(1, "ExitCode"),
        "Server": replica(1, "ExitCode"),
        "Worker": replica(2, "ExitCode"),
    }
    policy = {"backoffLimit": 3, "cleanPodPolicy": "All"}
    job = mxjob(replicas=replicas, run_policy=policy)
    pods = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]
    return mxjob(replicas=replicas, run_policy=policy, status=run(request(job, pods)).status)


@case
def v1_job_read_at_v1alpha1() -> Json:
    """A running v1 job read at v1alpha1: ExitCode pods are Never, backoffLimit kept aside."""
    return review(V1ALPHA1, exit_code_job())


@case
def v1_job_edited_at_v1alpha1() -> Json:
    """Read at v1alpha1, 4 WORKERs written back: v1 gets 4 Workers, ExitCode and backoffLimit."""
    old = convert(exit_code_job(), V1ALPHA1)
    old["spec"]["replicaSpecs"][2]["replicas"] = 4
    return review(V1, old)


@case
def v1_tuning_job_read_at_v1alpha1() -> Json:
    """An MXTune job reads at v1alpha1 without replica specs, its spec kept aside, not refused.

    Refusing it would fail every list of MXJobs at v1alpha1."""
    replicas = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}
    return review(V1ALPHA1, mxjob(name="tune", replicas=replicas, mode="MXTune"))


@case
def v1_job_whose_stash_is_no_stash_read_at_v1alpha1() -> Json:
    """A stash entry with neither was nor to is no stash: left as it is, the job read without it.

    Once a KeyError in stash.apply: every list of MXJobs at v1alpha1 failed on this one job."""
    job = exit_code_job()
    forged = json.dumps([{"at": ["spec", "jobMode"]}, {"at": ["spec", "x"], "to": 1}])
    job["metadata"]["annotations"] = {"mxjob.kubeflow.org/v1alpha1-fields": forged}
    return review(V1ALPHA1, job)


# --- v1alpha2 ------------------------------------------------------------------------------

README_EXAMPLE = old_example("v1alpha2_mx_job_dist_gpu.yaml")

TUNE_EXAMPLE = old_example("v1alpha2_mx_job_tune_gpu.yaml")


@case
def v1alpha2_readme_example() -> Json:
    """The v1alpha2 README's job as v1: no jobMode is MXTrain, no cleanPodPolicy is All."""
    return review(V1, stored(README_EXAMPLE))


@case
def v1alpha2_tuning_example() -> Json:
    """The v1alpha2 tuning job as v1: its label 2080ti is the tuner-server-key annotation too."""
    return review(V1, stored(TUNE_EXAMPLE))


@case
def v1alpha2_stored_by_the_old_operator() -> Json:
    """A finished job the v1alpha2 operator stored: jobMode "", its defaults, its status.

    cleanPodPolicy All and the mxjob-port were persisted by its full-object updates; a finished
    job's counts are reset to {}; lastReconcileTime (which it never wrote) is kept aside."""
    job = stored(README_EXAMPLE)
    spec = job["spec"]
    spec["jobMode"] = ""
    spec["cleanPodPolicy"] = "All"
    for replica_spec in spec["mxReplicaSpecs"].values():
        replica_spec["template"]["metadata"] = {"creationTimestamp": None}
        container = replica_spec["template"]["spec"]["containers"][0]
        container["ports"] = [{"containerPort": 9091, "name": "mxjob-port"}]
        container["resources"] = container.get("resources", {})

    def condition(ctype: str, status: str, at: str) -> Json:
        reason, message = f"MXJob{ctype}", f"MXJob mxnet-job is {ctype.lower()}."
        if ctype == "Succeeded":
            message = "MXJob mxnet-job is successfully completed."
        stamp = f"2018-09-04T10:{at}Z"
        return {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
        }

    job["status"] = {
        "conditions": [
            condition("Created", "True", "00:00"),
            condition("Running", "False", "20:00"),
            condition("Succeeded", "True", "20:00"),
        ],
        "mxReplicaStatuses": {"Scheduler": {}, "Server": {}, "Worker": {}},
        "startTime": "2018-09-04T10:01:00Z",
        "completionTime": "2018-09-04T10:20:00Z",
        "lastReconcileTime": "2018-09-04T10:20:00Z",
    }
    return review(V1, job)


@case
def v1alpha2_scheduler_name() -> Json:
    """The first kubeflow v1alpha2's schedulerName goes onto every template, as into every pod."""
    job = stored(README_EXAMPLE)
    job["spec"]["schedulerName"] = "kube-batch"
    return review(V1, job)


@case
def v1_job_read_at_v1alpha2() -> Json:
    """A running v1 job read at v1alpha2: its counts as mxReplicaStatuses, restarts kept aside."""
    return review(V1ALPHA2, exit_code_job())


# --- several objects, and between old versions --------------------------------------------


@case
def v1alpha1_read_at_v1alpha2() -> Json:
    """v1alpha1 to v1alpha2 goes through v1: the fields only v1alpha1 holds ride in its stash."""
    return review(V1ALPHA2, stored(KUBEFLOW_EXAMPLE))


@case
def a_list_of_every_version() -> Json:
    """A list read at v1: each object converted in order, the v1 one returned as it is."""
    return review(V1, stored(PROPOSAL), stored(README_EXAMPLE), exit_code_job())


# --- objects v1 cannot hold: the answer is a Failure ---------------------------------------


def proposal_with(**changes: Any) -> Json:
    """The proposal's job with spec fields changed (None: removed)."""
    job = stored(PROPOSAL)
    for key, value in changes.items():
        job["spec"][key] = value
    return job


def listing(*types: object, name: str = "example-dist-job") -> Json:
    """The proposal's job, named `name`, listing an entry per mxReplicaType (None: absent)."""
    (first,) = PROPOSAL["spec"]["replicaSpecs"][:1]
    entries = []
    for rtype in types:
        entry = {k: v for k, v in copy.deepcopy(first).items() if k != "mxReplicaType"}
        if rtype is not None:
            entry["mxReplicaType"] = rtype
        entries.append(entry)
    job = proposal_with(replicaSpecs=entries)
    job["metadata"]["name"] = name
    return job


@case
def refused_type_twice() -> Json:
    """Two WORKER entries (the old operator ran both, names colliding): v1 holds one per type."""
    return review(V1, listing("SCHEDULER", "WORKER", "WORKER"))


@case
def refused_empty_type_beside_worker() -> Json:
    """An entry without mxReplicaType is WORKER, as the old defaulter made it: WORKER twice."""
    return review(V1, listing("WORKER", None))


@case
def refused_unknown_type() -> Json:
    """mxReplicaType PS was an invalid job in v1alpha1 too."""
    return review(V1, listing("SCHEDULER", "PS"))


@case
def refused_replica_spec_not_an_object() -> Json:
    """A replicaSpecs entry that is not an object."""
    return review(V1, proposal_with(replicaSpecs=["WORKER"]))


@case
def refused_replica_specs_not_a_list() -> Json:
    """v1's map of replica specs sent as v1alpha1."""
    return review(V1, proposal_with(replicaSpecs={"Worker": {}}))


@case
def refused_v1alpha2_replica_specs_not_a_map() -> Json:
    """v1alpha1's list of replica specs sent as v1alpha2."""
    job = stored(README_EXAMPLE)
    job["spec"]["mxReplicaSpecs"] = PROPOSAL["spec"]["replicaSpecs"]
    return review(V1, job)


@case
def refused_spec_not_an_object() -> Json:
    """A spec that is not an object."""
    job = stored(PROPOSAL)
    job["spec"] = "dist"
    return review(V1, job)


@case
def refused_another_kind() -> Json:
    """An object that is no MXJob."""
    job = stored(PROPOSAL)
    job["kind"] = "TFJob"
    return review(V1, job)


@case
def refused_version_not_served() -> Json:
    """An MXJob of kubeflow.org/v1beta1, which this CRD does not serve."""
    job = stored(README_EXAMPLE)
    job["apiVersion"] = "kubeflow.org/v1beta1"
    return review(V1, job)


def with_stash(job: Json, *entries: Json) -> Json:
    """The job with a stash of its own writing in `mxjob.kubeflow.org/v1-fields`."""
    job["metadata"].setdefault("annotations", {})[V1_FIELDS] = json.dumps(list(entries))
    return job


@case
def refused_stash_changing_managed_by() -> Json:
    """A stash naming another managedBy: immutable, and only a stash can bring it in.

    The webhook cannot tell a copy of the stored value from a change: a job with managedBy is
    written at v1 only."""
    entry = {"at": ["spec", "runPolicy", "managedBy"], "to": "kueue.x-k8s.io/multikueue"}
    return review(V1, with_stash(stored(PROPOSAL), entry))


def floor_breaking(job: Json, replicas: int) -> Json:
    """The proposal's job whose WORKER has `replicas` and 30 containers of 200-character images:
    with 10000 replicas, 281 MB of answer at least (the CRD's floor), over its 256 MiB."""
    (worker,) = [e for e in job["spec"]["replicaSpecs"] if e["mxReplicaType"] == "WORKER"]
    worker["replicas"] = replicas
    containers = worker["template"]["spec"]["containers"]
    containers += [{"name": f"side-{i}", "image": "i" * 200} for i in range(30)]
    return job


@case
def refused_over_the_floor_at_v1alpha1() -> Json:
    """10000 WORKERs of 31 containers: over the CRD's floor, which v1alpha1's rules lack."""
    return review(V1, floor_breaking(stored(PROPOSAL), 10000))


@case
def refused_stash_bringing_the_answer_over_the_floor() -> Json:
    """A stash raising the WORKERs from 1 to 10000: the answer over the CRD's floor."""
    entry = {"at": ["spec", "mxReplicaSpecs", "Worker", "replicas"], "was": 1, "to": 10000}
    return review(V1, with_stash(floor_breaking(stored(PROPOSAL), 1), entry))


@case
def refused_one_object_fails_the_list() -> Json:
    """One object v1 cannot hold fails the whole answer: no object is returned."""
    bad = listing("WORKER", "WORKER", name="two-workers")
    return review(V1, stored(PROPOSAL), bad, stored(README_EXAMPLE))


# --- bodies that are no ConversionReview: 422 -----------------------------------------------


def broken(**request_fields: object) -> Json:
    """The review of the proposal's job with request fields changed (None: removed)."""
    body = review(V1, stored(PROPOSAL))
    for key, value in request_fields.items():
        if value is None:
            del body["request"][key]
        else:
            body["request"][key] = value
    return body


@case
def broken_not_an_object() -> Json:
    """A JSON array is no review."""
    return [review(V1)]  # type: ignore[return-value]


@case
def broken_another_kind() -> Json:
    """An AdmissionReview sent to the conversion webhook."""
    return {**review(V1), "kind": "AdmissionReview"}


@case
def broken_v1beta1_review() -> Json:
    """An apiextensions.k8s.io/v1beta1 review: the CRD asks for v1 reviews only."""
    return {**review(V1), "apiVersion": "apiextensions.k8s.io/v1beta1"}


@case
def broken_no_request() -> Json:
    """A review without its request."""
    body = review(V1)
    del body["request"]
    return body


@case
def broken_no_uid() -> Json:
    """A request without a uid, which the answer must echo."""
    return broken(uid=None)


@case
def broken_uid_too_long() -> Json:
    """A uid of 129 characters: the API server's are UUIDs, and the answer and log echo it."""
    return broken(uid="u" * 129)


@case
def broken_no_desired_version() -> Json:
    """A request without desiredAPIVersion."""
    return broken(desiredAPIVersion=None)


@case
def broken_desired_version_not_served() -> Json:
    """A request for kubeflow.org/v1beta1, which this CRD does not serve."""
    return broken(desiredAPIVersion="kubeflow.org/v1beta1")


@case
def broken_objects_not_a_list() -> Json:
    """objects as one object instead of a list."""
    return broken(objects=stored(PROPOSAL))


@case
def broken_object_not_an_object() -> Json:
    """An entry of objects that is not an object."""
    return broken(objects=[stored(PROPOSAL), "example-dist-job"])


# --- the digest ----------------------------------------------------------------------------


def digest(reason: str, body: Any, response: Any) -> str:
    """What a case proves, in a few lines: a change of behaviour shows as a change here."""
    lines = [f"reason:    {reason}"]
    if "error" in response:
        return "\n".join([*lines, f"answer:    422 {response['error']}: {response['message']}", ""])
    result = response["response"]["result"]
    if "message" in result:
        return "\n".join([*lines, f"answer:    200 {result['status']}: {result['message']}", ""])
    lines.append(f"answer:    200 {result['status']}")
    sent = body["request"]["objects"]
    for before, after in zip(sent, response["response"]["convertedObjects"], strict=True):
        lines += _object_lines(before, after)
    return "\n".join(lines) + "\n"


def _object_lines(before: Json, after: Json) -> list[str]:
    """The object's versions, what it means at v1, its stashes, and the way back."""
    name = f"{before['metadata'].get('namespace')}/{before['metadata']['name']}"
    lines = [f"object:    {name} {before['apiVersion']} → {after['apiVersion']}"]
    lines += _meaning(convert(copy.deepcopy(after), V1))
    for key in STASHES:
        taken, put = _stash_paths(before, key), _stash_paths(after, key)
        if put and put != taken:
            lines.append(f"stashed:   {key}: {', '.join(put)}")
        if taken and not put:
            lines.append(f"restored:  {key}: {', '.join(taken)}")
    back = convert(copy.deepcopy(after), before["apiVersion"])
    if back == before:
        same = "the object sent"
    elif without_status(back) == without_status(before):
        same = f"the object sent, its status as {after['apiVersion']} shows it"
    else:
        same = "NOT the object sent"
    lines.append(f"back:      at {before['apiVersion']} again: {same}")
    return lines


def _meaning(job: Json) -> list[str]:
    """What the hook reads of the job at v1: mode, cleanup, each type; the status's conditions."""
    spec = job["spec"]
    policy = spec.get("runPolicy", {}).get("cleanPodPolicy", spec.get("cleanPodPolicy", "-"))
    parts = [f"{spec.get('jobMode', 'MXTrain')}, cleanPodPolicy {policy}"]
    for rtype, each in sorted(spec.get("mxReplicaSpecs", {}).items()):
        words = [f"{rtype} {each.get('replicas', 1)} {each.get('restartPolicy', 'Never')}"]
        template = each.get("template", {})
        for port in template.get("spec", {}).get("containers", [{}])[0].get("ports", []):
            if port.get("name") == "mxjob-port":
                words.append(f"port {port['containerPort']}")
        if "schedulerName" in template.get("spec", {}):
            words.append(f"scheduler {template['spec']['schedulerName']}")
        key = template.get("metadata", {}).get("annotations", {}).get("tuner-server-key")
        if key is not None:
            words.append(f"tuner-server-key {key}")
        parts.append(" ".join(words))
    lines = [f"as v1:     {'; '.join(parts)}"]
    conditions = job.get("status", {}).get("conditions", [])
    if conditions:
        shown = " ".join(f"{c['type']}={c['status']}" for c in conditions)
        lines.append(f"status:    {shown}")
    return lines


def _stash_paths(obj: Json, key: str) -> list[str]:
    return [".".join(entry["at"]) for entry in stash.take(obj, key)[0]]


def write() -> None:
    """Record every case: its body, the hook's answer and the digest of both."""
    for name, each in CASES.items():
        body = each.build()
        folder = FIXTURES / name
        golden.write(folder, each.reason, body, each.now, answered(body), digest)
        print(f"wrote {folder}", file=sys.stderr)


if __name__ == "__main__":
    write()

"""What one namespace's user can send the hook, and what it must still do: one test per attack
of docs/security.md that the hook answers itself (the cluster-wide ones are in tests/e2e and
tests/realnode). Every request goes through the Flask app in testing mode, so a bug raises.
"""

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from hooks.app import v1_spec_schema
from hooks.core.conversion.review import MAX_CHECKED_BYTES, MESSAGE_CHARS, answer, parse_review
from hooks.core.conversion.versions import V1, V1_FIELDS
from tests.builders import cluster_after, mxjob, replica, request, run, running
from tests.conversion_cases import review
from testsupport import fuzzing

Json = dict[str, Any]
#: Readable RFC 3339, but outside the years Python holds once in UTC.
OUT_OF_RANGE = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")


def worker_job() -> Json:
    return mxjob(replicas={"Worker": replica(1)})


def running_children(job: Json) -> list[Json]:
    return [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]


def sync(client: FlaskClient, body: Json) -> Json:
    answer = client.post("/sync", json=body)
    assert answer.status_code == 200, answer.data
    result: Json = answer.get_json()
    return result


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
def test_a_start_time_outside_the_utc_years_is_unknown_not_a_500(
    client: FlaskClient, moment: str
) -> None:
    """Once an OverflowError in parse_time: a 500 for that job on every sync, for ever. The
    start is then taken from the pods, as for a status the hook cannot read."""
    job = worker_job()
    children = running_children(job)
    before = run(request(job, children)).status
    job["status"] = {**before, "startTime": moment}
    answer = sync(client, request(job, children))
    assert answer["status"]["conditions"][-1]["type"] in ("Running", "Restarting")
    assert answer["status"]["startTime"] == before["startTime"]


# --- the conversion stash: written by whoever writes the object ---------------------------

#: A Succeeded status nothing but the hook may write.
FORGED = {
    "conditions": [
        {"type": "Created", "status": "True", "reason": "MXJobCreated"},
        {"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded"},
    ],
    "completionTime": "2026-03-01T12:00:00Z",
}


def old_job(*entries: Json) -> Json:
    """A v1alpha1 job as a namespace editor writes it, its stash holding `entries`."""
    template = {"spec": {"containers": [{"name": "mxnet", "image": "mxjob/mxnet:gpu"}]}}
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "MXJob",
        "metadata": {
            "name": "mnist",
            "namespace": "team-a",
            "annotations": {V1_FIELDS: json.dumps(list(entries))},
        },
        "spec": {
            "replicaSpecs": [{"mxReplicaType": "WORKER", "replicas": 1, "template": template}]
        },
    }


def convert(client: FlaskClient, obj: Json) -> Json:
    answer = client.post("/convert", json=review(V1, obj))
    assert answer.status_code == 200, answer.data
    response: Json = answer.get_json()["response"]
    return response


def test_a_stash_never_writes_the_status(client: FlaskClient) -> None:
    """Once applied as written: a write at v1alpha1 set the v1 status the RBAC keeps for the
    controller (the API server drops the status of a create before it converts)."""
    response = convert(client, old_job({"at": ["status"], "to": FORGED}))
    assert response["result"] == {"status": "Success"}
    (converted,) = response["convertedObjects"]
    assert "status" not in converted
    assert V1_FIELDS not in converted["metadata"].get("annotations", {})


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ({"at": ["spec", "runPolicy", "backoffLimit"], "to": -5}, "backoffLimit"),
        (
            {"at": ["spec", "mxReplicaSpecs", "Worker", "replicas"], "was": 1, "to": 100_000},
            "spec.mxReplicaSpecs.Worker.replicas",
        ),
        ({"at": ["spec", "jobMode"], "was": "MXTrain", "to": "MXTune"}, "Tuner.replicas"),
        # JSON's `true` is no 1, though Python's == says it is.
        (
            {"at": ["spec", "mxReplicaSpecs", "Worker", "replicas"], "was": 1, "to": True},
            "spec.mxReplicaSpecs.Worker.replicas",
        ),
    ],
)
def test_a_stash_never_brings_in_what_v1_refuses(
    client: FlaskClient, entry: Json, named: str
) -> None:
    """Once applied unchecked, past every rule of the v1 schema (the API server checks a write
    at v1alpha1 against v1alpha1's): the conversion fails, and so the write, naming both."""
    response = convert(client, old_job(entry))
    assert response["result"]["status"] == "Failure"
    message = response["result"]["message"]
    assert f"metadata.annotations[{V1_FIELDS}]: brings in what {V1} refuses" in message
    assert named in message, message


def named(job: Json, name: str) -> Json:
    return {**job, "metadata": {**job["metadata"], "name": name}}


def test_a_review_of_more_stashes_than_an_object_holds_fails_whole() -> None:
    """Once checked one by one at ~2.2 s of CPU per MiB of small stashed objects (a validator
    made for each), any pod could keep the webhook's worker busy far past the 0.45 s per MiB
    docs/security.md said. The API server converts one object a write, the only request that
    brings a stash in: a review whose stashed objects weigh more than an object it stores fails
    whole, naming the limit, before any is checked."""
    entry = {"at": ["spec", "runPolicy", "backoffLimit"], "to": 3}
    job = old_job(entry)
    jobs = [named(job, f"j-{i:05}") for i in range(MAX_CHECKED_BYTES // 200)]
    count = MAX_CHECKED_BYTES // len(json.dumps(jobs[0], separators=(",", ":"))) + 1
    many = parse_review(review(V1, *jobs[:count]))
    result = answer(many, v1_spec_schema())["response"]
    assert result["convertedObjects"] == []
    assert result["result"]["status"] == "Failure"
    assert (
        f"whose {V1_FIELDS} must be checked, over the {MAX_CHECKED_BYTES}"
        in (result["result"]["message"])
    )
    fewer = parse_review(review(V1, *jobs[: count - 1]))
    assert answer(fewer, v1_spec_schema())["response"]["result"] == {"status": "Success"}
    # Read at an old version (no stash to check), the same count converts.
    plain = [{**j, "metadata": {"name": j["metadata"]["name"]}} for j in jobs[:count]]
    reading = parse_review(review("kubeflow.org/v1alpha2", *plain))
    assert answer(reading, v1_spec_schema())["response"]["result"] == {"status": "Success"}


# --- what a namespace editor can write into the job's own ConfigMaps -------------------------


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [900, 5000])
@pytest.mark.parametrize(
    ("suffix", "key"),
    [
        ("mxjob-config", "cluster"),
        ("mxjob-config", "labels"),
        ("mxjob-result", "status"),
        ("mxjob-run-1", "restartsBefore"),
    ],
)
def test_a_config_map_holding_json_nested_too_deep_is_no_record_not_a_500(
    client: FlaskClient, suffix: str, key: str, depth: int
) -> None:
    """Once a RecursionError in json.loads on every sync (issue 37): `edit` may write the
    job's ConfigMaps, and the standard library's JSON reads about 1000 levels. Such a text is
    read as no record (the job goes on from its pods), one it can read as what it says (a
    config's labels changed restart the job, docs/restarts.md#resizing)."""
    job = worker_job()
    children = running_children(job)
    job["status"] = run(request(job, children)).status
    config_maps = [c for c in children if c["kind"] == "ConfigMap"]
    name = f"mnist-{suffix}"
    written = next((c for c in config_maps if c["metadata"]["name"] == name), None)
    if written is None:
        written = {**config_maps[0], "metadata": {**config_maps[0]["metadata"], "name": name}}
        written["data"] = {"run": "1", "attempt": "0", "cause": "a forged record"}
        children.append(written)
    written["data"] = {**written["data"], key: nested_json(depth)}
    answer = sync(client, request(job, children))
    assert answer["status"]["conditions"][-1]["type"] in ("Running", "Restarting")


# --- what no conversion may do: raise, or fail a read --------------------------------------


def deep(depth: int, key: str = "a", leaf: Any = "x") -> Any:
    """`depth` objects nested in one another, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


def stored_job(depth: int, where: str) -> Json:
    """A v1 job as the API server stores it, nesting `depth` levels in its template or in the
    stash of a reading at v1alpha1 (`where`); its managedFields as deep (they mirror the spec's
    fields)."""
    job = mxjob(replicas={"Worker": replica(1)})
    if where == "template":
        job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["x"] = deep(depth)
    else:
        entry = {"at": ["spec", "x"], "to": deep(depth)}
        job["metadata"]["annotations"] = {"mxjob.kubeflow.org/v1alpha1-fields": json.dumps([entry])}
    fields = {"f:spec": deep(depth, "f:a", {})}
    job["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": fields}]
    return job


@pytest.mark.parametrize("version", ["kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2"])
@pytest.mark.parametrize(
    ("where", "depth"), [("template", 600), ("stash", 600), ("template", 1010)]
)
def test_reading_a_stored_job_nested_deep_never_fails(
    client: FlaskClient, version: str, where: str, depth: int
) -> None:
    """Once a RecursionError (deep copies, the stash's comparisons, and writing an answer
    deeper than ~1000 levels: the managedFields echoed): a 500 for every list of MXJobs at an
    old version in the cluster. What no job the hook runs can hold (it refuses a spec deeper
    than 64 levels) is read as an empty spec, or without the stash that holds it; 1010 levels
    is about the most a review can nest that orjson reads (1024 in all)."""
    job = stored_job(depth, where)
    data = fuzzing.encode(review(version, job))
    answer = client.post("/convert", data=data, content_type="application/json")
    assert answer.status_code == 200, answer.data[:300]
    response = fuzzing.decode(answer.data)["response"]
    assert response["result"] == {"status": "Success"}
    (read,) = response["convertedObjects"]
    # Compared as text: Python's == recurses as deep as the values nest.
    echoed = fuzzing.encode(read["metadata"]["managedFields"])
    assert echoed == fuzzing.encode(job["metadata"]["managedFields"])
    if where == "template":
        assert "replicaSpecs" not in read["spec"] and "mxReplicaSpecs" not in read["spec"]
    else:
        key = "mxjob.kubeflow.org/v1alpha1-fields"
        assert read["metadata"]["annotations"][key] == job["metadata"]["annotations"][key]
        assert "x" not in read["spec"]


def test_a_write_nested_600_levels_is_refused_naming_the_field(client: FlaskClient) -> None:
    """Once a RecursionError, a 500 for the write: now refused as v1 refuses it."""
    job = old_job()
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["x"] = deep(600)
    response = convert(client, job)
    assert response["result"]["status"] == "Failure"
    message = response["result"]["message"]
    assert "spec.replicaSpecs[0].template.spec.x.a.a" in message
    assert "nests deeper than 64 levels" in message


def test_a_failure_quoting_a_megabyte_is_cut(client: FlaskClient) -> None:
    """A schema error quotes the whole value: once a 1 MB message, answered and logged whole."""
    response = convert(
        client, old_job({"at": ["spec", "runPolicy", "backoffLimit"], "to": "x" * 2**20})
    )
    message = response["result"]["message"]
    assert response["result"]["status"] == "Failure"
    assert len(message) == MESSAGE_CHARS and message.endswith("…")
    assert "brings in what kubeflow.org/v1 refuses: spec.runPolicy.backoffLimit" in message

"""One regression test per root cause `make fuzz` found (each was an HTTP 500 or a re-sync that
changed something): a bad MXJob is Failed with MXJobInvalidSpec naming the field, a request
the hook cannot answer is a 422 naming the part, and nothing observed is dropped.

Requests go through the Flask app with TESTING on (testsupport/fuzzing.py), so a bug raises here.
"""

import json
from typing import Any

import pytest

from hooks.core.fields import MAX_DEPTH
from tests.builders import (
    cluster_after,
    mxjob,
    replica,
    request,
    run,
    running,
    terminated,
)
from testsupport import fuzzing

Json = dict[str, Any]
DEEP = "__deep__"
#: The paths of a one-Worker job's mxnet container and its template.
TEMPLATE = "spec.mxReplicaSpecs.Worker.template"
CONTAINERS = f"{TEMPLATE}.spec.containers"


def post(body: Json, depth: int = 0) -> tuple[int, Json]:
    """POST /sync; a `DEEP` string in the body becomes `depth` levels of nesting. Every answer
    passes the campaign's checks."""
    data = fuzzing.encode(body)
    if depth:
        data = data.replace(json.dumps(DEEP).encode(), fuzzing.nested_json(depth))
    case = fuzzing.Case(0, "regression", "/sync", data, fuzzing.JSON, body if not depth else None)
    answer = fuzzing.post_in_process(case.path, case.body, case.content_type)
    assert fuzzing.check_answer(case, answer) == []
    return answer[0], fuzzing.decode(answer[2])


def worker_job(**template: Any) -> Json:
    return mxjob(replicas={"Worker": replica(1, **template)})


def running_cluster(job: Json) -> list[Json]:
    return [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]


def failed_condition(answer: Json) -> Json:
    last: Json = answer["status"]["conditions"][-1]
    assert (last["type"], last["status"]) == ("Failed", "True"), last
    return last


# --- a bad spec: Failed, MXJobInvalidSpec, the field named, running pods kept --------------


def _containers(value: Any) -> Json:
    job = worker_job()
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = value
    return job


MXNET = {"name": "mxnet", "image": "mxjob/mxnet:gpu"}


@pytest.mark.parametrize(
    ("job", "depth", "field", "rule"),
    [
        # malformed entries in a template's container list
        (_containers(["x", MXNET]), 0, f"{CONTAINERS}[0]", "must be an object"),
        (_containers([MXNET, None]), 0, f"{CONTAINERS}[1]", "must be an object"),
        (_containers([[], 7, MXNET]), 0, f"{CONTAINERS}[1]", "must be an object"),
        # non-string port names, port numbers out of range, unknown protocols
        (worker_job(ports=[{"name": 5, "containerPort": 9091}]), 0, "ports[0].name", "got 5"),
        (worker_job(ports=[{"name": ["a"], "containerPort": 80}]), 0, "ports[0].name", "string"),
        (worker_job(ports=[{"name": "a", "containerPort": 2**63}]), 0, "containerPort", "1-65535"),
        (worker_job(ports=[{"name": "a", "containerPort": 1e30}]), 0, "containerPort", "1-65535"),
        (worker_job(ports=[{"containerPort": 80, "protocol": {}}]), 0, "protocol", "TCP, UDP"),
        (worker_job(ports=["9091"]), 0, "ports[0]", "must be an object"),
        # values nested ~1000 levels deep in the spec
        (mxjob(mode=DEEP), 1000, "spec.jobMode", f"nests deeper than {MAX_DEPTH} levels"),
        (worker_job(args=DEEP), MAX_DEPTH, "args[0]", f"nests deeper than {MAX_DEPTH} levels"),
        (mxjob(mode="x" * 100_000), 0, "spec.jobMode", "got 'xxxx"),
    ],
)
def test_bad_spec_fails_naming_the_field_and_keeps_running_pods(
    job: Json, depth: int, field: str, rule: str
) -> None:
    children = running_cluster(worker_job())
    status, answer = post(request(job, children), depth)
    assert status == 200
    condition = failed_condition(answer)
    assert condition["reason"] == "MXJobInvalidSpec"
    assert field in condition["message"] and rule in condition["message"]
    assert len(condition["message"]) < 500  # a user's huge value is quoted, not copied
    kept = {(c["kind"], c["metadata"]["name"]) for c in answer["children"]}
    assert kept == {(c["kind"], c["metadata"]["name"]) for c in children}


# --- what Metacontroller hands over: malformed parts of a valid job -----------------------


def test_condition_types_that_are_not_strings_are_ignored() -> None:
    job = worker_job()
    job["status"] = {"conditions": [{"type": {}, "status": "True"}, {"type": ["Failed"]}]}
    status, answer = post(request(job, running_cluster(job)))
    assert status == 200
    assert answer["status"]["conditions"][-1]["type"] == "Running"


def test_a_false_invalid_spec_condition_is_no_invalid_spec() -> None:
    """Found by `test_random_observed_children` (stops 44 and 45): a status carrying Failed=False
    with MXJobInvalidSpec is written back as it is, and the campaign's check took it for an
    invalid spec that must keep every running pod. The spec is valid: the job drops a running pod
    that is none of its own, as any valid job does, and the check passes."""
    job = worker_job()
    stale = {"type": "Failed", "status": "False", "reason": "MXJobInvalidSpec"}
    job["status"] = {"conditions": [stale]}
    children = running_cluster(job)
    stray = next(c for c in children if c["kind"] == "Pod")
    children.append(running({**stray, "metadata": {**stray["metadata"], "name": "stray"}}))
    status, answer = post(request(job, children))
    assert status == 200
    assert answer["status"]["conditions"][0] == stale
    assert "stray" not in {c["metadata"]["name"] for c in answer["children"]}


def _finished(labels: Any) -> Json:
    """A succeeded job whose observed Service carries `labels`."""
    job = worker_job()
    children = [
        terminated(c, 0) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))
    ]
    job["status"] = run(request(job, children)).status
    for child in children:
        if child["kind"] == "Service":
            child["metadata"]["labels"] = labels
    return request(job, children)


@pytest.mark.parametrize(
    "labels",
    [
        {"training.kubeflow.org/replica-type": [], "training.kubeflow.org/replica-index": {}},
        {"training.kubeflow.org/replica-index": ["0"]},
        [],
        None,
    ],
)
def test_services_with_malformed_labels_of_a_finished_job(labels: Any) -> None:
    """Once a 500; labels that are not strings are no Service the API server holds: 422
    naming it, and Metacontroller changes nothing."""
    status, answer = post(_finished(labels))
    assert (status, answer["error"]) == (422, "not_a_sync_request")
    assert "children.Service.v1." in answer["message"]
    assert "mnist-worker-0" in answer["message"]
    assert "metadata.labels" in answer["message"]


def test_a_child_is_echoed_with_the_kind_of_its_group() -> None:
    """An invalid job lists every observed child; each with the group's kind and apiVersion."""
    body = request(mxjob(mode="Nope"), running_cluster(worker_job()))
    for group in body["children"].values():
        for child in group.values():
            child["kind"] = ["not", "a", "kind"]
            del child["apiVersion"]
    status, answer = post(body)
    assert status == 200
    assert {(c["kind"], c["apiVersion"]) for c in answer["children"]} == {
        ("Pod", "v1"),
        ("Service", "v1"),
        ("ConfigMap", "v1"),
    }


# --- too deep: echoed, refused (422 naming the part) or rebuilt; nothing deleted ----------


def test_an_observed_child_deeper_than_the_spec_limit_is_echoed_unchanged() -> None:
    """The fast decoder (hooks/wire.py) keeps a child's spec as its raw bytes: an invalid job
    echoes a child nested past the spec limit exactly as observed, so nothing is deleted."""
    children = running_cluster(worker_job())
    pod = next(c for c in children if c["kind"] == "Pod")
    pod["spec"]["nodeSelector"] = {"deep": DEEP}
    status, answer = post(request(mxjob(mode="Nope"), children), MAX_DEPTH + 1)
    assert status == 200
    (echoed,) = [c for c in answer["children"] if c["kind"] == "Pod"]
    assert echoed["spec"]["nodeSelector"]["deep"] == json.loads(fuzzing.nested_json(MAX_DEPTH + 1))


@pytest.mark.usefixtures("default_recursion_limit")
def test_an_observed_child_too_deep_to_echo_is_refused() -> None:
    """An invalid job must echo its children; one nested ~1000 deep (past what the fast
    decoder vouches for) cannot be written back, and leaving it out would delete it."""
    children = running_cluster(worker_job())
    pod = next(c for c in children if c["kind"] == "Pod")
    pod["spec"]["nodeSelector"] = {"deep": DEEP}
    status, answer = post(request(mxjob(mode="Nope"), children), 1000)
    assert (status, answer["error"]) == (422, "not_a_sync_request")
    assert f"children.Pod.v1.{pod['metadata']['name']}" in answer["message"]
    assert "spec.nodeSelector.deep" in answer["message"]


@pytest.mark.parametrize(
    ("stray", "depth"),
    [
        ({"replicaStatuses": {"Worker": DEEP}}, 1000),
        ({"replicaStatuses": {"Worker": DEEP}}, MAX_DEPTH + 1),
        ({"conditions": "Running", "replicaStatuses": [], "startTime": 5}, 0),
        ({"conditions": [{"type": 7}, None, {"type": "Running", "status": True}]}, 0),
        ({"completionTime": {"at": "now"}, "startTime": "yesterday"}, 0),
    ],
    ids=["nested-1000", "nested-past-limit", "wrong-types", "bad-conditions", "bad-times"],
)
def test_a_parent_status_the_hook_cannot_read_is_rebuilt_from_the_children(
    stray: Json, depth: int
) -> None:
    """A stray status write must not wedge a job: it is treated like a stale cache, and the
    answer is the one a job with no status gets (the running pods kept, Running shown)."""
    job = worker_job()
    expected_status, expected = post(request(job, running_cluster(job)))
    job["status"] = stray
    status, answer = post(request(job, running_cluster(job)), depth)
    assert (status, expected_status) == (200, 200)
    assert answer["children"] == expected["children"]
    assert answer["status"]["conditions"] == expected["status"]["conditions"]
    assert answer["status"]["conditions"][-1]["type"] == "Running"


# --- a job past its deadline: the re-sync only deletes (golden: deadline-exceeded-config-gone)


def test_deadline_decision_then_cleanup_creates_nothing() -> None:
    job = mxjob(replicas={"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 600})
    children = [c for c in running_cluster(job) if c["kind"] != "ConfigMap"]
    body = request(job, children)
    case = fuzzing.Case(0, "regression", "/sync", fuzzing.encode(body), fuzzing.JSON, body)
    first = fuzzing.post_in_process(case.path, case.body, case.content_type)
    assert fuzzing.check_fixpoint(case, first, fuzzing.post_in_process).failures == []


# --- a whole-job restart: three steps, each after the parent status shows the last ----------


def test_a_whole_job_restart_settles_deleting_only_the_old_run() -> None:
    """The campaign's fixpoint check follows a Server killed under ExitCode through the run
    record, the deletion of run 0's pods and the creation of run 1's: it settles, and nothing
    but the old run's pods is ever dropped (docs/restarts.md)."""
    job = mxjob(
        replicas={
            "Scheduler": replica(1, "ExitCode"),
            "Server": replica(1, "ExitCode"),
            "Worker": replica(2, "ExitCode"),
        }
    )
    children = running_cluster(job)
    job["status"] = run(request(job, children)).status
    server = next(c for c in children if c["metadata"]["name"].endswith("-server-0"))
    children[children.index(server)] = terminated(server, 137, minutes=20)
    body = request(job, children)
    case = fuzzing.Case(0, "regression", "/sync", fuzzing.encode(body), fuzzing.JSON, body)
    first = fuzzing.post_in_process(case.path, case.body, case.content_type)
    verdict = fuzzing.check_fixpoint(case, first, fuzzing.post_in_process)
    assert verdict.failures == []
    assert verdict.requests >= 3  # record, delete the run, create the next one


@pytest.mark.usefixtures("default_recursion_limit")
@pytest.mark.parametrize("field", ["attempt", "cause", "restartsBefore"])
@pytest.mark.parametrize("depth", [0, 1000])
def test_a_run_record_with_a_value_that_is_not_a_string_is_refused(field: str, depth: int) -> None:
    """Once a 500 (str() of a value nested ~1000 deep raised RecursionError): ConfigMap data
    values are strings, so such a record is no ConfigMap the API server holds: 422 naming it."""
    job = worker_job()
    record = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{job['metadata']['name']}-mxjob-run-1"},
        "data": {"attempt": "1", "cause": "x", "restartsBefore": "{}", field: DEEP if depth else 7},
    }
    status, answer = post(request(job, [*running_cluster(job), record]), depth)
    assert (status, answer["error"]) == (422, "not_a_sync_request")
    assert "children.ConfigMap.v1.mnist-mxjob-run-1" in answer["message"]


def test_a_child_under_a_group_key_without_a_version_whose_kind_is_a_list() -> None:
    """The campaign's own checker once raised TypeError here (case 46252 of seed 0: a group
    renamed to `ConfigMap`, its child's kind a list) and stopped the whole run; the hook reads
    such a child as one of no kind it makes."""
    job = worker_job()
    body = request(job, cluster_after(run(request(job))))
    config_maps = body["children"].pop("ConfigMap.v1")
    for child in config_maps.values():
        child["kind"] = ["ConfigMap"]
    body["children"]["ConfigMap"] = config_maps
    status, _ = post(body)
    assert status in (200, 422)

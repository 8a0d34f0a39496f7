"""Table tests of the conversion (docs/api.md#versions): each old field's v1 home and meaning,
the v1 fields the old versions cannot hold, the objects v1 cannot hold, the status both ways,
the stash, and the review's shape. Whole answers are golden fixtures
(tests/conversion_cases.py)."""

import json
from typing import Any

import pytest

from hooks.core.conversion import stash, v1alpha1, v1alpha2
from hooks.core.conversion.review import ReviewError, answer, convert, parse_review
from hooks.core.conversion.versions import V1_FIELDS, UnconvertibleError
from hooks.core.fields import dig
from tests.conversion_cases import UID, comes_back, review

Json = dict[str, Any]
V1 = "kubeflow.org/v1"


def template(**spec: Any) -> Json:
    return {"spec": {"containers": [{"name": "mxnet", "image": "mx"}], **spec}}


def old_job(version: str, spec: Json, status: Json | None = None) -> Json:
    job = {"apiVersion": f"kubeflow.org/{version}", "kind": "MXJob", "metadata": {"name": "j"}}
    job["spec"] = spec
    if status is not None:
        job["status"] = status
    return job


def v1_job(spec: Json, status: Json | None = None) -> Json:
    job = {"apiVersion": V1, "kind": "MXJob", "metadata": {"name": "j", "namespace": "ns"}}
    job["spec"] = spec
    if status is not None:
        job["status"] = status
    return job


def listed(*entries: Json, **spec: Any) -> Json:
    """A v1alpha1 spec listing `entries`, each with a template unless it says otherwise."""
    return {"replicaSpecs": [{"template": template(), **e} for e in entries], **spec}


def stashed(obj: Json, key: str) -> list[stash.Entry]:
    return stash.take(obj, key)[0]


# --- v1alpha1 → v1: every field's home and meaning -----------------------------------------

V1ALPHA1_UP = [
    (
        "an empty mxReplicaType is WORKER, as the old defaulter made it",
        listed({"mxReplicaType": ""}),
        ("mxReplicaSpecs", "Worker", "restartPolicy"),
        "Always",
    ),
    (
        "the template's restartPolicy is the replica's",
        listed({"mxReplicaType": "WORKER", "template": template(restartPolicy="OnFailure")}),
        ("mxReplicaSpecs", "Worker", "restartPolicy"),
        "OnFailure",
    ),
    (
        "no restartPolicy in the template: Always, what the API server gave the pods",
        listed({"mxReplicaType": "SERVER"}),
        ("mxReplicaSpecs", "Server", "restartPolicy"),
        "Always",
    ),
    (
        "PsRootPort is the mxjob-port of the replica's mxnet container",
        listed({"mxReplicaType": "SCHEDULER", "PsRootPort": 9000}),
        ("mxReplicaSpecs", "Scheduler", "template", "spec", "containers", 0, "ports"),
        [{"containerPort": 9000, "name": "mxjob-port"}],
    ),
    (
        "PsRootPort wins over an mxjob-port the template gives",
        listed(
            {
                "mxReplicaType": "SCHEDULER",
                "PsRootPort": 9000,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "mxnet",
                                "image": "mx",
                                "ports": [{"name": "mxjob-port", "containerPort": 1}],
                            }
                        ]
                    }
                },
            }
        ),
        ("mxReplicaSpecs", "Scheduler", "template", "spec", "containers", 0, "ports"),
        [{"name": "mxjob-port", "containerPort": 9000}],
    ),
    (
        "no PsRootPort: no port, v1 takes 9091 as v1alpha1 did",
        listed({"mxReplicaType": "SCHEDULER"}),
        ("mxReplicaSpecs", "Scheduler", "template", "spec", "containers", 0, "ports"),
        None,
    ),
    (
        "no cleanupPodPolicy: All, what the old operator did",
        listed({"mxReplicaType": "WORKER"}),
        ("runPolicy", "cleanPodPolicy"),
        "All",
    ),
    (
        "an empty cleanupPodPolicy: All",
        listed({"mxReplicaType": "WORKER"}, cleanupPodPolicy=""),
        ("runPolicy", "cleanPodPolicy"),
        "All",
    ),
    (
        "cleanupPodPolicy None is cleanPodPolicy None",
        listed({"mxReplicaType": "WORKER"}, cleanupPodPolicy="None"),
        ("runPolicy", "cleanPodPolicy"),
        "None",
    ),
    (
        "schedulerName goes onto every template",
        listed(
            {"mxReplicaType": "SCHEDULER"}, {"mxReplicaType": "WORKER"}, schedulerName="volcano"
        ),
        ("mxReplicaSpecs", "Worker", "template", "spec", "schedulerName"),
        "volcano",
    ),
    (
        "an empty schedulerName leaves the templates as they are",
        listed(
            {"mxReplicaType": "WORKER", "template": template(schedulerName="x")}, schedulerName=""
        ),
        ("mxReplicaSpecs", "Worker", "template", "spec", "schedulerName"),
        "x",
    ),
    (
        "jobMode dist (read by no kubeflow operator) is MXTrain",
        listed({"mxReplicaType": "WORKER"}, jobMode="dist"),
        ("jobMode",),
        "MXTrain",
    ),
    (
        "jobMode local is MXTrain too: a worker-only job",
        listed({"mxReplicaType": "WORKER"}, jobMode="local"),
        ("jobMode",),
        "MXTrain",
    ),
    (
        "RuntimeId has no v1 home",
        listed({"mxReplicaType": "WORKER"}, RuntimeId="aycw"),
        ("RuntimeId",),
        None,
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "want"), [c[1:] for c in V1ALPHA1_UP], ids=[c[0] for c in V1ALPHA1_UP]
)
def test_v1alpha1_field_in_v1(spec: Json, path: tuple[str | int, ...], want: object) -> None:
    converted = v1alpha1.to_v1(old_job("v1alpha1", spec))
    assert dig(converted["spec"], *path) == want
    assert v1alpha1.from_v1(converted) == old_job("v1alpha1", spec)


def test_v1alpha1_list_becomes_the_map_in_canonical_order() -> None:
    spec = listed(
        {"mxReplicaType": "WORKER"}, {"mxReplicaType": "SCHEDULER"}, {"mxReplicaType": "SERVER"}
    )
    converted = v1alpha1.to_v1(old_job("v1alpha1", spec))
    assert list(converted["spec"]["mxReplicaSpecs"]) == ["Scheduler", "Server", "Worker"]
    paths = [e["at"] for e in stashed(converted, "mxjob.kubeflow.org/v1alpha1-fields")]
    assert ["spec", "replicaSpecs"] in paths  # the order comes back at v1alpha1


def test_the_old_operators_defaults_need_no_stash_but_for_what_v1_cannot_hold() -> None:
    """Persisted by its full-object updates: replicas and PsRootPort 9091 on every entry."""
    spec = listed(
        {"mxReplicaType": "SCHEDULER", "replicas": 1, "PsRootPort": 9000},
        {"mxReplicaType": "WORKER", "replicas": 1, "PsRootPort": 9091},
        RuntimeId="aycw",
        mxImage="mxjob/mxnet:gpu",
        terminationPolicy={"chief": {"replicaIndex": 0, "replicaName": "WORKER"}},
    )
    converted = v1alpha1.to_v1(old_job("v1alpha1", spec))
    paths = [e["at"] for e in stashed(converted, "mxjob.kubeflow.org/v1alpha1-fields")]
    assert paths == [
        ["spec", "RuntimeId"],
        ["spec", "cleanupPodPolicy"],
        ["spec", "mxImage"],
        ["spec", "terminationPolicy"],
    ]


V1ALPHA1_REFUSED = [
    (
        "a type twice",
        listed(
            {"mxReplicaType": "WORKER"}, {"mxReplicaType": "SERVER"}, {"mxReplicaType": "WORKER"}
        ),
        "spec.replicaSpecs[2].mxReplicaType: WORKER appears twice; v1 holds one spec per type",
    ),
    (
        "an empty type beside WORKER",
        listed({"mxReplicaType": "WORKER"}, {}),
        "spec.replicaSpecs[1].mxReplicaType: WORKER appears twice (an empty mxReplicaType is "
        "WORKER); v1 holds one spec per type",
    ),
    (
        "an unknown type",
        listed({"mxReplicaType": "PS"}),
        "spec.replicaSpecs[0].mxReplicaType: 'PS' is not a v1alpha1 replica type: SCHEDULER, "
        "SERVER or WORKER",
    ),
    (
        "a v1 spelling (the old operator refused it too)",
        listed({"mxReplicaType": "Worker"}),
        "spec.replicaSpecs[0].mxReplicaType: 'Worker' is not a v1alpha1 replica type",
    ),
    (
        "an entry that is not an object",
        {"replicaSpecs": ["WORKER"]},
        "spec.replicaSpecs[0]: must be an object (a replica spec)",
    ),
    (
        "the v1 map instead of the list",
        {"replicaSpecs": {"Worker": {}}},
        "spec.replicaSpecs: must be a list of replica specs",
    ),
    ("a spec that is not an object", [], "spec: must be an object"),
]


@pytest.mark.parametrize(
    ("spec", "message"), [c[1:] for c in V1ALPHA1_REFUSED], ids=[c[0] for c in V1ALPHA1_REFUSED]
)
def test_v1alpha1_job_v1_cannot_hold(spec: Any, message: str) -> None:
    with pytest.raises(UnconvertibleError) as refused:
        v1alpha1.to_v1(old_job("v1alpha1", spec))
    assert str(refused.value).startswith(message)


# --- v1 → v1alpha1 --------------------------------------------------------------------------


def test_exit_code_reads_as_never_and_comes_back() -> None:
    job = v1_job(
        {"mxReplicaSpecs": {"Worker": {"restartPolicy": "ExitCode", "template": template()}}}
    )
    old = v1alpha1.from_v1(job)
    assert old["spec"]["replicaSpecs"][0]["template"]["spec"]["restartPolicy"] == "Never"
    assert {
        "at": ["spec", "mxReplicaSpecs", "Worker", "restartPolicy"],
        "to": "ExitCode",
        "was": "Never",
    } in stashed(old, V1_FIELDS)
    assert v1alpha1.to_v1(old) == job


def test_exit_code_changed_at_v1alpha1_takes_the_new_policy() -> None:
    job = v1_job(
        {"mxReplicaSpecs": {"Worker": {"restartPolicy": "ExitCode", "template": template()}}}
    )
    old = v1alpha1.from_v1(job)
    old["spec"]["replicaSpecs"][0]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert v1alpha1.to_v1(old)["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure"


def test_a_tuning_job_reads_at_v1alpha1_without_replica_specs() -> None:
    """v1alpha1 has no tuning types; refusing the job would fail every list at v1alpha1."""
    specs = {t: {"template": template()} for t in ("TunerTracker", "TunerServer", "Tuner")}
    job = v1_job({"jobMode": "MXTune", "mxReplicaSpecs": specs})
    old = v1alpha1.from_v1(job)
    assert old["spec"] == {"replicaSpecs": [], "cleanupPodPolicy": "Running"}
    assert v1alpha1.to_v1(old) == job


V1ALPHA1_DOWN = [
    (
        "v1's absent cleanPodPolicy is Running, which v1alpha1 must say",
        {"mxReplicaSpecs": {}},
        ("cleanupPodPolicy",),
        "Running",
    ),
    (
        "the inline layout is read too",
        {"cleanPodPolicy": "None", "mxReplicaSpecs": {}},
        ("cleanupPodPolicy",),
        "None",
    ),
    (
        "runPolicy wins over the inline layout",
        {"cleanPodPolicy": "None", "runPolicy": {"cleanPodPolicy": "All"}, "mxReplicaSpecs": {}},
        ("cleanupPodPolicy",),
        "All",
    ),
    (
        "Always stays implicit in a template that leaves it so",
        {"mxReplicaSpecs": {"worker": {"restartPolicy": "Always", "template": template()}}},
        ("replicaSpecs", 0, "template", "spec"),
        template()["spec"],
    ),
    (
        "v1's default restartPolicy Never is the pod's",
        {"mxReplicaSpecs": {"Worker": {"template": template()}}},
        ("replicaSpecs", 0, "template", "spec", "restartPolicy"),
        "Never",
    ),
    (
        "one scheduler in every template is the job's schedulerName",
        {
            "mxReplicaSpecs": {
                "Scheduler": {"template": template(schedulerName="volcano")},
                "Worker": {"template": template(schedulerName="volcano")},
            }
        },
        ("schedulerName",),
        "volcano",
    ),
    (
        "templates naming different schedulers keep theirs",
        {
            "mxReplicaSpecs": {
                "Scheduler": {"template": template(schedulerName="volcano")},
                "Worker": {"template": template()},
            }
        },
        ("replicaSpecs", 0, "template", "spec", "schedulerName"),
        "volcano",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "want"), [c[1:] for c in V1ALPHA1_DOWN], ids=[c[0] for c in V1ALPHA1_DOWN]
)
def test_v1_field_at_v1alpha1(spec: Json, path: tuple[str | int, ...], want: object) -> None:
    old = v1alpha1.from_v1(v1_job(spec))
    assert dig(old["spec"], *path) == want
    assert v1alpha1.to_v1(old) == v1_job(spec)


# --- the status, v1 and v1alpha1 -----------------------------------------------------------


def conditions(*types: str, reason: str = "", message: str = "") -> list[Json]:
    found = [{"type": t, "status": "True", "reason": f"MXJob{t}"} for t in types]
    if reason:
        found[-1]["reason"] = reason
    if message:
        found[-1]["message"] = message
    return found


STATUS_DOWN = [
    ("no condition yet", [], ("", "", "")),
    ("created", conditions("Created"), ("Creating", "Running", "")),
    ("running", conditions("Created", "Running"), ("Running", "Running", "")),
    ("restarting", conditions("Created", "Restarting"), ("Running", "Running", "")),
    (
        "suspended: no such phase, set up again on resume",
        conditions("Created", "Suspended"),
        ("Creating", "Running", ""),
    ),
    ("succeeded", conditions("Created", "Succeeded"), ("Done", "Succeeded", "")),
    ("failed", conditions("Created", "Failed", message="exit 1"), ("Done", "Failed", "exit 1")),
    (
        "an invalid spec: v1alpha1's phase Failed",
        conditions("Created", "Failed", reason="MXJobInvalidSpec", message="bad"),
        ("Failed", "Failed", "bad"),
    ),
]


@pytest.mark.parametrize(
    ("found", "want"), [c[1:] for c in STATUS_DOWN], ids=[c[0] for c in STATUS_DOWN]
)
def test_v1_conditions_as_v1alpha1_phase_state_and_reason(
    found: list[Json], want: tuple[str, ...]
) -> None:
    job = v1_job({"mxReplicaSpecs": {}}, {"conditions": found})
    status = v1alpha1.from_v1(job)["status"]
    assert (status["phase"], status["state"], status["reason"]) == want
    comes_back(lambda v1: v1alpha1.to_v1(v1alpha1.from_v1(v1)), job)


def test_v1_counts_as_v1alpha1_replica_statuses() -> None:
    counts = {
        "Worker": {"active": 1, "succeeded": 2, "failed": 0, "restarts": 1, "selector": "s"},
        "Scheduler": {"active": 0, "succeeded": 1, "failed": 0},
        "TunerServer": {"active": 1},
    }
    status = v1alpha1.from_v1(v1_job({}, {"replicaStatuses": counts}))["status"]
    assert status["replicaStatuses"] == [
        {"mx_replica_type": "SCHEDULER", "state": "Succeeded", "ReplicasStates": {"Succeeded": 1}},
        {
            "mx_replica_type": "WORKER",
            "state": "Running",
            "ReplicasStates": {"Running": 1, "Succeeded": 2},
        },
    ]


STATUS_UP = [
    ("a Go client's zero status", {"phase": "", "reason": "", "state": ""}, []),
    ("set up", {"phase": "Creating", "state": "Running"}, ["Created"]),
    ("running", {"phase": "Running", "state": "Running"}, ["Created", "Running"]),
    (
        "cleaning up after success",
        {"phase": "CleanUp", "state": "Succeeded"},
        ["Created", "Succeeded"],
    ),
    ("done, failed", {"phase": "Done", "state": "Failed", "reason": "x"}, ["Created", "Failed"]),
]


@pytest.mark.parametrize(
    ("status", "want"), [c[1:] for c in STATUS_UP], ids=[c[0] for c in STATUS_UP]
)
def test_v1alpha1_phase_and_state_as_v1_conditions(status: Json, want: list[str]) -> None:
    converted = v1alpha1.to_v1(old_job("v1alpha1", listed(), status))
    assert [c["type"] for c in converted["status"].get("conditions", [])] == want
    comes_back(
        lambda old: v1alpha1.from_v1(v1alpha1.to_v1(old)), old_job("v1alpha1", listed(), status)
    )


def test_v1alpha1_failure_reason_is_the_failed_message() -> None:
    status = {
        "phase": "Failed",
        "reason": "Missing ReplicaSpec for chief: WORKER",
        "state": "Failed",
    }
    converted = v1alpha1.to_v1(old_job("v1alpha1", listed(), status))
    failed = converted["status"]["conditions"][-1]
    assert failed == {
        "type": "Failed",
        "status": "True",
        "reason": "MXJobInvalidSpec",
        "message": "Missing ReplicaSpec for chief: WORKER",
    }


# --- v1alpha2 ------------------------------------------------------------------------------


def trained(**spec: Any) -> Json:
    return {
        "mxReplicaSpecs": {
            "Scheduler": {"template": template()},
            "Worker": {"template": template()},
        },
        **spec,
    }


def tuned(**spec: Any) -> Json:
    return {
        "mxReplicaSpecs": {
            k: {"template": template()} for k in ("TunerTracker", "TunerServer", "Tuner")
        },
        **spec,
    }


TUNER_SERVER_KEY_PATH = (
    "mxReplicaSpecs",
    "TunerServer",
    "template",
    "metadata",
    "annotations",
    "tuner-server-key",
)
V1ALPHA2_UP = [
    ("no jobMode, training types: MXTrain", trained(), ("jobMode",), "MXTrain"),
    (
        "an empty jobMode (the Go client's), tuning types: MXTune",
        tuned(jobMode=""),
        ("jobMode",),
        "MXTune",
    ),
    ("no jobMode, tuning types: MXTune", tuned(), ("jobMode",), "MXTune"),
    ("a given jobMode stays", trained(jobMode="MXTrain"), ("jobMode",), "MXTrain"),
    (
        "no cleanPodPolicy: All, the old defaulter's",
        trained(),
        ("runPolicy", "cleanPodPolicy"),
        "All",
    ),
    (
        "cleanPodPolicy Running",
        trained(cleanPodPolicy="Running"),
        ("runPolicy", "cleanPodPolicy"),
        "Running",
    ),
    (
        "ttlSecondsAfterFinished",
        trained(ttlSecondsAfterFinished=60),
        ("runPolicy", "ttlSecondsAfterFinished"),
        60,
    ),
    (
        "schedulerName (the first kubeflow v1alpha2) goes onto every template",
        trained(schedulerName="kube-batch"),
        ("mxReplicaSpecs", "Worker", "template", "spec", "schedulerName"),
        "kube-batch",
    ),
    (
        "a label is also the tuner-server-key annotation, where v1 reads it",
        {"mxReplicaSpecs": {"TunerServer": {"label": "2080ti", "template": template()}}},
        TUNER_SERVER_KEY_PATH,
        "2080ti",
    ),
    (
        "the label is kept, as v1 holds it",
        {"mxReplicaSpecs": {"TunerServer": {"label": "2080ti", "template": template()}}},
        ("mxReplicaSpecs", "TunerServer", "label"),
        "2080ti",
    ),
    (
        "a tuner-server-key the template gives wins over the label",
        {
            "mxReplicaSpecs": {
                "TunerServer": {
                    "label": "2080ti",
                    "template": {
                        "metadata": {"annotations": {"tuner-server-key": "v100"}},
                        **template(),
                    },
                }
            }
        },
        TUNER_SERVER_KEY_PATH,
        "v100",
    ),
    (
        "upper-case keys (ksonnet's) stay: the hook reads keys in any letter case",
        {"mxReplicaSpecs": {"WORKER": {"template": template()}}},
        ("mxReplicaSpecs", "WORKER", "template"),
        template(),
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "want"), [c[1:] for c in V1ALPHA2_UP], ids=[c[0] for c in V1ALPHA2_UP]
)
def test_v1alpha2_field_in_v1(spec: Json, path: tuple[str, ...], want: object) -> None:
    converted = v1alpha2.to_v1(old_job("v1alpha2", spec))
    assert dig(converted["spec"], *path) == want
    assert v1alpha2.from_v1(converted) == old_job("v1alpha2", spec)


def test_v1alpha2_status_counts_under_their_v1_key() -> None:
    status = {
        "conditions": conditions("Created", "Running"),
        "mxReplicaStatuses": {"Worker": {"active": 2}},
        "startTime": "2018-09-04T10:00:00Z",
        "lastReconcileTime": "2018-09-04T10:05:00Z",
    }
    converted = v1alpha2.to_v1(old_job("v1alpha2", trained(), status))
    assert converted["status"] == {
        "conditions": status["conditions"],
        "replicaStatuses": {"Worker": {"active": 2}},
        "startTime": "2018-09-04T10:00:00Z",
    }
    # No stash holds a status: v1alpha2 reads it back without lastReconcileTime.
    assert all(
        e["at"][0] == "spec" for e in stashed(converted, "mxjob.kubeflow.org/v1alpha2-fields")
    )
    assert "lastReconcileTime" not in v1alpha2.from_v1(converted)["status"]


def test_v1_status_at_v1alpha2_keeps_the_counts_v1alpha2_holds() -> None:
    counts = {"Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 2, "selector": "s"}}
    old = v1alpha2.from_v1(v1_job(trained(), {"conditions": [], "replicaStatuses": counts}))
    assert old["status"] == {
        "conditions": [],
        "mxReplicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 0}},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"mxReplicaSpecs": [{"template": template()}]},
            "spec.mxReplicaSpecs: must be an object keyed by replica type",
        ),
        ("MXTrain", "spec: must be an object"),
    ],
    ids=["a list of replica specs", "a spec that is not an object"],
)
def test_v1alpha2_job_v1_cannot_hold(spec: Any, message: str) -> None:
    with pytest.raises(UnconvertibleError, match=message):
        v1alpha2.to_v1(old_job("v1alpha2", spec))


# --- the stash -----------------------------------------------------------------------------


def test_an_entry_applies_only_where_the_field_is_what_it_was() -> None:
    entries = stash.patch({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}})
    assert entries == [{"at": ["a", "c"], "was": 3, "to": 2}]
    assert stash.apply(entries, {"a": {"b": 1, "c": 3}}) == {"a": {"b": 1, "c": 2}}
    assert stash.apply(entries, {"a": {"b": 1, "c": 4}}) == {"a": {"b": 1, "c": 4}}  # edited


def test_a_field_the_view_cannot_hold_comes_back_under_a_parent_made_for_it() -> None:
    entries = stash.patch({"runPolicy": {"backoffLimit": 3}}, {})
    assert stash.apply(entries, {}) == {"runPolicy": {"backoffLimit": 3}}


def test_json_equality_tells_true_from_one() -> None:
    assert stash.patch({"a": True}, {"a": 1}) == [{"at": ["a"], "was": 1, "to": True}]


def test_keys_renamed_in_letter_case_are_one_entry() -> None:
    """So that an edit of the map never leaves `worker` and `Worker` both behind."""
    entries = stash.patch({"m": {"worker": {"r": 1}}}, {"m": {"Worker": {"r": 1}}})
    assert entries == [{"at": ["m"], "was": {"Worker": {"r": 1}}, "to": {"worker": {"r": 1}}}]
    assert stash.apply(entries, {"m": {"Worker": {"r": 2}}}) == {"m": {"Worker": {"r": 2}}}


@pytest.mark.parametrize("text", ["{", "{}", "[1]", '[{"at": []}]', '[{"at": ["a"], "x": 1}]'])
def test_an_annotation_that_is_no_stash_stays_an_annotation(text: str) -> None:
    job = v1_job({}) | {
        "metadata": {"name": "j", "annotations": {"mxjob.kubeflow.org/v1alpha1-fields": text}}
    }
    assert stash.take(job, "mxjob.kubeflow.org/v1alpha1-fields") == ([], job)
    assert v1alpha1.to_v1(v1alpha1.from_v1(job)) == job


def test_the_stash_leaves_no_empty_annotations() -> None:
    job = old_job("v1alpha1", listed({"mxReplicaType": "WORKER"}, jobMode="dist"))
    assert "annotations" in v1alpha1.to_v1(job)["metadata"]
    assert "annotations" not in v1alpha1.from_v1(v1alpha1.to_v1(job))["metadata"]


# --- the review ----------------------------------------------------------------------------


def test_objects_come_back_in_order_at_the_desired_version() -> None:
    jobs = [
        old_job("v1alpha1", listed({"mxReplicaType": "WORKER"})),
        v1_job(trained()),
        old_job("v1alpha2", trained()),
    ]
    got = answer(parse_review(review("kubeflow.org/v1alpha2", *jobs)))["response"]
    assert got["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in got["convertedObjects"]] == ["kubeflow.org/v1alpha2"] * 3
    assert got["convertedObjects"][2] is jobs[2]  # already there: unchanged


def test_one_object_that_cannot_be_converted_fails_the_answer() -> None:
    bad = old_job("v1alpha1", listed({"mxReplicaType": "WORKER"}, {"mxReplicaType": "WORKER"}))
    bad["metadata"]["namespace"] = "team"
    got = answer(parse_review(review(V1, old_job("v1alpha1", listed()), bad)))["response"]
    assert dict(got) == {
        "uid": UID,
        "convertedObjects": [],
        "result": {
            "status": "Failure",
            "message": "MXJob team/j cannot be converted from kubeflow.org/v1alpha1 to "
            "kubeflow.org/v1: spec.replicaSpecs[1].mxReplicaType: WORKER appears twice; v1 "
            "holds one spec per type",
        },
    }


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"apiVersion": V1, "kind": "TFJob"}, "kind: 'TFJob' is not MXJob"),
        (
            {"apiVersion": "kubeflow.org/v1beta1", "kind": "MXJob"},
            "apiVersion: 'kubeflow.org/v1beta1' is not served",
        ),
        ({"kind": "MXJob"}, "apiVersion: None is not served"),
    ],
    ids=["another kind", "a version not served", "no apiVersion"],
)
def test_objects_that_are_no_mxjob_of_a_served_version(obj: Json, message: str) -> None:
    with pytest.raises(UnconvertibleError, match=message):
        convert(obj, V1)


def test_a_broken_review_names_its_problem() -> None:
    with pytest.raises(ReviewError, match=r"'request.objects\[1\]' must be an object"):
        parse_review(review(V1, v1_job({}), "x"))  # type: ignore[arg-type]


def test_answers_are_json() -> None:
    body = answer(parse_review(review("kubeflow.org/v1alpha1", v1_job(trained()))))
    assert json.loads(json.dumps(body)) == body

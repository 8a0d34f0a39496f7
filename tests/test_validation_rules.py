"""Table tests of the validation rules that need the whole MXJob (docs/api.md#validation):
replica counts per job mode and the job name. Each row names the field paths refused."""

from typing import Any

import pytest

from hooks.core.spec import load
from hooks.core.validation import validate
from tests.builders import mxjob, replica

R = "spec.mxReplicaSpecs"


def problems(name: str = "mnist", **job: Any) -> list[str]:
    spec, unreadable = load(mxjob(name, **job)["spec"])
    assert spec is not None, unreadable
    return [p.path for p in validate(name, spec)]


@pytest.mark.parametrize(
    ("replicas", "mode", "paths"),
    [
        ({"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3)}, None, []),
        ({"Worker": replica(4)}, None, []),  # worker-only
        ({"Scheduler": replica(1), "Worker": replica(1)}, None, []),
        ({"Server": replica(1), "Worker": replica(1)}, None, [f"{R}.Scheduler"]),
        ({"Scheduler": replica(2), "Worker": replica(1)}, None, [f"{R}.Scheduler.replicas"]),
        ({"Scheduler": replica(0), "Worker": replica(1)}, None, [f"{R}.Scheduler.replicas"]),
        ({"Scheduler": replica(1), "Server": replica(1)}, None, [f"{R}.Worker"]),
        ({"Worker": replica(0)}, None, [f"{R}.Worker"]),
        ({"Worker": replica(1), "Tuner": replica(1)}, "MXTrain", [f"{R}.Tuner"]),
        (
            {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)},
            "MXTune",
            [],
        ),
        (
            {"TunerTracker": replica(2), "TunerServer": replica(1), "Tuner": replica(1)},
            "MXTune",
            [f"{R}.TunerTracker.replicas"],
        ),
        (
            {"TunerTracker": replica(1), "Tuner": replica(1)},
            "MXTune",
            [f"{R}.TunerServer"],
        ),
        (
            {"TunerTracker": replica(1), "TunerServer": replica(1)},
            "MXTune",
            [f"{R}.Tuner.replicas"],
        ),
        (
            {
                "TunerTracker": replica(1),
                "TunerServer": replica(1),
                "Tuner": replica(1),
                "Worker": replica(1),
            },
            "MXTune",
            [f"{R}.Worker"],
        ),
    ],
)
def test_replica_rules(replicas: dict[str, Any], mode: str | None, paths: list[str]) -> None:
    assert sorted(problems(replicas=replicas, mode=mode)) == sorted(paths)


#: A job whose pods can be replaced reserves `-r9999`; its longest child name is then
#: `<name>-scheduler-0-r9999`, 18 characters after the name, so 45 characters fit.
REPLACEABLE = {
    "Scheduler": replica(1, "ExitCode"),
    "Server": replica(1, "ExitCode"),
    "Worker": replica(2, "ExitCode"),
}


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("mnist", False),
        ("a", False),
        ("m" * 45, False),
        ("m" * 46, True),
        ("m" * 64, True),
        ("Mnist", True),  # DNS-1035: lower case
        ("1mnist", True),  # starts with a letter
        ("mnist-", True),  # ends with a letter or digit
        ("mn_ist", True),
        ("mn.ist", True),
    ],
)
def test_name_rules(name: str, refused: bool) -> None:
    assert problems(name, replicas=REPLACEABLE) == (["metadata.name"] if refused else [])


FP = "spec.runPolicy.failurePolicy.rules"
EXIT_42 = {"operator": "In", "values": [42]}


def policy_problems(rules: Any, mode: str | None = None, *, inline: bool = False) -> list[str]:
    """Every problem path of a job with these failurePolicy rules, read or validated."""
    replicas = TUNE_JOB if mode == "MXTune" else REPLACEABLE
    policy = {"failurePolicy": {"rules": rules}}
    job = mxjob(
        replicas=replicas,
        mode=mode,
        **({"failurePolicy": policy["failurePolicy"]} if inline else {"run_policy": policy}),
    )
    spec, unreadable = load(job["spec"])
    return sorted(p.path for p in (unreadable if spec is None else validate("mnist", spec)))


TUNE_JOB = {
    "TunerTracker": replica(1, "ExitCode"),
    "TunerServer": replica(2, "ExitCode"),
    "Tuner": replica(1, "ExitCode"),
}


@pytest.mark.parametrize(
    ("rules", "mode", "paths"),
    [
        ([{"action": "FailJob", "onExitCodes": EXIT_42}], None, []),
        ([], None, []),
        ([{"action": "FailJob"}], None, [f"{FP}[0]"]),  # no matcher
        ([{"action": "FailJob", "onStartFailure": {"afterSeconds": 300}}], None, []),
        (
            [{"action": "FailJob", "onStartFailure": {"afterSeconds": 1, "reasons": ["X"]}}],
            None,
            [],
        ),
        (
            [{"action": "Count", "onStartFailure": {"afterSeconds": 300}}],
            None,
            [f"{FP}[0].action"],
        ),
        (
            [{"action": "FailJob", "onStartFailure": {"afterSeconds": 9}, "onReasons": ["E"]}],
            None,
            [f"{FP}[0].onStartFailure"],
        ),
        (
            [{"action": "FailJob", "onStartFailure": {}}],
            None,
            [f"{FP}[0].onStartFailure.afterSeconds"],
        ),
        (
            [{"action": "FailJob", "onStartFailure": {"afterSeconds": 0}}],
            None,
            [f"{FP}[0].onStartFailure.afterSeconds"],
        ),
        (
            [{"action": "FailJob", "onStartFailure": {"afterSeconds": 86401}}],
            None,
            [f"{FP}[0].onStartFailure.afterSeconds"],
        ),
        (
            [{"action": "FailJob", "onStartFailure": {"afterSeconds": 60, "reasons": []}}],
            None,
            [f"{FP}[0].onStartFailure.reasons"],
        ),
        ([{"onReasons": ["OOMKilled"]}], None, [f"{FP}[0].action"]),
        ([{"action": "Retry", "onReasons": ["OOMKilled"]}], None, [f"{FP}[0].action"]),
        (
            [{"action": "Count", "onExitCodes": {"values": [1]}}],
            None,
            [f"{FP}[0].onExitCodes.operator"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "Is", "values": [1]}}],
            None,
            [f"{FP}[0].onExitCodes.operator"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In"}}],
            None,
            [f"{FP}[0].onExitCodes.values"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In", "values": []}}],
            None,
            [f"{FP}[0].onExitCodes.values"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In", "values": list(range(1, 257))}}],
            None,
            [f"{FP}[0].onExitCodes.values"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In", "values": [0, 1]}}],
            None,
            [f"{FP}[0].onExitCodes.values"],
        ),
        ([{"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0, 1]}}], None, []),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 1]}}],
            None,
            [f"{FP}[0].onExitCodes.values"],
        ),
        (
            [{"action": "Count", "onExitCodes": {"operator": "In", "values": ["1"]}}],
            None,
            [f"{FP}[0].onExitCodes.values[0]"],
        ),
        (
            [{"action": "Count", "onExitCodes": {**EXIT_42, "containerName": "sidecar"}}],
            None,
            [f"{FP}[0].onExitCodes.containerName"],
        ),
        ([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}], None, []),
        (
            [{"action": "Ignore", "onPodConditions": [{"status": "True"}]}],
            None,
            [f"{FP}[0].onPodConditions[0].type"],
        ),
        (
            [{"action": "Ignore", "onPodConditions": [{"type": "X", "status": "Yes"}]}],
            None,
            [f"{FP}[0].onPodConditions[0].status"],
        ),
        ([{"action": "Ignore", "onReasons": []}], None, [f"{FP}[0].onReasons"]),
        ([{"action": "Ignore", "onReasons": [""]}], None, [f"{FP}[0].onReasons[0]"]),
        ([{"action": "Count", "replicaTypes": ["worker"], "onReasons": ["Error"]}], None, []),
        (
            [{"action": "Count", "replicaTypes": ["Master"], "onReasons": ["Error"]}],
            None,
            [f"{FP}[0].replicaTypes[0]"],
        ),
        (
            [{"action": "Count", "replicaTypes": ["Tuner"], "onReasons": ["Error"]}],
            None,
            [f"{FP}[0].replicaTypes"],
        ),
        (
            [{"action": "Count", "replicaTypes": ["Worker"], "onReasons": ["Error"]}],
            "MXTune",
            [f"{FP}[0].replicaTypes"],
        ),
        (
            [{"action": "RestartReplica", "replicaTypes": ["Worker"], "onReasons": ["Error"]}],
            None,
            [],
        ),
        ([{"action": "RestartReplica", "onReasons": ["Error"]}], None, []),
        (
            [{"action": "RestartReplica", "replicaTypes": ["Server"], "onReasons": ["Error"]}],
            None,
            [f"{FP}[0].action"],
        ),
        (
            [
                {
                    "action": "RestartReplica",
                    "replicaTypes": ["TunerTracker"],
                    "onReasons": ["Error"],
                }
            ],
            "MXTune",
            [f"{FP}[0].action"],
        ),
        (
            [
                {"name": "a", "action": "Count", "onReasons": ["E"]},
                {"name": "a", "action": "Ignore", "onReasons": ["F"]},
            ],
            None,
            [f"{FP}[1].name"],
        ),
        ([{"name": "x" * 64, "action": "Count", "onReasons": ["E"]}], None, [f"{FP}[0].name"]),
        ([{"action": "Count", "onReasons": ["E"]}] * 21, None, [FP]),
        ("FailJob", None, [FP]),
        (["FailJob"], None, [f"{FP}[0]"]),
    ],
)
def test_failure_policy_rules(rules: Any, mode: str | None, paths: list[str]) -> None:
    assert policy_problems(rules, mode) == sorted(paths)


def test_failure_policy_inline_layout_names_its_path() -> None:
    """`spec.failurePolicy` (where JobSet users write it) is read like runPolicy's."""
    assert policy_problems([{"action": "FailJob"}], inline=True) == ["spec.failurePolicy.rules[0]"]


#: Every replica restartPolicy Never: a name of 51 - 6 = 45..50 characters fits without `-r`.
NEVER_ONLY = {"Worker": replica(1)}


@pytest.mark.parametrize(
    ("action", "refused"),
    [("FailJob", False), ("Count", True), ("Ignore", True), ("RestartJob", True)],
)
def test_retrying_rule_reserves_attempt_suffix(action: str, refused: bool) -> None:
    """A rule that retries can rename a pod of a Never-only job, so `-r<attempt>` is reserved."""
    name = "m" * 50
    policy = {"failurePolicy": {"rules": [{"action": action, "onReasons": ["OOMKilled"]}]}}
    spec, unreadable = load(mxjob(name, replicas=NEVER_ONLY, run_policy=policy)["spec"])
    assert spec is not None, unreadable
    assert [p.path for p in validate(name, spec)] == (["metadata.name"] if refused else [])


def test_a_checkpoint_part_that_is_not_an_object_is_one_problem() -> None:
    """A missing volumeClaimTemplate or spec is "required"; one of the wrong type "must be an
    object"; never both for one field."""
    workers = {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "i"}]}}}}  # fmt: skip
    for checkpoint, path, rule in [
        ({}, "spec.checkpoint.volumeClaimTemplate", "is required: the claim's spec"),
        ({"volumeClaimTemplate": 1}, "spec.checkpoint.volumeClaimTemplate", "must be an object"),
        ({"volumeClaimTemplate": {}}, "spec.checkpoint.volumeClaimTemplate.spec", "is required"),
        (
            {"volumeClaimTemplate": {"spec": []}},
            "spec.checkpoint.volumeClaimTemplate.spec",
            "must be an object",
        ),
    ]:
        _, problems = load({"mxReplicaSpecs": workers, "checkpoint": checkpoint})
        assert [(p.path, p.rule.split(":")[0] if rule == "is required" else p.rule)
                for p in problems] == [(path, rule)], problems  # fmt: skip


@pytest.mark.parametrize(
    ("retention", "problems"),
    [
        ({"whenDeleted": "Retain"}, []),
        ({"whenDeleted": "Delete"}, []),
        ({}, []),
        (
            {"whenDeleted": "retain"},
            [
                (
                    "spec.checkpoint.retentionPolicy.whenDeleted",
                    "must be Delete or Retain, got 'retain'",
                )
            ],
        ),
        (
            {"whenScaled": "Delete"},
            [
                (
                    "spec.checkpoint.retentionPolicy.whenScaled",
                    "is not a retention field (whenDeleted)",
                )
            ],
        ),
        ("Retain", [("spec.checkpoint.retentionPolicy", "must be an object")]),
    ],
)
def test_a_checkpoint_retention_policy_is_when_deleted_delete_or_retain(
    retention: object, problems: list[tuple[str, str]]
) -> None:
    """`retentionPolicy.whenDeleted` takes StatefulSet's two words; anything else is named."""
    workers = {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "i"}]}}}}  # fmt: skip
    saved = {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}
    _, found = load(
        {"mxReplicaSpecs": workers, "checkpoint": {**saved, "retentionPolicy": retention}}
    )
    assert [(p.path, p.rule) for p in found] == problems

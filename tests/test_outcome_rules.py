"""Table tests of the order of outcome.RULES (docs/status.md): when two rules apply to the same
job, the earlier one decides."""

from collections.abc import Callable
from typing import Any

import pytest

from hooks.core.api import ConditionType, Reason
from hooks.core.outcome import RULES
from tests.builders import NOW, cluster_after, mxjob, replica, request, run, running, terminated

Pod = dict[str, Any]
PS = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2, "ExitCode")}


def last_condition(
    replicas: dict[str, Any],
    states: dict[str, Callable[[Pod], Pod]],
    run_policy: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """Type and reason of the last condition once the named pods are in their states (the
    others running)."""
    job = mxjob(replicas=replicas, run_policy=run_policy)
    pods = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]
    pods = [
        states[c["metadata"]["name"]](c) if c["metadata"]["name"] in states else c for c in pods
    ]
    condition = run(request(job, pods), NOW).status["conditions"][-1]
    return condition["type"], condition["reason"]


def done(pod: Pod) -> Pod:
    return terminated(pod, 0, minutes=30)


@pytest.mark.parametrize(
    ("why", "replicas", "states", "policy", "want"),
    [
        (
            "success beats a deadline that passed since",
            PS,
            {"mnist-scheduler-0": done, "mnist-worker-0": done, "mnist-worker-1": done},
            {"activeDeadlineSeconds": 600},
            (ConditionType.SUCCEEDED, Reason.SUCCEEDED),
        ),
        (
            "a permanent failure beats an exceeded backoffLimit",
            {"Worker": replica(2, "ExitCode")},
            {
                "mnist-worker-0": lambda p: terminated(p, 1),
                "mnist-worker-1": lambda p: running(p, restarts=3),
            },
            {"backoffLimit": 1},
            (ConditionType.FAILED, Reason.FAILED),
        ),
        (
            "an exceeded backoffLimit beats the deadline",
            {"Worker": replica(1, "OnFailure")},
            {"mnist-worker-0": lambda p: running(p, restarts=3)},
            {"backoffLimit": 1, "activeDeadlineSeconds": 600},
            (ConditionType.FAILED, Reason.BACKOFF_LIMIT),
        ),
        (
            "a Worker that exits 1 under ExitCode fails the job while others run",
            PS,
            {"mnist-worker-1": lambda p: terminated(p, 1)},
            None,
            (ConditionType.FAILED, Reason.FAILED),
        ),
        (
            "a replaced Worker is Restarting, though the rest runs",
            PS,
            {"mnist-worker-1": lambda p: terminated(p, 137)},
            None,
            (ConditionType.RESTARTING, Reason.RESTARTING),
        ),
        (
            "the deadline beats a replica restart",
            PS,
            {"mnist-worker-1": lambda p: terminated(p, 137)},
            {"activeDeadlineSeconds": 600},
            (ConditionType.FAILED, Reason.DEADLINE),
        ),
        (
            "running pods: Running",
            PS,
            {},
            None,
            (ConditionType.RUNNING, Reason.RUNNING),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_first_rule_that_applies_decides(
    why: str,
    replicas: dict[str, Any],
    states: dict[str, Callable[[Pod], Pod]],
    policy: dict[str, Any] | None,
    want: tuple[ConditionType, Reason],
) -> None:
    assert last_condition(replicas, states, policy) == want, why


def test_every_rule_is_named_for_what_it_finds() -> None:
    assert [rule.__name__ for rule in RULES] == [
        "_succeeded",
        "_failed_for_good",
        "_could_not_start",
        "_backoff_exceeded",
        "_deadline_exceeded",
        "_stalled",
        "_out_of_attempt_names",
        "_restarting_whole_job",
        "_restarting_replicas",
        "_running",
    ]

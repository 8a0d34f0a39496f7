"""Table tests of failure rules (docs/restarts.md#failure-policy): what each matcher matches, the
first matching rule deciding, and the built-in rules that spell out each restartPolicy."""

from typing import Any

import pytest

from hooks.core.api import ReplicaType, RestartPolicy
from hooks.core.failure_policy import Action, OnExitCodes, Operator, Rule, Verdict, judge
from hooks.core.naming import Slot
from hooks.core.observed import ObservedPod, PodPhase
from tests.builders import disrupted, mxjob, oom_killed, request, run, terminated
from testsupport.observed import observe

W = ReplicaType.WORKER
S = ReplicaType.SERVER
DISRUPTION = frozenset({("DisruptionTarget", "True")})


def failed(
    exits: dict[str, int] | None = None,
    reasons: set[str] | None = None,
    conditions: frozenset[tuple[str, str]] = frozenset(),
) -> ObservedPod:
    """A failed pod with these container exit codes, termination reasons and conditions."""
    exits = {"mxnet": 1} if exits is None else exits
    return ObservedPod(
        name="mnist-worker-0",
        slot=Slot(W, 0),
        attempt=0,
        phase=PodPhase.FAILED,
        terminating=False,
        created=None,
        started=None,
        finished=None,
        exit_code=exits.get("mxnet"),
        reason=None,
        restart_count=0,
        restarts_before=0,
        exits=tuple(exits.items()),
        reasons=frozenset(reasons or ()),
        conditions=conditions,
        disrupted=("DisruptionTarget", "True") in conditions,
    )


def codes(operator: Operator, *values: int, container: str = "mxnet") -> Rule:
    return Rule(Action.FAIL_JOB, on_exit_codes=OnExitCodes(operator, frozenset(values), container))


IN, NOT_IN = Operator.IN, Operator.NOT_IN


@pytest.mark.parametrize(
    ("rule", "rtype", "pod", "matches"),
    [
        (codes(IN, 42), W, failed({"mxnet": 42}), True),
        (codes(IN, 42), W, failed({"mxnet": 1}), False),
        (codes(IN, 42), W, failed({}), False),  # no exit code: evicted, node lost
        (codes(NOT_IN, 137), W, failed({"mxnet": 1}), True),
        (codes(NOT_IN, 137), W, failed({"mxnet": 137}), False),
        (codes(NOT_IN, 137), W, failed({"mxnet": 0}), False),  # 0 never matches
        (codes(NOT_IN, 137), W, failed({}), False),
        # containerName: the mxnet container by default, any container when named
        (codes(IN, 2), W, failed({"mxnet": 0, "sidecar": 2}), False),
        (codes(IN, 2, container="sidecar"), W, failed({"mxnet": 0, "sidecar": 2}), True),
        (Rule(Action.IGNORE, on_pod_conditions=DISRUPTION), W, failed(conditions=DISRUPTION), True),
        (Rule(Action.IGNORE, on_pod_conditions=DISRUPTION), W, failed(), False),
        (
            Rule(Action.IGNORE, on_pod_conditions=frozenset({("DisruptionTarget", "False")})),
            W,
            failed(conditions=DISRUPTION),
            False,
        ),
        (
            Rule(Action.RESTART_JOB, on_reasons=frozenset({"OOMKilled"})),
            W,
            failed(reasons={"OOMKilled"}),
            True,
        ),
        (
            Rule(Action.RESTART_JOB, on_reasons=frozenset({"OOMKilled"})),
            W,
            failed(reasons={"Error"}),
            False,
        ),
        # replicaTypes scope the rule
        (
            Rule(Action.FAIL_JOB, replica_types=frozenset({S}), on_reasons=frozenset({"Error"})),
            W,
            failed(reasons={"Error"}),
            False,
        ),
        (
            Rule(Action.FAIL_JOB, replica_types=frozenset({S}), on_reasons=frozenset({"Error"})),
            S,
            failed(reasons={"Error"}),
            True,
        ),
        # every matcher given must match
        (
            Rule(
                Action.FAIL_JOB,
                on_exit_codes=OnExitCodes(IN, frozenset({137})),
                on_reasons=frozenset({"OOMKilled"}),
            ),
            W,
            failed({"mxnet": 137}, {"Error"}),
            False,
        ),
        (
            Rule(
                Action.FAIL_JOB,
                on_exit_codes=OnExitCodes(IN, frozenset({137})),
                on_reasons=frozenset({"OOMKilled"}),
            ),
            W,
            failed({"mxnet": 137}, {"OOMKilled"}),
            True,
        ),
    ],
)
def test_matchers(rule: Rule, rtype: ReplicaType, pod: ObservedPod, matches: bool) -> None:
    assert rule.matches(rtype, pod) is matches


NAMED = Rule(Action.IGNORE, name="oom", on_reasons=frozenset({"OOMKilled"}))
ANY_137 = codes(IN, 137)


@pytest.mark.parametrize(
    ("rules", "pod", "verdict"),
    [
        (
            (NAMED, ANY_137),
            failed({"mxnet": 137}, {"OOMKilled"}),
            Verdict(Action.IGNORE, 'failurePolicy rule "oom"'),
        ),
        (
            (ANY_137, NAMED),
            failed({"mxnet": 137}, {"OOMKilled"}),
            Verdict(Action.FAIL_JOB, "failurePolicy.rules[0]"),
        ),
        (
            (NAMED, ANY_137),
            failed({"mxnet": 137}),
            Verdict(Action.FAIL_JOB, "failurePolicy.rules[1]"),
        ),
        # no user rule matches: the restartPolicy's rules decide (OnFailure: Count)
        ((NAMED,), failed({"mxnet": 3}), Verdict(Action.COUNT)),
    ],
)
def test_first_match_decides(rules: tuple[Rule, ...], pod: ObservedPod, verdict: Verdict) -> None:
    assert judge(rules, RestartPolicy.ON_FAILURE, W, pod) == verdict


@pytest.mark.parametrize(
    ("policy", "pod", "action"),
    [
        (RestartPolicy.NEVER, failed({"mxnet": 143}), Action.FAIL_JOB),
        (RestartPolicy.NEVER, failed({"mxnet": 143}, conditions=DISRUPTION), Action.FAIL_JOB),
        (RestartPolicy.EXIT_CODE, failed({"mxnet": 1}, conditions=DISRUPTION), Action.IGNORE),
        (RestartPolicy.EXIT_CODE, failed({"mxnet": 137}), Action.COUNT),
        (RestartPolicy.EXIT_CODE, failed({"mxnet": 1}), Action.FAIL_JOB),
        (RestartPolicy.EXIT_CODE, failed({"mxnet": 0, "sidecar": 1}), Action.COUNT),
        (RestartPolicy.EXIT_CODE, failed({}), Action.COUNT),
        (RestartPolicy.ON_FAILURE, failed({"mxnet": 1}), Action.COUNT),
        (RestartPolicy.ON_FAILURE, failed(conditions=DISRUPTION), Action.IGNORE),
        (RestartPolicy.ALWAYS, failed({"mxnet": 1}), Action.COUNT),
    ],
)
def test_builtin_rules(policy: RestartPolicy, pod: ObservedPod, action: Action) -> None:
    """The restartPolicy's built-in rules: Never fails everything; ExitCode, OnFailure and
    Always ignore disruptions; ExitCode fails the codes it does not retry."""
    verdict = judge((), policy, W, pod)
    assert verdict == Verdict(action)
    assert verdict.added == {Action.COUNT: 1}.get(action, 0)


def _observed(state: Any) -> ObservedPod:
    """A pod of a real first sync, in `state`, read as the hook reads it."""
    pod = next(c for c in run(request(mxjob())).children if c["kind"] == "Pod")
    observed = observe("mnist", state(pod))
    assert observed is not None
    return observed


def test_read_pod_gives_the_matchers_their_facts() -> None:
    """exits, reasons and conditions come from the pod as the kubelet reports it."""
    oom = _observed(oom_killed)
    assert oom.exits == (("mxnet", 137),)
    assert oom.reasons == {"OOMKilled"}
    evicted = _observed(lambda p: disrupted(terminated(p, None, reason="Evicted")))
    assert evicted.exits == ()
    assert evicted.reasons == {"Evicted"}
    assert ("DisruptionTarget", "True") in evicted.conditions

"""Failure rules (docs/restarts.md#failure-policy): what a failed pod means, decided by ordered
rules, the first that matches.

The user's `failurePolicy.rules` are asked first; then the built-in rules that spell out the
replica's `restartPolicy` (`builtin_rules`), so `ExitCode`, `Never`, `OnFailure` and `Always` are
rule lists like any other and a user rule can only ever come before them. Pure: rules in, a
verdict out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from hooks.core.api import (
    DISRUPTION,
    MXNET_CONTAINER,
    ConditionStatus,
    ReplicaType,
    RestartPolicy,
)
from hooks.core.observed import ObservedPod


class Action(StrEnum):
    """What a matching rule does with a failed pod."""

    FAIL_JOB = "FailJob"  # the job fails now, whatever backoffLimit says
    RESTART_REPLICA = "RestartReplica"  # this pod is replaced alone; counted
    RESTART_JOB = "RestartJob"  # every pod of the run is replaced; counted
    IGNORE = "Ignore"  # retried as the replica type retries, not counted
    COUNT = "Count"  # retried as the replica type retries, counted


class Operator(StrEnum):
    """How `onExitCodes.values` are compared, as in Kubernetes Job podFailurePolicy."""

    IN = "In"
    NOT_IN = "NotIn"


#: Actions that replace something, and whether the replacement counts toward backoffLimit.
COUNTED = {
    Action.RESTART_REPLICA: 1,
    Action.RESTART_JOB: 1,
    Action.IGNORE: 0,
    Action.COUNT: 1,
}


@dataclass(frozen=True)
class OnExitCodes:
    """Matches when a terminated container's non-zero exit code is (In) or is not (NotIn) in
    `values`; exit code 0 never matches (the container did not fail the pod)."""

    operator: Operator
    values: frozenset[int]
    container: str = MXNET_CONTAINER

    def matches(self, pod: ObservedPod) -> bool:
        codes = [code for name, code in pod.exits if name == self.container and code != 0]
        if self.operator is Operator.IN:
            return any(code in self.values for code in codes)
        return any(code not in self.values for code in codes)


@dataclass(frozen=True)
class OnStartFailure:
    """Matches a pod that has not started `after` seconds after it was made, because the kubelet
    cannot start its containers or no node fits it (`ImagePullBackOff`, `Unschedulable`, …;
    any such reason when `reasons` is None). Only FailJob takes it (validated)."""

    after: int
    reasons: frozenset[str] | None = None

    def deadline(self, pod: ObservedPod) -> datetime | None:
        """When the pod has waited long enough, if it is waiting for one of the reasons."""
        if pod.blocked_reason is None or pod.created is None:
            return None
        if self.reasons is not None and pod.blocked_reason not in self.reasons:
            return None
        return pod.created + timedelta(seconds=self.after)


@dataclass(frozen=True)
class Rule:
    """One failure rule. Every matcher given must match; a rule has at least one (validated)."""

    action: Action
    name: str | None = None
    replica_types: frozenset[ReplicaType] | None = None
    on_exit_codes: OnExitCodes | None = None
    #: Pod conditions as (type, status); at least one must be on the pod.
    on_pod_conditions: frozenset[tuple[str, str]] | None = None
    #: Termination reasons; the pod's `status.reason` or the mxnet container's must be one.
    on_reasons: frozenset[str] | None = None
    #: A pod that cannot start for this long (the rule then judges only such pods).
    on_start_failure: OnStartFailure | None = None
    #: The rule judges a stalled job, no failed pod (docs/run-policy.md#progressdeadlineseconds).
    on_stall: bool = False
    #: Where the rule was written (`spec.runPolicy.failurePolicy.rules[1]`), for problems.
    path: str = field(default="", compare=False)

    def matches(self, rtype: ReplicaType, pod: ObservedPod) -> bool:
        if self.replica_types is not None and rtype not in self.replica_types:
            return False
        if self.on_start_failure is not None or self.on_stall:
            return False  # judges pods that never started, or a stall: not a failed pod
        if self.on_exit_codes is not None and not self.on_exit_codes.matches(pod):
            return False
        if self.on_pod_conditions is not None and not self.on_pod_conditions & pod.conditions:
            return False
        return self.on_reasons is None or bool(self.on_reasons & pod.reasons)


@dataclass(frozen=True)
class Verdict:
    """The action for a failed pod and the user rule that chose it (None: a built-in rule)."""

    action: Action
    rule: str | None = None

    @property
    def added(self) -> int:
        """What the retry adds to the restart count (0 for FailJob: nothing is retried)."""
        return COUNTED.get(self.action, 0)

    def by(self) -> str:
        """`failurePolicy rule "oom" (RestartJob)`: the words naming the deciding user rule."""
        return f"{self.rule} ({self.action.value})" if self.rule else self.action.value


#: The exit codes `restartPolicy: ExitCode` retries (docs/restarts.md#exit-codes): SIGINT,
#: SIGKILL, SIGTERM, and 138, which users raise to ask for a retry.
RETRYABLE_EXIT_CODES = frozenset({130, 137, 138, 143})
_DISRUPTED = Rule(
    Action.IGNORE, on_pod_conditions=frozenset({(DISRUPTION, ConditionStatus.TRUE.value)})
)
_BUILTIN: dict[RestartPolicy, tuple[Rule, ...]] = {
    RestartPolicy.NEVER: (),
    RestartPolicy.EXIT_CODE: (
        _DISRUPTED,
        Rule(Action.COUNT, on_exit_codes=OnExitCodes(Operator.IN, RETRYABLE_EXIT_CODES)),
        Rule(Action.FAIL_JOB, on_exit_codes=OnExitCodes(Operator.NOT_IN, RETRYABLE_EXIT_CODES)),
    ),
    RestartPolicy.ON_FAILURE: (_DISRUPTED,),
    RestartPolicy.ALWAYS: (_DISRUPTED,),
}
#: What a failure no rule matched gets: Never fails the job, every other policy retries it.
_FALLBACK = {policy: Action.COUNT for policy in RestartPolicy} | {
    RestartPolicy.NEVER: Action.FAIL_JOB
}


def builtin_rules(policy: RestartPolicy) -> tuple[Rule, ...]:
    """The rules a restartPolicy stands for, asked after the user's; the fallback comes last."""
    return (*_BUILTIN[policy], Rule(_FALLBACK[policy]))


def start_deadline(
    rules: tuple[Rule, ...], rtype: ReplicaType, pod: ObservedPod
) -> tuple[str, datetime] | None:
    """For a pod that cannot start: the first rule with onStartFailure that applies to it (in
    words) and the moment it fails the job; None when no rule applies."""
    for index, rule in enumerate(rules):
        if rule.on_start_failure is None:
            continue
        if rule.replica_types is not None and rtype not in rule.replica_types:
            continue
        moment = rule.on_start_failure.deadline(pod)
        if moment is not None:
            return rule_words(rule, index), moment
    return None


def stall_verdict(rules: tuple[Rule, ...]) -> Verdict:
    """What a stalled job gets: the first onStall rule's action, else a whole-job restart
    (counted toward backoffLimit, as any RestartJob)."""
    for index, rule in enumerate(rules):
        if rule.on_stall:
            return Verdict(rule.action, rule_words(rule, index))
    return Verdict(Action.RESTART_JOB)


def rule_words(rule: Rule, index: int) -> str:
    """How messages name a user rule: by its name, else by its place in the list."""
    if rule.name:
        return f'failurePolicy rule "{rule.name}"'
    return f"failurePolicy.rules[{index}]"


def judge(
    rules: tuple[Rule, ...], policy: RestartPolicy, rtype: ReplicaType, pod: ObservedPod
) -> Verdict:
    """The verdict on a failed pod: the first user rule that matches, else the restartPolicy's.

    A pod whose rejoin wait could not run fails the job before any rule is asked: every
    replacement would fail the same way. A pod Kueue stopped is never the job's failure: it is
    retried uncounted (the whole job restarts, docs/scheduling.md#preemption)."""
    if pod.wait_failed is not None:
        return Verdict(Action.FAIL_JOB)
    if pod.evicted is not None:
        return Verdict(Action.IGNORE)
    for index, rule in enumerate(rules):
        if rule.matches(rtype, pod):
            return Verdict(rule.action, rule_words(rule, index))
    return next(Verdict(rule.action) for rule in builtin_rules(policy) if rule.matches(rtype, pod))

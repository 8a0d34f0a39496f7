"""Reading an MXJob spec: defaults applied, types and enums checked, field paths recorded.

`load` never raises on user input: every problem becomes a `Problem` naming the field path and
the rule, so that the job can be marked Failed with a message the user can act on (docs/api.md).
Cross-replica rules live in `validation`.
"""

import re
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hooks.core import checkpoint, quantity
from hooks.core.api import (
    BARRIER_CONTAINER,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    EPOCHS_ENV,
    MXNET_CONTAINER,
    RESTARTER_CONTAINER,
    TYPE_BY_FOLDED_NAME,
    WAIT_CONTAINER,
    CleanPodPolicy,
    JobMode,
    ReplicaType,
    RestartPolicy,
    RestartStrategy,
    ServiceMode,
    SuccessPolicy,
    TopologyMode,
)
from hooks.core.checkpoint import Checkpoint
from hooks.core.failure_policy import Action, OnExitCodes, OnStartFailure, Operator, Rule
from hooks.core.fields import MAX_DEPTH, too_deep

#: Kubeflow's run-policy fields are int32; larger values only overflow date arithmetic.
INT32_MAX = 2**31 - 1
#: Replicas per type: far above any real job, low enough that one sync stays within the hook
#: timeout (10000 replicas take about 1 s).
MAX_REPLICAS = 10000
#: A value quoted in a problem is cut to this many characters (a message is not a dump).
MAX_SHOWN = 60
#: Port protocols Kubernetes accepts.
PROTOCOLS = ("TCP", "UDP", "SCTP")

_E = TypeVar(
    "_E",
    JobMode,
    RestartPolicy,
    CleanPodPolicy,
    Action,
    Operator,
    ServiceMode,
    TopologyMode,
    RestartStrategy,
)
#: A node label key, as Kubernetes validates one: an optional DNS-subdomain prefix and `/`,
#: then a name of at most 63 characters (`metav1validation.ValidateLabelName`).
LABEL_KEY = re.compile(
    r"^(?:(?=[a-z0-9.-]{1,253}/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
#: Bounds of failurePolicy (Kubernetes Job podFailurePolicy has the same: 20 rules, 20
#: condition patterns, 255 exit codes); they also bound the CRD's CEL cost.
MAX_RULES = 20
MAX_PATTERNS = 20
MAX_EXIT_CODES = 255
#: The most epochs `MXJOB_EPOCHS` may say (docs/status.md#progress).
MAX_EPOCHS = 1_000_000
#: Longest wait onStartFailure takes: a day.
MAX_START_WAIT = 86400
#: Pod condition statuses a rule may name; absent means "True".
CONDITION_STATUSES = ("True", "False", "Unknown")

#: Run-policy fields, also accepted directly under `spec` (kubeflow/mxnet-operator v1 layout).
RUN_POLICY_FIELDS = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "suspend",
    "schedulingPolicy",
    "failurePolicy",
    "progressDeadlineSeconds",
    "firstProgressDeadlineSeconds",
    "restartStrategy",
)
#: The hook's own init containers, which no template may name, and where each is told.
RESERVED_CONTAINERS = {
    WAIT_CONTAINER: "replacement Workers, docs/restarts.md#rejoining-ps-lite",
    RESTARTER_CONTAINER: "restartStrategy InPlace, docs/restarts.md#in-place",
    BARRIER_CONTAINER: "restartStrategy InPlace, docs/restarts.md#in-place",
}
#: The fields of spec.checkpoint.
CHECKPOINT_FIELDS = ("volumeClaimTemplate", "mountPath", "replicaTypes", "retentionPolicy")
#: Shortest progressDeadlineSeconds: the progress component reads logs every 10 s by default,
#: and a deadline must span a few of its passes and of the script's reports.
MIN_PROGRESS_DEADLINE = 30


@dataclass(frozen=True)
class Problem:
    """One broken rule: where (`path`, e.g. `spec.mxReplicaSpecs.Worker.replicas`) and what."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}"


@dataclass(frozen=True)
class Topology:
    """`schedulingPolicy.topology` (docs/scheduling.md#topology): the node label whose values
    are the domains, whether one domain is required or preferred, and the replica types placed
    in one domain together (None: the mode's default, Servers and Workers)."""

    level: str
    mode: TopologyMode = TopologyMode.REQUIRED
    replica_types: frozenset[ReplicaType] | None = None
    #: Where it was read (`spec.runPolicy.schedulingPolicy.topology`), for problems.
    path: str = "spec.runPolicy.schedulingPolicy.topology"


@dataclass(frozen=True)
class SchedulingPolicy:
    """Gang-scheduling and placement knobs of `runPolicy.schedulingPolicy`."""

    min_available: int | None = None
    queue: str | None = None
    priority_class: str | None = None
    min_resources: dict[str, Any] | None = None
    schedule_timeout_seconds: int | None = None
    topology: Topology | None = None


@dataclass(frozen=True)
class RunPolicy:
    """`spec.runPolicy` with defaults applied (cleanPodPolicy defaults to Running, docs/api.md)."""

    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.RUNNING
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    suspend: bool = False
    scheduling: SchedulingPolicy = field(default_factory=SchedulingPolicy)
    #: `failurePolicy.rules`, in order (docs/restarts.md#failure-policy).
    failure_rules: tuple[Rule, ...] = ()
    #: How long a running job may go without progress before it is stalled (docs/run-policy.md).
    progress_deadline_seconds: int | None = None
    #: How long a run may take to its first report (unset: not judged before it reports).
    first_progress_deadline_seconds: int | None = None
    #: How a whole-job restart restarts the pods (docs/restarts.md#in-place).
    restart_strategy: RestartStrategy = RestartStrategy.RECREATE


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type with defaults applied; `template` is a private, defaulted copy."""

    rtype: ReplicaType
    replicas: int
    restart_policy: RestartPolicy
    template: dict[str, Any]

    @property
    def mxnet_port(self) -> int:
        """The number of the `mxjob-port` of the `mxnet` container (defaulted, so present)."""
        for port in mxnet_container(self.template).get("ports", []):
            if port.get("name") == DEFAULT_PORT_NAME:
                return int(port["containerPort"])
        return DEFAULT_PORT


@dataclass(frozen=True)
class JobSpec:
    """A whole MXJob spec: mode, run policy and replica specs in canonical type order."""

    mode: JobMode
    run_policy: RunPolicy
    replicas: dict[ReplicaType, ReplicaSpec]
    success_policy: SuccessPolicy = SuccessPolicy.DEFAULT
    service_mode: ServiceMode = ServiceMode.PER_REPLICA
    checkpoint: Checkpoint | None = None

    def count(self, rtype: ReplicaType) -> int:
        """Replicas of a type, 0 when the type is absent."""
        spec = self.replicas.get(rtype)
        return spec.replicas if spec else 0

    @property
    def total_replicas(self) -> int:
        """All replicas of the job."""
        return sum(r.replicas for r in self.replicas.values())

    @property
    def epochs(self) -> int | None:
        """How many epochs the job trains, as its Workers' `MXJOB_EPOCHS` says (a literal
        whole number up to MAX_EPOCHS; anything else says nothing: the variable is the
        script's, only shown here, docs/status.md#progress)."""
        worker = self.replicas.get(ReplicaType.WORKER)
        env = mxnet_container(worker.template).get("env") if worker else None
        for item in env if isinstance(env, list) else []:
            if isinstance(item, dict) and item.get("name") == EPOCHS_ENV:
                value = item.get("value")
                if (
                    isinstance(value, str)
                    and value.isascii()
                    and value.isdigit()
                    and len(value) < 8
                ):
                    return int(value) if 0 < int(value) <= MAX_EPOCHS else None
                return None
        return None


def mxnet_container(template: dict[str, Any]) -> dict[str, Any]:
    """The container named `mxnet` of a (validated) template."""
    for container in template["spec"]["containers"]:
        if container.get("name") == MXNET_CONTAINER:
            return dict(container)
    raise LookupError("template has no mxnet container")


class _Reader:
    """Collects problems while reading typed fields out of plain JSON."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: str, rule: str) -> None:
        self.problems.append(Problem(path, rule))

    def mapping(self, value: object, path: str) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(path, "must be an object")
            return None
        return value

    def integer(
        self, value: object, path: str, minimum: int, maximum: int = INT32_MAX
    ) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer from {minimum} to {maximum}")
            return None
        if not minimum <= value <= maximum:
            self.fail(path, f"must be from {minimum} to {maximum}, got {value}")
            return None
        return value

    def string(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            self.fail(path, "must be a non-empty string")
            return None
        return value

    def choice(self, value: object, path: str, enum: type[_E], default: _E) -> _E:
        if value is None:
            return default
        try:
            return enum(value) if isinstance(value, str) else enum(str(value))
        except ValueError:
            allowed = ", ".join(e.value for e in enum)
            self.fail(path, f"must be one of {allowed}, got {shown(value)}")
            return default


def shown(value: object) -> str:
    """A user's value quoted in a problem: its repr, cut to MAX_SHOWN characters."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else f"{text[:MAX_SHOWN]}…"


def load(raw_spec: object) -> tuple[JobSpec | None, list[Problem]]:
    """Read and default `spec`; returns the spec (None if unusable) and every problem found.

    Nesting is bounded first, so that nothing below recurses into a value without limit."""
    reader = _Reader()
    spec = reader.mapping(raw_spec, "spec")
    if spec is None:
        if raw_spec is None:
            reader.fail("spec", "is required")
        return None, reader.problems
    deep = too_deep(spec)
    if deep is not None:
        return None, [Problem(f"spec{deep}", f"nests deeper than {MAX_DEPTH} levels")]
    mode = reader.choice(spec.get("jobMode"), "spec.jobMode", JobMode, JobMode.TRAIN)
    run_policy = _run_policy(reader, spec)
    success = _success_policy(reader, spec.get("successPolicy"))
    services = reader.choice(
        spec.get("serviceMode"), "spec.serviceMode", ServiceMode, ServiceMode.PER_REPLICA
    )
    replicas = _replica_specs(reader, spec.get("mxReplicaSpecs"))
    saved = _checkpoint(reader, spec.get("checkpoint"), "spec.checkpoint")
    if reader.problems:
        return None, reader.problems
    return JobSpec(mode, run_policy, replicas, success, services, saved), []


def _success_policy(reader: _Reader, value: object) -> SuccessPolicy:
    """`spec.successPolicy`: absent or "" is the default rule; AllWorkers; nothing else."""
    if value is None:
        return SuccessPolicy.DEFAULT
    if isinstance(value, str) and value in {p.value for p in SuccessPolicy}:
        return SuccessPolicy(value)
    reader.fail(
        "spec.successPolicy",
        f"must be AllWorkers or empty (the Scheduler and every Worker succeeded), got {value!r}",
    )
    return SuccessPolicy.DEFAULT


def _run_policy(reader: _Reader, spec: dict[str, Any]) -> RunPolicy:
    """`spec.runPolicy`, falling back field by field to the inline v1 layout under `spec`."""
    nested = reader.mapping(spec.get("runPolicy"), "spec.runPolicy") or {}
    merged: dict[str, tuple[object, str]] = {}
    for name in RUN_POLICY_FIELDS:
        if name in nested:
            merged[name] = (nested[name], f"spec.runPolicy.{name}")
        elif name in spec:
            merged[name] = (spec[name], f"spec.{name}")

    def value(name: str) -> tuple[object, str]:
        return merged.get(name, (None, f"spec.runPolicy.{name}"))

    suspend_value, suspend_path = value("suspend")
    if suspend_value is not None and not isinstance(suspend_value, bool):
        reader.fail(suspend_path, "must be true or false")
    return RunPolicy(
        clean_pod_policy=reader.choice(
            *value("cleanPodPolicy"), CleanPodPolicy, CleanPodPolicy.RUNNING
        ),
        ttl_seconds_after_finished=reader.integer(*value("ttlSecondsAfterFinished"), 0),
        active_deadline_seconds=reader.integer(*value("activeDeadlineSeconds"), 1),
        backoff_limit=reader.integer(*value("backoffLimit"), 0),
        suspend=suspend_value is True,
        scheduling=_scheduling(reader, *value("schedulingPolicy")),
        failure_rules=_failure_policy(reader, *value("failurePolicy")),
        progress_deadline_seconds=reader.integer(
            *value("progressDeadlineSeconds"), MIN_PROGRESS_DEADLINE
        ),
        first_progress_deadline_seconds=reader.integer(
            *value("firstProgressDeadlineSeconds"), MIN_PROGRESS_DEADLINE
        ),
        restart_strategy=reader.choice(
            *value("restartStrategy"), RestartStrategy, RestartStrategy.RECREATE
        ),
    )


def _scheduling(reader: _Reader, raw: object, path: str) -> SchedulingPolicy:
    policy = reader.mapping(raw, path)
    if policy is None:
        return SchedulingPolicy()
    return SchedulingPolicy(
        min_available=reader.integer(policy.get("minAvailable"), f"{path}.minAvailable", 1),
        queue=reader.string(policy.get("queue"), f"{path}.queue"),
        priority_class=reader.string(policy.get("priorityClass"), f"{path}.priorityClass"),
        min_resources=reader.mapping(policy.get("minResources"), f"{path}.minResources"),
        schedule_timeout_seconds=reader.integer(
            policy.get("scheduleTimeoutSeconds"), f"{path}.scheduleTimeoutSeconds", 1
        ),
        topology=_topology(reader, policy.get("topology"), f"{path}.topology"),
    )


def _topology(reader: _Reader, raw: object, path: str) -> Topology | None:
    """`schedulingPolicy.topology`: a level (a node label key) is required."""
    topology = reader.mapping(raw, path)
    if topology is None:
        return None
    level = topology.get("level")
    if level is None:
        reader.fail(f"{path}.level", "is required: the node label whose values are the domains")
    elif not isinstance(level, str) or not LABEL_KEY.match(level):
        rule = f"must be a node label key such as example.com/rack, got {shown(level)}"
        reader.fail(f"{path}.level", rule)
    mode = reader.choice(topology.get("mode"), f"{path}.mode", TopologyMode, TopologyMode.REQUIRED)
    types = _replica_types(reader, topology.get("replicaTypes"), f"{path}.replicaTypes")
    if not isinstance(level, str):
        return None
    return Topology(level, mode, types, path)


def _checkpoint(reader: _Reader, raw: object, path: str) -> Checkpoint | None:
    """`spec.checkpoint`: a volumeClaimTemplate with a spec is required; its metadata may
    carry labels and annotations; accessModes default to ReadWriteOnce."""
    saved = reader.mapping(raw, path)
    if saved is None:
        return None
    where = f"{path}.volumeClaimTemplate"
    template = _required(reader, saved.get("volumeClaimTemplate"), where, "the claim's spec")
    if template is None:
        return None
    metadata = template.get("metadata", {})
    if not _metadata_is_usable(reader, metadata, f"{where}.metadata"):
        return None
    reader.problems.extend(
        Problem(f"{where}.metadata.{key}", "is set by mxjob: only labels and annotations are read")
        for key in sorted(metadata)
        if key not in ("labels", "annotations")
    )
    claim = _required(
        reader, template.get("spec"), f"{where}.spec", "at least resources.requests.storage"
    )
    if claim is None:
        return None
    claim = {"accessModes": ["ReadWriteOnce"], **_pruned_copy(claim)}
    reader.problems.extend(
        Problem(*found) for found in checkpoint.spec_problems(claim, f"{where}.spec")
    )
    mount = saved.get("mountPath", checkpoint.DEFAULT_PATH)
    wrong = checkpoint.mount_path_problem(mount)
    if wrong is not None:
        reader.fail(f"{path}.mountPath", wrong)
    types = _replica_types(reader, saved.get("replicaTypes"), f"{path}.replicaTypes")
    _retention(reader, saved.get("retentionPolicy"), f"{path}.retentionPolicy")
    reader.problems.extend(
        Problem(f"{path}.{key}", f"is not a checkpoint field ({', '.join(CHECKPOINT_FIELDS)})")
        for key in sorted(saved)
        if key not in CHECKPOINT_FIELDS
    )
    return Checkpoint(
        labels=dict(metadata.get("labels", {})),
        annotations=dict(metadata.get("annotations", {})),
        spec=claim,
        mount_path=str(mount),
        replica_types=types,
        path=path,
    )


def _retention(reader: _Reader, raw: object, path: str) -> None:
    """`retentionPolicy`: only `whenDeleted`, Delete or Retain. Read by the admission policy
    and the retention component, not by the hook (docs/restarts.md#checkpoints)."""
    policy = reader.mapping(raw, path)
    if policy is None:
        return
    when = policy.get("whenDeleted", "Delete")
    if when not in checkpoint.WHEN_DELETED:
        reader.fail(f"{path}.whenDeleted", f"must be Delete or Retain, got {when!r}")
    reader.problems.extend(
        Problem(f"{path}.{key}", "is not a retention field (whenDeleted)")
        for key in sorted(policy)
        if key != "whenDeleted"
    )


def _required(reader: _Reader, value: object, path: str, what: str) -> dict[str, Any] | None:
    """An object that must be there: one problem when it is missing, one when it is not an
    object."""
    if value is None:
        reader.fail(path, f"is required: {what}")
        return None
    return reader.mapping(value, path)


def _failure_policy(reader: _Reader, raw: object, path: str) -> tuple[Rule, ...]:
    """`failurePolicy.rules`: each rule read, names unique (messages name the rule)."""
    policy = reader.mapping(raw, path)
    rules = _bounded_list(reader, (policy or {}).get("rules"), f"{path}.rules", MAX_RULES, 0)
    read = [_rule(reader, r, f"{path}.rules[{i}]") for i, r in enumerate(rules)]
    seen: set[str] = set()
    for rule in read:
        if rule is not None and rule.name is not None:
            if rule.name in seen:
                reader.fail(f"{rule.path}.name", f"{rule.name!r} names an earlier rule too")
            seen.add(rule.name)
    return tuple(rule for rule in read if rule is not None)


def _bounded_list(
    reader: _Reader, value: object, path: str, most: int, least: int = 1
) -> list[Any]:
    """A list of `least` to `most` items; [] (after a problem) for anything else or absent."""
    if value is None:
        return []
    if not isinstance(value, list) or not least <= len(value) <= most:
        reader.fail(path, f"must be a list of {least} to {most} items")
        return []
    return value


def _rule(reader: _Reader, raw: object, path: str) -> Rule | None:
    """One failure rule; None when it cannot be used (its problems are recorded)."""
    rule = reader.mapping(raw, path)
    if rule is None:
        if raw is None:
            reader.fail(path, "must be an object (a rule)")
        return None
    before = len(reader.problems)
    name = reader.string(rule.get("name"), f"{path}.name")
    if name is not None and len(name) > 63:
        reader.fail(f"{path}.name", "must be at most 63 characters")
    if rule.get("action") is None:
        reader.fail(f"{path}.action", f"is required: one of {', '.join(Action)}")
    action = reader.choice(rule.get("action"), f"{path}.action", Action, Action.COUNT)
    _matchers(reader, rule, action, path)
    on_stall = _on_stall(reader, rule, action, path)
    read = Rule(
        action,
        name=name,
        replica_types=_replica_types(reader, rule.get("replicaTypes"), f"{path}.replicaTypes"),
        on_exit_codes=_on_exit_codes(reader, rule.get("onExitCodes"), f"{path}.onExitCodes"),
        on_pod_conditions=_on_conditions(
            reader, rule.get("onPodConditions"), f"{path}.onPodConditions"
        ),
        on_reasons=_on_reasons(reader, rule.get("onReasons"), f"{path}.onReasons"),
        on_start_failure=_on_start_failure(
            reader, rule.get("onStartFailure"), f"{path}.onStartFailure"
        ),
        on_stall=on_stall,
        path=path,
    )
    return read if len(reader.problems) == before else None


def _matchers(reader: _Reader, rule: dict[str, Any], action: Action, path: str) -> None:
    """A rule has a matcher; onStartFailure stands alone and takes only FailJob."""
    matchers = [k for k in ("onExitCodes", "onPodConditions", "onReasons") if k in rule]
    if not matchers and "onStartFailure" not in rule and "onStall" not in rule:
        reader.fail(
            path,
            "needs a matcher: onExitCodes, onPodConditions, onReasons, onStartFailure or onStall",
        )
    if "onStartFailure" in rule:
        if matchers:
            reader.fail(
                f"{path}.onStartFailure",
                f"judges pods that never started: it cannot be combined with {matchers[0]}",
            )
        if action is not Action.FAIL_JOB:
            reader.fail(f"{path}.action", "must be FailJob with onStartFailure")


def _on_stall(reader: _Reader, rule: dict[str, Any], action: Action, path: str) -> bool:
    """`onStall: {}`: the rule judges a stalled job (docs/run-policy.md#progressdeadlineseconds),
    alone, with FailJob or RestartJob (what it does with the whole job)."""
    if "onStall" not in rule:
        return False
    value = rule["onStall"]
    if not isinstance(value, dict) or value:
        reader.fail(f"{path}.onStall", "must be an empty object: {}")
    others = [
        k
        for k in ("onExitCodes", "onPodConditions", "onReasons", "onStartFailure", "replicaTypes")
        if k in rule
    ]
    if others:
        reader.fail(
            f"{path}.onStall", f"judges the whole job: it cannot be combined with {others[0]}"
        )
    if action not in (Action.FAIL_JOB, Action.RESTART_JOB):
        reader.fail(f"{path}.action", "must be FailJob or RestartJob with onStall")
    return True


def _on_start_failure(reader: _Reader, value: object, path: str) -> OnStartFailure | None:
    """`onStartFailure`: afterSeconds required (1 to a day); reasons optional."""
    matcher = reader.mapping(value, path)
    if matcher is None:
        return None
    if matcher.get("afterSeconds") is None:
        reader.fail(f"{path}.afterSeconds", f"is required: 1 to {MAX_START_WAIT} seconds")
    after = reader.integer(matcher.get("afterSeconds"), f"{path}.afterSeconds", 1)
    if after is not None and after > MAX_START_WAIT:
        reader.fail(f"{path}.afterSeconds", f"must be at most {MAX_START_WAIT}")
    reasons = _on_reasons(reader, matcher.get("reasons"), f"{path}.reasons")
    return OnStartFailure(after or 1, reasons)


def _replica_types(reader: _Reader, value: object, path: str) -> frozenset[ReplicaType] | None:
    """`replicaTypes` (of a failure rule, of a topology): replica types, matched
    case-insensitively like mxReplicaSpecs keys."""
    if value is None:
        return None
    found = set()
    for i, name in enumerate(_bounded_list(reader, value, path, len(ReplicaType))):
        rtype = TYPE_BY_FOLDED_NAME.get(name.lower()) if isinstance(name, str) else None
        if rtype is None:
            allowed = ", ".join(t.value for t in ReplicaType)
            reader.fail(f"{path}[{i}]", f"must be one of {allowed}, got {shown(name)}")
        else:
            found.add(rtype)
    return frozenset(found)


def _on_exit_codes(reader: _Reader, value: object, path: str) -> OnExitCodes | None:
    """`onExitCodes`: operator and values required; containerName defaults to mxnet."""
    matcher = reader.mapping(value, path)
    if matcher is None:
        return None
    container = reader.string(matcher.get("containerName"), f"{path}.containerName")
    if matcher.get("operator") is None:
        reader.fail(f"{path}.operator", "is required: In or NotIn")
    operator = reader.choice(matcher.get("operator"), f"{path}.operator", Operator, Operator.IN)
    vpath = f"{path}.values"
    values = _bounded_list(reader, matcher.get("values"), vpath, MAX_EXIT_CODES)
    if matcher.get("values") is None:
        reader.fail(vpath, f"is required: 1 to {MAX_EXIT_CODES} exit codes")
    codes = [reader.integer(v, f"{vpath}[{i}]", -INT32_MAX - 1) for i, v in enumerate(values)]
    if len(set(codes)) != len(codes):
        reader.fail(vpath, "must not repeat a value")
    if operator is Operator.IN and 0 in codes:
        reader.fail(vpath, "0 cannot be used with In: exit code 0 never fails a pod")
    return OnExitCodes(
        operator,
        frozenset(c for c in codes if c is not None),
        container or MXNET_CONTAINER,
    )


def _on_conditions(reader: _Reader, value: object, path: str) -> frozenset[tuple[str, str]] | None:
    """`onPodConditions`: [{type, status (default True)}]; one on the pod suffices."""
    if value is None:
        return None
    patterns = set()
    for i, raw in enumerate(_bounded_list(reader, value, path, MAX_PATTERNS)):
        pattern = reader.mapping(raw, f"{path}[{i}]")
        if pattern is None:
            continue
        ctype = reader.string(pattern.get("type"), f"{path}[{i}].type")
        if ctype is None:
            reader.fail(f"{path}[{i}].type", "is required: a pod condition type")
        status = pattern.get("status", "True")
        if status not in CONDITION_STATUSES:
            allowed = ", ".join(CONDITION_STATUSES)
            reader.fail(f"{path}[{i}].status", f"must be one of {allowed}, got {shown(status)}")
        if ctype is not None:
            patterns.add((ctype, str(status)))
    return frozenset(patterns)


def _on_reasons(reader: _Reader, value: object, path: str) -> frozenset[str] | None:
    """`onReasons`: termination reasons such as OOMKilled, Evicted, DeadlineExceeded."""
    if value is None:
        return None
    reasons = _bounded_list(reader, value, path, MAX_PATTERNS)
    for i, reason in enumerate(reasons):
        reader.string(reason, f"{path}[{i}]")
    return frozenset(r for r in reasons if isinstance(r, str) and r)


def _replica_specs(reader: _Reader, raw: object) -> dict[ReplicaType, ReplicaSpec]:
    path = "spec.mxReplicaSpecs"
    specs = reader.mapping(raw, path)
    if not specs:
        reader.fail(path, "must list at least one replica type")
        return {}
    found: dict[ReplicaType, ReplicaSpec] = {}
    for key, raw_replica in specs.items():
        rpath = f"{path}.{key}"
        rtype = TYPE_BY_FOLDED_NAME.get(str(key).lower())
        if rtype is None:
            allowed = ", ".join(t.value for t in ReplicaType)
            reader.fail(rpath, f"unknown replica type; use one of {allowed}")
            continue
        if rtype in found:
            reader.fail(rpath, f"{rtype.value} is given twice (keys match case-insensitively)")
            continue
        replica = _replica(reader, rtype, raw_replica, rpath)
        if replica is not None:
            found[rtype] = replica
    return {t: found[t] for t in ReplicaType if t in found}


def _replica(reader: _Reader, rtype: ReplicaType, raw: object, path: str) -> ReplicaSpec | None:
    replica = reader.mapping(raw, path)
    if replica is None:
        reader.fail(path, "must be an object with a pod template")
        return None
    count = reader.integer(replica.get("replicas"), f"{path}.replicas", 0, MAX_REPLICAS)
    policy = reader.choice(
        replica.get("restartPolicy"), f"{path}.restartPolicy", RestartPolicy, RestartPolicy.NEVER
    )
    template = _template(reader, replica.get("template"), f"{path}.template")
    if template is None:
        return None
    return ReplicaSpec(rtype, 1 if count is None else count, policy, template)


def _template(reader: _Reader, raw: object, path: str) -> dict[str, Any] | None:
    """A pruned, defaulted copy of the pod template, or None when it cannot be used."""
    template = reader.mapping(raw, path)
    pod_spec = reader.mapping((template or {}).get("spec"), f"{path}.spec")
    if template is None or pod_spec is None:
        reader.fail(f"{path}.spec", "a pod template with spec.containers is required")
        return None
    cpath = f"{path}.spec.containers"
    names = _container_names(reader, pod_spec.get("containers"), cpath)
    if names is None or not _init_containers_are_usable(
        reader, pod_spec.get("initContainers"), f"{path}.spec.initContainers", names
    ):
        return None
    pruned: dict[str, Any] = _pruned_copy(template)
    metadata = pruned.setdefault("metadata", {})
    if not _metadata_is_usable(reader, metadata, f"{path}.metadata"):
        return None
    metadata.pop("creationTimestamp", None)
    mxnet_index = names.index(MXNET_CONTAINER)
    _default_port(reader, pruned["spec"]["containers"][mxnet_index], f"{cpath}[{mxnet_index}]")
    return pruned


def _container_names(reader: _Reader, containers: object, path: str) -> list[object] | None:
    """The names of well-formed containers, one named `mxnet`; None when unusable."""
    if not isinstance(containers, list) or not containers:
        reader.fail(path, "must list at least one container")
        return None
    malformed = [i for i, container in enumerate(containers) if not isinstance(container, dict)]
    for i in malformed:
        reader.fail(f"{path}[{i}]", "must be an object (a container)")
    if malformed:
        return None
    for i, container in enumerate(containers):
        _check_container(reader, container, f"{path}[{i}]")
        _check_resources(reader, container.get("resources"), f"{path}[{i}].resources")
    names = [container.get("name") for container in containers]
    _check_names(reader, names, path, taken=())
    if MXNET_CONTAINER not in names:
        reader.fail(path, f'one container must be named "{MXNET_CONTAINER}"')
        return None
    return names


def _check_container(reader: _Reader, container: dict[str, Any], path: str) -> None:
    """A container's image, and its env a list of named variables (the hook adds to it)."""
    if not isinstance(container.get("image"), str) or not container["image"]:
        reader.fail(f"{path}.image", "every container needs an image")
    env = container.get("env", [])
    if not isinstance(env, list) or not all(
        isinstance(var, dict) and isinstance(var.get("name"), str) for var in env
    ):
        reader.fail(f"{path}.env", "must be a list of variables, each with a name")


def _check_names(
    reader: _Reader, names: list[object], path: str, taken: tuple[object, ...]
) -> None:
    """Container names as a pod takes them: unique among its containers and init containers
    (`taken`: the containers' names, for init containers), and none of the hook's own init
    containers' (RESERVED_CONTAINERS): the API server would refuse the pod."""
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if name in RESERVED_CONTAINERS:
            reader.fail(
                f"{path}[{i}].name",
                f"{name!r} is reserved: the hook gives pods an init container of that name "
                f"({RESERVED_CONTAINERS[name]})",
            )
        elif name in taken or name in names[:i]:
            reader.fail(
                f"{path}[{i}].name",
                f"{name!r} names another container of the pod too: containers and init "
                "containers need names of their own",
            )


def _check_resources(reader: _Reader, resources: object, path: str) -> None:
    """`requests` and `limits`: resource names mapped to quantities Kubernetes reads, none
    negative nor over int64 (hooks/core/quantity.py), which a gang's PodGroup adds up."""
    if resources is None:
        return
    if not isinstance(resources, dict):
        reader.fail(path, "must be an object")
        return
    for key in ("requests", "limits"):
        amounts = resources.get(key)
        if amounts is not None and not isinstance(amounts, dict):
            reader.fail(f"{path}.{key}", "must map resource names to quantities")
            continue
        for name, amount in (amounts or {}).items():
            value = quantity.parse(amount)
            if value is None or value < 0:
                reader.fail(
                    f"{path}.{key}.{name}",
                    f"must be a quantity from 0 to {quantity.MAX} (int64) such as 500m, 2Gi "
                    f"or 1e3, got {shown(amount)}",
                )


def _init_containers_are_usable(
    reader: _Reader, containers: object, path: str, taken: list[object]
) -> bool:
    """`initContainers`, which the hook extends with its own and sums for a PodGroup: absent,
    or a list of objects, named apart from the containers (`taken`) and from each other."""
    if containers is None:
        return True
    if not isinstance(containers, list):
        reader.fail(path, "must be a list of containers")
        return False
    malformed = [i for i, container in enumerate(containers) if not isinstance(container, dict)]
    for i in malformed:
        reader.fail(f"{path}[{i}]", "must be an object (a container)")
    if malformed:
        return False
    for i, container in enumerate(containers):
        _check_resources(reader, container.get("resources"), f"{path}[{i}].resources")
    _check_names(reader, [c.get("name") for c in containers], path, taken=tuple(taken))
    return True


def _metadata_is_usable(reader: _Reader, metadata: object, path: str) -> bool:
    """Template metadata is an object whose labels and annotations map names to strings."""
    if not isinstance(metadata, dict):
        reader.fail(path, "must be an object")
        return False
    for key in ("labels", "annotations"):
        values = metadata.get(key, {})
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            reader.fail(f"{path}.{key}", "must map names to string values")
            return False
    return True


def _default_port(reader: _Reader, container: dict[str, Any], path: str) -> None:
    """Check the ports (the Services are built from them) and append `mxjob-port: 9091` unless
    the container already has a port of that name."""
    ports = container.setdefault("ports", [])
    if not isinstance(ports, list):
        reader.fail(f"{path}.ports", "must be a list")
        return
    for i, port in enumerate(ports):
        _check_port(reader, port, f"{path}.ports[{i}]")
    if not any(isinstance(p, dict) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
        ports.append({"containerPort": DEFAULT_PORT, "name": DEFAULT_PORT_NAME})


def _check_port(reader: _Reader, port: object, path: str) -> None:
    if not isinstance(port, dict):
        reader.fail(path, "must be an object with a containerPort")
        return
    number = port.get("containerPort")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
        reader.fail(f"{path}.containerPort", f"must be a port number 1-65535, got {shown(number)}")
    name = port.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        reader.fail(f"{path}.name", f"must be a non-empty string, got {shown(name)}")
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        reader.fail(
            f"{path}.protocol", f"must be one of {', '.join(PROTOCOLS)}, got {shown(protocol)}"
        )


def _pruned_copy(value: Any) -> Any:
    """A copy without null fields (`null` means absent in Kubernetes, and emitting it churns
    diffs); `load` has bounded the nesting already."""
    if isinstance(value, dict):
        return {k: _pruned_copy(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned_copy(v) for v in value if v is not None]
    return value

"""How large an answer the hook gives one job (docs/security.md#the-answer-budget).

A sync request is bounded by the body limit, but the answer is not bounded by the request: it
holds one pod per replica, each a copy of its type's template, so a small job asking for many
replicas of a large template asks for an answer hundreds of times its own size (10000 Servers
and 10000 Workers of a 150 KB template: 3 GB, past any worker's memory). The answer is
estimated from the job alone, before any of it is built: one pod and one Service of each
replica type, encoded, times its replicas, the failed pods replaced slots keep beside their
replacements, plus the config ConfigMap. A job the hook has not taken on whose estimate is over
the budget is invalid, its message naming both figures; one it has is held (hooks/core/sync.py).

The budget follows the worker's memory: what comes back as the next request is up to RETURNED
times the answer (measured on the KWOK tier: Metacontroller's copy of each child it applied,
the kubelet's status, managedFields), so an answer may be that part of the body limit, and a
body a worker decodes with a peak of about eight times its size (make bench) must fit its share
of the memory limit.
"""

from collections.abc import Iterable
from typing import Any

import msgspec

from hooks.core.api import ReplicaType, RestartPolicy
from hooks.core.build.configmaps import desired_config
from hooks.core.build.pods import PodMaker
from hooks.core.build.services import ServiceMaker
from hooks.core.conditions import HELD_END
from hooks.core.failure_policy import Action
from hooks.core.fields import dig, dig_list
from hooks.core.job import Job
from hooks.core.naming import Slot
from hooks.core.restart.rejoin import through_ps_lite
from hooks.core.restart.runs import WHOLE_JOB_TYPES
from hooks.core.spec import JobSpec, Problem

MIB = 1024 * 1024
#: The most any setting allows; the CRD refuses a job whose smallest answer is larger (its CEL
#: floor names this number; tests/test_budget.py keeps them equal).
CEILING = 256 * MIB
#: What a worker holds while decoding a body, in bodies (make bench: ~8x at 1000 replicas).
DECODE_PEAK = 8
#: What comes back of an answer, in answers: each child as the API server stores it, with
#: Metacontroller's copy of what it applied, the kubelet's status and managedFields (measured
#: on the KWOK tier with a kubelet's status: up to 5.4 for small pods, 2.8 for 20 KB ones;
#: tests/e2e/test_budget.py).
RETURNED = 6
#: Without a setting: what the default body limit (hooks/app.py) gives, as `budget` does.
DEFAULT = 256 * MIB // RETURNED
#: Bytes a pod's name and annotations grow by as it is replaced (`-r<attempt>`, counts).
REPLACEMENT = 128
#: The key of `estimate` for the failed pods that replaced slots keep listed.
REPLACED = "replaced"
#: Bytes of the status (six conditions, six replica types at most) and the answer's framing.
STATUS = 4096


def budget(body_limit: int, memory_limit: int | None = None, workers: int = 1) -> int:
    """The answer budget of a worker: the RETURNED-th part of what it may be sent back, which
    is the body limit or, when the memory limit is known, a body it can decode in its share of
    it."""
    returned = body_limit
    if memory_limit is not None:
        returned = min(returned, memory_limit // max(workers, 1) // DECODE_PEAK)
    return min(CEILING, returned // RETURNED)


def estimate(job: Job) -> dict[str, int]:
    """Bytes of the answer, per replica type (one encoded pod and Service, times its replicas,
    the last index and a replacement's annotations included), of the failed pods replaced slots
    keep beside their replacements (`REPLACED`), and of the `status`, the config `ConfigMap`,
    the gang's group (a `PodGroup`) and the job's one Service (`serviceMode: PerJob`, whose
    replicas have no Service of their own)."""
    pods, services = PodMaker(job), ServiceMaker(job)
    sizes = {"status": STATUS, "ConfigMap": _size(desired_config(job)), REPLACED: 0}
    shared = services.job_service()
    if shared is not None:
        sizes["Service"] = _size(shared)
    group = job.scheduling.group(job.name, job.namespace, job.spec)
    if group is not None:
        sizes[str(group["kind"])] = _size(group)
    for rtype, replica in job.spec.replicas.items():
        if replica.replicas:
            slot = Slot(rtype, replica.replicas - 1)
            # A replacement's pod, with the rejoin wait where its type has one: the largest.
            pod = _size(pods.pod(slot, 0, 0, 0, waits=True)) + REPLACEMENT
            sizes[rtype.value] = (pod + _size(services.service(slot))) * replica.replicas
            sizes[REPLACED] += pod * doubled(job.spec, rtype)
    return sizes


def doubled(spec: JobSpec, rtype: ReplicaType) -> int:
    """How many slots of a type may list two pods at once: a replacement and the failed pod it
    replaces, which stays listed beside it (hooks/core/restart/slots.py, `plan_slot`). Only
    Workers and TunerServers are replaced alone, and of a ps-lite job's Workers one per run:
    the next failure restarts the whole job (docs/restarts.md#one-replaced-worker-per-run)."""
    if rtype in WHOLE_JOB_TYPES or not _retried_alone(spec, rtype):
        return 0
    if rtype is ReplicaType.WORKER and through_ps_lite(spec):
        return 1
    return spec.count(rtype)


def _retried_alone(spec: JobSpec, rtype: ReplicaType) -> bool:
    """Whether a failed pod of a type may be replaced alone: its restartPolicy retries, or a
    failurePolicy rule for it does."""
    if spec.replicas[rtype].restart_policy is not RestartPolicy.NEVER:
        return True
    return any(
        rule.action not in (Action.FAIL_JOB, Action.RESTART_JOB)
        and (rule.replica_types is None or rtype in rule.replica_types)
        for rule in spec.run_policy.failure_rules
    )


def over(job: Job, limit: int) -> str | None:
    """The job's answer over `limit`, in words naming its size and the limit; None within it."""
    sizes = estimate(job)
    total = sum(sizes.values())
    if total <= limit:
        return None
    each = "a pod" if "Service" in sizes else "a pod and its Service"
    parts = ", ".join(
        f"{rtype.value}: {replica.replicas} of {_shown(sizes[rtype.value] // replica.replicas)}"
        for rtype, replica in job.spec.replicas.items()
        if replica.replicas
    )
    kept = sizes[REPLACED]
    beside = f", and {_shown(kept)} of failed pods beside their replacements" if kept else ""
    return (
        f"the hook's answer for this job would be about {_shown(total)} ({parts}, {each} "
        f"each{beside}), over this installation's limit of {_shown(limit)} "
        "(MXJOB_MAX_ANSWER_BYTES)"
    )


def problems(job: Job, limit: int) -> list[Problem]:
    """The job's answer over `limit` as a problem of its spec; none within it."""
    words = over(job, limit)
    return [] if words is None else [refused(words)]


def refused(words: str) -> Problem:
    """The problem of a job refused for the size `over` put in words."""
    return Problem("spec.mxReplicaSpecs", f"{words}: use fewer replicas or a smaller pod template")


def held(words: str) -> Problem:
    """Why an accepted job is held, for the size `over` put in words."""
    kept = f"every child is kept as it is, and nothing is created or deleted {HELD_END}"
    return Problem("spec.mxReplicaSpecs", f"{words}: {kept}")


def crowded(made: int, room: int) -> str | None:
    """Why `made` bytes of new children do not fit in the `room` the job's other children
    leave under the body limit once they come back (RETURNED times), in words; None when they
    fit."""
    if made * RETURNED <= room:
        return None
    return (
        f"the children it would create ({_shown(made)}, about {_shown(made * RETURNED)} as "
        f"Metacontroller sends them back) do not fit in the {_shown(max(room, 0))} its other "
        f"children leave under the hook's body limit (MXJOB_MAX_BODY_BYTES): nothing is "
        f"created {HELD_END}"
    )


def encoded(children: Iterable[dict[str, Any]]) -> int:
    """Bytes of children encoded as the answer lists them."""
    return sum(_size(child) for child in children)


def _size(child: dict[str, Any] | None) -> int:
    if child is None:
        return 0
    return len(msgspec.json.encode(child))


def _shown(size: int) -> str:
    """A size in KiB or MiB, one decimal."""
    if size < MIB:
        return f"{size / 1024:.1f} KiB"
    return f"{size / MIB:.1f} MiB"


#: The CRD's floor of an answer (its CEL rule on `spec.mxReplicaSpecs`): bytes of a pod and its
#: Service per replica, and of the environment the hook gives each container.
FLOOR_REPLICA = 1000
FLOOR_CONTAINER = 700
#: The CRD's message for a job over the floor (tests/test_budget.py keeps them equal).
FLOOR_RULE = (
    "too many replicas or containers: the hook's answer for them (a pod and a Service per "
    "replica, with about 700 bytes of environment per container) would be over its "
    f"{CEILING // MIB} MiB limit even for the smallest pods; use fewer replicas or containers"
)


def floor(replica_specs: object) -> int:
    """The CRD's floor of the answer for `spec.mxReplicaSpecs`, computed as its CEL rule does
    (a replica without `replicas` counts once, its default); the conversion webhook applies it
    to a write at an old version, which the API server checks against that version's rules."""
    total = 0
    for replica in replica_specs.values() if isinstance(replica_specs, dict) else ():
        count = dig(replica, "replicas")
        if count is None:
            count = 1
        elif isinstance(count, bool) or not isinstance(count, int):
            count = 0
        containers = dig_list(replica, "template", "spec", "containers")
        per_pod = FLOOR_REPLICA + sum(
            FLOOR_CONTAINER + _length(dig(c, "name")) + _length(dig(c, "image")) for c in containers
        )
        total += max(count, 0) * per_pod
    return total


def _length(value: object) -> int:
    """CEL's `size()` of a string (in characters); 0 for what the rule's `has()` skips."""
    return len(value) if isinstance(value, str) else 0

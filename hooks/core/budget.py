"""How large an answer the hook gives one job (docs/security.md#the-answer-budget).

A sync request is bounded by the body limit, but the answer is not bounded by the request: it
holds one pod per replica, each a copy of its type's template, so a small job asking for many
replicas of a large template asks for an answer hundreds of times its own size (10000 Servers
and 10000 Workers of a 150 KB template: 3 GB, past any worker's memory). The answer is
estimated from the job alone, before any of it is built: one pod and one Service of each
replica type, encoded, times its replicas, plus the config ConfigMap. A job whose estimate is
over the budget is invalid, its message naming both figures.

The budget follows the worker's memory: what comes back as the next request is about twice the
answer (Metacontroller keeps a copy of each child it applied) and more (status, managedFields),
so an answer may be a quarter of the body limit, and a body a worker decodes with a peak of
about eight times its size (make bench) must fit its share of the memory limit.
"""

import json
from typing import Any

from hooks.core.build.configmaps import desired_config
from hooks.core.build.pods import PodMaker
from hooks.core.build.services import ServiceMaker
from hooks.core.fields import dig, dig_list
from hooks.core.gang import pod_group
from hooks.core.job import Job
from hooks.core.naming import Slot
from hooks.core.spec import Problem

MIB = 1024 * 1024
#: The most any setting allows; the CRD refuses a job whose smallest answer is larger (its CEL
#: floor names this number; tests/test_budget.py keeps them equal).
CEILING = 256 * MIB
#: Without a setting: a quarter of the default body limit (hooks/app.py), as `budget` gives.
DEFAULT = 64 * MIB
#: What a worker holds while decoding a body, in bodies (make bench: ~8x at 1000 replicas).
DECODE_PEAK = 8
#: What comes back of an answer, in answers: each child and Metacontroller's copy of it.
RETURNED = 4
#: Bytes a pod's name and annotations grow by as it is replaced (`-r<attempt>`, counts).
REPLACEMENT = 128
#: Bytes of the status (six conditions, six replica types at most) and the answer's framing.
STATUS = 4096


def budget(body_limit: int, memory_limit: int | None = None, workers: int = 1) -> int:
    """The answer budget of a worker: a quarter of what it may be sent back, which is the body
    limit or, when the memory limit is known, a body it can decode in its share of it."""
    returned = body_limit
    if memory_limit is not None:
        returned = min(returned, memory_limit // max(workers, 1) // DECODE_PEAK)
    return min(CEILING, returned // RETURNED)


def estimate(job: Job) -> dict[str, int]:
    """Bytes of the answer, per replica type (one encoded pod and Service, times its replicas,
    the last index and a replacement's annotations included), and the `status`, the config
    `ConfigMap`, the `PodGroup` and the job's one Service (`serviceMode: PerJob`, whose
    replicas have no Service of their own)."""
    pods, services = PodMaker(job), ServiceMaker(job)
    sizes = {"status": STATUS, "ConfigMap": _size(desired_config(job))}
    shared = services.job_service()
    if shared is not None:
        sizes["Service"] = _size(shared)
    if job.gang is not None:
        sizes["PodGroup"] = _size(pod_group(job.gang, job.name, job.namespace, job.spec))
    for rtype, replica in job.spec.replicas.items():
        if replica.replicas:
            slot = Slot(rtype, replica.replicas - 1)
            # A replacement's pod, with the rejoin wait where its type has one: the largest.
            pod = pods.pod(slot, 0, 0, 0, waits=True)
            each = _size(pod) + _size(services.service(slot)) + REPLACEMENT
            sizes[rtype.value] = each * replica.replicas
    return sizes


def problems(job: Job, limit: int) -> list[Problem]:
    """The job's answer over `limit`, named with its size and the limit; none within it."""
    sizes = estimate(job)
    total = sum(sizes.values())
    if total <= limit:
        return []
    each = "a pod" if "Service" in sizes else "a pod and its Service"
    parts = ", ".join(
        f"{rtype.value}: {replica.replicas} of {_shown(sizes[rtype.value] // replica.replicas)}"
        for rtype, replica in job.spec.replicas.items()
        if replica.replicas
    )
    return [
        Problem(
            "spec.mxReplicaSpecs",
            f"the hook's answer for this job would be about {_shown(total)} ({parts}, {each} "
            f"each), over this installation's limit of {_shown(limit)} "
            "(MXJOB_MAX_ANSWER_BYTES): use fewer replicas or a smaller pod template",
        )
    ]


def _size(child: dict[str, Any] | None) -> int:
    if child is None:
        return 0
    return len(json.dumps(child, ensure_ascii=False, separators=(",", ":")).encode())


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

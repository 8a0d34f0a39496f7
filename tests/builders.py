"""Every builder a test needs, from one place: MXJobs and requests (testsupport/jobs.py) and
observed children in the states a cluster shows (testsupport/observed.py); the benchmark and the
fuzz campaign use the same modules."""

from typing import Any

from hooks.core.api import ReplicaType
from hooks.core.naming import Slot
from hooks.core.observed import ObservedPod, PodPhase
from hooks.core.spec import JobSpec, load
from testsupport.jobs import (
    CHILD_GROUPS,
    CONTROLLER,
    NOW,
    T0,
    UID,
    at,
    mxjob,
    replica,
    request,
    run,
    template,
)
from testsupport.observed import (
    cluster_after,
    created,
    disrupted,
    oom_killed,
    pods_by_name,
    reporting,
    restarted_in_place,
    running,
    saying,
    terminated,
    terminating,
    unschedulable,
    waiting,
)

__all__ = [
    "CHILD_GROUPS",
    "CONTROLLER",
    "NOW",
    "T0",
    "UID",
    "at",
    "cluster_after",
    "created",
    "disrupted",
    "mxjob",
    "observed_pod",
    "oom_killed",
    "pods_by_name",
    "read_spec",
    "replica",
    "reporting",
    "request",
    "restarted_in_place",
    "run",
    "running",
    "saying",
    "template",
    "terminated",
    "terminating",
    "unschedulable",
    "waiting",
]


def read_spec(**job: Any) -> JobSpec:
    """The read spec of `mxjob(**job)`, which must be readable."""
    spec, problems = load(mxjob(**job)["spec"])
    assert spec is not None, problems
    return spec


def observed_pod(**fields: Any) -> ObservedPod:
    """A pending first attempt of Worker 0 in run 0 as the core reads it, but for `fields`."""
    base: dict[str, Any] = {
        "name": "mnist-worker-0",
        "slot": Slot(ReplicaType.WORKER, 0),
        "attempt": 0,
        "phase": PodPhase.PENDING,
        "terminating": False,
        "created": None,
        "started": None,
        "finished": None,
        "exit_code": None,
        "reason": None,
        "restart_count": 0,
        "restarts_before": 0,
    }
    return ObservedPod(**{**base, **fields})

"""Every builder a test needs, from one place: MXJobs and requests (testsupport/jobs.py) and
observed children in the states a cluster shows (testsupport/observed.py); the benchmark and the
fuzz campaign use the same modules."""

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
    "oom_killed",
    "pods_by_name",
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

"""When a replaced Worker may start (docs/restarts.md, "Rejoining ps-lite").

ps-lite's Scheduler gives a Worker that registers after the job has started the place of a
Worker it has declared dead, and drops it silently when none is dead yet; the dropped process
waits for ever and so does the job. The Scheduler declares a Worker dead once `timeout` whole
seconds of its clock (`time(NULL)`) have passed since that Worker's last heartbeat, strictly.
So the hook lists a replacement only at `ended + timeout + REJOIN_MARGIN`: `ended` is the
moment the kubelet saw the old process end, which is no earlier than its last heartbeat, and
the margin covers the second the kubelet truncates from `finishedAt`, ps-lite's strict
whole-second comparison, and a second of clock difference between nodes. The replacement
process registers later still, however fast the cluster starts it.

In jobs that go through ps-lite (MXTrain with a Scheduler) the kubelet never restarts a
container in place, which would be the fastest restart of all: every pod gets
`restartPolicy: Never` and the hook carries out `OnFailure` and `Always` by (delayed)
replacement.
"""

from datetime import datetime, timedelta

from hooks.core.api import JobMode, ReplicaType, RestartPolicy
from hooks.core.spec import JobSpec, mxnet_container

#: What ps-lite needs beyond the heartbeat timeout (see the module docstring).
REJOIN_MARGIN = timedelta(seconds=3)
#: The timeout the hook gives when the template does not set one (docs/environment.md).
DEFAULT_TIMEOUT = 2
#: The timeout assumed when the template sets one the hook cannot read (`valueFrom`, not an
#: integer): long enough for any sensible setting.
UNREADABLE_TIMEOUT = 60
TIMEOUT_VAR = "PS_HEARTBEAT_TIMEOUT"


def through_ps_lite(spec: JobSpec) -> bool:
    """Whether the job's processes meet through a ps-lite Scheduler (MXTrain with one)."""
    return spec.mode is JobMode.TRAIN and ReplicaType.SCHEDULER in spec.replicas


def pod_restart_policy(spec: JobSpec, policy: RestartPolicy) -> str:
    """The Pod `restartPolicy` of a replica: Never wherever the hook carries out the policy."""
    return RestartPolicy.NEVER.value if through_ps_lite(spec) else policy.pod_policy


def heartbeat_timeout(spec: JobSpec) -> int:
    """The Scheduler's heartbeat timeout in seconds: the one that declares Workers dead."""
    scheduler = spec.replicas[ReplicaType.SCHEDULER]
    for var in mxnet_container(scheduler.template).get("env", []):
        if var.get("name") != TIMEOUT_VAR:
            continue
        value = var.get("value")
        text = value.strip() if isinstance(value, str) else ""
        if "valueFrom" in var or not (text.isascii() and text.isdigit() and len(text) <= 6):
            return UNREADABLE_TIMEOUT
        return int(text)
    return DEFAULT_TIMEOUT


def rejoin_wait(spec: JobSpec, rtype: ReplicaType) -> timedelta | None:
    """How long after its predecessor ended a replacement of this type may be listed; None
    where no wait is needed (no ps-lite, or a type whose failure restarts the whole job)."""
    if not through_ps_lite(spec) or rtype is not ReplicaType.WORKER:
        return None
    return timedelta(seconds=heartbeat_timeout(spec)) + REJOIN_MARGIN


def rejoin_at(ended: datetime | None, wait: timedelta | None) -> datetime | None:
    """The moment a replacement may be listed, or None for at once."""
    if ended is None or wait is None:
        return None
    try:
        return ended + wait
    except OverflowError:  # an end near year 9999: never
        return datetime.max.replace(tzinfo=ended.tzinfo)

"""How a Worker of a ps-lite job comes back without being dropped (docs/restarts.md,
"Rejoining ps-lite").

ps-lite's Scheduler gives a Worker that registers after the job has started the place of a
Worker it has declared dead, and drops it silently when none is dead yet; the dropped process
waits for ever and so does the job. The Scheduler declares a Worker dead once `timeout` whole
seconds of its clock (`time(NULL)`) have passed since that Worker's last heartbeat, strictly.

So a Worker pod of such a job made while its run has pods (a replacement, or a pod made again
after it vanished) starts with an init container that sleeps `timeout + 3` s: the pod is made
only after the hook has seen its predecessor end (or be gone from the API, which the kubelet
allows only once the process has ended), so its process registers at least that long after the
predecessor's last heartbeat, however fast the cluster. A run's first pods need none: the
Scheduler matches registrations against dead nodes only once every node of the run has
registered (docs/restarts.md#which-pods-wait). The 3 s cover
ps-lite's strict whole-second comparison, a second of clock difference between nodes, and a
second to spare. A wait in the pod holds where a wait in the hook could not: a deleted pod is
gone from the API about a second after it ends, and with it any trace of when it ended.

The kubelet never restarts a container of such a job in place (that skips init containers and
is the fastest restart of all): every pod gets `restartPolicy: Never` and the hook carries out
`OnFailure` and `Always` by replacement.
"""

from typing import Any

from hooks.core.api import WAIT_CONTAINER, JobMode, ReplicaType, RestartPolicy
from hooks.core.spec import JobSpec, mxnet_container

#: What ps-lite needs beyond the heartbeat timeout (see the module docstring), seconds.
REJOIN_MARGIN = 3
#: The timeout the hook gives when the template does not set one (docs/environment.md).
DEFAULT_TIMEOUT = 2
#: The timeout assumed when the template sets one the hook cannot read (`valueFrom`, not an
#: integer): long enough for any sensible setting.
UNREADABLE_TIMEOUT = 60
TIMEOUT_VAR = "PS_HEARTBEAT_TIMEOUT"
#: Fields of the mxnet container the wait copies, so it runs wherever that container may
#: (the same image, pull policy and security settings: PodSecurity admission checks them all).
_COPIED = ("image", "imagePullPolicy", "securityContext")
#: Resources the wait declares as the mxnet container does, so a ResourceQuota or a policy that
#: demands them admits it wherever it admits that container. A pod's effective request is the
#: larger of its init containers' and the sum of its containers', so this costs the pod nothing,
#: and its QoS class stays that of the mxnet container (docs/restarts.md#rejoining-ps-lite).
_RESOURCES = ("cpu", "memory", "ephemeral-storage")


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


def rejoin_wait(spec: JobSpec, rtype: ReplicaType) -> int | None:
    """Seconds a new pod of this type waits before its process starts; None where no wait is
    needed (no ps-lite, or a type whose failure restarts the whole job with a new Scheduler)."""
    if not through_ps_lite(spec) or rtype is not ReplicaType.WORKER:
        return None
    return heartbeat_timeout(spec) + REJOIN_MARGIN


def wait_container(spec: JobSpec, rtype: ReplicaType) -> dict[str, Any] | None:
    """The init container of a pod of this type, or None."""
    seconds = rejoin_wait(spec, rtype)
    if seconds is None:
        return None
    mxnet = mxnet_container(spec.replicas[rtype].template)
    return {
        "name": WAIT_CONTAINER,
        **copied_from(mxnet, resources=True),
        "command": ["sleep", str(seconds)],
    }


def copied_from(mxnet: dict[str, Any], *, resources: bool) -> dict[str, Any]:
    """What a container of the hook's takes from the mxnet container, to run wherever it may:
    its image, pull policy and security settings, and (`resources`) its requests and limits."""
    copied = {key: mxnet[key] for key in _COPIED if key in mxnet}
    declared = _resources(mxnet.get("resources")) if resources else {}
    if declared:
        copied["resources"] = declared
    return copied


def _resources(declared: object) -> dict[str, dict[str, Any]]:
    """The mxnet container's requests and limits of CPU, memory and ephemeral storage."""
    if not isinstance(declared, dict):
        return {}
    kept = {
        kind: {name: value for name, value in amounts.items() if name in _RESOURCES}
        for kind in ("requests", "limits")
        if isinstance(amounts := declared.get(kind), dict)
    }
    return {kind: amounts for kind, amounts in kept.items() if amounts}

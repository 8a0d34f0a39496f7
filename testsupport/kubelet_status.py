"""A pod status as a real kubelet (v1.36, containerd) writes it, for the KWOK tier, whose fake
kubelet writes a few fields only: what Metacontroller sends back of a pod, and so the answer
budget's return factor (docs/security.md#the-answer-budget), depends on it.

`status_patch(pod, …)` is the pods/status merge patch of a kubelet that runs (or has ended)
every container of `pod`: the five conditions with `observedGeneration`, each container's and
init container's status with its container and image IDs, resources, user, the
service-account volume mount and, once ended, a termination message of `message_bytes`
(`FallbackToLogsOnError` keeps at most 2 KiB of the log). Applied with `kubectl patch
--subresource=status`, it gives the pod a `managedFields` entry for its manager as the
kubelet's own gives it.
"""

import hashlib
from typing import Any

#: The container runtime's ID prefix and a digest of the image, as containerd reports them.
_RUNTIME = "containerd://"
_TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
#: A kubelet's conditions, in the order it writes them.
_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def _hex(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def _container(
    pod: dict[str, Any], container: dict[str, Any], state: dict[str, Any]
) -> dict[str, Any]:
    """One container's status: IDs, image, resources, user, mounts and `state`."""
    name, image = container["name"], container.get("image", "")
    volume = next(
        (m["name"] for m in container.get("volumeMounts", []) if m["mountPath"] == _TOKEN_MOUNT),
        "kube-api-access-" + _hex(pod["metadata"]["name"])[:5],
    )
    status: dict[str, Any] = {
        "containerID": _RUNTIME + _hex(pod["metadata"]["name"], name, "container"),
        "image": image if "/" in image else f"docker.io/library/{image}",
        "imageID": f"docker.io/library/{image.split(':')[0]}@sha256:{_hex(image)}",
        "lastState": {},
        "name": name,
        "ready": "running" in state,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
        "user": {"linux": {"gid": 0, "supplementalGroups": [0], "uid": 0}},
        "volumeMounts": [
            {
                "mountPath": _TOKEN_MOUNT,
                "name": volume,
                "readOnly": True,
                "recursiveReadOnly": "Disabled",
            }
        ],
    }
    resources = container.get("resources")
    if resources:
        status["resources"] = resources
        if "requests" in resources:
            status["allocatedResources"] = resources["requests"]
    return status


def status_patch(
    pod: dict[str, Any],
    now: str,
    *,
    exit_code: int | None = None,
    message_bytes: int = 2048,
) -> dict[str, Any]:
    """The kubelet's status of `pod` at `now`: running, or ended with `exit_code` (its
    containers' termination messages of `message_bytes`, a Python traceback's shape)."""
    generation = pod["metadata"].get("generation", 1)
    ended = exit_code is not None
    if ended:
        message = ("Traceback (most recent call last):\n" + "x" * message_bytes)[:message_bytes]
        reason = "Completed" if exit_code == 0 else "Error"
        state: dict[str, Any] = {
            "terminated": {
                "containerID": "",
                "exitCode": exit_code,
                "finishedAt": now,
                "message": message,
                "reason": reason,
                "startedAt": now,
            }
        }
    else:
        state = {"running": {"startedAt": now}}
    containers = []
    for container in pod["spec"]["containers"]:
        status = _container(pod, container, state)
        if ended:
            status["state"]["terminated"]["containerID"] = status["containerID"]
        containers.append(status)
    inits = []
    for container in pod["spec"].get("initContainers", []):
        done = {"exitCode": 0, "finishedAt": now, "reason": "Completed", "startedAt": now}
        status = _container(pod, container, {"terminated": done})
        status["state"]["terminated"]["containerID"] = status["containerID"]
        status["ready"] = True
        inits.append(status)
    ready = "False" if ended else "True"
    conditions = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": now,
            "observedGeneration": generation,
            "status": ready if kind in ("Ready", "ContainersReady") else "True",
            "type": kind,
            **({"reason": "PodCompleted"} if ended and kind != "Initialized" else {}),
        }
        for kind in _CONDITIONS
    ]
    host = "10.0.0.1"
    address = "10.244.{}.{}".format(*bytes.fromhex(_hex(pod["metadata"]["name"])[:4]))
    return {
        "status": {
            "conditions": conditions,
            "containerStatuses": containers,
            **({"initContainerStatuses": inits} if inits else {}),
            "hostIP": host,
            "hostIPs": [{"ip": host}],
            "observedGeneration": generation,
            "phase": ("Succeeded" if exit_code == 0 else "Failed") if ended else "Running",
            "podIP": address,
            "podIPs": [{"ip": address}],
            "startTime": now,
        }
    }

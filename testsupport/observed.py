"""Observed children in the states a cluster shows: the hook's own desired pods plus what the API
server and kubelet add (uid, creationTimestamp, controller-uid label, status), so that tests and
the fuzz campaign follow real lifecycles."""

import copy
from typing import Any

import msgspec

from hooks.core.api import ANNOTATION_PROGRESS, LABEL_JOB_NAME
from hooks.core.children import Pod, decode_child
from hooks.core.observed import ObservedPod, read_pod
from hooks.core.progress import Noted, Report, encode_noted
from hooks.core.sync import SyncResponse
from testsupport.jobs import UID, at


def created(child: dict[str, Any], minutes: float = 0.5) -> dict[str, Any]:
    """A desired child as the API server stores it after creation, owned (as Metacontroller
    creates it) by the job its `job-name` label names."""
    obj = copy.deepcopy(child)
    meta = obj["metadata"]
    meta["uid"] = f"uid-{meta['name']}"
    meta["creationTimestamp"] = at(minutes)
    meta["resourceVersion"] = "2000"
    meta.setdefault("labels", {})["controller-uid"] = UID
    meta["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "name": meta["labels"][LABEL_JOB_NAME],
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    if obj["kind"] == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return obj


def _container_status(name: str, state: dict[str, Any], restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "image": "mxjob/mxnet:gpu",
        "imageID": "",
        "ready": "running" in state,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
    }


def running(pod: dict[str, Any], minutes: float = 1, restarts: int = 0) -> dict[str, Any]:
    obj = copy.deepcopy(pod)
    obj["status"] = {
        "phase": "Running",
        "startTime": at(minutes),
        "podIP": "10.0.0.10",
        "containerStatuses": [
            _container_status("mxnet", {"running": {"startedAt": at(minutes)}}, restarts)
        ],
    }
    return obj


#: What the kubelet writes as every container's last state when it restarts them in place.
RESTARTED_IN_PLACE = {
    "terminated": {
        "exitCode": 137,
        "reason": "RestartingAllContainers",
        "message": "The container is removed because RestartAllContainers in place",
    }
}


def held_in_place(pod: dict[str, Any], run: int, minutes: float = 1) -> dict[str, Any]:
    """A pod of an InPlace job after the restarter component asked it to restart for `run`:
    every container restarted (as the real node shows it), its barrier holding it back."""
    obj = copy.deepcopy(pod)
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations["mxjob.kubeflow.org/restart"] = annotations["mxjob.kubeflow.org/run"] = str(run)
    obj["metadata"].setdefault("labels", {})["mxjob.kubeflow.org/run"] = str(run)

    def restarted(name: str, state: dict[str, Any]) -> dict[str, Any]:
        return {**_container_status(name, state, 1), "lastState": RESTARTED_IN_PLACE}

    obj["status"] = {
        "phase": "Pending",
        "startTime": at(minutes),
        "initContainerStatuses": [
            restarted("mxjob-restarter", {"running": {"startedAt": at(minutes)}}),
            restarted("mxjob-barrier", {"running": {"startedAt": at(minutes)}}),
        ],
        "containerStatuses": [restarted("mxnet", {"waiting": {"reason": "PodInitializing"}})],
    }
    return obj


def released_in_place(pod: dict[str, Any], run: int, minutes: float = 1) -> dict[str, Any]:
    """A held pod after the component released it into `run`: its barrier passed, telling
    the run, and its mxnet container runs again."""
    obj = held_in_place(pod, run, minutes)
    obj["metadata"]["annotations"]["mxjob.kubeflow.org/go"] = str(run)
    status = obj["status"]
    status["phase"] = "Running"
    status["initContainerStatuses"][1]["state"] = {
        "terminated": {"exitCode": 0, "message": str(run), "finishedAt": at(minutes)}
    }
    status["containerStatuses"][0]["state"] = {"running": {"startedAt": at(minutes)}}
    return obj


def reporting(
    pod: dict[str, Any],
    epoch: int | None,
    batch: int | None,
    minutes: float,
    speed: float | None = 1834.51,
    epoch_seconds: float | None = None,
    seen: float | None = None,
    began: int | None = None,
) -> dict[str, Any]:
    """A pod whose newest progress report (epoch, batch or None at an epoch's end; no report
    when `epoch` is None) the kubelet received `minutes` after T0, on which the progress
    component saw nothing move at `seen` and read a first report of epoch `began`, as that
    component keeps them on the pod."""
    obj = copy.deepcopy(pod)
    report = None
    if epoch is not None:
        report = Report(
            epoch=epoch, batch=batch, speed=speed, epoch_seconds=epoch_seconds, time=at(minutes)
        )
    noted = Noted(report=report, seen=at(seen) if seen is not None else None, began=began)
    obj["metadata"].setdefault("annotations", {})[ANNOTATION_PROGRESS] = encode_noted(noted)
    return obj


def terminated(
    pod: dict[str, Any],
    exit_code: int | None,
    minutes: float = 10,
    started: float = 1,
    restarts: int = 0,
    reason: str | None = None,
) -> dict[str, Any]:
    """A finished pod: Succeeded on exit 0, else Failed; `exit_code=None` models an eviction."""
    obj = copy.deepcopy(pod)
    phase = "Succeeded" if exit_code == 0 else "Failed"
    status: dict[str, Any] = {"phase": phase, "startTime": at(started)}
    if exit_code is not None:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": at(started),
                "finishedAt": at(minutes),
            }
        }
        status["containerStatuses"] = [_container_status("mxnet", state, restarts)]
    if reason:
        status["reason"] = reason
        status["message"] = f"The pod was {reason.lower()}."
    obj["status"] = status
    return obj


def oom_killed(pod: dict[str, Any], minutes: float = 10) -> dict[str, Any]:
    """A pod whose mxnet container the kernel's OOM killer ended: 137, reason OOMKilled."""
    obj = terminated(pod, 137, minutes=minutes)
    obj["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    return obj


def saying(pod: dict[str, Any], message: str) -> dict[str, Any]:
    """A finished pod whose mxnet container left a termination message (with
    FallbackToLogsOnError, the end of its log when it failed)."""
    obj = copy.deepcopy(pod)
    obj["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message
    return obj


def restarted_in_place(
    pod: dict[str, Any], exit_code: int, message: str, minutes: float = 5
) -> dict[str, Any]:
    """A running pod whose mxnet container the kubelet restarted in place after it exited with
    `exit_code` at `minutes`, leaving `message` in its `lastState`."""
    obj = running(pod, minutes=minutes + 0.5, restarts=1)
    obj["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {
            "exitCode": exit_code,
            "reason": "Error",
            "message": message,
            "startedAt": at(1),
            "finishedAt": at(minutes),
        }
    }
    return obj


def disrupted(pod: dict[str, Any], reason: str = "PreemptionByScheduler") -> dict[str, Any]:
    """A pod the cluster takes away: condition DisruptionTarget, as preemption or a drain set."""
    obj = copy.deepcopy(pod)
    obj.setdefault("status", {}).setdefault("conditions", []).append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": f"{reason}: the pod is taken away by the cluster",
        }
    )
    return obj


def waiting(pod: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    """A scheduled pod whose mxnet container the kubelet cannot start (image pull, config)."""
    obj = copy.deepcopy(pod)
    state = {"waiting": {"reason": reason, "message": message}}
    obj["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [_container_status("mxnet", state)],
    }
    return obj


def unschedulable(pod: dict[str, Any], message: str) -> dict[str, Any]:
    """A pod the scheduler finds no node for."""
    obj = copy.deepcopy(pod)
    obj["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastTransitionTime": at(0.5),
            }
        ],
    }
    return obj


def terminating(child: dict[str, Any], minutes: float = 20) -> dict[str, Any]:
    obj = copy.deepcopy(child)
    obj["metadata"]["deletionTimestamp"] = at(minutes)
    obj["metadata"]["deletionGracePeriodSeconds"] = 30
    return obj


def pods_by_name(children: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in children if c["kind"] == "Pod"}


def cluster_after(response: SyncResponse, minutes: float = 0.5) -> list[dict[str, Any]]:
    """Every child of a response as freshly created objects (the cluster after one sync); a
    kept child's body, echoed as the bytes it came in, read back as JSON."""
    return [
        created(msgspec.json.decode(msgspec.json.encode(c)), minutes) for c in response.children
    ]


def observe(job: str, pod: dict[str, Any]) -> ObservedPod | None:
    """What the hook reads of a pod given as JSON objects (`read_pod` of its typed shape)."""
    return read_pod(job, decode_child(Pod, pod))

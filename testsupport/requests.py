"""Realistic sync requests: children as Metacontroller's informer cache hands them over.

testsupport/jobs.py makes the smallest MXJob and request a test needs. The benchmark needs
objects of the size a cluster stores: pods with three containers (an init container, the
`mxnet` container, a metrics sidecar), every default the API server fills in, the
`last-applied-configuration` annotation Metacontroller writes on create, `managedFields` of
every writer, and a kubelet status of every container. A Service carries its API defaults; the
parent carries kubectl's annotation, managedFields and the status of the previous sync.

`sync_request(replicas, state)` builds one request: the hook's own answer to the first sync,
"created" on the API server, then moved to `state` (see STATES). Everything is deterministic.
"""

import copy
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from testsupport.jobs import NOW, UID, at, mxjob, request, run

NAME = "resnet50"
NAMESPACE = "default"
NODE_COUNT = 64
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
KUBECTL_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
IMAGE = "mxjob/mxnet:1.9.1-cu112"
SIDECAR_IMAGE = "quay.io/prometheus/node-exporter:v1.8.2"
INIT_IMAGE = "docker.io/library/busybox:1.36"
Json = dict[str, Any]

#: States a job can be in when a sync arrives; "deleting" is a running job deleted with
#: `--cascade=foreground` (Metacontroller still syncs it, but no longer acts on its children).
STATES = (
    "created",
    "pending",
    "running",
    "restarting",
    "succeeded",
    "failed",
    "suspended",
    "invalid",
    "deleting",
)


def layout(replicas: int) -> dict[str, int]:
    """Replica counts totalling `replicas`: 1 Worker alone, else 1 Scheduler, ~10% Servers."""
    if replicas <= 1:
        return {"Worker": 1}
    if replicas == 2:
        return {"Scheduler": 1, "Worker": 1}
    servers = max(1, replicas // 10)
    return {"Scheduler": 1, "Server": servers, "Worker": replicas - 1 - servers}


def pod_template(rtype: str) -> Json:
    """A production-looking pod template: init container, `mxnet`, a metrics sidecar."""
    gpu = rtype == "Worker"
    limits = {"cpu": "8", "memory": "32Gi", **({"nvidia.com/gpu": "1"} if gpu else {})}
    return {
        "metadata": {
            "labels": {"app.kubernetes.io/name": NAME, "team": "vision"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9100"},
        },
        "spec": {
            "initContainers": [
                {
                    "name": "fetch-data",
                    "image": INIT_IMAGE,
                    "command": ["sh", "-c", "cp -r /dataset/imagenet-rec/. /data/"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "containers": [
                {
                    "name": "mxnet",
                    "image": IMAGE,
                    "command": ["python3"],
                    "args": [
                        "/opt/mxnet/example/image-classification/train_imagenet.py",
                        "--network",
                        "resnet",
                        "--num-layers",
                        "50",
                        "--kv-store",
                        "dist_sync",
                        "--data-train",
                        "/data/train.rec",
                    ],
                    "env": [
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                        {"name": "MXNET_KVSTORE_BIGARRAY_BOUND", "value": "1000000"},
                        {"name": "PS_VERBOSE", "value": "1"},
                    ],
                    "ports": [{"name": "mxjob-port", "containerPort": 9091}],
                    "resources": {"limits": limits, "requests": limits},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "dshm", "mountPath": "/dev/shm"},
                    ],
                },
                {
                    "name": "metrics",
                    "image": SIDECAR_IMAGE,
                    "ports": [{"name": "metrics", "containerPort": 9100}],
                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                },
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
            ],
            "nodeSelector": {"node.kubernetes.io/instance-type": "p3.8xlarge" if gpu else "m5"},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    }


def fields_v1(value: object) -> Any:
    """The `fieldsV1` set of an object, as server-side field management records it."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_v1(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out: Json = {}
        for item in value:
            key = next((k for k in ("name", "containerPort", "port", "type") if k in item), None)
            ident = {key: item[key]} if key else item
            out[f"k:{json.dumps(ident, separators=(',', ':'), sort_keys=True)}"] = fields_v1(item)
        return out
    return {}


def _managed(manager: str, minutes: float, body: Json, subresource: str | None = None) -> Json:
    entry: Json = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": at(minutes),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(body),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{NAME}.{name}"))


def _ip(index: int, base: int = 10) -> str:
    return f"{base}.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


def _container_defaults(container: Json) -> None:
    container.setdefault("imagePullPolicy", "IfNotPresent")
    container.setdefault("resources", {})
    container["terminationMessagePath"] = "/dev/termination-log"
    container["terminationMessagePolicy"] = "File"
    mounts = container.setdefault("volumeMounts", [])
    mounts.append(
        {
            "name": "kube-api-access-7x2kq",
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        }
    )


def _pod_defaults(spec: Json, index: int) -> None:
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        _container_defaults(container)
    spec.update(
        {
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": f"gpu-node-{index % NODE_COUNT:03d}",
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "schedulerName": spec.get("schedulerName", "default-scheduler"),
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
        }
    )
    spec["tolerations"] = [
        *spec.get("tolerations", []),
        *(
            {
                "key": f"node.kubernetes.io/{taint}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for taint in ("not-ready", "unreachable")
        ),
    ]
    spec.setdefault("volumes", []).append(
        {
            "name": "kube-api-access-7x2kq",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ],
            },
        }
    )


def _service_defaults(spec: Json) -> None:
    spec.update(
        {
            "clusterIPs": ["None"],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "type": "ClusterIP",
        }
    )


def stored(child: Json, index: int, minutes: float = 0.5) -> Json:
    """A desired child as the API server stores and Metacontroller observes it."""
    obj = copy.deepcopy(child)
    meta = obj["metadata"]
    desired = json.dumps(child, separators=(",", ":"), sort_keys=True)
    meta.setdefault("annotations", {})[LAST_APPLIED] = desired
    meta.setdefault("labels", {})["controller-uid"] = UID
    meta.update(
        {
            "uid": _uid(meta["name"]),
            "creationTimestamp": at(minutes),
            "resourceVersion": str(100000 + index),
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "MXJob",
                    "name": NAME,
                    "uid": UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
    )
    if obj["kind"] == "Pod":
        _pod_defaults(obj["spec"], index)
    elif obj["kind"] == "Service":
        _service_defaults(obj["spec"])
        obj["status"] = {"loadBalancer": {}}
    # The creator owns what it sent and what the API server defaulted, not server-set metadata.
    written = {k: v for k, v in obj.items() if k not in ("status", "apiVersion", "kind")}
    written["metadata"] = {
        k: v for k, v in meta.items() if k not in ("uid", "creationTimestamp", "resourceVersion")
    }
    meta["managedFields"] = [_managed("metacontroller", minutes, written)]
    if obj["kind"] == "Pod":
        pending(obj, index)
    return obj


def _condition(ctype: str, minutes: float, status: str = "True") -> Json:
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": at(minutes),
    }


def _container_status(
    container: Json, state: Json, index: int, restarts: int = 0, last: Json | None = None
) -> Json:
    running = "running" in state
    return {
        "name": container["name"],
        "image": container["image"],
        "imageID": f"{container['image'].split(':')[0]}@sha256:{'%064x' % (index + 1)}",
        "containerID": f"containerd://{'%064x' % (0xC0FFEE * (index + 7))}",
        "lastState": last or {},
        "ready": running,
        "restartCount": restarts,
        "started": running,
        "state": state,
        "volumeMounts": [
            {
                "name": m["name"],
                "mountPath": m["mountPath"],
                **({"readOnly": True} if m.get("readOnly") else {}),
            }
            for m in container.get("volumeMounts", [])
        ],
    }


def _set_status(pod: Json, index: int, status: Json, minutes: float) -> Json:
    status.update(
        {
            "hostIP": _ip(index % NODE_COUNT, 172),
            "hostIPs": [{"ip": _ip(index % NODE_COUNT, 172)}],
            "qosClass": "Burstable",
            "startTime": at(minutes),
        }
    )
    pod["status"] = status
    kubelet = _managed("kubelet", minutes, {"status": status}, subresource="status")
    pod["metadata"]["managedFields"] = [*pod["metadata"]["managedFields"][:1], kubelet]
    return pod


def pending(pod: Json, index: int, minutes: float = 0.6) -> Json:
    """Scheduled, images pulling."""
    waiting = {"waiting": {"reason": "PodInitializing"}}
    status = {
        "phase": "Pending",
        "conditions": [
            _condition("PodReadyToStartContainers", minutes, "False"),
            _condition("Initialized", minutes, "False"),
            _condition("Ready", minutes, "False"),
            _condition("ContainersReady", minutes, "False"),
            _condition("PodScheduled", minutes),
        ],
        "initContainerStatuses": [
            _container_status(c, {"waiting": {"reason": "ContainerCreating"}}, index)
            for c in pod["spec"].get("initContainers", [])
        ],
        "containerStatuses": [
            _container_status(c, waiting, index) for c in pod["spec"]["containers"]
        ],
    }
    return _set_status(pod, index, status, minutes)


def _init_done(pod: Json, index: int, minutes: float) -> list[Json]:
    done = {
        "terminated": {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": at(minutes - 0.2),
            "finishedAt": at(minutes - 0.1),
            "containerID": f"containerd://{'%064x' % (index + 99)}",
        }
    }
    return [_container_status(c, done, index) for c in pod["spec"].get("initContainers", [])]


def running(pod: Json, index: int, minutes: float = 1, restarts: int = 0) -> Json:
    """Every container running; `restarts` in-place restarts of the mxnet container."""
    states = []
    for c in pod["spec"]["containers"]:
        state = {"running": {"startedAt": at(minutes)}}
        count = restarts if c["name"] == "mxnet" else 0
        last = None
        if count:
            last = {
                "terminated": {
                    "exitCode": 137,
                    "reason": "OOMKilled",
                    "startedAt": at(0.9),
                    "finishedAt": at(minutes),
                }
            }
        states.append(_container_status(c, state, index, count, last))
    status = {
        "phase": "Running",
        "conditions": [
            _condition(t, minutes)
            for t in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        "podIP": _ip(index),
        "podIPs": [{"ip": _ip(index)}],
        "initContainerStatuses": _init_done(pod, index, minutes),
        "containerStatuses": states,
    }
    return _set_status(pod, index, status, minutes)


def terminated(pod: Json, index: int, exit_code: int, minutes: float = 50) -> Json:
    """The mxnet container exited with `exit_code`; the sidecar was stopped with it."""
    phase = "Succeeded" if exit_code == 0 else "Failed"
    states = []
    for c in pod["spec"]["containers"]:
        code = exit_code if c["name"] == "mxnet" else 0
        state = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else ("OOMKilled" if code == 137 else "Error"),
                "startedAt": at(1),
                "finishedAt": at(minutes),
                "containerID": f"containerd://{'%064x' % (index + 5)}",
            }
        }
        states.append(_container_status(c, state, index))
    ready = "False"
    status = {
        "phase": phase,
        "conditions": [
            _condition("PodReadyToStartContainers", minutes, ready),
            _condition("Initialized", 1),
            _condition("Ready", minutes, ready),
            _condition("ContainersReady", minutes, ready),
            _condition("PodScheduled", 0.6),
        ],
        "podIP": _ip(index),
        "podIPs": [{"ip": _ip(index)}],
        "initContainerStatuses": _init_done(pod, index, 1),
        "containerStatuses": states,
    }
    return _set_status(pod, index, status, 1)


def parent(replicas: int, policy: str | None = None, **run_policy: Any) -> Json:
    """The MXJob as stored: kubectl's annotation and managedFields, no status yet."""
    specs: Json = {}
    for rtype, count in layout(replicas).items():
        spec: Json = {"replicas": count, "template": pod_template(rtype)}
        if policy and rtype == "Worker":
            spec["restartPolicy"] = policy
        specs[rtype] = spec
    job = mxjob(NAME, specs, run_policy={"cleanPodPolicy": "Running", **run_policy})
    applied = {k: v for k, v in job.items() if k != "status"}
    job["metadata"]["annotations"] = {
        KUBECTL_APPLIED: json.dumps(applied, separators=(",", ":"), sort_keys=True)
    }
    job["metadata"]["managedFields"] = [
        {
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "kubeflow.org/v1",
            "time": at(0),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1({"metadata": {"annotations": {}}, "spec": job["spec"]}),
        }
    ]
    return job


def _with_status(job: Json, status: Mapping[str, Any]) -> Json:
    job = {**job, "status": status}
    metacontroller = {
        "manager": "metacontroller",
        "operation": "Update",
        "apiVersion": "kubeflow.org/v1",
        "time": at(1),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1({"status": status}),
        "subresource": "status",
    }
    job["metadata"] = {
        **job["metadata"],
        "managedFields": [*job["metadata"]["managedFields"], metacontroller],
    }
    return job


Mover = Callable[[Json, int], Json]


def _cluster(job: Json, move: Callable[[str, Json, int], Json]) -> list[Json]:
    """The children of the hook's first answer, stored, each pod moved by `move(name, pod, i)`."""
    desired = run(request(job)).children
    children = []
    for index, child in enumerate(desired):
        obj = stored(child, index)
        if obj["kind"] == "Pod":
            obj = move(obj["metadata"]["name"], obj, index)
        children.append(obj)
    return children


def _all(mover: Mover) -> Callable[[str, Json, int], Json]:
    return lambda _name, pod, index: mover(pod, index)


def sync_request(replicas: int, state: str = "running", *, v2: bool = False) -> Json:
    """One sync request for a job of `replicas` replicas in `state` (one of STATES)."""
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, not {state!r}")
    policy = "ExitCode" if state == "restarting" else None
    job = parent(replicas, policy, backoffLimit=max(3, replicas // 10))
    if state == "created":
        return request(job, v2=v2)
    if state == "invalid":
        # Servers without a Scheduler: Failed, MXJobInvalidSpec; the running pods are kept.
        children = _cluster(job, _all(running))
        broken = copy.deepcopy(job)
        broken["spec"]["mxReplicaSpecs"].pop("Scheduler", None)
        broken["spec"]["mxReplicaSpecs"].setdefault("Server", {"template": pod_template("Server")})
        return request(broken, children, v2=v2)
    if state == "pending":
        children = _cluster(job, lambda _n, pod, _i: pod)
        return request(_with_status(job, run(request(job, children)).status), children, v2=v2)
    children = _cluster(job, _all(running))
    previous = run(request(job, children)).status
    if state in ("running", "deleting"):
        return request(
            _with_status(deleted(job) if state == "deleting" else job, previous), children, v2=v2
        )
    if state == "suspended":
        suspended = copy.deepcopy(job)
        suspended["spec"]["runPolicy"]["suspend"] = True
        return request(_with_status(suspended, previous), children, v2=v2)
    worker = f"{NAME}-worker-0"

    def move(name: str, pod: Json, index: int) -> Json:
        if state == "succeeded" and "-server-" not in name:
            return terminated(pod, index, 0)
        if name == worker:
            return terminated(pod, index, 137 if state == "restarting" else 1)
        return pod

    moved = [
        move(c["metadata"]["name"], c, i) if c["kind"] == "Pod" else c
        for i, c in enumerate(children)
    ]
    return request(_with_status(job, previous), moved, v2=v2)


def deleted(job: Json) -> Json:
    """`job` as a foreground deletion leaves it: a deletion time and the GC's finalizer."""
    gone = copy.deepcopy(job)
    gone["metadata"]["deletionTimestamp"] = at(3)
    gone["metadata"]["finalizers"] = ["foregroundDeletion"]
    return gone


def encode(body: Json) -> bytes:
    """The body as Metacontroller sends it (compact JSON, UTF-8)."""
    return json.dumps(body, separators=(",", ":")).encode()


#: When the benchmark's syncs happen: the clock only matters for activeDeadlineSeconds.
BENCH_NOW = NOW

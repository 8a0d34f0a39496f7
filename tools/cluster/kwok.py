"""KWOK configuration: the fake Node objects and the Stage documents that drive pod lifecycles.

Stock stages (copied from KWOK's module at build time):
- ``node-fast``: a managed Node becomes Ready at once;
- ``pod-fast`` (default) or ``pod-general``: a pod bound to a KWOK node goes Pending -> Running
  (``pod-fast`` at once, ``pod-general`` after 1 s + up to 5 s jitter per step); a deleted pod is
  removed at once. Their ``pod-complete`` only fires for pods owned by a batch Job, so the pods of
  an MXJob stay Running until a test ends them.

Our stage (``EXIT_STAGE``): a Running pod annotated ``mxjob-e2e/exit-code: "<n>"`` has every
container terminated with exit code n, and the pod becomes Succeeded (n == 0) or Failed (n != 0).
Optional annotations: ``mxjob-e2e/exit-after: "5s"`` (delay after Running) and
``mxjob-e2e/exit-reason`` (default ``Completed`` for 0, ``Error`` otherwise). The annotation can be
put on the pod template (the pod ends right after it starts) or added to a live pod with
``kubectl annotate``. KWOK does not touch a pod once it is Succeeded/Failed, so patching
``pods/status`` directly works as well (see ``Stack.terminate_pod``).

Our stage (``TERMINATE_STAGE``): a Running pod being deleted that still has a finalizer (Kueue's)
ends the way a kubelet ends it: its containers terminated with 143 (SIGTERM) and the pod Failed;
whoever owns the finalizer then removes it. The stock ``pod-fast`` delete stage is narrowed to
pods without finalizers, as ``pod-general``'s already is: it would only retry the deletion, and a
pod that never ends keeps its finalizer forever.

Our stages (``IN_PLACE_STAGES``): a kubelet's `RestartAllContainers` restart of an InPlace job's
pod (docs/restarts.md#in-place), as the real node showed it (notes in
tests/realnode/test_checkpoint.py's InPlace case): a Running pod whose `restart` annotation
differs from its `go` annotation (absent: 0) is held, its barrier running and its mxnet
container waiting, phase Pending; a held pod whose `go` annotation has caught up is released,
its barrier passed and its containers running, phase Running. Its Ready condition stays True
while held, so the stock `pod-ready` stage leaves it alone. Timing only (bench/restart.py): the
pods, the barrier and the restarter's exit are the real node's to prove.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

NODE_ANNOTATION = "kwok.x-k8s.io/node"
NODE_SELECTOR = f"{NODE_ANNOTATION}=fake"
EXIT_CODE_ANNOTATION = "mxjob-e2e/exit-code"
EXIT_AFTER_ANNOTATION = "mxjob-e2e/exit-after"
EXIT_REASON_ANNOTATION = "mxjob-e2e/exit-reason"

EXIT_STAGE = f"""\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: mxjob-e2e-pod-exit
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["{EXIT_CODE_ANNOTATION}"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["{EXIT_AFTER_ANNOTATION}"]'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $code := index .metadata.annotations "{EXIT_CODE_ANNOTATION}" }}}}
      {{{{ $reason := index .metadata.annotations "{EXIT_REASON_ANNOTATION}" }}}}
      {{{{ if not $reason }}}}
      {{{{ $reason = ternary "Completed" "Error" (eq $code "0") }}}}
      {{{{ end }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodCompleted
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        reason: PodCompleted
        type: ContainersReady
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{{{ $code }}}}
            reason: {{{{ $reason | Quote }}}}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: {{{{ ternary "Succeeded" "Failed" (eq $code "0") }}}}
"""


_RESTART = '.metadata.annotations["mxjob.kubeflow.org/restart"]'
_GO = '.metadata.annotations["mxjob.kubeflow.org/go"]'
_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
#: The conditions of a pod under the two stages: Ready stays True (see the module's docstring).
_IN_PLACE_CONDITIONS = """\
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
"""


def _in_place_stage(name: str, phase: str, same: str, template: str) -> str:
    """A stage for pods in `phase` whose restart and go annotations are equal (`same`
    "true") or not ("false")."""
    selector = [
        {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        {"key": ".status.phase", "operator": "In", "values": [phase]},
        {"key": _RESTART, "operator": "Exists"},
        {"key": f'({_RESTART}) == ({_GO} // "0")', "operator": "In", "values": [same]},
        {"key": _READY, "operator": "In", "values": ["True"]},
    ]
    stage = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": selector},
            "next": {"statusTemplate": "{{ $now := Now }}\n" + _IN_PLACE_CONDITIONS + template},
        },
    }
    return yaml.safe_dump(stage, sort_keys=False, width=200)


IN_PLACE_STAGES = [
    _in_place_stage(
        "mxjob-e2e-pod-hold-in-place",
        "Running",
        "false",
        """\
      initContainerStatuses:
      - {name: mxjob-restarter, image: x, ready: true, restartCount: 1, started: true,
         state: {running: {startedAt: {{ $now | Quote }}}}}
      - {name: mxjob-barrier, image: x, ready: false, restartCount: 1,
         state: {running: {startedAt: {{ $now | Quote }}}}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: false, restartCount: 1,
         state: {waiting: {reason: PodInitializing}}}
      {{ end }}
      phase: Pending
""",
    ),
    _in_place_stage(
        "mxjob-e2e-pod-release-in-place",
        "Pending",
        "true",
        """\
      initContainerStatuses:
      - {name: mxjob-restarter, image: x, ready: true, restartCount: 1, started: true,
         state: {running: {startedAt: {{ $now | Quote }}}}}
      - {name: mxjob-barrier, image: x, ready: true, restartCount: 1,
         state: {terminated: {exitCode: 0, reason: Completed, finishedAt: {{ $now | Quote }}}}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, restartCount: 1,
         started: true, state: {running: {startedAt: {{ $now | Quote }}}}}
      {{ end }}
      phase: Running
""",
    ),
]


TERMINATE_STAGE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: mxjob-e2e-pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
      - 'Pending'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: PodCompleted
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 143
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
"""
#: Only pods without finalizers are removed by the delete stage (TERMINATE_STAGE ends the rest).
_NO_FINALIZERS = {"key": ".metadata.finalizers", "operator": "DoesNotExist"}


def write_config(kwok_home: Path, pod_stages: str, dest: Path, logs: Path | None = None) -> None:
    """Concatenate the stock stages and ours into one multi-document KWOK config file; with
    `logs`, a ClusterLogs serving that file as the `mxnet` container's log of every pod."""
    docs: list[str] = []
    for group in ("node-fast", f"pod-{pod_stages}"):
        stage_dir = kwok_home / "stages" / group
        files = sorted(stage_dir.glob("*.yaml"))
        if not files:
            raise FileNotFoundError(f"no KWOK stages in {stage_dir} (run the build again)")
        docs += [_narrowed(f.read_text()) for f in files]
    docs += [EXIT_STAGE, TERMINATE_STAGE, *IN_PLACE_STAGES]
    if logs is not None:
        docs.append(_cluster_logs(logs))
    dest.write_text("\n---\n".join(d.strip() + "\n" for d in docs))


def _cluster_logs(path: Path) -> str:
    """Every pod's `mxnet` log is `path` (CRI log format), read as a kubelet reads one."""
    return yaml.safe_dump(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "mxjob-e2e-logs"},
            "spec": {
                "selector": {"matchNamespaces": ["default"]},
                "logs": [{"containers": ["mxnet"], "logsFile": str(path), "follow": False}],
            },
        },
        sort_keys=False,
    )


def _narrowed(stage: str) -> str:
    """A stock stage; the pod delete stage only for pods without finalizers."""
    doc = yaml.safe_load(stage)
    if doc["metadata"]["name"] != "pod-delete":
        return stage
    expressions = doc["spec"]["selector"]["matchExpressions"]
    if _NO_FINALIZERS not in expressions:
        expressions.append(_NO_FINALIZERS)
    return yaml.safe_dump(doc, sort_keys=False)


def node(name: str) -> dict[str, Any]:
    """A fake Node managed by KWOK, roomy enough for any test and without taints, declaring
    the feature a kubelet 1.36 declares for `RestartAllContainers` rules, which the scheduler
    requires of a node for a pod with one (an InPlace job's: docs/restarts.md#in-place)."""
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "1000", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
            },
        },
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "declaredFeatures": ["RestartAllContainersOnContainerExits"],
        },
    }


def nodes_json(names: list[str]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [node(n) for n in names]})

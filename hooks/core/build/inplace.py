"""What a pod of a job that restarts in place carries (docs/restarts.md#in-place): Kubernetes 1.36
restarts every container of a pod where it is when a container exits with a code a
`RestartAllContainers` rule names (KEP-5532), keeping the pod, its node, IP and volumes.

- `mxjob-restarter`, a sidecar, watches the pod's annotation `mxjob.kubeflow.org/restart`
  (through the downward API) and exits 86 when it changes: its rule restarts every container
  (the exit tells the hook the pod is restarting, hooks/core/held.py).
- The mxnet container has no rule: a failed process makes the pod Failed, its exit code in
  its state, as any pod's. A rule that restarted the pod instead would lose it: a
  RestartAllContainers restart overwrites every container's last state with exit 137, reason
  RestartingAllContainers (seen on the real node, notes/inplace/probe2.py), and the exit code
  decides the failure policy. A failed pod is made again; the others restart in place.
- `mxjob-barrier`, the first init container after the sidecar, holds a restarted pod (one
  whose memory volume says it passed before) until `mxjob.kubeflow.org/go` changes: a new
  run's processes start only once the hook has seen every pod of the old run stopped, so a new
  Scheduler never meets an old Worker. A pod's first start passes at once. The run a released
  pod runs is its `go` annotation (hooks/core/held.py): a termination message would say it too,
  but the real node showed it gone a few seconds after the release.

Both run the mxnet container's image with `sh` (MXNet's images have it), as the rejoin wait
does, so they run wherever it may and no other image is pulled.
"""

from typing import Any

from hooks.core.api import (
    ANNOTATION_GO,
    ANNOTATION_RESTART,
    BARRIER_CONTAINER,
    MXNET_CONTAINER,
    RESTARTER_CONTAINER,
)
from hooks.core.restart.rejoin import copied_from

#: The exit code of the restarter that restarts every container (KEP-5532's examples use 42;
#: any code the restarter alone exits with will do).
RESTART_CODE = 86
#: The volume of the two annotations, and the pod's memory across in-place restarts.
ANNOTATIONS_VOLUME = "mxjob-restart"
MEMORY_VOLUME = "mxjob-run"
RESERVED_VOLUMES = (ANNOTATIONS_VOLUME, MEMORY_VOLUME)
_ANNOTATIONS = "/etc/mxjob/restart"
_MEMORY = "/mxjob/run"
#: What the sidecar asks for, of the resources the mxnet container asks for: it reads a file
#: twice a second.
_SIDECAR_REQUESTS = {"cpu": "10m", "memory": "16Mi"}
_SIDECAR_LIMITS = {"cpu": "100m", "memory": "32Mi"}
#: Both end at SIGTERM: as PID 1, `sh` would ignore it, and a finished pod would wait its
#: grace period for the sidecar to be killed (seen on the real node).
RESTARTER_SCRIPT = (
    f'trap "exit 0" TERM; f={_ANNOTATIONS}/restart; start="$(cat $f)"; '
    'while [ "$(cat $f)" = "$start" ]; do sleep 0.5; done; '
    f"exit {RESTART_CODE}"
)
BARRIER_SCRIPT = (
    f'trap "exit 0" TERM; m={_MEMORY}/passed; g={_ANNOTATIONS}/go; '
    'if [ -e $m ]; then while [ "$(cat $g)" = "$(cat $m)" ]; do sleep 0.5; done; fi; '
    "cat $g > $m"
)


def restarting_in_place(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec with the restarter first among its init containers, the barrier next, and
    the two volumes."""
    mxnet = next(c for c in spec["containers"] if c.get("name") == MXNET_CONTAINER)
    restarter = {
        "name": RESTARTER_CONTAINER,
        **copied_from(mxnet, resources=False),
        "command": ["sh", "-c", RESTARTER_SCRIPT],
        **_sidecar_resources(mxnet),
        "restartPolicy": "Always",
        "restartPolicyRules": [_rule("In", [RESTART_CODE])],
        "volumeMounts": [_mount(ANNOTATIONS_VOLUME, _ANNOTATIONS)],
    }
    barrier = {
        "name": BARRIER_CONTAINER,
        **copied_from(mxnet, resources=True),
        "command": ["sh", "-c", BARRIER_SCRIPT],
        "volumeMounts": [_mount(ANNOTATIONS_VOLUME, _ANNOTATIONS), _mount(MEMORY_VOLUME, _MEMORY)],
    }
    return {
        **spec,
        "initContainers": [restarter, barrier, *spec.get("initContainers", [])],
        "volumes": [*spec.get("volumes", []), *_volumes()],
    }


def made_for(run: int) -> dict[str, str]:
    """The annotations of a pod made for `run`: restarted for it and released into it (none
    for run 0, which nothing restarted)."""
    return {ANNOTATION_RESTART: str(run), ANNOTATION_GO: str(run)} if run > 0 else {}


def _sidecar_resources(mxnet: dict[str, Any]) -> dict[str, Any]:
    """The sidecar's `resources` (none when the mxnet container names none): requests and
    limits of the resources the mxnet container names only: a
    Kueue ClusterQueue or a ResourceQuota that covers the job's resources covers the sidecar
    (one covering CPU alone refused a pod whose sidecar asked for memory, on the real node)."""
    resources = mxnet.get("resources")
    named: set[str] = set()
    if isinstance(resources, dict):
        for key in ("requests", "limits"):
            asked = resources.get(key)
            named |= set(asked) if isinstance(asked, dict) else set()
    found = {
        key: {name: value for name, value in wanted.items() if name in named}
        for key, wanted in (("requests", _SIDECAR_REQUESTS), ("limits", _SIDECAR_LIMITS))
    }
    asked = {key: values for key, values in found.items() if values}
    return {"resources": asked} if asked else {}


def _rule(operator: str, codes: list[int]) -> dict[str, Any]:
    return {"action": "RestartAllContainers", "exitCodes": {"operator": operator, "values": codes}}


def _mount(volume: str, path: str) -> dict[str, Any]:
    return {"name": volume, "mountPath": path, "readOnly": volume == ANNOTATIONS_VOLUME}


def _volumes() -> list[dict[str, Any]]:
    """The two annotations as files, and a small memory-backed emptyDir."""
    items = [
        {"path": key, "fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}
        for key, annotation in (("restart", ANNOTATION_RESTART), ("go", ANNOTATION_GO))
    ]
    return [
        {"name": ANNOTATIONS_VOLUME, "downwardAPI": {"items": items}},
        {"name": MEMORY_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]

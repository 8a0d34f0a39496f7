"""What a container's process sees: env resolved the way the kubelet does it.

`valueFrom.configMapKeyRef` reads the ConfigMap, `valueFrom.fieldRef` the pod's own
`metadata.annotations['…']` (empty when absent); `$(VAR)` in a value expands to an earlier
variable, `$$` is a literal `$`, and an unknown reference stays as written (Kubernetes
`third_party/forked/golang/expansion`). Tests use it to check MX_CONFIG byte for byte.
"""

import re
from typing import Any

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_ANNOTATION = re.compile(r"^metadata\.annotations\['([^']+)'\]$")


def expand(value: str, known: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return known.get(name, match.group(0))

    return _REFERENCE.sub(replace, value)


def resolve(
    pod: dict[str, Any], container: dict[str, Any], config_maps: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """The environment of a container of `pod`, in order, as its process gets it."""
    env: dict[str, str] = {}
    for var in container.get("env", []):
        source = var.get("valueFrom", {})
        if "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            env[var["name"]] = config_maps[ref["name"]]["data"][ref["key"]]
        elif "fieldRef" in source:
            match = _ANNOTATION.match(source["fieldRef"]["fieldPath"])
            assert match, f"fieldPath {source['fieldRef']['fieldPath']} is not modelled"
            annotations = pod["metadata"].get("annotations", {})
            env[var["name"]] = annotations.get(match.group(1), "")
        else:
            env[var["name"]] = expand(var.get("value", ""), env)
    return env

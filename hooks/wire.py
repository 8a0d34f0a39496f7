"""Bytes to `SyncRequest` and back, fast: decode only what the core reads.

Metacontroller sends every child in full: managedFields, volumes, tolerations, the kubelet's
status of every container. The core reads a dozen fields of each. `decode` reads the request
with msgspec against typed shapes (`_Child` below) that name only those fields; everything
else is skipped while scanning, never turned into Python objects. The result is what
`hooks.core.request.parse_request` returns for the full body, as far as the core can tell:

- the parent and the controller in full (orjson, exactly as before: the parent's
  templates are copied into pods);
- each child as a plain dict holding apiVersion, kind, the metadata the core reads, the status
  fields the core reads, ConfigMap data, and its `spec` as `msgspec.Raw`: the child's own bytes,
  echoed untouched when the hook lists an observed child as kept (`retention.as_observed`) and
  encoded as they came by `encode`; of a pod's `spec`, the three fields the core reads are
  decoded beside it (`SPEC_READ`).

Whenever the fast path cannot vouch for the result (not JSON, a shape the typed decoding
refuses, orjson refusing the parent), `decode` returns None and the caller falls back to the
full decoding, which gives exactly the old answer, 4xx included. So bad input costs one extra
scan and keeps its behaviour; good input never builds what nobody reads.
"""

import json
from typing import Any, TypedDict

import msgspec
import orjson

from hooks.core.request import POD, SPEC_READ, RequestError, SyncRequest, parse_request


class _Meta(TypedDict, total=False):
    name: Any
    namespace: Any
    labels: Any
    annotations: Any
    creationTimestamp: Any
    deletionTimestamp: Any


class _ContainerStatus(TypedDict, total=False):
    name: Any
    restartCount: Any
    state: Any
    lastState: Any


class _Status(TypedDict, total=False):
    # Pods: phase, reason, start time, container states, conditions (DisruptionTarget…).
    # PodGroups: phase (Volcano admits pods once it has left Pending).
    phase: Any
    reason: Any
    message: Any
    startTime: Any
    conditions: Any
    containerStatuses: list[_ContainerStatus]
    # The rejoin wait of ps-lite Workers (hooks/core/rejoin.py) and the user's init containers:
    # why a pod cannot start, and a wait that could not run.
    initContainerStatuses: list[_ContainerStatus]


class _PodSpec(TypedDict, total=False):
    # Which scheduler holds the pod, where it is bound, and Kueue's gate (docs/scheduling.md).
    nodeName: Any
    schedulerName: Any
    schedulingGates: Any


_POD_SPEC = msgspec.json.Decoder(_PodSpec)


class _Child(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: _Meta
    # Echoed as observed for a kept child (retention.as_observed); never read otherwise.
    spec: msgspec.Raw
    data: Any
    binaryData: Any
    immutable: Any
    status: _Status


class _Body(TypedDict, total=False):
    parent: msgspec.Raw
    children: dict[str, dict[str, _Child] | None] | None
    controller: msgspec.Raw


_DECODER = msgspec.json.Decoder(_Body)


def decode(data: bytes) -> SyncRequest | None:
    """The sync request of `data`, or None: decode it in full instead (same answer, slower)."""
    if not data.isascii():
        try:  # orjson refuses invalid UTF-8 anywhere; msgspec does not look inside skipped text
            data.decode()
        except UnicodeDecodeError:
            return None
    try:
        body: dict[str, Any] = dict(_DECODER.decode(data))
        for key in ("parent", "controller"):
            if key in body:
                body[key] = orjson.loads(memoryview(body[key]))
    except (msgspec.MsgspecError, orjson.JSONDecodeError, RecursionError):
        # RecursionError: msgspec stops at Python's recursion limit, below orjson's depth.
        return None
    try:
        request = parse_request(body)
        for child in request.group(POD).values():
            spec = child.get("spec")
            if isinstance(spec, msgspec.Raw):
                child[SPEC_READ] = dict(_POD_SPEC.decode(spec))
        return request
    except (RequestError, msgspec.MsgspecError):
        return None


def _fragment(value: object) -> object:
    if isinstance(value, msgspec.Raw):
        return orjson.Fragment(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _plain(value: object) -> object:
    if isinstance(value, msgspec.Raw):
        return json.loads(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode(body: object) -> bytes:
    """orjson, echoing raw children's bytes as they came; the standard library for what orjson
    refuses (nesting deeper than 254)."""
    try:
        return orjson.dumps(body, default=_fragment)
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_plain).encode()

"""The API versions served beside v1, and what their mappings share (docs/api.md#versions).

Each old version (`v1alpha1`, `v1alpha2`) is a `Mapping`: `up` reads an object of that version as
v1, `down` reads a v1 object as that version, each field with the meaning the old operator gave it.
Neither needs to be lossless: `to_v1` and `from_v1` make every round trip of the spec exact with
the stash (hooks/core/conversion/stash.py) — `mxjob.kubeflow.org/v1-fields` on an old object holds
what it cannot hold of its v1 self, `mxjob.kubeflow.org/<version>-fields` on a v1 object what v1
cannot hold of its old self. Both keys are reserved for the converter, but whoever writes the
object writes them: a stash holds the spec only (the status is the controller's and reads at an old
version as that version shows it), and with the v1 spec's schema `to_v1` refuses a stash that
brings in what v1 refuses (docs/security.md#the-conversion-stash).

A mapping may change only `apiVersion`, `spec`, `status` and annotations: the API server
refuses a conversion that changes any other metadata. `down` never fails, so every stored job
can be read at every version; `up` raises `UnconvertibleError` for what v1 cannot hold at all.
A mapping is given a copy of the spec and status only, so nothing walks what else an object
holds (the API server's `managedFields` mirror the spec's nesting), and a spec or status
nesting deeper than `MAX_DEPTH` (which no job the hook runs has: it refuses it) is not mapped:
refused at a write (`up`), read as an empty spec and no status (`down`), since a stored job
that cannot be read at an old version fails every list at that version.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hooks.core import budget
from hooks.core.api import GROUP, KIND, TYPE_BY_FOLDED_NAME, VERSION, ReplicaType
from hooks.core.conversion import stash
from hooks.core.conversion.schema import schema_errors
from hooks.core.fields import MAX_DEPTH, dig, too_deep
from hooks.core.spec import load
from hooks.core.validation import validate

V1 = f"{GROUP}/{VERSION}"
#: On an old object: what its v1 self holds and it cannot.
V1_FIELDS = "mxjob.kubeflow.org/v1-fields"
#: Run-policy fields a v1 job may also give directly under `spec` (spec.RUN_POLICY_FIELDS).
RUN_POLICY = "runPolicy"
#: What a mapping reads of an object.
MAPPED = ("spec", "status")
#: Where a v1 job names the controller that runs it (immutable once set: the CRD's rule).
MANAGED_BY = (("spec", RUN_POLICY, "managedBy"), ("spec", "managedBy"))


class UnconvertibleError(ValueError):
    """An object v1 cannot hold: `path` names the field, the message says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


#: What a mapping produces: `spec` and `status` of the converted object, each absent when the
#: object has none.
View = dict[str, Any]


@dataclass(frozen=True)
class Mapping:
    """One old version's reading of v1, both ways; each gets a private copy of the object."""

    version: str
    up: Callable[[dict[str, Any]], View]
    down: Callable[[dict[str, Any]], View]

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    @property
    def fields_key(self) -> str:
        """On a v1 object: what its self at this version holds and v1 cannot."""
        return f"mxjob.kubeflow.org/{self.version}-fields"


def to_v1(
    mapping: Mapping, obj: dict[str, Any], v1_spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The v1 object of an object of `mapping`'s version; raises UnconvertibleError. With the
    v1 spec's schema (the webhook), also for what the v1 rules refuse that the old version's do
    not: what a stash brings in, and an answer over the CRD's floor."""
    _check(obj, mapping.api_version)
    for part in MAPPED:
        deep = too_deep(obj.get(part))
        if deep is not None:
            raise UnconvertibleError(f"{part}{deep}", f"nests deeper than {MAX_DEPTH} levels")
    entries, bare = stash.take(obj, V1_FIELDS)
    view = mapping.up(_mapped(bare))
    stashed = stash.apply(entries, copy.deepcopy(view)) if entries else view
    if v1_spec is not None:
        if not stash.same(stashed, view):
            _refuse_what_it_brings(obj, v1_spec, view, stashed)
        _refuse_over_the_floor(stashed.get("spec"))
    converted = _with(bare, V1, stashed)
    back = mapping.down(_mapped(converted))
    return stash.put(converted, mapping.fields_key, stash.patch(_view(bare), stash.held(back)))


def from_v1(mapping: Mapping, obj: dict[str, Any]) -> dict[str, Any]:
    """The object at `mapping`'s version of a v1 object; raises UnconvertibleError only for an
    object that is no v1 MXJob."""
    _check(obj, V1)
    entries, bare = stash.take(_readable(obj), mapping.fields_key)
    converted = _with(bare, mapping.api_version, stash.apply(entries, mapping.down(_mapped(bare))))
    back = mapping.up(_mapped(converted))
    return stash.put(converted, V1_FIELDS, stash.patch(_view(bare), stash.held(back)))


def _mapped(obj: dict[str, Any]) -> dict[str, Any]:
    """A private copy of what a mapping reads of the object: its spec and status."""
    return {part: copy.deepcopy(obj[part]) for part in MAPPED if part in obj}


def _readable(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as a reading maps it: a spec nesting deeper than MAX_DEPTH as an empty
    one and such a status as none (the module's docstring says why)."""
    if all(too_deep(obj.get(part)) is None for part in MAPPED):
        return obj
    readable = {key: value for key, value in obj.items() if key != "status"}
    if too_deep(obj.get("status")) is None and "status" in obj:
        readable["status"] = obj["status"]
    if too_deep(obj.get("spec")) is not None:
        readable["spec"] = {}
    return readable


def _check(obj: dict[str, Any], api_version: str) -> None:
    if obj.get("kind") != KIND:
        raise UnconvertibleError("kind", f"{obj.get('kind')!r} is not {KIND}")
    if obj.get("apiVersion") != api_version:
        raise UnconvertibleError("apiVersion", f"{obj.get('apiVersion')!r} is not {api_version}")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise UnconvertibleError("metadata", "must be an object")
    if not isinstance(metadata.get("annotations", {}), dict):
        raise UnconvertibleError("metadata.annotations", "must map names to strings")


def _view(obj: dict[str, Any]) -> dict[str, Any]:
    """What a stash compares of an object."""
    return stash.held(obj)


def _refuse_what_it_brings(
    obj: dict[str, Any], v1_spec: dict[str, Any], view: View, stashed: View
) -> None:
    """Raise UnconvertibleError when the stash makes the v1 spec break a rule it kept without
    it: a type, bound or enum of the schema, a rule of the hook's (docs/api.md#validation), or
    the immutability of `managedBy`, which no old version holds: only the stash can bring it,
    and without the stored object the webhook cannot tell a copy of it from a change."""
    path = f"metadata.annotations[{V1_FIELDS}]"
    for where in MANAGED_BY:
        if dig(stashed, *where) != dig(view, *where):
            raise UnconvertibleError(
                path,
                f"brings in {'.'.join(where)}, which is immutable: a job that names the "
                f"controller running it is written at {V1} only",
            )
    name = str(dig(obj, "metadata", "name") or "")
    broken = _refused(v1_spec, name, stashed.get("spec"))
    brought = broken and broken - _refused(v1_spec, name, view.get("spec"))
    if brought:
        raise UnconvertibleError(path, f"brings in what {V1} refuses: {min(brought)}")


def _refuse_over_the_floor(spec: object) -> None:
    """Raise UnconvertibleError for a spec whose smallest answer is over the ceiling: the CRD's
    rule, which a write at v1 meets at the API server and one at an old version does not."""
    if budget.floor(dig(spec, "mxReplicaSpecs")) > budget.CEILING:
        raise UnconvertibleError("spec.mxReplicaSpecs", budget.FLOOR_RULE)


def _refused(v1_spec: dict[str, Any], name: str, spec: object) -> set[str]:
    """Every rule a v1 spec breaks, as `path: rule`."""
    found = set(schema_errors(v1_spec, spec, at="spec"))
    read, problems = load(spec)
    if read is not None:
        problems = validate(name, read)
    return found | {str(problem) for problem in problems}


def _with(obj: dict[str, Any], api_version: str, view: dict[str, Any]) -> dict[str, Any]:
    """The object at another version: its apiVersion, spec and status replaced."""
    converted = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    converted["apiVersion"] = api_version
    converted.update(view)
    return converted


# --- what the mappings share ----------------------------------------------------------------


def run_policy(spec: dict[str, Any], name: str) -> Any:
    """A run-policy field of a v1 spec: `spec.runPolicy` wins over the same field inline."""
    nested = spec.get(RUN_POLICY)
    if isinstance(nested, dict) and nested.get(name) is not None:
        return nested[name]
    return spec.get(name)


def clean_pod_policy_up(value: object) -> object:
    """An old version's cleanup policy as v1: absent or empty deleted every pod (All), which
    v1 says explicitly, its absence meaning Running (docs/run-policy.md)."""
    return "All" if value in (None, "") else value


def clean_pod_policy_down(spec: dict[str, Any]) -> object:
    """A v1 spec's cleanPodPolicy as an old version writes it: absent is Running in v1, and
    absent meant All in every old version."""
    value = run_policy(spec, "cleanPodPolicy")
    return "Running" if value is None else value


def replica_type(key: object) -> ReplicaType | None:
    """The replica type a `mxReplicaSpecs` key names (letter case does not matter)."""
    return TYPE_BY_FOLDED_NAME.get(key.lower()) if isinstance(key, str) else None


def pod_spec(template: object) -> dict[str, Any] | None:
    """The pod spec of a template, when both are objects."""
    spec = template.get("spec") if isinstance(template, dict) else None
    return spec if isinstance(spec, dict) else None


def spread_scheduler_name(name: object, templates: list[object]) -> None:
    """An old `spec.schedulerName` onto every template, where the old operators wrote it into
    every pod; an empty one leaves the templates as they are."""
    if not isinstance(name, str) or not name:
        return
    for template in templates:
        spec = pod_spec(template)
        if spec is not None:
            spec["schedulerName"] = name

"""The MXJob CRD's OpenAPI schema, checked as kube-apiserver checks it: structural defaults, then
types, enums, bounds and required fields (the CEL rules are the hook's own validation, which
makes the same checks: docs/api.md#validation).

An `openAPIV3Schema` is OpenAPI, not JSON Schema: `to_json_schema` drops the `x-kubernetes-*`
keys, turns `nullable` into a null type, and closes every object that declares properties
(kube-apiserver prunes unknown fields and `kubectl apply` reports them as errors in its default
strict mode) unless it keeps unknown fields. The schema is data: the caller reads the CRD.
"""

import copy
import re
from datetime import datetime
from typing import Any

import jsonschema

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$")
FORMATS = jsonschema.FormatChecker(formats=())


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    return True


def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


def _is_duration(value: object) -> bool:
    return not isinstance(value, str) or bool(_DURATION.match(value))


FORMATS.checks("date-time", raises=ValueError)(_is_date_time)
FORMATS.checks("int32")(_is_int32)
FORMATS.checks("int64")(_is_int64)
FORMATS.checks("duration")(_is_duration)


_DROPPED = {"description", "default", "example", "externalDocs", "nullable"}


def to_json_schema(node: dict[str, Any], *, root: bool = True) -> dict[str, Any]:
    """An OpenAPI v3 (structural) schema as a JSON Schema (see the module docstring).

    The root `metadata` stays open: it is ObjectMeta, which the API server checks itself.
    """
    out = {
        key: _converted(key, value, root=root)
        for key, value in node.items()
        if not key.startswith("x-kubernetes-") and key not in _DROPPED
    }
    return out | _extensions(node, out)


def _converted(key: str, value: Any, *, root: bool) -> Any:
    """One keyword of a schema, its sub-schemas converted."""
    if key == "properties":
        return {
            name: to_json_schema(sub, root=False)
            | ({"additionalProperties": True} if root and name == "metadata" else {})
            for name, sub in value.items()
        }
    if key in ("additionalProperties", "items", "not") and isinstance(value, dict):
        return to_json_schema(value, root=False)
    if key in ("anyOf", "allOf", "oneOf"):
        return [to_json_schema(sub, root=False) for sub in value]
    return value


def _extensions(node: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """What OpenAPI's extensions and structural rules add: int-or-string, nullable, and no
    unknown fields where properties are listed and unknown ones not preserved."""
    more: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string") is True and "anyOf" not in out:
        more["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") is True and "type" in out:
        more["type"] = [out["type"], "null"]
    keeps_unknown = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in node and "additionalProperties" not in node and not keeps_unknown:
        more["additionalProperties"] = False
    return more


def schema_errors(schema: dict[str, Any], value: object, at: str = "") -> list[str]:
    """`path: message` for every violation of an OpenAPI schema, sorted; paths start with `at`
    (the field the schema is of) when it is given."""
    first = [at] if at else []
    errors = _validator(schema).iter_errors(value)
    return sorted(f"{_path([*first, *error.absolute_path])}: {error.message}" for error in errors)


#: Validators made, by the identity of their schema, which each entry keeps alive (so no other
#: schema can take its id while it is here): a conversion checks every stash of a review against
#: the one CRD schema, and making its validator was most of a check's cost (docs/security.md).
_MADE: dict[int, tuple[dict[str, Any], jsonschema.Draft7Validator]] = {}
#: Schemas whose validators are kept (the webhook's one; tests check against many).
_KEPT = 8


def _validator(schema: dict[str, Any]) -> jsonschema.Draft7Validator:
    """The JSON Schema validator of an OpenAPI schema, made once per schema object."""
    made = _MADE.get(id(schema))
    if made is None or made[0] is not schema:
        made = (schema, jsonschema.Draft7Validator(to_json_schema(schema), format_checker=FORMATS))
        if len(_MADE) >= _KEPT:
            _MADE.clear()
        _MADE[id(schema)] = made
    return made[1]


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "<root>"


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Structural defaulting, in place: absent properties with a `default` get it, recursively."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                apply_defaults(properties[name], item)
            elif isinstance(extra, dict):
                apply_defaults(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)
    return value

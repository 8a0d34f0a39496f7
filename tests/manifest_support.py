"""What the manifest and example tests share: kustomize builds, and MXJob validation done the way
kube-apiserver does it (structural defaulting, the OpenAPI schema, the CEL rules).

The OpenAPI schema is checked by hooks/core/conversion/schema.py (the conversion webhook checks
what a stash brings in with it). CEL rules are evaluated with cel-python, whose `matches` uses RE2
like kube-apiserver.
"""

import copy
import functools
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from hooks.core.conversion.schema import apply_defaults, schema_errors
from hooks.core.request import parse_request
from hooks.core.sync import sync
from testsupport.jobs import as_sent

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = REPO / "manifests"
METACONTROLLER = REPO / "metacontroller"
EXAMPLES = REPO / "examples"
BAD_EXAMPLES = Path(__file__).resolve().parent / "bad_examples"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
CRD_FILE = MANIFESTS / "crd" / "mxjobs.kubeflow.org.yaml"
#: The Deployments an install runs (the hook and every component), whichever way it is made.
DEPLOYMENTS = frozenset(
    {
        "mxjob-hook",
        "mxjob-ttl-controller",
        "mxjob-events",
        "mxjob-progress",
        "mxjob-retention",
        "mxjob-restarter",
        "mxjob-convert",
        "mxjob-certs",
    }
)

#: The Kubernetes release the project targets (docs/testing.md#end-to-end-kwok); the newest
#: the package has otherwise.
WANTED_KUBERNETES = "1.36.0"
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-03-01T11:00:00Z"

#: Install variants and the CompositeController overlay each one ships.
INSTALL_OVERLAYS = {
    "standard": MANIFESTS / "overlays" / "standard",
    "volcano": MANIFESTS / "overlays" / "volcano",
    "scheduler-plugins": MANIFESTS / "overlays" / "scheduler-plugins",
}
CONTROLLER_OVERLAYS = {
    "standard": METACONTROLLER / "base",
    "volcano": METACONTROLLER / "overlays" / "volcano",
    "scheduler-plugins": METACONTROLLER / "overlays" / "scheduler-plugins",
    "local": METACONTROLLER / "overlays" / "local",
}
#: Kind of each child resource (Metacontroller keys children `Kind.apiVersion`).
KIND_OF_RESOURCE = {
    "pods": "Pod",
    "services": "Service",
    "configmaps": "ConfigMap",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "podgroups": "PodGroup",
}


def kubernetes_version() -> str:
    """WANTED_KUBERNETES if kubernetes-validate has its schemas, else its newest version."""
    versions = set(kubernetes_validate.utils.all_versions())
    return (
        WANTED_KUBERNETES if WANTED_KUBERNETES in versions else kubernetes_validate.latest_version()
    )


# --- YAML and kustomize ------------------------------------------------------------------------


def load_docs(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document of a file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def load_one(path: Path) -> dict[str, Any]:
    docs = load_docs(path)
    assert len(docs) == 1, f"{path} should hold exactly one document, has {len(docs)}"
    return docs[0]


def kustomization_dirs() -> list[Path]:
    """Every kustomization (not Component) under manifests/ and metacontroller/ that builds
    offline (metacontroller/install fetches Metacontroller's release: tested apart)."""
    found = []
    for root in (MANIFESTS, METACONTROLLER):
        for path in sorted(root.rglob("kustomization.yaml")):
            loaded = load_one(path)
            remote = any("://" in r for r in loaded.get("resources", []))
            if loaded.get("kind", "Kustomization") == "Kustomization" and not remote:
                found.append(path.parent)
    return found


#: Marks tests that build kustomizations: skipped without kustomize or kubectl, except where
#: every tier is required (E2E=required), where `build` then fails naming what is missing.
needs_kustomize = pytest.mark.skipif(
    os.environ.get("E2E") != "required"
    and shutil.which("kustomize") is None
    and shutil.which("kubectl") is None,
    reason="neither kustomize nor kubectl is installed",
)


def kustomize_command() -> list[str] | None:
    if kustomize := shutil.which("kustomize"):
        return [kustomize, "build"]
    if kubectl := shutil.which("kubectl"):
        return [kubectl, "kustomize"]
    return None


@functools.cache
def _build(path: Path) -> str:
    command = kustomize_command()
    assert command is not None, "neither kustomize nor kubectl is installed"
    done = subprocess.run(
        [*command, str(path)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, f"kustomize build {path} failed:\n{done.stderr}"
    return done.stdout


def build(path: Path) -> list[dict[str, Any]]:
    """The objects a kustomization builds (a fresh copy each call)."""
    return [doc for doc in yaml.safe_load_all(_build(path)) if doc]


def installed(variant: str) -> list[dict[str, Any]]:
    """What the kustomize install makes (README, "Install"): the CRD of manifests/crd, applied
    on its own, then the variant."""
    return build(MANIFESTS / "crd") + build(INSTALL_OVERLAYS[variant])


def controller_of(overlay: str) -> dict[str, Any]:
    """The CompositeController built by a metacontroller/ overlay."""
    (controller,) = [
        o for o in build(CONTROLLER_OVERLAYS[overlay]) if o["kind"] == "CompositeController"
    ]
    return controller


def name_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def walk_schema(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with a readable path (`.spec.mxReplicaSpecs.*.template`, `[]`: items)."""
    yield path or ".", node
    for name, sub in node.get("properties", {}).items():
        yield from walk_schema(sub, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk_schema(node["additionalProperties"], f"{path}.*")
    if isinstance(node.get("items"), dict):
        yield from walk_schema(node["items"], f"{path}[]")
    for key in ("anyOf", "allOf", "oneOf"):
        for i, sub in enumerate(node.get(key, [])):
            yield from walk_schema(sub, f"{path}.{key}[{i}]")


# --- CEL (x-kubernetes-validations) ------------------------------------------------------------

_CEL = celpy.Environment()


def _sum(values: celtypes.ListType) -> celtypes.IntType:
    """Kubernetes' `list.sum()` (its CEL lists library) of integers, which cel-python lacks."""
    total = 0
    for value in values:
        assert isinstance(value, celtypes.IntType), value
        total += int(value)
    return celtypes.IntType(total)


@functools.cache
def cel_program(rule: str) -> celpy.Runner:
    """A compiled CEL rule (raises on a syntax error)."""
    return _CEL.program(_CEL.compile(rule), functions={"sum": _sum})


def cel_holds(rule: str, value: object) -> bool | str:
    """True when the rule holds for `self` = value, False when not, the error text on an error."""
    try:
        activation = {"self": json_to_cel(value)}  # type: ignore[arg-type]
        result = cel_program(rule).evaluate(activation)
    except CELEvalError as error:
        return f"evaluation error: {error.args[0] if error.args else error}"
    if isinstance(result, CELEvalError):
        return f"evaluation error: {result.args[0] if result.args else result}"
    return isinstance(result, celtypes.BoolType) and bool(result)


def policy_admits(policy: dict[str, Any], request: dict[str, Any], **objects: object) -> bool:
    """Whether a ValidatingAdmissionPolicy's `spec` admits a request, as kube-apiserver decides
    (failurePolicy Fail): one its match conditions do not select is admitted, one they select
    must pass every validation; an expression that errs denies. `objects`: `object`,
    `oldObject`; the policy's `variables` are evaluated as kube-apiserver does, unless given."""
    activation = {"request": json_to_cel(request)}
    activation |= {name: json_to_cel(value) for name, value in objects.items()}  # type: ignore[arg-type]
    if "variables" not in objects:
        activation["variables"] = _variables(policy, activation)

    def holds(expression: str) -> bool:
        try:
            result = cel_program(expression).evaluate(activation)
        except CELEvalError:
            return False
        return isinstance(result, celtypes.BoolType) and bool(result)

    selected = [c["expression"] for c in policy.get("matchConditions", [])]
    if not all(holds(expression) for expression in selected):
        return True
    return all(holds(v["expression"]) for v in policy["validations"])


def _variables(policy: dict[str, Any], activation: dict[str, Any]) -> celtypes.MapType:
    """The policy's `variables`, each evaluated in order with those before it; one that errs
    (an `object` a DELETE does not have) errs where an expression uses it, not before."""
    variables = celtypes.MapType()
    for variable in policy.get("variables", []):
        value: Any
        try:
            value = cel_program(variable["expression"]).evaluate(
                {**activation, "variables": variables}
            )
        except CELEvalError as error:
            value = error
        variables[celtypes.StringType(variable["name"])] = value
    return variables


def _on_create(rule: dict[str, Any]) -> str:
    """The rule as kube-apiserver evaluates it on a create: a rule with `optionalOldSelf` sees
    no old object (cel-python has no optional values, so `oldSelf.hasValue()` is written out)."""
    text = str(rule["rule"])
    return text.replace("oldSelf.hasValue()", "false") if rule.get("optionalOldSelf") else text


def cel_violations(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """`path: message` of every rule that does not hold on a create, wherever its node is
    present."""
    found = []
    for rule in schema.get("x-kubernetes-validations", []):
        holds = cel_holds(_on_create(rule), value)
        if holds is not True:
            detail = "" if holds is False else f" ({holds})"
            found.append(f"{path or '<root>'}: {rule.get('message', rule['rule'])}{detail}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            sub = properties.get(name, extra if isinstance(extra, dict) else None)
            if sub is not None:
                found.extend(cel_violations(sub, item, f"{path}.{name}".lstrip(".")))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found.extend(cel_violations(schema["items"], item, f"{path}[{i}]"))
    return found


# --- the MXJob CRD -----------------------------------------------------------------------------


@functools.cache
def _crd() -> dict[str, Any]:
    return load_one(CRD_FILE)


def mxjob_crd() -> dict[str, Any]:
    """The MXJob CRD (a fresh copy each call)."""
    crd: dict[str, Any] = copy.deepcopy(_crd())
    return crd


def mxjob_version(name: str) -> dict[str, Any]:
    """One served version of the CRD (`v1`, `v1alpha1`, `v1alpha2`)."""
    versions: list[dict[str, Any]] = mxjob_crd()["spec"]["versions"]
    (version,) = [v for v in versions if v["name"] == name]
    return version


def mxjob_schema(version: str = "v1") -> dict[str, Any]:
    """The openAPIV3Schema of a served version; by default of v1, the stored one."""
    schema: dict[str, Any] = mxjob_version(version)["schema"]["openAPIV3Schema"]
    return schema


def admit_mxjob(obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """What kube-apiserver does on create: defaults, then schema and CEL checks, at the version
    the object names.

    Returns the defaulted object and every problem found (empty when it would be accepted).
    """
    schema = mxjob_schema(str(obj.get("apiVersion", "kubeflow.org/v1")).rpartition("/")[2])
    defaulted = apply_defaults(schema, copy.deepcopy(obj))
    problems = schema_errors(schema, defaulted)
    problems.extend(cel_violations(schema, defaulted))
    return defaulted, problems


def expectations(path: Path, key: str) -> list[str]:
    """The values of `# key: value` header lines of a YAML file."""
    prefix = f"# {key}:"
    return [
        line[len(prefix) :].strip()
        for line in path.read_text().splitlines()
        if line.startswith(prefix)
    ]


# --- the hook ----------------------------------------------------------------------------------


def child_groups(controller: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The empty `children` Metacontroller sends for a new parent: one entry per child rule."""
    return {
        f"{KIND_OF_RESOURCE[rule['resource']]}.{rule['apiVersion']}": {}
        for rule in controller["spec"]["childResources"]
    }


def new_parent(example: dict[str, Any]) -> dict[str, Any]:
    """An example as the API server stores it: defaulted, with namespace, uid and timestamps."""
    parent, problems = admit_mxjob(example)
    assert problems == [], problems
    parent["metadata"].update(
        namespace="default",
        uid=str(uuid.uuid5(uuid.NAMESPACE_URL, parent["metadata"]["name"])),
        creationTimestamp=CREATED,
        generation=1,
        resourceVersion="1",
    )
    return parent


def hook_sync(
    controller: dict[str, Any], parent: dict[str, Any], children: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The hook's response body to one sync request."""
    request = {
        "controller": controller,
        "parent": parent,
        "children": children,
        "finalizing": False,
    }
    return as_sent(sync(parse_request(copy.deepcopy(request)), NOW))


def observed(child: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
    """A desired child as Metacontroller would later observe it (created, owned)."""
    seen = copy.deepcopy(child)
    meta = seen["metadata"]
    meta.setdefault("namespace", parent["metadata"]["namespace"])
    meta["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, name_of(seen)))
    meta["creationTimestamp"] = CREATED
    meta.setdefault("labels", {})["controller-uid"] = parent["metadata"]["uid"]
    return seen

"""The install manifests (manifests/, metacontroller/, Dockerfile).

Every kustomization builds and every object it builds validates: built-in kinds against the
Kubernetes 1.36 schemas in strict mode (unknown fields are errors), CompositeControllers against
Metacontroller's CRD (copied under tests/schemas/). Then the pieces are checked to fit together:
the CRD is structural and agrees with the hook's vocabulary, the Deployment runs the hook the way
hooks/gunicorn_config.py expects, the Service, NetworkPolicy and webhook URLs reach it, and
Metacontroller's RBAC covers every resource its CompositeController manages.

Acceptance by a real kube-apiserver (CEL cost limits included) is the end-to-end tier's job.
"""

import importlib
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
from flask.testing import FlaskClient

from hooks import app
from hooks.core.api import CleanPodPolicy, JobMode, ReplicaType, RestartPolicy
from hooks.core.conversion.schema import schema_errors, to_json_schema
from hooks.core.scheduling.pick import Gang, detect
from mxjob.certs import __main__ as certs_main
from tests import golden, keeper_api
from tests.conversion_cases import FIXTURES, OLD_EXAMPLES
from tests.manifest_support import (
    CONTROLLER_OVERLAYS,
    CRD_FILE,
    INSTALL_OVERLAYS,
    KIND_OF_RESOURCE,
    MANIFESTS,
    METACONTROLLER,
    REPO,
    SCHEMAS,
    admit_mxjob,
    build,
    cel_program,
    controller_of,
    installed,
    kubernetes_version,
    kustomization_dirs,
    load_one,
    mxjob_crd,
    mxjob_schema,
    mxjob_version,
    name_of,
    needs_kustomize,
    walk_schema,
)
from tools.cluster.build import METACONTROLLER_VERSION
from tools.cluster.real_node import METACONTROLLER_PATCH

pytestmark = needs_kustomize

KUSTOMIZATIONS = kustomization_dirs()
CC_V4 = SCHEMAS / "metacontroller-v4-compositecontroller.yaml"
HOOK_NAMESPACE = "mxjob-system"
CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "CompositeController",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
}
#: Metacontroller's pods as its own manifests label them (manifests/production/metacontroller.yaml).
METACONTROLLER_NAMESPACE = "metacontroller"
METACONTROLLER_POD_LABELS = {"app.kubernetes.io/name": "metacontroller"}
AGGREGATE_TO_METACONTROLLER = "rbac.metacontroller.k8s.io/aggregate-to-metacontroller"
#: The versions served beside v1 (docs/api.md#versions), and where each keeps pod templates.
OLD_VERSIONS = ("v1alpha1", "v1alpha2")
OLD_EXAMPLE_FILES = sorted(OLD_EXAMPLES.glob("*.yaml"))
#: The conversion cases answered with Success (the others hold objects no version holds).
CONVERSIONS = [
    folder
    for folder in golden.folders(FIXTURES)
    if golden.load(folder).response.get("response", {}).get("result") == {"status": "Success"}
]
TEMPLATES = {
    "v1": ".spec.mxReplicaSpecs.*.template",
    "v1alpha1": ".spec.replicaSpecs[].template",
    "v1alpha2": ".spec.mxReplicaSpecs.*.template",
}


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def crd_schema(path: Path) -> dict[str, Any]:
    (version,) = load_one(path)["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def validate(obj: dict[str, Any]) -> list[str]:
    """Problems of one built object (empty when it validates)."""
    if obj.get("kind") == "CompositeController":
        return [f"{name_of(obj)}: {p}" for p in schema_errors(crd_schema(CC_V4), obj)]
    try:
        kubernetes_validate.validate(obj, kubernetes_version(), strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{name_of(obj)}: {'.'.join(map(str, error.path))}: {error.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{name_of(obj)}: no schema for {obj.get('apiVersion')} {obj.get('kind')}"]
    return []


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def duration_seconds(text: str) -> float:
    """A Go duration such as `20s`, `1m30s` or `500ms`, in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"([0-9.]+)(h|ms|us|ns|m|s)", text)
    assert "".join(n + u for n, u in parts) == text, f"not a Go duration: {text!r}"
    return sum(float(n) * units[u] for n, u in parts)


# --- every kustomization builds into valid objects ---------------------------------------------


def test_every_expected_kustomization_exists() -> None:
    wanted = {MANIFESTS / "crd", *INSTALL_OVERLAYS.values(), *CONTROLLER_OVERLAYS.values()}
    assert wanted <= set(KUSTOMIZATIONS)


@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=[rel(p) for p in KUSTOMIZATIONS])
def test_kustomization_builds_valid_objects(path: Path) -> None:
    objects = build(path)
    assert objects, f"{rel(path)} builds nothing"
    problems = [problem for obj in objects for problem in validate(obj)]
    assert problems == []


def test_validation_catches_a_wrong_object() -> None:
    """The validators above are strict: an unknown field or a wrong type is an error."""
    deployment = one(build(MANIFESTS / "hook"), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    assert validate(deployment) != []
    controller = controller_of("standard")
    controller["spec"]["childResources"][0]["updateStrategy"]["method"] = "Sometimes"
    assert validate(controller) != []


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_install_variant_is_complete(variant: str) -> None:
    objects = installed(variant)
    one(objects, "CustomResourceDefinition", "mxjobs.kubeflow.org")
    one(objects, "Deployment", "mxjob-hook")
    one(objects, "Service", "mxjob-hook")
    one(objects, "NetworkPolicy", "mxjob-hook")
    one(objects, "ClusterRole", "mxjob-metacontroller")
    controller = one(objects, "CompositeController")
    assert controller == controller_of(variant)
    for obj in objects:
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"].get("namespace") == HOOK_NAMESPACE, name_of(obj)


#: The package's version (pyproject.toml), which `make image` tags by default.
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_hook_and_ttl_controller_share_one_image(variant: str) -> None:
    """Every Deployment (the hook and each component) runs `mxjob:<version>`, so one `images:`
    entry retags them all (README.md#install)."""
    images = {
        container["image"]
        for obj in installed(variant)
        if obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    }
    assert images == {f"mxjob:{VERSION}"}
    made = subprocess.run(
        ["make", "-s", "-n", "image", "ENGINE=podman"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"-t mxjob:{VERSION} ." in made.stdout, made.stdout


def test_the_manifests_write_the_version_once() -> None:
    """Only manifests/base's `images:` entry names the version; every Deployment says `mxjob`
    and gets its tag there, so a release changes pyproject.toml, this entry and Chart.yaml
    (tests/test_helm.py), each checked against pyproject.toml."""
    naming = sorted(
        path.relative_to(MANIFESTS).as_posix()
        for path in MANIFESTS.rglob("*.yaml")
        if VERSION in path.read_text()
    )
    assert naming == ["base/kustomization.yaml"]
    (entry,) = load_one(MANIFESTS / "base" / "kustomization.yaml")["images"]
    assert entry == {"name": "mxjob", "newTag": VERSION}


#: What each API-calling component's loop calls, nothing else; its account's writes are held
#: further by its ValidatingAdmissionPolicy (tests/e2e/test_component_tokens.py,
#: tests/e2e/test_progress.py, tests/e2e/test_retention.py, tests/test_restarter.py).
COMPONENT_RULES = {
    "events": [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ],
    "progress": [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ],
    "retention": [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list", "patch"]},
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "patch"]},
    ],
    "restarter": [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]},
    ],
}


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
@pytest.mark.parametrize("component", sorted(COMPONENT_RULES))
def test_a_component_may_make_exactly_its_calls(variant: str, component: str) -> None:
    objects = installed(variant)
    account = f"mxjob-{component}"
    assert one(objects, "ClusterRole", account)["rules"] == COMPONENT_RULES[component]
    pod = one(objects, "Deployment", account)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account
    assert pod["containers"][0]["command"] == ["python", "-m", f"mxjob.{component}"]
    (subject,) = one(objects, "ClusterRoleBinding", account)["subjects"]
    assert (subject["name"], subject["namespace"]) == (account, HOOK_NAMESPACE)
    policy = one(objects, "ValidatingAdmissionPolicy", account)["spec"]
    (condition,) = policy["matchConditions"]
    assert condition["expression"].endswith(f'"system:serviceaccount:{HOOK_NAMESPACE}:{account}"')


def test_kube_state_metrics_component_ships_its_config_and_read_rights(tmp_path: Path) -> None:
    """manifests/components/kube-state-metrics, added to an overlay: the configuration file as
    a ConfigMap beside kube-state-metrics, and list/watch on MXJobs and CRDs for its account."""
    component = MANIFESTS / "components" / "kube-state-metrics"
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"components: [{os.path.relpath(component, tmp_path)}]\n"
    )
    objects = build(tmp_path)
    assert [problem for obj in objects for problem in validate(obj)] == []
    assert sorted(name_of(o) for o in objects) == [
        "ClusterRole mxjob-kube-state-metrics",
        "ClusterRoleBinding mxjob-kube-state-metrics",
        "ConfigMap kube-system/mxjob-kube-state-metrics",
    ]
    config = one(objects, "ConfigMap")
    assert config["data"] == {"mxjob-metrics.yaml": (component / "mxjob-metrics.yaml").read_text()}
    assert one(objects, "ClusterRole")["rules"] == [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["list", "watch"],
        },
    ]
    binding = one(objects, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "mxjob-kube-state-metrics"
    (subject,) = binding["subjects"]
    assert (subject["kind"], subject["namespace"], subject["name"]) == (
        "ServiceAccount",
        "kube-system",
        "kube-state-metrics",
    )


# --- the CRD -----------------------------------------------------------------------------------


def test_crd_names_and_version() -> None:
    crd = mxjob_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "mxjobs.kubeflow.org"
    assert (spec["group"], spec["scope"]) == ("kubeflow.org", "Namespaced")
    assert spec["names"]["kind"] == "MXJob"
    assert spec["names"]["plural"] == "mxjobs"
    assert "mxj" in spec["names"]["shortNames"]
    versions = {v["name"]: v for v in spec["versions"]}
    assert list(versions) == ["v1", *OLD_VERSIONS]
    assert [name for name, v in versions.items() if v["storage"]] == ["v1"]
    for name, version in versions.items():
        # Alone, the CRD serves v1 only: without the webhook an old object would be stored
        # with nothing but its apiVersion changed (manifests/components/conversion).
        assert version["served"] is (name == "v1"), name
        # Metacontroller and the old operators' clients write the status only through it.
        assert version["subresources"] == {"status": {}}, name
        assert version.get("deprecated", False) is (name != "v1"), name
    assert "conversion" not in spec


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_install_serves_every_version_through_the_https_webhook(variant: str) -> None:
    """The CRD's webhook names the convert Service, which selects pods serving the app over
    HTTPS with the Secret the keeper writes, for the names the keeper writes it for."""
    objects = installed(variant)
    spec = one(objects, "CustomResourceDefinition", "mxjobs.kubeflow.org")["spec"]
    assert [(v["name"], v["served"]) for v in spec["versions"]] == [
        ("v1", True),
        *((name, True) for name in OLD_VERSIONS),
    ]
    assert spec["conversion"]["strategy"] == "Webhook"
    assert spec["conversion"]["webhook"]["conversionReviewVersions"] == ["v1"]
    called = spec["conversion"]["webhook"]["clientConfig"]["service"]
    assert called["path"] == "/convert"
    service = one(objects, "Service", called["name"])
    assert service["metadata"]["namespace"] == called["namespace"]
    (port,) = service["spec"]["ports"]
    assert port["port"] == called["port"]
    deployment = one(objects, "Deployment", "mxjob-convert")
    pod = deployment["spec"]["template"]["spec"]
    assert service["spec"]["selector"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    (container,) = pod["containers"]
    (container_port,) = container["ports"]
    assert port["targetPort"] == container_port["name"]
    env = env_of(container)
    assert env["PORT"]["value"] == str(container_port["containerPort"])
    (mount,) = [
        m for m in container["volumeMounts"] if m["mountPath"] == env["MXJOB_TLS_DIR"]["value"]
    ]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert {i["path"] for i in volume["secret"]["items"]} == {"tls.crt", "tls.key"}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS", probe
    assert pod["automountServiceAccountToken"] is False
    keeper = certs_main.target_from_env()
    assert volume["secret"]["secretName"] == keeper.serving_secret
    assert keeper.namespace == called["namespace"]
    assert f"{called['name']}.{called['namespace']}.svc" in keeper.dns_names
    assert keeper.crd == "mxjobs.kubeflow.org"


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_certificate_keeper_may_make_exactly_its_calls(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keeper's rights are the calls it makes (tests/keeper_api.py, every install it may
    meet): get and patch its two Secrets, get an earlier install's, get and patch the CRD.
    Once it could create Secrets, so a stolen token could mint another component's."""
    objects = installed(variant)
    keeper = certs_main.target_from_env()
    role = one(objects, "Role", "mxjob-certs")
    assert role["metadata"]["namespace"] == keeper.namespace
    crds = one(objects, "ClusterRole", "mxjob-certs")
    granted_calls = {
        (verb, resource, name)
        for rule in [*role["rules"], *crds["rules"]]
        for verb in rule["verbs"]
        for resource in rule["resources"]
        for name in rule.get("resourceNames", ["*"])
    }
    assert granted_calls == keeper_api.every_call(monkeypatch)
    assert (keeper.ca_secret, keeper.serving_secret, keeper.legacy_secret, keeper.crd) == (
        keeper_api.TARGET.ca_secret,
        keeper_api.TARGET.serving_secret,
        keeper_api.TARGET.legacy_secret,
        keeper_api.TARGET.crd,
    )
    deployment = one(objects, "Deployment", "mxjob-certs")["spec"]["template"]["spec"]
    assert deployment["serviceAccountName"] == "mxjob-certs"
    assert deployment["containers"][0]["command"] == ["python", "-m", "mxjob.certs"]
    for binding in ("RoleBinding", "ClusterRoleBinding"):
        (subject,) = one(objects, binding, "mxjob-certs")["subjects"]
        assert (subject["name"], subject["namespace"]) == ("mxjob-certs", keeper.namespace)


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_the_install_ships_the_keepers_secrets_empty(variant: str) -> None:
    """The keeper creates nothing: both its Secrets come with the install, with no data for
    `kubectl apply` or `helm upgrade` to put back over what the keeper wrote. Opaque: a
    Secret's type never changes, so no write can make one a service-account token."""
    objects = installed(variant)
    keeper = certs_main.target_from_env()
    for name in (keeper.ca_secret, keeper.serving_secret):
        secret = one(objects, "Secret", name)
        assert secret["metadata"]["namespace"] == keeper.namespace
        assert secret["type"] == "Opaque"
        assert "data" not in secret and "stringData" not in secret
    mounted = [
        volume["secret"]["secretName"]
        for obj in objects
        if obj["kind"] == "Deployment"
        for volume in obj["spec"]["template"]["spec"].get("volumes", [])
        if "secret" in volume
    ]
    assert mounted == [keeper.serving_secret]  # the CA's key is mounted nowhere


#: What would let a token have another identity's token: a Secret the token controller fills, a
#: token asked for, a pod run as any account (Metacontroller's, which makes the jobs' pods).
MINTING = [("", "secrets", "create"), ("", "serviceaccounts/token", "create")]


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_no_component_may_mint_a_token(variant: str) -> None:
    """No role of the install lets a component create a Secret or ask for a token; a pod can
    be created only by Metacontroller's role (docs/security.md#component-tokens)."""
    roles = [o for o in installed(variant) if o["kind"] in ("Role", "ClusterRole")]
    for group, resource, verb in MINTING:
        assert [name_of(r) for r in roles if verb in granted([r], group, resource)] == []
    assert [name_of(r) for r in roles if "create" in granted([r], "", "pods")] == [
        "ClusterRole mxjob-metacontroller"
    ]


@pytest.mark.parametrize("version", ["v1", *OLD_VERSIONS])
def test_crd_schema_is_structural(version: str) -> None:
    """Every node has a type; objects are maps or records; unknown fields only in templates."""
    problems = []
    for path, node in walk_schema(mxjob_schema(version)):
        keeps_unknown = node.get("x-kubernetes-preserve-unknown-fields") is True
        if (
            "type" not in node
            and not node.get("x-kubernetes-int-or-string")
            and ".anyOf[" not in path
        ):
            problems.append(f"{path}: no type")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: both properties and additionalProperties")
        if keeps_unknown and not path.startswith(TEMPLATES[version]):
            problems.append(f"{path}: keeps unknown fields outside the pod template")
        for field in node.get("required", []):
            if field not in node.get("properties", {}):
                problems.append(f"{path}: requires undeclared {field}")
    assert problems == []


def test_crd_defaults_are_valid_values() -> None:
    defaults = [(p, n) for p, n in walk_schema(mxjob_schema()) if "default" in n]
    assert {p for p, _ in defaults} >= {
        ".spec.jobMode",
        ".spec.mxReplicaSpecs.*.replicas",
        ".spec.mxReplicaSpecs.*.restartPolicy",
    }
    for path, node in defaults:
        assert schema_errors(node, node["default"]) == [], path


def test_crd_run_policy_has_no_defaults() -> None:
    """A default under runPolicy would override the same field given inline (old layout)."""
    schema = mxjob_schema()["properties"]["spec"]
    for path, node in walk_schema(schema["properties"]["runPolicy"]):
        assert "default" not in node, path


def test_inline_run_policy_fields_match_run_policy() -> None:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "description"}
        return node

    spec = mxjob_schema()["properties"]["spec"]["properties"]
    nested = spec["runPolicy"]["properties"]
    for field, schema in nested.items():
        assert strip(spec[field]) == strip(schema), field


def test_crd_enums_are_the_hooks_vocabulary() -> None:
    spec = mxjob_schema()["properties"]["spec"]["properties"]
    replica = spec["mxReplicaSpecs"]["additionalProperties"]["properties"]
    assert spec["jobMode"]["enum"] == [m.value for m in JobMode]
    assert replica["restartPolicy"]["enum"] == [p.value for p in RestartPolicy]
    assert spec["cleanPodPolicy"]["enum"] == [p.value for p in CleanPodPolicy]
    assert spec["runPolicy"]["properties"]["cleanPodPolicy"]["enum"] == [
        p.value for p in CleanPodPolicy
    ]


def test_crd_replica_type_rule_names_every_type() -> None:
    rules = " ".join(
        r["rule"]
        for r in mxjob_schema()["properties"]["spec"]["properties"]["mxReplicaSpecs"][
            "x-kubernetes-validations"
        ]
    )
    for rtype in ReplicaType:
        assert rtype.short in rules


@pytest.mark.parametrize("version", ["v1", *OLD_VERSIONS])
def test_crd_rules_compile_and_say_what_to_do(version: str) -> None:
    rules = [
        (path, rule)
        for path, node in walk_schema(mxjob_schema(version))
        for rule in node.get("x-kubernetes-validations", [])
    ]
    assert len(rules) >= (12 if version == "v1" else 2)
    for path, rule in rules:
        cel_program(rule["rule"])
        assert len(rule.get("message", "")) > 20, f"{path}: {rule['rule']}"


def test_crd_status_schema_takes_what_metacontroller_adds() -> None:
    status = mxjob_schema()["properties"]["status"]
    assert schema_errors(status, {"observedGeneration": 3}) == []
    assert schema_errors(status, {"observedGeneration": "3"}) != []


@pytest.mark.parametrize("case", golden.folders(), ids=lambda p: p.name)
def test_crd_status_schema_holds_every_status_the_hook_writes(case: Path) -> None:
    """The API server prunes what the status schema does not name: every field of every
    recorded status (lastFailure too) must be in it, of its type."""
    status = golden.load(case).response["status"]
    assert schema_errors(mxjob_schema()["properties"]["status"], status) == []


def resolve(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    """The schema node a printer-column path (`.a.b`, `.a[-1:].b`) reads, or None."""
    if json_path == ".metadata.creationTimestamp":
        return {"type": "string"}  # ObjectMeta, not part of the CRD's schema
    node = schema
    for name in re.findall(r"\.([A-Za-z]+)|\[[-0-9:]+\]", json_path):
        if not name:
            node = node.get("items", {})
        elif name in node.get("properties", {}):
            node = node["properties"][name]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    return node


def test_printer_columns_read_existing_fields() -> None:
    columns = mxjob_version("v1")["additionalPrinterColumns"]
    # `kubectl get mxjobs`: the state, the age, and how far the Workers got
    # (docs/status.md#progress); the rest with `-o wide`.
    assert [c["name"] for c in columns[:5]] == ["State", "Age", "Epoch", "Batch", "Speed"]
    assert columns[0]["jsonPath"] == ".status.conditions[-1:].type"
    assert all(c.get("priority", 0) == 0 for c in columns[:5])
    assert all(c.get("priority", 0) == 1 for c in columns[5:])
    kinds = {"string": "string", "integer": "integer", "number": "number", "date": "string"}
    for version in ("v1", *OLD_VERSIONS):
        for column in mxjob_version(version)["additionalPrinterColumns"]:
            node = resolve(mxjob_schema(version), column["jsonPath"])
            assert node is not None, (version, column)
            assert node.get("type") == kinds[column["type"]], (version, column)


def test_schema_conversion_handles_openapi_keywords() -> None:
    openapi = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "nullable": True, "x-kubernetes-validations": []},
            "b": {"x-kubernetes-int-or-string": True},
            "c": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {}},
        },
    }
    assert to_json_schema(openapi) == {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "c": {"type": "object", "properties": {}},
        },
        "additionalProperties": False,
    }
    assert schema_errors(openapi, {"a": None, "b": "50%", "c": {"x": 1}}) == []
    assert schema_errors(openapi, {"b": 1.5}) != []
    assert schema_errors(openapi, {"d": 1}) != []


# --- the hook Deployment, Service and NetworkPolicy --------------------------------------------


def hook_objects() -> list[dict[str, Any]]:
    return build(MANIFESTS / "hook")


def hook_container() -> tuple[dict[str, Any], dict[str, Any]]:
    pod = one(hook_objects(), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {var["name"]: var for var in container.get("env", [])}


def test_hook_pod_is_locked_down() -> None:
    pod, container = hook_container()
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}
    account = one(hook_objects(), "ServiceAccount", pod["serviceAccountName"])
    assert account.get("automountServiceAccountToken") is False


def test_hook_env_matches_gunicorn_config() -> None:
    _, container = hook_container()
    env = env_of(container)
    (port,) = container["ports"]
    assert env["PORT"]["value"] == str(port["containerPort"])
    workers = env["WEB_CONCURRENCY"]["valueFrom"]["resourceFieldRef"]
    assert workers["resource"] == "limits.cpu"
    assert workers.get("containerName", container["name"]) == container["name"]
    assert "cpu" in container["resources"]["limits"]
    assert env["LOG_LEVEL"]["value"] in {"debug", "info", "warning", "error"}
    assert int(env["MXJOB_MAX_BODY_BYTES"]["value"]) > 0


@pytest.mark.parametrize("name", ["mxjob-hook", "mxjob-convert"])
def test_a_deleted_server_pod_serves_until_the_service_forgets_it(name: str) -> None:
    """preStop sleeps while kube-proxy drops the pod; then gunicorn's graceful stop, longer than
    any request may take (a worker cut in a sync is an EOF, a SyncError, seen on the real node
    under CI load); both fit in the grace period, so no request in flight is cut by SIGKILL."""
    pod = one(installed("standard"), "Deployment", name)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    gunicorn = importlib.import_module("hooks.gunicorn_config")
    assert pause >= 3
    assert gunicorn.graceful_timeout > gunicorn.timeout
    assert pause + gunicorn.graceful_timeout < pod["terminationGracePeriodSeconds"]


def test_gunicorn_and_metric_files_go_to_a_memory_volume() -> None:
    """The root filesystem is read-only: whatever the hook writes lands on the tmpfs volume."""
    pod, container = hook_container()
    env = env_of(container)
    for variable in ("GUNICORN_TMP_DIR", "PROMETHEUS_MULTIPROC_DIR"):
        directory = env[variable]["value"]
        (mount,) = [
            m
            for m in container["volumeMounts"]
            if directory == m["mountPath"] or directory.startswith(m["mountPath"].rstrip("/") + "/")
        ]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert volume["emptyDir"]["medium"] == "Memory", variable


def test_scrape_annotations_name_the_metrics_endpoint(client: FlaskClient) -> None:
    deployment = one(hook_objects(), "Deployment")
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    _, container = hook_container()
    assert annotations["prometheus.io/port"] == str(container["ports"][0]["containerPort"])
    assert client.get(annotations["prometheus.io/path"]).status_code == 200


def test_probes_reach_health_endpoints_of_the_app(client: FlaskClient) -> None:
    _, container = hook_container()
    (port,) = container["ports"]
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert get["port"] in (port["name"], port["containerPort"])
        assert client.get(get["path"]).status_code == 200, probe
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_service_selects_the_hook_pods() -> None:
    objects = hook_objects()
    service = one(objects, "Service", "mxjob-hook")
    labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    _, container = hook_container()
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in (
        container["ports"][0]["name"],
        container["ports"][0]["containerPort"],
    )


def test_network_policy_admits_only_metacontroller() -> None:
    objects = hook_objects()
    policy = one(objects, "NetworkPolicy")["spec"]
    labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert policy.get("egress", []) == []
    (rule,) = policy["ingress"]
    (peer,) = rule["from"]
    assert peer["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": METACONTROLLER_NAMESPACE
    }
    assert peer["podSelector"]["matchLabels"] == METACONTROLLER_POD_LABELS
    _, container = hook_container()
    assert [p["port"] for p in rule["ports"]] == [container["ports"][0]["name"]]


def test_namespace_enforces_restricted_pod_security() -> None:
    namespace = one(build(MANIFESTS / "hook"), "Namespace", HOOK_NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# --- the CompositeControllers ------------------------------------------------------------------


@pytest.mark.parametrize("overlay", CONTROLLER_OVERLAYS)
def test_controller_manages_mxjobs(overlay: str) -> None:
    spec = controller_of(overlay)["spec"]
    crd = mxjob_crd()["spec"]
    assert spec["parentResource"] == {
        "apiVersion": f"{crd['group']}/v1",
        "resource": crd["names"]["plural"],
    }
    assert spec["generateSelector"] is True
    assert 30 <= spec["resyncPeriodSeconds"] <= 300
    resources = [(r["apiVersion"], r["resource"]) for r in spec["childResources"]]
    assert resources[:3] == [("v1", "pods"), ("v1", "services"), ("v1", "configmaps")]
    for rule in spec["childResources"]:
        assert rule["updateStrategy"]["method"] == "OnDelete", rule


@pytest.mark.parametrize("overlay", CONTROLLER_OVERLAYS)
def test_hook_timeout_outlasts_the_gunicorn_worker_timeout(overlay: str) -> None:
    gunicorn = importlib.import_module("hooks.gunicorn_config")
    hooks = controller_of(overlay)["spec"]["hooks"]
    # No finalize hook: an MXJob never waits on a finalizer (docs/metacontroller.md).
    assert set(hooks) == {"sync"}
    for hook in hooks.values():
        assert duration_seconds(hook["webhook"]["timeout"]) >= max(10, gunicorn.timeout + 1)


@pytest.mark.parametrize(
    ("overlay", "gang"),
    [
        ("standard", None),
        ("volcano", Gang.VOLCANO),
        ("scheduler-plugins", Gang.SCHEDULER_PLUGINS),
        ("local", None),
    ],
)
def test_overlay_selects_the_hooks_gang_scheduler(overlay: str, gang: Gang | None) -> None:
    """The hook recognises each overlay's PodGroup rule; the overlays differ in nothing else."""
    controller = controller_of(overlay)
    assert detect(controller, []) is gang
    base = controller_of("standard")["spec"]["childResources"]
    extra = controller["spec"]["childResources"][len(base) :]
    assert controller["spec"]["childResources"][: len(base)] == base
    assert [f"PodGroup.{r['apiVersion']}" for r in extra] == ([gang.value] if gang else [])


def test_production_webhooks_reach_the_hook_service(client: FlaskClient) -> None:
    objects = installed("standard")
    service = one(objects, "Service", "mxjob-hook")
    hooks = one(objects, "CompositeController")["spec"]["hooks"]
    assert hooks["sync"]["version"] == "v2"
    url = urlsplit(hooks["sync"]["webhook"]["url"])
    host = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert (url.scheme, url.hostname, url.port or 80, url.path) == (
        "http",
        host,
        service["spec"]["ports"][0]["port"],
        "/sync",
    )
    # The app serves that path (a body that is no sync request gets 422, not 404/405).
    assert client.post("/sync", json={}).status_code == 422


def test_local_overlay_calls_the_hook_on_loopback() -> None:
    hooks = controller_of("local")["spec"]["hooks"]
    assert hooks["sync"]["webhook"]["url"] == "http://127.0.0.1:8080/sync"


def test_local_overlay_is_production_but_for_the_hook_address() -> None:
    """The development stack runs Metacontroller v4.17.2 with hook API v2, like production."""
    local, standard = controller_of("local"), controller_of("standard")
    assert schema_errors(crd_schema(CC_V4), local) == []
    local["spec"]["hooks"]["sync"]["webhook"]["url"] = "in-cluster"
    standard["spec"]["hooks"]["sync"]["webhook"]["url"] = "in-cluster"
    assert local == standard


def test_production_controllers_fit_metacontroller_v4() -> None:
    assert schema_errors(crd_schema(CC_V4), controller_of("standard")) == []


def test_metacontroller_install_is_the_tiers_release_with_requests() -> None:
    """metacontroller/install is the release the tiers build (its URL's ref), patched in its
    StatefulSet's container with a CPU and memory request and no limit; the real-node tier
    applies the same patch to the same release's manifests (tools/cluster/real_node.py)."""
    folder = METACONTROLLER / "install"
    kustomization = load_one(folder / "kustomization.yaml")
    (url,) = kustomization["resources"]
    assert url.endswith(f"/manifests/production?ref={METACONTROLLER_VERSION}"), url
    ((patch_path,),) = [list(p.values()) for p in kustomization["patches"]]
    assert patch_path == METACONTROLLER_PATCH
    patch = load_one(folder / patch_path)
    assert (patch["kind"], patch["metadata"]) == (
        "StatefulSet",
        {"name": "metacontroller", "namespace": "metacontroller"},
    )
    (container,) = patch["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "metacontroller"
    assert set(container["resources"]) == {"requests"}
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert METACONTROLLER / "install" not in KUSTOMIZATIONS  # needs the network to build


# --- RBAC --------------------------------------------------------------------------------------


def granted(roles: list[dict[str, Any]], group: str, resource: str) -> set[str]:
    verbs: set[str] = set()
    for role in roles:
        for rule in role.get("rules", []):
            if group in rule["apiGroups"] and resource in rule["resources"]:
                verbs.update(rule["verbs"])
    return verbs


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_metacontroller_may_manage_every_child(variant: str) -> None:
    objects = installed(variant)
    roles = [
        o
        for o in objects
        if o["kind"] == "ClusterRole"
        and o["metadata"].get("labels", {}).get(AGGREGATE_TO_METACONTROLLER) == "true"
    ]
    controller = one(objects, "CompositeController")["spec"]
    parent = controller["parentResource"]
    group = parent["apiVersion"].rpartition("/")[0]
    # Exactly what Metacontroller v4.17.2 calls (its source: a Get and an Update of the parent,
    # an UpdateStatus, client-go's Event recorder), nothing it never uses.
    assert granted(roles, group, parent["resource"]) == {"get", "list", "watch", "update"}
    assert granted(roles, group, f"{parent['resource']}/status") == {"update"}
    assert granted(roles, group, f"{parent['resource']}/finalizers") == {"update"}
    assert granted(roles, "", "events") == {"create", "patch"}
    assert granted(roles, "events.k8s.io", "events") == set()
    needed = {"get", "list", "watch", "create", "delete", "update", "patch"}
    for rule in controller["childResources"]:
        child_group = rule["apiVersion"].rpartition("/")[0]
        assert granted(roles, child_group, rule["resource"]) >= needed, rule
        assert rule["resource"] in KIND_OF_RESOURCE


def test_user_roles_extend_view_and_edit() -> None:
    objects = build(MANIFESTS / "rbac")
    view = one(objects, "ClusterRole", "mxjob-view")
    edit = one(objects, "ClusterRole", "mxjob-edit")
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert "rbac.authorization.k8s.io/aggregate-to-view" not in edit["metadata"]["labels"]
    assert granted([view], "kubeflow.org", "mxjobs") == {"get", "list", "watch"}
    assert granted([edit], "kubeflow.org", "mxjobs") >= {"create", "update", "patch", "delete"}
    # The status belongs to the controller: nobody but Metacontroller writes it.
    assert granted([view, edit], "kubeflow.org", "mxjobs/status") <= {"get", "list", "watch"}


# --- the image ---------------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    pairs = [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]
    return [(p[0].upper(), p[1] if len(p) > 1 else "") for p in pairs]


def test_dockerfile_pins_python_311_slim() -> None:
    args = dict(a.split("=", 1) for i, a in dockerfile() if i == "ARG" and "=" in a)
    image = args.get("PYTHON_IMAGE", "")
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", image), image
    assert all(a.startswith("${PYTHON_IMAGE}") for i, a in dockerfile() if i == "FROM")


def test_dockerfile_runs_the_hook_as_the_deployments_user() -> None:
    steps = dockerfile()
    (user,) = [a for i, a in steps if i == "USER"]
    pod, _ = hook_container()
    assert user == f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    command = '["gunicorn", "--config", "hooks/gunicorn_config.py", "hooks.app:create_app()"]'
    assert steps[-1] == ("CMD", command)
    copied = " ".join(a for i, a in steps if i == "COPY")
    for needed in ("requirements.txt", "hooks/", "mxjob/"):
        assert needed in copied
    assert any("-r /tmp/requirements.txt" in a for i, a in steps if i == "RUN")


def test_dockerignore_keeps_the_context_small() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    # Exactly what the Dockerfile copies from the context (a COPY of anything else fails).
    copied = re.findall(r"^COPY (?!--from)(\S+) ", (REPO / "Dockerfile").read_text(), re.M)
    assert allowed == {source.rstrip("/") for source in copied}
    # Every package the project installs is in the image, which runs all of them, and the CRD
    # whose v1 schema the conversion webhook checks stashes against (hooks/app.py).
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    packages = {name for name in find["find"]["include"] if "." not in name}
    crd = str(CRD_FILE.relative_to(REPO))
    assert allowed == {"requirements.txt", *packages, crd}, packages
    assert app.CRD_FILE == CRD_FILE


def test_crd_file_is_in_the_crd_kustomization() -> None:
    """manifests/crd is the file, its old versions served through the conversion webhook."""
    built = one(build(CRD_FILE.parent), "CustomResourceDefinition")
    raw = load_one(CRD_FILE)
    assert "conversion" in built["spec"] and "conversion" not in raw["spec"]
    del built["spec"]["conversion"]
    for version in built["spec"]["versions"]:
        version["served"] = version["name"] == "v1"
    assert built == raw
    assert METACONTROLLER.is_dir()


@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_uninstalling_a_variant_keeps_the_crd_and_every_job(variant: str) -> None:
    """`kubectl delete -k manifests/overlays/<variant>` deletes what the variant holds: never
    the CRD, whose deletion would delete every MXJob in the cluster (README, "Uninstall")."""
    kinds = {obj["kind"] for obj in build(INSTALL_OVERLAYS[variant])}
    assert "CustomResourceDefinition" not in kinds
    assert [o["kind"] for o in build(MANIFESTS / "crd")] == ["CustomResourceDefinition"]


# --- the old versions --------------------------------------------------------------------------


def accepted_at_its_version(obj: dict[str, Any]) -> list[str]:
    """Problems of an object at the version it names, defaulted as the API server would: its
    schema (so nothing of it would be pruned) and its rules."""
    return admit_mxjob(obj)[1]


@pytest.mark.parametrize("path", OLD_EXAMPLE_FILES, ids=[p.name for p in OLD_EXAMPLE_FILES])
def test_historical_jobs_are_accepted_at_their_version(path: Path) -> None:
    _, problems = admit_mxjob(load_one(path))
    assert problems == []


@pytest.mark.parametrize("case", CONVERSIONS, ids=[p.name for p in CONVERSIONS])
def test_each_version_holds_what_the_converter_writes(case: Path) -> None:
    """Every object sent and answered in the conversion cases fits its version's schema, so the
    API server prunes nothing of a conversion, and a client may write back what it read."""
    recorded = golden.load(case)
    answered = recorded.response["response"]["convertedObjects"]
    for obj in [*recorded.request["request"]["objects"], *answered]:
        assert accepted_at_its_version(obj) == [], obj["metadata"]["name"]


def test_v1alpha1_refuses_a_type_listed_twice() -> None:
    (job,) = golden.load(FIXTURES / "refused-type-twice").request["request"]["objects"]
    assert accepted_at_its_version(job) == [
        "spec.replicaSpecs: a replica type is listed twice (an empty mxReplicaType is WORKER): "
        "keep one spec per type"
    ]

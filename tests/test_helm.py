"""The Helm chart charts/mxjob: `helm lint --strict` passes, and `helm template` renders the
objects `kubectl kustomize` builds for each install variant, with any component switched off too.

The kustomize install is the CRD (manifests/crd, applied on its own) and the variant. Three
differences are allowed, all checked rather than ignored: Helm's four standard labels on every
object's metadata (not on pod templates, so that a new chart version does not replace pods), no
Namespace object: `helm install --create-namespace` makes the release's namespace (Helm keeps
its release record there, so the chart cannot own it), and the CRD's annotation
`helm.sh/resource-policy: keep`, which keeps it (and every MXJob) on `helm uninstall`, as
applying it on its own does for kustomize.

Helm is built from the Go module proxy by `python -m tools.cluster prepare` (tools/cluster);
without it these tests skip with a reason, unless E2E=required.
"""

import json
import os
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifest_support import (
    DEPLOYMENTS,
    INSTALL_OVERLAYS,
    MANIFESTS,
    METACONTROLLER,
    REPO,
    build,
    installed,
    load_one,
    name_of,
    needs_kustomize,
)
from tests.required import unavailable
from tools.cluster.build import HELM, default_cache_dir, need, unavailable_reason

CHART = REPO / "charts" / "mxjob"
NAMESPACE = "mxjob-system"
RELEASE = "mxjob"
#: pyproject.toml's version: the chart's version and appVersion, the image's default tag.
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
#: Helm's standard labels, on every object the chart renders and on none that kustomize builds.
HELM_LABELS = {
    "helm.sh/chart": f"mxjob-{VERSION}",
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/version": VERSION,
}
#: What keeps the chart's CRD on `helm uninstall`.
KEEP = {"helm.sh/resource-policy": "keep"}
#: The Pod Security labels of the kustomize install's Namespace, which the README tells Helm
#: users to put on the namespace `helm install --create-namespace` makes.
POD_SECURITY = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
#: Each switch of the chart's values and the kustomize Component it stands for
#: (manifests/components/<dir>).
COMPONENTS = {
    "ttl": "ttl-controller",
    "events": "events",
    "progress": "progress",
    "retention": "retention",
    "restarter": "restarter",
    "conversion": "conversion",
}


Key = tuple[str, str, str]
Render = Callable[..., list[dict[str, Any]]]


@pytest.fixture(scope="module")
def helm() -> Path:
    """The helm binary from the build cache: built first where Go can (a prepare running beside
    the tests may be building it: waited for)."""
    cache = default_cache_dir()
    reason = unavailable_reason(cache, (HELM,))
    if reason:
        unavailable(f"helm {HELM.version}: {reason}")
    return need(HELM, cache, print) / "bin" / "helm"


def run_helm(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(helm), *args], capture_output=True, text=True, check=False, timeout=120
    )
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)} failed:\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def render(helm: Path) -> Render:
    """`helm template` of the chart with `--set` values, as parsed objects."""

    def rendered(*sets: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        flags = [arg for value in sets for arg in ("--set", value)]
        out = run_helm(helm, "template", RELEASE, str(CHART), "-n", namespace, *flags).stdout
        return [doc for doc in yaml.safe_load_all(out) if doc]

    return rendered


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def without_helm_labels(objects: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """The chart's objects by key, each checked to carry HELM_LABELS and then stripped of them;
    the CRD checked to be kept on uninstall, and stripped of the annotation that keeps it."""
    by_key = {}
    for obj in objects:
        labels = obj["metadata"]["labels"]
        assert {k: labels.get(k) for k in HELM_LABELS} == HELM_LABELS, name_of(obj)
        for name in HELM_LABELS:
            del labels[name]
        if obj["kind"] == "CustomResourceDefinition":
            assert obj["metadata"].pop("annotations") == KEEP, name_of(obj)
        by_key[key(obj)] = obj
    assert len(by_key) == len(objects), "the chart renders an object twice"
    return by_key


def without_namespace(objects: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """kustomize's objects by key, less the Namespace that Helm makes itself (its Pod Security
    labels are the ones the README has Helm users add)."""
    by_key = {key(obj): obj for obj in objects}
    labels = by_key.pop(("Namespace", "", NAMESPACE))["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("pod-security.")} == POD_SECURITY
    return by_key


def assert_same_objects(
    chart: dict[Key, dict[str, Any]], kustomized: dict[Key, dict[str, Any]]
) -> None:
    assert sorted(chart) == sorted(kustomized)
    for where, obj in kustomized.items():
        if chart[where] != obj:
            want = json.dumps(obj, indent=1, sort_keys=True).splitlines()
            got = json.dumps(chart[where], indent=1, sort_keys=True).splitlines()
            differ = [line for line in want if line not in got]
            extra = [line for line in got if line not in want]
            pytest.fail(f"{where} differs: kustomize only {differ}, chart only {extra}")


def variant_kustomization(directory: Path, gang: str, components: list[str]) -> Path:
    """The CRD and a kustomization like manifests/overlays/<variant>, made as manifests/base is
    but with only the given components; without the conversion webhook, the CRD as its file is
    (v1 served alone)."""
    overlay = "base" if gang == "none" else f"overlays/{gang}"
    crd = MANIFESTS / "crd"
    if "conversion" not in components:
        crd = directory / "crd.yaml"
        crd.write_text((MANIFESTS / "crd" / "mxjobs.kubeflow.org.yaml").read_text())
    resources = [crd, MANIFESTS / "hook", MANIFESTS / "rbac", METACONTROLLER / overlay]
    if gang != "none":
        resources.insert(3, MANIFESTS / "rbac" / gang)
    (directory / "kustomization.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(p, directory) for p in resources],
                "components": [
                    os.path.relpath(MANIFESTS / "components" / COMPONENTS[c], directory)
                    for c in components
                ],
                "images": load_one(MANIFESTS / "base" / "kustomization.yaml")["images"],
            }
        )
    )
    return directory


def test_chart_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION)


@pytest.mark.parametrize("readme", [REPO / "README.md", CHART / "README.md"], ids=rel)
def test_the_readmes_label_the_namespace_as_the_kustomize_install_does(readme: Path) -> None:
    text = " ".join(readme.read_text().replace("\\\n", " ").split())
    labels = " ".join(f"{k}={v}" for k, v in POD_SECURITY.items())
    assert f"kubectl label namespace {NAMESPACE} {labels}" in text


def test_the_chart_reads_the_crd_of_the_manifests() -> None:
    """One copy of the CRD: the chart's file is a link to manifests/crd, so they cannot drift."""
    linked = CHART / "files" / "mxjobs.kubeflow.org.yaml"
    assert linked.is_symlink()
    assert linked.resolve() == (MANIFESTS / "crd" / "mxjobs.kubeflow.org.yaml").resolve()


def test_the_packaged_chart_holds_the_crd_itself(helm: Path, tmp_path: Path) -> None:
    """`helm package` stores the linked file's content: the package, which has no link to
    follow, renders what the chart's directory does."""
    run_helm(helm, "package", str(CHART), "-d", str(tmp_path))
    (package,) = tmp_path.glob("mxjob-*.tgz")
    rendered = [
        run_helm(helm, "template", RELEASE, str(chart), "-n", NAMESPACE).stdout
        for chart in (CHART, package)
    ]
    assert rendered[0] == rendered[1]
    assert "kind: CustomResourceDefinition" in rendered[1]


@pytest.mark.parametrize(
    "sets",
    [
        [],
        ["gang=volcano"],
        ["gang=scheduler-plugins"],
        [
            "ttl.enabled=false",
            "events.enabled=false",
            "progress.enabled=false",
            "retention.enabled=false",
            "restarter.enabled=false",
            "conversion.enabled=false",
        ],
    ],
    ids=["defaults", "volcano", "scheduler-plugins", "components-off"],
)
def test_helm_lint_strict_passes(helm: Path, sets: list[str]) -> None:
    flags = [arg for value in sets for arg in ("--set", value)]
    done = run_helm(helm, "lint", "--strict", str(CHART), "-n", NAMESPACE, *flags, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


@needs_kustomize
@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_renders_the_objects_of_the_kustomize_variant(render: Render, variant: str) -> None:
    gang = "none" if variant == "standard" else variant
    assert_same_objects(
        without_helm_labels(render(f"gang={gang}")),
        without_namespace(installed(variant)),
    )


@needs_kustomize
@pytest.mark.parametrize("variant", INSTALL_OVERLAYS)
def test_the_tests_kustomization_with_every_component_is_the_variant(
    tmp_path: Path, variant: str
) -> None:
    """So that the kustomizations below, each without some Components, differ from the install
    variants by those Components alone."""
    gang = "none" if variant == "standard" else variant
    made = build(variant_kustomization(tmp_path, gang, list(COMPONENTS)))
    assert sorted(made, key=key) == sorted(installed(variant), key=key)


@needs_kustomize
@pytest.mark.parametrize(
    ("gang", "off"),
    [
        ("none", ["ttl"]),
        ("none", ["events"]),
        ("none", ["progress"]),
        ("none", ["retention"]),
        ("none", ["restarter"]),
        ("volcano", ["conversion"]),
        (
            "scheduler-plugins",
            ["ttl", "events", "progress", "retention", "restarter", "conversion"],
        ),
    ],
)
def test_a_component_switched_off_renders_the_variant_without_it(
    render: Render, tmp_path: Path, gang: str, off: list[str]
) -> None:
    """The same objects as the variant's kustomization without those Components: the CRD then
    serves v1 alone with no conversion webhook, and the component's objects are gone."""
    chart = without_helm_labels(render(f"gang={gang}", *(f"{c}.enabled=false" for c in off)))
    kept = [c for c in COMPONENTS if c not in off]
    kustomized = build(variant_kustomization(tmp_path, gang, kept))
    assert_same_objects(chart, without_namespace(kustomized))
    crd = chart[("CustomResourceDefinition", "", "mxjobs.kubeflow.org")]
    served = {v["name"] for v in crd["spec"]["versions"] if v["served"]}
    assert served == ({"v1"} if "conversion" in off else {"v1", "v1alpha1", "v1alpha2"})


def containers(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every Deployment's containers, by Deployment name."""
    return {
        obj["metadata"]["name"]: container
        for obj in objects
        if obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    }


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_values_reach_the_objects(render: Render) -> None:
    objects = render(
        "image.repository=registry.example.com/ml/mxjob",
        "image.tag=1.2.3",
        "image.pullPolicy=Always",
        "hook.replicas=3",
        "hook.resources.limits.cpu=4",
        "hook.maxBodyBytes=268435456",
        "hook.workerTimeoutSeconds=15",
        "hook.maxRequestsPerWorker=1000",
        "logLevel=debug",
        "ttl.intervalSeconds=10",
        "events.intervalSeconds=2",
        "progress.intervalSeconds=7",
        "retention.intervalSeconds=3",
        "restarter.intervalSeconds=4",
        "restarter.resources.requests.cpu=50m",
        "conversion.replicas=1",
        "conversion.certs.intervalSeconds=30",
        "metacontroller.namespace=platform",
    )
    found = containers(objects)
    assert set(found) == DEPLOYMENTS
    for container in found.values():
        assert container["image"] == "registry.example.com/ml/mxjob:1.2.3"
        assert container["imagePullPolicy"] == "Always"
        assert env_of(container)["LOG_LEVEL"] == "debug"
    hook = env_of(found["mxjob-hook"])
    assert (hook["MXJOB_MAX_BODY_BYTES"], hook["GUNICORN_TIMEOUT"]) == ("268435456", "15")
    assert hook["GUNICORN_MAX_REQUESTS"] == "1000"
    assert found["mxjob-hook"]["resources"]["limits"] == {"cpu": 4, "memory": "3Gi"}
    assert env_of(found["mxjob-ttl-controller"])["TTL_INTERVAL_SECONDS"] == "10"
    assert env_of(found["mxjob-events"])["EVENTS_INTERVAL_SECONDS"] == "2"
    assert env_of(found["mxjob-progress"])["PROGRESS_INTERVAL_SECONDS"] == "7"
    assert env_of(found["mxjob-retention"])["RETENTION_INTERVAL_SECONDS"] == "3"
    assert env_of(found["mxjob-restarter"])["RESTARTER_INTERVAL_SECONDS"] == "4"
    assert found["mxjob-restarter"]["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi"}
    assert env_of(found["mxjob-certs"])["CERTS_INTERVAL_SECONDS"] == "30"
    replicas = {
        o["metadata"]["name"]: o["spec"]["replicas"]
        for o in objects
        if "replicas" in o.get("spec", {})
    }
    assert (replicas["mxjob-hook"], replicas["mxjob-convert"]) == (3, 1)
    (policy,) = [o for o in objects if key(o) == ("NetworkPolicy", NAMESPACE, "mxjob-hook")]
    (source,) = policy["spec"]["ingress"][0]["from"]
    assert source["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "platform"}


def test_the_image_tag_defaults_to_the_app_version(render: Render) -> None:
    images = {c["image"] for c in containers(render("image.repository=localhost/mxjob")).values()}
    assert images == {f"localhost/mxjob:{VERSION}"}


def test_another_namespace_is_named_everywhere(render: Render) -> None:
    """Installed in another namespace, every reference follows: subjects, the webhook's and the
    hook's Service addresses, the certificate keeper's namespace (from the pod's own)."""
    objects = render(namespace="ml-system")
    assert NAMESPACE not in yaml.safe_dump_all(objects)
    namespaced = [o for o in objects if "namespace" in o["metadata"]]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"ml-system"}
    (controller,) = [o for o in objects if o["kind"] == "CompositeController"]
    assert controller["spec"]["hooks"]["sync"]["webhook"]["url"] == (
        "http://mxjob-hook.ml-system.svc/sync"
    )
    (crd,) = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    service = crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert service["namespace"] == "ml-system"
    certs = env_of(containers(objects)["mxjob-certs"])
    assert certs["CERTS_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("gang=kueue", "gang"),
        ("hook.replica=3", "replica"),
        ("logLevel=verbose", "logLevel"),
        ("ttl.intervalSeconds=0", "intervalSeconds"),
        ("restarter.intervalSeconds=0", "intervalSeconds"),
        ("restarter.interval=2", "interval"),
    ],
)
def test_the_values_schema_refuses_mistakes(helm: Path, value: str, refused: str) -> None:
    done = run_helm(helm, "template", RELEASE, str(CHART), "--set", value, check=False)
    assert done.returncode != 0
    assert "values don't meet the specifications of the schema" in done.stderr
    assert refused in done.stderr

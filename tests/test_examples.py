"""The examples and the bad examples, judged by the CRD and by the hook.

- Every file in examples/ is admitted by the MXJob CRD as kube-apiserver would admit it
  (structural defaulting, the OpenAPI schema with unknown fields refused, the CEL rules).
- Every file in tests/bad_examples/ is refused, with the message its `# expect:` line names;
  those marked `# hook: MXJobInvalidSpec` are refused by the hook too (objects can predate the CRD).
- Every example, sent through the hook as the first sync of each install variant, yields children
  that validate against the Kubernetes 1.36 schemas (PodGroups: their CRDs, copied under
  tests/schemas/) and a status that fits the CRD's status schema.
"""

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from hooks.core.conversion.schema import apply_defaults, schema_errors
from tests.manifest_support import (
    BAD_EXAMPLES,
    CONTROLLER_OVERLAYS,
    EXAMPLES,
    KIND_OF_RESOURCE,
    SCHEMAS,
    admit_mxjob,
    child_groups,
    controller_of,
    expectations,
    hook_sync,
    kubernetes_version,
    load_one,
    mxjob_schema,
    name_of,
    needs_kustomize,
    new_parent,
    observed,
)

GOOD = sorted(EXAMPLES.glob("*.yaml"))
BAD = sorted(BAD_EXAMPLES.glob("*.yaml"))
VARIANTS = ("standard", "volcano", "scheduler-plugins")
PODGROUP_CRDS = {
    "scheduling.volcano.sh/v1beta1": SCHEMAS / "volcano-podgroup.yaml",
    "scheduling.x-k8s.io/v1alpha1": SCHEMAS / "scheduler-plugins-podgroup.yaml",
}


def ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def lower_keys(job: dict[str, Any]) -> dict[str, Any]:
    """The same job with every replica-type key written in lower case."""
    changed = copy.deepcopy(job)
    specs = changed["spec"]["mxReplicaSpecs"]
    changed["spec"]["mxReplicaSpecs"] = {k.lower(): v for k, v in specs.items()}
    return changed


# --- the CRD admits the examples and refuses the bad ones --------------------------------------


def test_there_are_examples_and_bad_examples() -> None:
    assert len(GOOD) >= 8
    assert len(BAD) >= 6


@pytest.mark.parametrize("path", GOOD, ids=ids(GOOD))
def test_example_is_admitted_by_the_crd(path: Path) -> None:
    job = load_one(path)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "MXJob")
    _, problems = admit_mxjob(job)
    assert problems == []


@pytest.mark.parametrize("path", GOOD, ids=ids(GOOD))
def test_example_is_admitted_with_lower_case_replica_types(path: Path) -> None:
    _, problems = admit_mxjob(lower_keys(load_one(path)))
    assert problems == []


@pytest.mark.parametrize("path", BAD, ids=ids(BAD))
def test_bad_example_is_refused_with_its_message(path: Path) -> None:
    wanted = expectations(path, "expect")
    assert wanted, f"{path.name} needs a '# expect: <part of the error>' line"
    _, problems = admit_mxjob(load_one(path))
    for part in wanted:
        assert any(part in problem for problem in problems), (part, problems)


@pytest.mark.parametrize("path", BAD, ids=ids(BAD))
def test_bad_example_differs_from_a_good_one_in_one_rule_only(path: Path) -> None:
    """Each bad example breaks the rules it names and no others (so each proves one rule)."""
    wanted = expectations(path, "expect")
    _, problems = admit_mxjob(load_one(path))
    unexpected = [p for p in problems if not any(part in p for part in wanted)]
    assert unexpected == []


REFUSED_BY_HOOK = [p for p in BAD if expectations(p, "hook")]


@pytest.mark.parametrize("path", REFUSED_BY_HOOK, ids=ids(REFUSED_BY_HOOK))
def test_hook_also_refuses_bad_example(path: Path) -> None:
    job = load_one(path)
    job["metadata"].update(
        namespace="default", uid="0000", creationTimestamp="2026-03-01T11:00:00Z"
    )
    apply_defaults(mxjob_schema(), job)
    controller = {"spec": {"childResources": [{"apiVersion": "v1", "resource": "pods"}]}}
    response = hook_sync(controller, job, {"Pod.v1": {}})
    failed = [c for c in response["status"]["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"]) for c in failed] == [("True", "MXJobInvalidSpec")]
    assert response["children"] == []


# --- the hook's first sync of each example -----------------------------------------------------


def validate_child(child: dict[str, Any]) -> list[str]:
    """Problems of one child: Kubernetes schemas for core kinds, the CRD for PodGroups."""
    crd_file = PODGROUP_CRDS.get(child.get("apiVersion", ""))
    if child.get("kind") == "PodGroup" and crd_file is not None:
        (version,) = load_one(crd_file)["spec"]["versions"]
        return schema_errors(version["schema"]["openAPIV3Schema"], child)
    try:
        kubernetes_validate.validate(child, kubernetes_version(), strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{name_of(child)}: {error.message}"]
    return []


def sync_until_pods(variant: str, path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first sync; under Volcano also the next one, once the PodGroup left Pending.

    Returns the controller and every response (the hook creates Volcano pods only then).
    """
    controller = controller_of(variant)
    parent = new_parent(load_one(path))
    first = hook_sync(controller, parent, child_groups(controller))
    responses = [first]
    groups = [c for c in first["children"] if c["kind"] == "PodGroup"]
    if groups and not any(c["kind"] == "Pod" for c in first["children"]):
        children = child_groups(controller)
        for child in first["children"]:
            seen = observed(child, parent)
            if child["kind"] == "PodGroup":
                seen["status"] = {"phase": "Inqueue"}
            children[f"{child['kind']}.{child['apiVersion']}"][seen["metadata"]["name"]] = seen
        parent["status"] = first["status"]
        responses.append(hook_sync(controller, parent, children))
    return controller, responses


@needs_kustomize
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", GOOD, ids=ids(GOOD))
def test_first_sync_children_and_status_validate(path: Path, variant: str) -> None:
    controller, responses = sync_until_pods(variant, path)
    declared = {
        (rule["apiVersion"], KIND_OF_RESOURCE[rule["resource"]])
        for rule in controller["spec"]["childResources"]
    }
    status_schema = mxjob_schema()["properties"]["status"]
    for response in responses:
        assert set(response) <= {"status", "children", "resyncAfterSeconds"}
        problems = schema_errors(status_schema, response["status"])
        for child in response["children"]:
            # Metacontroller refuses a child whose kind has no rule in the CompositeController.
            assert (child["apiVersion"], child["kind"]) in declared, name_of(child)
            assert child["metadata"].get("namespace", "default") == "default"
            problems.extend(validate_child(child))
        assert problems == []
        conditions = {c["type"]: c for c in response["status"]["conditions"]}
        assert "Failed" not in conditions, conditions["Failed"]["message"]


@needs_kustomize
@pytest.mark.parametrize("variant", VARIANTS)
def test_gang_variants_make_their_podgroup(variant: str) -> None:
    """Only the gang overlays make the hook create a PodGroup, of their scheduler's API."""
    _, responses = sync_until_pods(variant, EXAMPLES / "mx_job_gang.yaml")
    kinds = {(c["apiVersion"], c["kind"]) for r in responses for c in r["children"]}
    groups = {api for api, kind in kinds if kind == "PodGroup"}
    want = {
        "standard": set(),
        "volcano": {"scheduling.volcano.sh/v1beta1"},
        "scheduler-plugins": {"scheduling.x-k8s.io/v1alpha1"},
    }[variant]
    assert groups == want
    assert ("v1", "Pod") in kinds
    pods = [c for r in responses for c in r["children"] if c["kind"] == "Pod"]
    assert len(pods) == 4  # Scheduler, Server, 2 Workers


@needs_kustomize
def test_suspended_example_gets_no_pods() -> None:
    _, responses = sync_until_pods("standard", EXAMPLES / "mx_job_suspended.yaml")
    (response,) = responses
    assert {c["kind"] for c in response["children"]} <= {"ConfigMap"}
    assert any(c["type"] == "Suspended" for c in response["status"]["conditions"])


def test_every_controller_overlay_is_known() -> None:
    """Every kustomization under metacontroller/ is a known CompositeController overlay, but
    install/ (Metacontroller itself, tests/test_manifests.py)."""
    metacontroller = EXAMPLES.parent / "metacontroller"
    on_disk = {p.parent for p in metacontroller.rglob("kustomization.yaml")}
    assert on_disk == {*CONTROLLER_OVERLAYS.values(), metacontroller / "install"}


# --- the examples' README ----------------------------------------------------------------------


def test_readme_describes_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    named = set(re.findall(r"`([\w./-]+\.yaml)`", readme))
    files = [str(p.relative_to(EXAMPLES)) for p in GOOD + sorted(EXAMPLES.glob("legacy/*.yaml"))]
    assert sorted(f for f in files if f not in named) == []
    assert sorted(n for n in named if not (EXAMPLES / n).exists()) == []

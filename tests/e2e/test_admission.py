"""What the API server itself refuses (CRD schema and CEL rules) and what only the hook
can catch: an object that slips past the schema gets MXJobInvalidSpec and no pods."""

import re
from pathlib import Path

import pytest
import yaml

from tests.builders import replica
from tests.e2e.conftest import REPO, Cluster, wait_for
from tests.e2e.test_lifecycle import job

BAD = sorted((REPO / "tests" / "bad_examples").glob("*.yaml"))
CRD = (REPO / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml").read_text()


def expectation(path: Path) -> tuple[str, str]:
    """The field path and message a bad example's `# expect:` line names."""
    line = next(x for x in path.read_text().splitlines() if x.startswith("# expect:"))
    field, _, message = line.removeprefix("# expect:").strip().partition(": ")
    return field, message


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_example_is_refused_by_the_api_server(cluster: Cluster, path: Path) -> None:
    proc = cluster.apply(path.read_text(), check=False)
    assert proc.returncode != 0, f"{path.name} was accepted"
    field, message = expectation(path)
    if message in CRD:  # a CEL rule: the user sees our message verbatim
        assert message in proc.stderr, proc.stderr
    else:  # an OpenAPI rule: the API server names the field
        leaf = re.split(r"[.\[]", field)[-1]
        assert leaf in proc.stderr, proc.stderr


def test_object_that_slips_past_the_schema_fails_with_invalid_spec(cluster: Cluster) -> None:
    obj = job("e2e-slip", {"Worker": replica(1)})
    obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = "A=1"
    cluster.apply(yaml.safe_dump(obj))
    _, reason, message = cluster.wait_condition("e2e-slip", "Failed", 60)
    assert reason == "MXJobInvalidSpec"
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].env" in message
    wait_for("a settled status", lambda: cluster.status("e2e-slip").get("conditions"), 10)
    assert cluster.pods("e2e-slip") == {} and cluster.services("e2e-slip") == {}

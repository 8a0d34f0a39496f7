"""A checkpoint claim kept past its job (docs/restarts.md#checkpoints), through the real API
server and garbage collector: the install's MutatingAdmissionPolicy keeps the retention finalizer
on a job that says Retain and off one that does not; the retention component, run once with its
own account's token, releases the claim of the deleted job and lets the job go; the claim of a
job that says Delete goes with it; and the component's ValidatingAdmissionPolicy refuses that
token anything else.

This tier authorizes every request, so what the token is refused is refused by the policy alone
(the real-node tier enforces the RBAC, tests/realnode/test_security.py).
"""

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.core.public import RETAIN_FINALIZER, RETAINED_FROM
from tests.builders import mxjob, replica
from tests.e2e.conftest import NAMESPACE, REPO, Cluster, installed_policy, wait_for

ACCOUNT = "mxjob-retention"
REFUSAL = "the retention component may only"
CHECKPOINT = {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}


def retained_job(name: str, when: str = "Retain") -> dict[str, Any]:
    """One Worker with a checkpoint claim whose retention policy says `when`."""
    job = mxjob(
        name=name,
        replicas={"Worker": replica(1)},
        checkpoint={**CHECKPOINT, "retentionPolicy": {"whenDeleted": when}},
    )
    job["metadata"] = {"name": name}
    return job


def finalizers(cluster: Cluster, name: str) -> list[str]:
    return list(((cluster.get("mxjob", name) or {}).get("metadata") or {}).get("finalizers", []))


@pytest.fixture
def component_config(cluster: Cluster, tmp_path: Path) -> Iterator[Path]:
    """Both policies of the retention component installed; a kubeconfig holding a token of its
    account, removed after the test."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            installed_policy(cluster, "mxjob-retain-checkpoint", "MutatingAdmissionPolicy")
        )
        stack.enter_context(installed_policy(cluster, ACCOUNT))
        cluster.kubectl("create", "namespace", "mxjob-system", check=False)
        cluster.kubectl("create", "serviceaccount", ACCOUNT, "-n", "mxjob-system", check=False)
        token = cluster.kubectl(
            "create", "token", ACCOUNT, "-n", "mxjob-system", "--duration=10m"
        ).stdout.strip()
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        for user in config["users"]:
            user["user"] = {"token": token}
        path = tmp_path / "retention-kubeconfig"
        path.write_text(yaml.safe_dump(config))
        # A policy takes a moment to reach the admission plugin after it is created.
        probe = json.dumps(retained_job("e2e-retention-probe"))
        wait_for(
            "the finalizer policy",
            lambda: (
                RETAIN_FINALIZER
                in cluster.kubectl(
                    "create",
                    "-n",
                    NAMESPACE,
                    "--dry-run=server",
                    "-o",
                    "json",
                    "-f",
                    "-",
                    stdin=probe,
                ).stdout
            ),
            30,
        )
        yield path


def as_component(cluster: Cluster, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with the component's token."""
    return cluster.kubectl("--kubeconfig", str(config), "-n", NAMESPACE, *args, check=False)


def test_a_retained_claim_outlives_its_job_and_a_deleted_one_does_not(
    cluster: Cluster, component_config: Path
) -> None:
    kept, gone = "e2e-retained", "e2e-not-retained"
    cluster.apply(retained_job(kept))
    cluster.apply(retained_job(gone, "Delete"))
    claim = wait_for("the claim", lambda: cluster.get("pvc", f"{kept}-checkpoint"))
    wait_for("the other claim", lambda: cluster.get("pvc", f"{gone}-checkpoint"))
    uid = cluster.get("mxjob", kept)["metadata"]["uid"]  # type: ignore[index]
    assert finalizers(cluster, kept) == [RETAIN_FINALIZER]
    assert finalizers(cluster, gone) == []
    # An edit moves the finalizer with the policy, both ways.
    for when, expected in (("Delete", []), ("Retain", [RETAIN_FINALIZER])):
        patch = json.dumps({"spec": {"checkpoint": {"retentionPolicy": {"whenDeleted": when}}}})
        cluster.kubectl("patch", "mxjob", kept, "-n", NAMESPACE, "--type=merge", "-p", patch)
        assert finalizers(cluster, kept) == expected

    # What the token may not do: take a finalizer off a job not being deleted, edit a job,
    # take a claim without releasing it from a job.
    off = json.dumps([{"op": "remove", "path": "/metadata/finalizers/0"}])
    refused = as_component(
        cluster, component_config, "patch", "mxjob", kept, "--type=json", "-p", off
    )
    assert REFUSAL in refused.stderr, refused.stderr
    edit = json.dumps({"spec": {"runPolicy": {"backoffLimit": 9}}})
    refused = as_component(
        cluster, component_config, "patch", "mxjob", kept, "--type=merge", "-p", edit
    )
    assert REFUSAL in refused.stderr, refused.stderr
    relabel = json.dumps({"metadata": {"labels": {"controller-uid": "another"}}})
    refused = as_component(
        cluster,
        component_config,
        "patch",
        "pvc",
        f"{kept}-checkpoint",
        "--type=merge",
        "-p",
        relabel,
    )
    assert REFUSAL in refused.stderr, refused.stderr

    cluster.delete("mxjob", kept)
    cluster.delete("mxjob", gone)
    # Delete: with its job. The garbage collector deletes it; the pvc-protection controller,
    # which this tier does not run, would then remove its finalizer.
    wait_for("the other claim deleted", lambda: deleting(cluster, f"{gone}-checkpoint"), 60)
    held = cluster.get("mxjob", kept)
    assert held is not None and "deletionTimestamp" in held["metadata"]  # held by the finalizer
    ran = subprocess.run(
        [sys.executable, "-m", "mxjob.retention", "--once", "--kubeconfig", str(component_config)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    cluster.wait_gone("mxjob", kept)
    wait_for("the Worker gone", lambda: cluster.pods(kept) == {}, 60)
    released = cluster.get("pvc", f"{kept}-checkpoint")
    assert released is not None and released["metadata"]["uid"] == claim["metadata"]["uid"]
    assert "ownerReferences" not in released["metadata"], released["metadata"]
    assert "controller-uid" not in released["metadata"]["labels"]
    assert released["metadata"]["annotations"][RETAINED_FROM] == uid
    assert released["spec"] == claim["spec"]
    assert not deleting(cluster, f"{kept}-checkpoint")
    for name in (kept, gone):
        cluster.delete("pvc", f"{name}-checkpoint")
        cluster.kubectl(
            "patch", "pvc", f"{name}-checkpoint", "-n", NAMESPACE, "--type=merge",
            "-p", '{"metadata":{"finalizers":null}}', check=False,
        )  # fmt: skip


def deleting(cluster: Cluster, claim: str) -> bool:
    """Whether the claim is gone or being deleted."""
    found = cluster.get("pvc", claim)
    return found is None or "deletionTimestamp" in found["metadata"]

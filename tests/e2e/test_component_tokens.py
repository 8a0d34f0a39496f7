"""What a stolen component token can do, through the real API server: the install's
ValidatingAdmissionPolicies (docs/security.md#component-tokens) keep the TTL controller's deletes
to jobs it would delete, the Events component's creates to the stories of MXJobs, and the
restarter's pod patches to the run numbers of an MXJob's pods.

This tier authorizes every request and lets anyone impersonate, so each test acts as the
component's account with `kubectl --as` (RBAC, which the real-node tier enforces, would grant it
the same verbs); what is refused is refused by the policy alone. The certificate keeper's policy
is tested with the conversion webhook (tests/e2e/test_conversion.py).
"""

import json
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.builders import replica
from tests.e2e.conftest import NAMESPACE, Cluster, installed_policy, wait_for
from tests.e2e.test_lifecycle import job
from tests.e2e.test_run_policy import _run_to_success, state

TTL_ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-ttl-controller"
TTL_REFUSAL = (
    "the TTL controller may delete only a finished MXJob that sets ttlSecondsAfterFinished"
)
EVENTS_ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-events"
EVENTS_REFUSAL = "the Events component may only tell the story of an MXJob of the Event's namespace"
RESTARTER_ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-restarter"
RESTARTER_REFUSAL = "the restarter may only set a pod's annotations"
RESTARTER_NOT_MXJOB = "the restarter may only patch a pod an MXJob controls"


@pytest.fixture
def ttl_policy(cluster: Cluster) -> Iterator[None]:
    with installed_policy(cluster, "mxjob-ttl-controller"):
        yield


@pytest.fixture
def events_policy(cluster: Cluster) -> Iterator[None]:
    with installed_policy(cluster, "mxjob-events"):
        yield


@pytest.fixture
def restarter_policy(cluster: Cluster) -> Iterator[None]:
    with installed_policy(cluster, "mxjob-restarter"):
        yield


def until_refused(refused: Callable[[], bool]) -> None:
    """A policy takes a moment to reach the admission plugin after it is created."""
    wait_for("the policy to refuse", refused, 30)


def as_ttl(cluster: Cluster, name: str, *more: str) -> subprocess.CompletedProcess[str]:
    """`kubectl delete` of a job as the TTL controller's account."""
    return cluster.kubectl(
        "delete", "mxjob", name, "-n", NAMESPACE, f"--as={TTL_ACCOUNT}", *more, check=False
    )


def test_the_ttl_token_deletes_only_a_finished_job_with_a_ttl(
    cluster: Cluster, ttl_policy: None
) -> None:
    """What a stolen TTL token would do with its delete right: delete a running job of any
    namespace, and with it its pods. The policy admits only a job finished with a
    ttlSecondsAfterFinished, the only kind the TTL loop deletes."""
    cluster.apply(job("e2e-ttl-guarded", {"Worker": replica(1)}, ttlSecondsAfterFinished=0))
    wait_for("Running", lambda: state(cluster, "e2e-ttl-guarded") == "Running", 90)
    until_refused(
        lambda: TTL_REFUSAL in as_ttl(cluster, "e2e-ttl-guarded", "--dry-run=server").stderr
    )
    refused = as_ttl(cluster, "e2e-ttl-guarded")
    assert refused.returncode != 0 and TTL_REFUSAL in refused.stderr, refused.stderr
    assert cluster.get("mxjob", "e2e-ttl-guarded") is not None
    assert len(cluster.pods("e2e-ttl-guarded")) == 1
    _run_to_success(cluster, "e2e-ttl-kept", "Running")  # finished, but with no TTL
    assert TTL_REFUSAL in as_ttl(cluster, "e2e-ttl-kept").stderr
    ttl = json.dumps({"spec": {"runPolicy": {"ttlSecondsAfterFinished": 0}}})
    cluster.kubectl("patch", "mxjob", "e2e-ttl-kept", "-n", NAMESPACE, "--type=merge", "-p", ttl)
    assert as_ttl(cluster, "e2e-ttl-kept").returncode == 0
    cluster.delete("mxjob", "e2e-ttl-guarded")


def event(name: str, involved: dict[str, str]) -> dict[str, object]:
    """An Event as the Events component writes one (mxjob/events/controller.py)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "involvedObject": {"namespace": NAMESPACE, **involved},
        "reason": "MXJobRunning",
        "message": "MXJob told is running.",
        "type": "Normal",
        "source": {"component": "mxjob"},
        "reportingComponent": "mxjob",
        "reportingInstance": "mxjob",
    }


def as_events(
    cluster: Cluster, obj: dict[str, object], *more: str
) -> subprocess.CompletedProcess[str]:
    """`kubectl create` of an Event as the Events component's account."""
    return cluster.kubectl(
        "create", "-f", "-", f"--as={EVENTS_ACCOUNT}", *more, stdin=json.dumps(obj), check=False
    )


def test_the_events_token_tells_only_an_mxjobs_story(cluster: Cluster, events_policy: None) -> None:
    """What a stolen Events token would do with its create right: an Event about any object of
    any namespace, a Pod's kill or a Node's pressure. The policy admits only an Event about an
    MXJob of its namespace, told by the component."""
    pod = {"apiVersion": "v1", "kind": "Pod", "name": "someone-else"}
    probe = event("e2e-forged", pod)
    until_refused(lambda: EVENTS_REFUSAL in as_events(cluster, probe, "--dry-run=server").stderr)
    forged = as_events(cluster, event("e2e-forged", pod))
    assert forged.returncode != 0 and EVENTS_REFUSAL in forged.stderr, forged.stderr
    assert cluster.get("event", "e2e-forged") is None
    mxjob = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "told"}
    assert as_events(cluster, event("e2e-told", mxjob)).returncode == 0
    cluster.delete("event", "e2e-told")


def as_restarter(
    cluster: Cluster, pod: str, patch: dict[str, Any], *more: str
) -> subprocess.CompletedProcess[str]:
    """`kubectl patch` of a pod's metadata as the restarter component's account."""
    return cluster.kubectl(
        "patch", "pod", pod, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch),
        f"--as={RESTARTER_ACCOUNT}", *more, check=False,
    )  # fmt: skip


def test_the_restarter_token_sets_only_the_run_numbers_of_an_mxjobs_pods(
    cluster: Cluster, restarter_policy: None
) -> None:
    """What a stolen restarter token would do with its pod patch right: relabel any pod of any
    namespace (and so reroute a Service to it), or change its owners. The policy admits only
    the restart, run and go annotations and the run label of a pod an MXJob controls, each set
    to a run number, as mxjob/restarter/plan.py writes them."""
    cluster.apply(job("e2e-restarted", {"Worker": replica(1)}))
    pod = wait_for("the Worker", lambda: next(iter(cluster.pods("e2e-restarted")), None), 90)
    relabel = {"metadata": {"labels": {"app": "elsewhere"}}}
    until_refused(
        lambda: RESTARTER_REFUSAL in as_restarter(cluster, pod, relabel, "--dry-run=server").stderr
    )
    for forged in (
        relabel,
        {"metadata": {"annotations": {"mxjob.kubeflow.org/restart": "later"}}},
        {"metadata": {"labels": {"mxjob.kubeflow.org/run": "1234567890"}}},
        {"metadata": {"annotations": {"mxjob.kubeflow.org/nudge": "soon"}}},
    ):
        refused = as_restarter(cluster, pod, forged)
        assert refused.returncode != 0 and RESTARTER_REFUSAL in refused.stderr, refused.stderr
    run = "3"
    notes = dict.fromkeys(("restart", "run", "go"), run)
    ordered = {
        "metadata": {
            "annotations": {
                **{f"mxjob.kubeflow.org/{key}": value for key, value in notes.items()},
                "mxjob.kubeflow.org/nudge": "1765100000",
            },
            "labels": {"mxjob.kubeflow.org/run": run},
        }
    }
    assert as_restarter(cluster, pod, ordered).returncode == 0
    patched = cluster.get("pod", pod) or {}
    assert patched["metadata"]["labels"].get("app") is None
    assert patched["metadata"]["annotations"]["mxjob.kubeflow.org/go"] == run
    cluster.delete("mxjob", "e2e-restarted")
    wait_for("the job's pods gone", lambda: not cluster.pods("e2e-restarted"), 60)
    stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e2e-not-an-mxjobs"},
             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    cluster.apply(stray)
    refused = as_restarter(cluster, "e2e-not-an-mxjobs", ordered)
    assert refused.returncode != 0 and RESTARTER_NOT_MXJOB in refused.stderr, refused.stderr
    cluster.delete("pod", "e2e-not-an-mxjobs")

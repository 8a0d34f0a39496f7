"""kube-state-metrics (the real binary, built from the module proxy) with the shipped MXJob
configuration, manifests/components/kube-state-metrics/mxjob-metrics.yaml, against the KWOK
tier: jobs counted by state, replica counts, restarts and times as the hook wrote them into
each job's status; and every metric the Grafana dashboard asks for found in real scrapes of
kube-state-metrics, the hook and Metacontroller."""

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hooks.core.api import ANNOTATION_PROGRESS
from hooks.core.progress import Noted, Report, encode_noted
from tests.builders import mxjob, replica
from tests.e2e.conftest import NAMESPACE, Cluster, wait_for
from testsupport import metric_names
from testsupport.metric_names import promql_names

#: name -> the state the job is brought to
JOBS = {"ksm-succeeds": "Succeeded", "ksm-fails": "Failed", "ksm-runs": "Running"}
PREFIX = "kube_customresource_mxjob_"
STATES = ["Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"]
GVK = {"customresource_group": "kubeflow.org", "customresource_version": "v1"}

Sample = tuple[str, dict[str, str], float]
Series = list[tuple[dict[str, str], float]]


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        text: str = answer.read().decode()
    return text


def samples(text: str) -> list[Sample]:
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def ordered(series: Series) -> Series:
    """Series in a fixed order (by labels, then value), to compare whole."""
    return sorted(series, key=lambda one: (sorted(one[0].items()), one[1]))


def of_job(found: list[Sample], metric: str, job: str) -> Series:
    """The samples of one metric (without PREFIX) for one job, its labels without the ones
    every sample carries (GVK, kind, namespace, name)."""
    common = {*GVK, "customresource_kind", "namespace", "name"}
    return ordered(
        [
            ({k: v for k, v in labels.items() if k not in common}, value)
            for name, labels, value in found
            if name == PREFIX + metric and labels.get("name") == job
        ]
    )


def unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def expected(job: dict[str, Any]) -> dict[str, Series]:
    """What the configuration should make of a job's stored status, metric by metric."""
    status = job["status"]
    replicas = status["replicaStatuses"]
    last = status["conditions"][-1]["type"]
    want: dict[str, Series] = {
        "info": [({"uid": job["metadata"]["uid"], "job_mode": job["spec"]["jobMode"]}, 1.0)],
        "state": [({"state": s}, float(s == last)) for s in STATES],
        "status_condition": [
            (
                {"condition": c["type"], "status": c["status"], "reason": c["reason"]},
                float(c["status"] == "True"),
            )
            for c in status["conditions"]
        ],
        "status_start_time": [({}, unix(status["startTime"]))],
        "status_completion_time": (
            [({}, unix(status["completionTime"]))] if "completionTime" in status else []
        ),
    }
    for count in ("active", "succeeded", "failed", "restarts"):
        want[f"status_replicas_{count}"] = [
            ({"replica_type": rtype}, float(counts[count])) for rtype, counts in replicas.items()
        ]
    progress = status.get("progress") or {}
    want["progress_epoch"] = [({}, float(progress["epoch"]))] if progress else []
    want["progress_samples_per_second"] = (
        [({}, float(progress["samplesPerSecond"]))] if "samplesPerSecond" in progress else []
    )
    want["progress_last_report_time"] = [({}, unix(progress["lastReportTime"]))] if progress else []
    return {metric: ordered(series) for metric, series in want.items()}


def seen(found: list[Sample], job: str) -> dict[str, Series]:
    metrics = [name.removeprefix(PREFIX) for name in metric_names.shipped_ksm_names()]
    return {metric: of_job(found, metric, job) for metric in metrics}


def submitted(name: str, replicas: dict[str, Any], **run_policy: Any) -> dict[str, Any]:
    """An MXJob as a user submits it (no uid, no status)."""
    obj = mxjob(name=name, replicas=replicas, run_policy=run_policy or None)
    obj["metadata"] = {"name": name}
    return obj


def differences(
    found: list[Sample], jobs: dict[str, dict[str, Any]]
) -> dict[str, dict[str, tuple[Series, Series]]]:
    """Per job, each metric whose series are not what its status says: (served, expected)."""
    result = {}
    for name, job in jobs.items():
        got, want = seen(found, name), expected(job)
        if wrong := {m: (got[m], want[m]) for m in want if got[m] != want[m]}:
            result[name] = wrong
    return result


@pytest.fixture(scope="module")
def jobs(cluster: Cluster) -> Iterator[dict[str, dict[str, Any]]]:
    """Three jobs, one Succeeded, one Failed, one Running after a Worker was replaced."""
    for name in ("ksm-succeeds", "ksm-fails"):
        cluster.apply(submitted(name, {"Worker": replica(1, "ExitCode")}))
    three = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2, "ExitCode")}
    cluster.apply(submitted("ksm-runs", three, backoffLimit=3))
    for name in JOBS:
        cluster.wait_condition(name, "Running")
    cluster.stack.terminate_pod(NAMESPACE, "ksm-succeeds-worker-0", 0)
    cluster.stack.terminate_pod(NAMESPACE, "ksm-fails-worker-0", 1)
    cluster.stack.terminate_pod(NAMESPACE, "ksm-runs-worker-1", 137)
    for name, state in JOBS.items():
        cluster.wait_condition(name, state)

    def replaced() -> bool:
        worker = cluster.status("ksm-runs")["replicaStatuses"]["Worker"]
        return bool(worker["active"] == 2 and worker["restarts"] == 1)

    wait_for("ksm-runs: the restart counted, both Workers running", replaced, 60)
    # A Worker's progress, noted as the progress component notes it (docs/status.md#progress).
    report = Report(epoch=1, batch=20, speed=512.5, time="2026-11-28T01:00:00Z")
    note = f"{ANNOTATION_PROGRESS}={encode_noted(Noted(report=report))}"
    cluster.kubectl("annotate", "pod", "ksm-runs-worker-0", "-n", NAMESPACE, "--overwrite", note)
    wait_for("ksm-runs: its progress", lambda: cluster.status("ksm-runs").get("progress"), 60)
    yield {name: cluster.get("mxjob", name) or {} for name in JOBS}
    for name in JOBS:
        cluster.delete("mxjob", name)


@pytest.fixture(scope="module")
def ksm(cluster: Cluster) -> Iterator[str]:
    """The metrics URL of kube-state-metrics run with the shipped configuration file."""
    from tools.cluster.kube_state_metrics import kube_state_metrics  # noqa: PLC0415

    with kube_state_metrics(cluster.stack, metric_names.KSM_CONFIG) as url:
        yield url


def test_jobs_by_state_replicas_restarts_and_times(
    ksm: str, jobs: dict[str, dict[str, Any]]
) -> None:
    # kube-state-metrics follows a watch: wait (60 s at most) until it shows each job's status.
    deadline = time.monotonic() + 60
    while True:
        found = samples(scrape(ksm))
        differs = differences(found, jobs)
        if not differs or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert differs == {}, "metric: (served, from the job's status)"
    # The numbers the dashboard's panels are made of, for these three jobs.
    states = Counter(
        labels["state"]
        for name, labels, value in found
        if name == PREFIX + "state" and labels["name"] in JOBS and value == 1
    )
    assert states == {"Succeeded": 1, "Failed": 1, "Running": 1}
    assert of_job(found, "status_replicas_restarts", "ksm-runs") == [
        ({"replica_type": "Scheduler"}, 0.0),
        ({"replica_type": "Server"}, 0.0),
        ({"replica_type": "Worker"}, 1.0),
    ]
    assert of_job(found, "status_replicas_active", "ksm-runs") == [
        ({"replica_type": "Scheduler"}, 1.0),
        ({"replica_type": "Server"}, 1.0),
        ({"replica_type": "Worker"}, 2.0),
    ]
    assert of_job(found, "status_replicas_succeeded", "ksm-succeeds") == [
        ({"replica_type": "Worker"}, 1.0)
    ]
    assert of_job(found, "status_replicas_failed", "ksm-fails") == [
        ({"replica_type": "Worker"}, 1.0)
    ]
    assert of_job(found, "status_completion_time", "ksm-runs") == []
    (((_, started),),) = [of_job(found, "status_start_time", "ksm-runs")]
    assert abs(started - unix(jobs["ksm-runs"]["metadata"]["creationTimestamp"])) < 60
    mine = [labels for name, labels, _ in found if labels.get("name") in JOBS]
    assert all(labels.items() >= {**GVK, "customresource_kind": "MXJob"}.items() for labels in mine)


def test_the_dashboard_names_only_metrics_the_real_components_serve(
    ksm: str, jobs: dict[str, dict[str, Any]], cluster: Cluster, hook_port: int
) -> None:
    def ksm_names() -> set[str] | None:
        """Every name the configuration yields, once each is served (the finished jobs'
        completion times come last); these are what tests/test_dashboard.py trusts."""
        names = {n for n in metric_names.exposed_names(scrape(ksm)) if n.startswith(PREFIX)}
        return names if names == metric_names.shipped_ksm_names() else None

    metacontroller_url = f"http://127.0.0.1:{cluster.stack.ports['metacontroller']}/metrics"
    served = {
        "kube-state-metrics": wait_for("every configured metric", ksm_names, 60),
        "hook": metric_names.exposed_names(scrape(f"http://127.0.0.1:{hook_port}/metrics")),
        "Metacontroller": metric_names.exposed_names(scrape(metacontroller_url)),
    }
    dashboard = json.loads(metric_names.DASHBOARD.read_text())
    assert metric_names.unknown_names(dashboard, set().union(*served.values())) == {}
    # The pinned list of Metacontroller's names holds those it really serves.
    mentioned = {n for q in metric_names.dashboard_queries(dashboard) for n in promql_names(q)}
    assert {n for n in mentioned if n.startswith("metacontroller_")} <= (
        metric_names.METACONTROLLER & served["Metacontroller"]
    )
    # The dashboard selects Metacontroller's series by the CompositeController's name.
    calls = [
        labels
        for name, labels, value in samples(scrape(metacontroller_url))
        if name == "metacontroller_sync_requests_total" and value > 0
    ]
    assert {(c["controller_name"], c["code"]) for c in calls} >= {("mxjob-controller", "200")}

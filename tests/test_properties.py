"""Invariants of the hook over generated MXJobs and child states (hypothesis).

Determinism, the fixpoint of feeding a response back as observed children (and its
lastFailure back as the parent status), a status free of the wall clock, valid child names,
the DMLC counts, unique env names, and that no response deletes a running pod of an
unfinished, unsuspended, valid job unless it restarts the whole job.
States include later syncs (run records, deleted runs, the next run's pods).
"""

import copy
import json
import re
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.core.api import MODE_TYPES, JobMode
from tests.builders import (
    NOW,
    T0,
    cluster_after,
    created,
    mxjob,
    replica,
    reporting,
    request,
    restarted_in_place,
    run,
    running,
    saying,
    terminated,
)
from tests.builders import terminating as terminating_pod
from testsupport.jobs import as_sent

DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
EXIT_CODES = (0, 1, 2, 127, 130, 137, 138, 139, 143, None)
#: Termination messages: any text, escape sequences and line breaks included.
MESSAGES = st.text(st.characters(codec="utf-8"), max_size=300)
PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def jobs(draw: st.DrawFn, *, with_deadline: bool = True) -> dict[str, Any]:
    """A valid MXJob of either mode with small replica counts and any run policy."""
    mode = draw(st.sampled_from(list(JobMode)))
    scheduler, server, worker = MODE_TYPES[mode]
    replicas: dict[str, Any] = {}
    policy = st.sampled_from(POLICIES)
    if mode is JobMode.TRAIN:
        servers = draw(st.integers(0, 2))
        if servers or draw(st.booleans()):
            replicas[scheduler.value] = replica(1, draw(policy))
        if servers:
            replicas[server.value] = replica(servers, draw(policy))
        replicas[worker.value] = replica(draw(st.integers(1, 4)), draw(policy))
    else:
        replicas[scheduler.value] = replica(1, draw(policy))
        replicas[server.value] = replica(draw(st.integers(1, 2)), draw(policy))
        replicas[worker.value] = replica(1, draw(policy))
    run_policy: dict[str, Any] = {
        "cleanPodPolicy": draw(st.sampled_from(["All", "Running", "None"])),
    }
    if draw(st.booleans()):
        run_policy["backoffLimit"] = draw(st.integers(0, 3))
    if with_deadline and draw(st.booleans()):
        run_policy["activeDeadlineSeconds"] = draw(st.integers(60, 7200))
    alone = worker if mode is JobMode.TRAIN else server
    rules = draw(st.lists(failure_rules(alone.value), max_size=3))
    if with_deadline and draw(st.booleans()):  # the stall watchdog compares with the clock too
        run_policy["progressDeadlineSeconds"] = draw(st.integers(30, 3600))
        if draw(st.booleans()):
            run_policy["firstProgressDeadlineSeconds"] = draw(st.integers(30, 3600))
        if draw(st.booleans()):
            rules.append(
                {"action": draw(st.sampled_from(["FailJob", "RestartJob"])), "onStall": {}}
            )
    if rules:
        named = [{**rule, "name": f"rule-{i}"} if i % 2 else rule for i, rule in enumerate(rules)]
        run_policy["failurePolicy"] = {"rules": named}
    name = draw(st.sampled_from(["mnist", "j", "resnet-50-dist"]))
    return mxjob(name=name, replicas=replicas, run_policy=run_policy, mode=mode.value)


@st.composite
def failure_rules(draw: st.DrawFn, alone: str) -> dict[str, Any]:
    """A valid failurePolicy rule: any action, one or two matchers, sometimes scoped to the
    type that can be replaced alone (`alone`), which RestartReplica needs when scoped."""
    rule: dict[str, Any] = {
        "action": draw(
            st.sampled_from(["FailJob", "RestartReplica", "RestartJob", "Ignore", "Count"])
        )
    }
    matchers = draw(
        st.lists(
            st.sampled_from(["onExitCodes", "onReasons", "onPodConditions"]),
            min_size=1,
            max_size=2,
            unique=True,
        )
    )
    if "onExitCodes" in matchers:
        codes = draw(
            st.lists(st.sampled_from([1, 2, 42, 137, 143]), min_size=1, max_size=3, unique=True)
        )
        rule["onExitCodes"] = {"operator": draw(st.sampled_from(["In", "NotIn"])), "values": codes}
    if "onReasons" in matchers:
        rule["onReasons"] = [draw(st.sampled_from(["OOMKilled", "Error", "Evicted"]))]
    if "onPodConditions" in matchers:
        rule["onPodConditions"] = [{"type": "DisruptionTarget"}]
    if draw(st.booleans()):
        rule["replicaTypes"] = [alone]
    return rule


def pod_state(draw: st.DrawFn, pod: dict[str, Any]) -> dict[str, Any] | None:
    """One observed pod in any state, or None for a pod that is gone."""
    kind = draw(st.sampled_from(["gone", "pending", "running", "finished", "terminating"]))
    if kind == "gone":
        return None
    if kind == "pending":
        return pod
    if kind == "running":
        if draw(st.integers(0, 4)) == 0:  # restarted in place after a failure with its words
            return restarted_in_place(pod, 1, draw(MESSAGES), minutes=draw(st.integers(1, 30)))
        started = running(pod, minutes=draw(st.integers(1, 30)), restarts=draw(st.integers(0, 2)))
        if draw(st.integers(0, 2)) == 0:  # its progress noted (read of Workers' pods only)
            epoch = draw(st.none() | st.integers(0, 5))
            batch = draw(st.none() | st.integers(0, 500))
            seen = draw(st.none() | st.integers(1, 59))
            return reporting(started, epoch, batch, draw(st.integers(1, 59)), seen=seen)
        return started
    if kind == "finished":
        code = draw(st.sampled_from(EXIT_CODES))
        ended = terminated(pod, code, minutes=draw(st.integers(2, 50)))
        return saying(ended, draw(MESSAGES)) if code and draw(st.booleans()) else ended
    return terminating_pod(running(pod))


@st.composite
def states(draw: st.DrawFn, *, with_deadline: bool = True) -> dict[str, Any]:
    """A sync request: a job, children in random states, maybe a status from an earlier sync."""
    job = draw(jobs(with_deadline=with_deadline))
    children = []
    for child in cluster_after(run(request(job))):
        observed = pod_state(draw, child) if child["kind"] == "Pod" else child
        if observed is not None:
            children.append(observed)
    for step in range(draw(st.integers(0, 5))):
        # Later syncs, each response applied and its status written (pods created before NOW):
        # reaches run records, deleted runs and the next run's pods.
        body = request(job, children)
        response = run(body)
        children = applied(body, response.children, 40 + step)
        job["status"] = response.status
    if draw(st.booleans()):
        job["status"] = run(request(job, children)).status
    if draw(st.integers(0, 9)) == 0:
        job["spec"].setdefault("runPolicy", {})["suspend"] = True
    return request(job, children)


def observed_children(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for group in body["children"].values() for c in group.values()]


def key(child: dict[str, Any]) -> tuple[str, str]:
    return child["kind"], child["metadata"]["name"]


@PROFILE
@given(states())
def test_same_request_same_response(body: dict[str, Any]) -> None:
    assert run(body).to_json() == run(copy.deepcopy(body)).to_json()


@PROFILE
@given(states())
def test_response_fed_back_as_observed_children_changes_nothing(body: dict[str, Any]) -> None:
    """The cluster after applying a response: kept children as observed, new ones created.

    One exception, once: between runs a config ConfigMap, PodGroup or Service made for another
    run is left out (deleted) and made again, new, by the next answer, with the run's pods
    (docs/restarts.md#resizing). That answer only adds, and the one after it changes nothing."""
    first = run(body)
    after = applied(body, first.children)
    again = request(body["parent"], after, body["controller"])
    second = run(again)
    if sorted(map(key, second.children)) != sorted(map(key, first.children)):
        listed, relisted = set(map(key, first.children)), set(map(key, second.children))
        replaced = {
            k
            for k in map(key, observed_children(body))
            if k not in listed and k[0] in ("ConfigMap", "PodGroup", "Service")
        }
        assert listed < relisted and replaced & relisted
        third = run(request(body["parent"], applied(again, second.children), body["controller"]))
        assert sorted(map(key, third.children)) == sorted(map(key, second.children))


@PROFILE
@given(states())
def test_status_fed_back_as_the_parent_status_keeps_the_last_failure(body: dict[str, Any]) -> None:
    """lastFailure is a fixpoint: the newest failure stays the newest once it is written."""
    first = run(body).status
    parent = {**body["parent"], "status": first}
    second = run(request(parent, observed_children(body), body["controller"])).status
    assert second.get("lastFailure") == first.get("lastFailure")


def applied(
    body: dict[str, Any], listed: list[dict[str, Any]], minutes: float | None = None
) -> list[dict[str, Any]]:
    """The cluster after a response: listed children kept as observed, others created (now,
    or `minutes` after T0)."""
    observed = {key(c): c for c in observed_children(body)}
    return [
        observed.get(key(c))
        or (cluster_after_one(c) if minutes is None else created(c, minutes=minutes))
        for c in listed
    ]


def cluster_after_one(child: dict[str, Any]) -> dict[str, Any]:
    """A child created by the API server now."""
    return created(child, minutes=(NOW - T0).total_seconds() / 60)


@PROFILE
@given(states(with_deadline=False), st.integers(1, 10**6))
def test_status_does_not_depend_on_the_clock(body: dict[str, Any], seconds: int) -> None:
    later = NOW + timedelta(seconds=seconds)
    assert run(body, NOW).status == run(body, later).status
    assert run(body, NOW).to_json() == run(body, later).to_json()


@PROFILE
@given(states())
def test_child_names_are_dns_labels(body: dict[str, Any]) -> None:
    for child in run(body).children:
        name = child["metadata"]["name"]
        assert len(name) <= 63 and DNS_1123_LABEL.match(name), name


@PROFILE
@given(states())
def test_dmlc_counts_match_spec_and_env_names_are_unique(body: dict[str, Any]) -> None:
    specs = body["parent"]["spec"]["mxReplicaSpecs"]
    replicas = {k.lower(): v["replicas"] for k, v in specs.items()}
    for child in as_sent(run(body))["children"]:
        if child["kind"] != "Pod":
            continue
        for container in child["spec"]["containers"]:
            names = [var["name"] for var in container["env"]]
            assert len(names) == len(set(names))
            env = {var["name"]: var.get("value", "") for var in container["env"]}
            assert env["DMLC_NUM_WORKER"] == str(replicas.get("worker", 0))
            assert env["DMLC_NUM_SERVER"] == str(replicas.get("server", 0))


@PROFILE
@given(states())
def test_running_pods_of_an_active_job_are_never_deleted(body: dict[str, Any]) -> None:
    response = run(body)
    conditions = response.status.get("conditions", [])
    finished = any(
        c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions
    )
    suspended = body["parent"]["spec"].get("runPolicy", {}).get("suspend", False)
    whole = any(
        c["type"] == "Restarting" and "restarting the whole job" in c["message"]
        for c in conditions
        if c["status"] == "True"
    )
    if finished or suspended or whole:  # a whole-job restart deletes the run (docs/restarts.md)
        return
    listed = {key(c) for c in response.children}
    for child in observed_children(body):
        # A pod being deleted already is not deleted by leaving it out: Metacontroller skips
        # children pending deletion (a pod lost with its node is left out, docs/restarts.md).
        deleting = "deletionTimestamp" in child["metadata"]
        if child["kind"] == "Pod" and child.get("status", {}).get("phase") == "Running":
            assert deleting or key(child) in listed, (
                f"running pod {child['metadata']['name']} deleted"
            )


@PROFILE
@given(states())
def test_status_is_json_and_never_holds_the_clock(body: dict[str, Any]) -> None:
    text = json.dumps(run(body).status)
    assert NOW.strftime("%Y-%m-%dT%H:%M") not in text


@PROFILE
@given(
    st.integers(2, 58),
    st.integers(30, 3600),
    st.integers(0, 60),
    st.integers(1, 59),
)
def test_a_newer_report_clears_the_clock(
    reported: int, deadline: int, seen: int, newer: int
) -> None:
    """A Worker's report newer than the deadline allows (`newer` minutes) leaves the job
    running, whatever the older report and the look said; without it the job is stalled only
    past the deadline counted from the older report, and only once the look came after it, and
    then dated by the deadline, not by the clock."""
    policy = {"progressDeadlineSeconds": deadline}
    job = mxjob(replicas=SMALL, run_policy=policy)
    children = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]
    late = [
        reporting(c, 1, 10, reported, seen=seen) if c["metadata"]["name"] == "mnist-worker-0" else c
        for c in children
    ]
    due = T0 + timedelta(minutes=reported, seconds=deadline)
    stalled = _stall_moment(run(request(job, late)))
    assert stalled == (
        f"{due:%Y-%m-%dT%H:%M:%SZ}" if due <= NOW and T0 + timedelta(minutes=seen) >= due else None
    )
    if reported < newer and T0 + timedelta(minutes=newer, seconds=deadline) > NOW:
        moved = [
            reporting(c, 2, 0, newer) if c["metadata"]["name"] == "mnist-worker-1" else c
            for c in late
        ]
        assert _stall_moment(run(request(job, moved))) is None


SMALL = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}


def _stall_moment(response: Any) -> str | None:
    """When the answer says the job stalled (its condition's moment), if it does."""
    for condition in response.status["conditions"]:
        if condition["status"] == "True" and "no progress from any Worker" in condition["message"]:
            return str(condition["lastUpdateTime"])
    return None

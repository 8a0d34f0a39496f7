"""The answer budget (hooks/core/budget.py): the estimate bounds the real answer, a job over the
budget fails naming its size and the limit, the budget follows the body and memory limits, and
the CRD's floor of the answer stays below the real one and names the same ceiling."""

import copy
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks import app, wire
from hooks.core import budget, retention
from hooks.core.budget import CEILING, MIB
from hooks.core.job import Job
from hooks.core.request import SyncRequest, parse_request
from hooks.core.spec import load
from hooks.core.sync import SyncResponse, sync
from tests import golden
from tests.builders import CONTROLLER, NOW, cluster_after, created, mxjob, running, terminated
from tests.manifest_support import cel_holds, mxjob_schema
from testsupport.fuzzing import deep
from testsupport.jobs import as_sent, replica, request, run
from testsupport.server import rss_kib, serve

Json = dict[str, Any]
#: The CRD's floor of the answer: the rule on `spec.mxReplicaSpecs` whose message says so.
FLOOR = next(
    rule["rule"]
    for rule in mxjob_schema()["properties"]["spec"]["properties"]["mxReplicaSpecs"][
        "x-kubernetes-validations"
    ]
    if "over its 256 MiB limit" in rule["message"]
)


@pytest.mark.parametrize(
    ("body", "memory", "workers", "want"),
    [
        (256 * MIB, None, 1, 256 * MIB // 6),  # `make run`: a sixth of the default body limit
        (128 * MIB, 3 * 1024 * MIB, 2, 128 * MIB // 6),  # the manifests: the body limit binds
        (128 * MIB, 512 * MIB, 2, 32 * MIB // 6),  # a smaller pod: its memory binds
        (128 * MIB, 512 * MIB, 0, 64 * MIB // 6),  # no workers read: one
        (4096 * MIB, None, 1, CEILING),  # never above the ceiling
    ],
)
def test_the_budget_follows_the_body_and_memory_limits(
    body: int, memory: int | None, workers: int, want: int
) -> None:
    assert budget.budget(body, memory, workers) == want


def test_the_default_is_what_the_default_body_limit_gives() -> None:
    assert budget.budget(app.DEFAULT_MAX_BODY_BYTES) == budget.DEFAULT


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, 256 * MIB // 6),
        ({"MXJOB_MAX_BODY_BYTES": str(128 * MIB)}, 128 * MIB // 6),
        ({"MXJOB_MEMORY_LIMIT_BYTES": str(3 * 1024 * MIB), "WEB_CONCURRENCY": "4"}, 96 * MIB // 6),
        ({"MXJOB_MAX_ANSWER_BYTES": str(5 * MIB)}, 5 * MIB),
        ({"MXJOB_MAX_ANSWER_BYTES": str(10 * CEILING)}, CEILING),
    ],
)
def test_the_app_reads_the_budget_from_its_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], want: int
) -> None:
    for name in ("MXJOB_MAX_BODY_BYTES", "MXJOB_MEMORY_LIMIT_BYTES", "MXJOB_MAX_ANSWER_BYTES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WEB_CONCURRENCY", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert app.create_app().config["MAX_ANSWER_BYTES"] == want


@st.composite
def jobs(draw: st.DrawFn) -> Json:
    """A job of either mode (MXTrain with or without a Scheduler): any replicas, any restart
    policy, containers with names and images of any length, a command of any size, with or
    without a gang scheduler and a queue."""
    tune = draw(st.booleans())
    types: tuple[str, ...] = ("Scheduler", "Server", "Worker")
    if tune:
        types = ("TunerTracker", "TunerServer", "Tuner")
    elif draw(st.booleans()):
        types = ("Worker",)
    replicas: Json = {}
    for rtype in types:
        single = rtype in ("Scheduler", "TunerTracker", "Tuner")
        count = 1 if single else draw(st.integers(1, 40))
        names = draw(st.lists(st.text("abc", min_size=1, max_size=20), max_size=3, unique=True))
        containers = [
            {
                "name": name,
                "image": "i" * draw(st.integers(1, 300)),
                "command": ["sh", "-c", "x" * draw(st.integers(0, 5000))],
            }
            for name in ["mxnet", *(n for n in names if n != "mxnet")]
        ]
        replicas[rtype] = {"replicas": count, "template": {"spec": {"containers": containers}}}
        policy = draw(st.sampled_from([None, "Never", "ExitCode", "OnFailure"]))
        if policy is not None:
            replicas[rtype]["restartPolicy"] = policy
    job = mxjob(
        name=draw(st.sampled_from(["a", "mnist", "x" * 30])),
        replicas=replicas,
        mode="MXTune" if tune else "MXTrain",
    )
    if draw(st.booleans()):
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q"}
    return job


def controller(gang: str | None) -> Json:
    chosen = copy.deepcopy(CONTROLLER)
    if gang is not None:
        chosen["spec"]["childResources"].append({"apiVersion": gang, "resource": "podgroups"})
    return chosen


@settings(max_examples=60)
@given(jobs(), st.sampled_from([None, "scheduling.x-k8s.io/v1alpha1"]))
def test_the_estimate_bounds_the_largest_answer_closely(job: Json, gang: str | None) -> None:
    """Every pod is created at the first sync (with scheduler-plugins too; Volcano waits for
    its PodGroup). Larger answers come once every slot that may be replaced alone is (every
    Worker or TunerServer, one Worker of a ps-lite job), its failed pod listed beside its
    replacement, and the answer that makes again, with the wait to rejoin, every other Worker
    of a ps-lite job, which vanished before a sync saw it end (docs/restarts.md#which-pods-wait).
    The estimate is of the largest: a budget one byte smaller refuses the job, and one a tenth
    (and 8 KiB for the status and the fixed children) larger does not."""
    body = request(job, controller=controller(gang))
    first = sync(parse_request(copy.deepcopy(body)), NOW)
    answer = max(
        len(wire.encode(a.to_json())) for a in _every_replaceable_slot_replaced(body, first)
    )
    below = sync(parse_request(copy.deepcopy(body)), NOW, max_answer_bytes=answer - 1)
    assert below.status["conditions"][-1]["reason"] == "MXJobInvalidSpec"
    above = sync(parse_request(body), NOW, max_answer_bytes=answer + answer // 10 + 8192)
    assert not above.invalid


def _every_replaceable_slot_replaced(body: Json, first: SyncResponse) -> list[SyncResponse]:
    """The answers once the last `budget.doubled` slots of each type failed (137, which every
    restart policy but Never retries) and every other Worker vanished: the one that makes them
    again, and the next, with the replacements running beside the pods they replace."""
    read = _job(parse_request(copy.deepcopy(body)))
    failing = {
        f"{read.name}-{rtype.short}-{index}"
        for rtype, spec in read.spec.replicas.items()
        for index in range(spec.replicas - budget.doubled(read.spec, rtype), spec.replicas)
    }
    workers = f"{read.name}-worker-"
    pods = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(first)]
    pods = [terminated(c, 137) if c["metadata"]["name"] in failing else c for c in pods]
    vanished = {
        c["metadata"]["name"]
        for c in pods
        if c["kind"] == "Pod" and c["metadata"]["name"].startswith(workers)
    } - failing
    kept = [c for c in pods if c["metadata"]["name"] not in vanished or c["kind"] != "Pod"]
    second = sync(parse_request(copy.deepcopy({**body, "children": _groups(body, kept)})), NOW)
    known = {(c["kind"], c["metadata"]["name"]) for c in kept}
    made = [
        running(created(c))
        for c in second.children
        if (c["kind"], c["metadata"]["name"]) not in known
    ]
    assert {c["kind"] for c in made} <= {"Pod"}
    assert len(made) == len(failing) + len(vanished), second.status["conditions"][-1]
    both = {**body, "children": _groups(body, kept + made)}
    return [second, sync(parse_request(both), NOW)]


def _groups(body: Json, children: list[Json]) -> Json:
    groups: Json = request(body["parent"], children, controller=body["controller"])["children"]
    return groups


@settings(max_examples=60)
@given(jobs())
def test_the_crds_floor_is_below_the_answer(job: Json) -> None:
    """Evaluated as the API server does (cel-python, Kubernetes' `sum`): with the ceiling
    replaced by the real answer's size, the rule still holds."""
    answer = len(wire.encode(sync(parse_request(request(job)), NOW).to_json()))
    specs = job["spec"]["mxReplicaSpecs"]
    assert cel_holds(FLOOR.replace(str(CEILING), str(answer)), specs) is True


def test_the_crds_floor_names_the_ceiling() -> None:
    assert f"<= {CEILING}" in FLOOR


#: Replica specs as the CEL rule sees them, with the API server's default of `replicas`.
FLOOR_SPECS = st.dictionaries(
    st.sampled_from(["Scheduler", "Server", "Worker", "worker"]),
    st.fixed_dictionaries(
        {
            "replicas": st.integers(0, 10000),
            "template": st.fixed_dictionaries(
                {
                    "spec": st.fixed_dictionaries(
                        {
                            "containers": st.lists(
                                st.fixed_dictionaries(
                                    {"name": st.text(max_size=63), "image": st.text(max_size=300)}
                                ),
                                min_size=1,
                                max_size=64,
                            )
                        }
                    )
                }
            ),
        }
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60)
@given(FLOOR_SPECS)
def test_the_webhooks_floor_is_the_crds(specs: Json) -> None:
    """What the conversion webhook applies to a write at an old version (budget.floor) is the
    CRD's rule to the byte: it holds with the ceiling at the floor, not one byte below."""
    floor = budget.floor(specs)
    assert cel_holds(FLOOR.replace(str(CEILING), str(floor)), specs) is True
    assert cel_holds(FLOOR.replace(str(CEILING), str(floor - 1)), specs) is False


def test_the_webhook_refuses_with_the_crds_words() -> None:
    (rule,) = [
        r
        for r in mxjob_schema()["properties"]["spec"]["properties"]["mxReplicaSpecs"][
            "x-kubernetes-validations"
        ]
        if r["rule"] == FLOOR
    ]
    assert rule["message"] == budget.FLOOR_RULE


def test_the_crds_floor_refuses_what_can_never_fit() -> None:
    """10000 Workers of 64 containers cannot be answered in 256 MiB, whatever their pods."""
    containers = [{"name": f"c{i}", "image": "i"} for i in range(64)]
    specs = {"Worker": {"replicas": 10000, "template": {"spec": {"containers": containers}}}}
    assert cel_holds(FLOOR, specs) is False
    specs["Worker"]["replicas"] = 1000
    assert cel_holds(FLOOR, specs) is True


def test_a_job_over_the_budget_fails_naming_its_size_and_the_limit(
    make_client: Any,
) -> None:
    """The issue's job: a 155 KB template, 1000 replicas per type, a 107 MB answer."""
    template = {
        "spec": {"containers": [{"name": "mxnet", "image": "m", "command": ["x" * 155_000]}]}
    }
    replicas = {
        rtype: {"replicas": count, "template": template}
        for rtype, count in (("Scheduler", 1), ("Server", 1000), ("Worker", 1000))
    }
    client: FlaskClient = make_client(MAX_ANSWER_BYTES=32 * MIB)
    answer = client.post("/sync", json=request(mxjob(replicas=replicas)))
    assert answer.status_code == 200
    assert len(answer.data) < 100_000
    last = answer.get_json()["status"]["conditions"][-1]
    assert (last["type"], last["reason"]) == ("Failed", "MXJobInvalidSpec")
    assert 299 < _named_size(last["message"]) < 302, last["message"]
    assert "Worker: 1000 of 153.6 KiB" in last["message"]
    assert "limit of 32.0 MiB (MXJOB_MAX_ANSWER_BYTES)" in last["message"]
    assert answer.get_json()["children"] == []


def test_the_hook_as_make_run_serves_it_refuses_the_3_gb_job() -> None:
    """Once the connection broke after 11 s (the worker building a 3 GB answer was killed)
    and both hook pods crash-looped on the resync: 10000 Servers and 10000 Workers of a 150 KB
    template, a 450 KB object. Now a 200 at once, the worker's memory untouched."""
    template = {
        "spec": {"containers": [{"name": "mxnet", "image": "m", "command": ["x" * 150_000]}]}
    }
    replicas = {
        rtype: {"replicas": count, "template": template}
        for rtype, count in (("Scheduler", 1), ("Server", 10_000), ("Worker", 10_000))
    }
    body = wire.encode(request(mxjob(replicas=replicas)))
    with serve(workers=1) as server:
        (worker,) = server.worker_pids()
        status, answer, _ = server.call("POST", "/sync", body, timeout=10)
        peak = rss_kib(worker, "VmHWM")
    assert status == 200
    last = orjson.loads(answer)["status"]["conditions"][-1]
    assert last["reason"] == "MXJobInvalidSpec"
    assert 2900 < _named_size(last["message"]) < 2912, last["message"]
    assert peak < 200 * 1024, f"worker peak {peak} KiB"


def _named_size(message: str) -> float:
    """The answer size, in MiB, that a refusal's message names."""
    found = re.search(r"would be about ([0-9.]+) MiB", message)
    assert found is not None, message
    return float(found[1])


def test_a_lowered_budget_holds_every_accepted_job_and_putting_it_back_changes_nothing(
    fixture_case: Path,
) -> None:
    """Every golden moment synced with a budget of one byte (a setting lowered under every job).
    A job the hook has taken on (it has pods, or a status the hook wrote) and that has not
    finished is held, never failed: every observed child kept as it is, the latest condition
    saying why, the same answer on the next sync; and synced again at the default budget with
    that status it gets exactly the answer it gets without the hold. A job never taken on is
    refused as before; one finished, refused, handed off or suspended is answered as at any
    budget (a suspended job's answer is its config alone)."""
    case = golden.load(fixture_case)
    read = parse_request(copy.deepcopy(case.request))
    usual = sync(parse_request(copy.deepcopy(case.request)), case.now)
    lowered = sync(parse_request(copy.deepcopy(case.request)), case.now, max_answer_bytes=1)
    ran = bool(read.pods or read.previous.conditions)
    judged = not (read.managed_elsewhere or usual.invalid or _finished(read))
    if judged and not ran:
        assert lowered.status["conditions"][-1]["reason"] == "MXJobInvalidSpec"
        assert lowered.children == retention.keep_all(read)
        return
    if not judged or _suspended(read):
        assert (lowered.status, lowered.children) == (usual.status, usual.children)
        return
    conditions = lowered.status["conditions"]
    assert not any(
        c["type"] in ("Failed", "Succeeded") and c["status"] == "True" for c in conditions
    )
    assert lowered.children == retention.keep_all(read)
    assert lowered.held and not lowered.invalid
    assert "; held: the hook's answer for this job would be about" in conditions[-1]["message"]
    assert "(MXJOB_MAX_ANSWER_BYTES)" in conditions[-1]["message"]
    held_body = _with_status(case.request, as_sent(lowered)["status"])
    again = sync(parse_request(copy.deepcopy(held_body)), case.now, max_answer_bytes=1)
    assert (again.status, again.children) == (lowered.status, lowered.children)
    restored = sync(parse_request(held_body), case.now)
    assert as_sent(restored) == as_sent(usual)


def _suspended(read: SyncRequest) -> bool:
    """Whether the job asks to be suspended (its answer is then its config alone)."""
    spec, _ = load(read.parent["spec"])
    return spec is not None and spec.run_policy.suspend


def _finished(read: SyncRequest) -> bool:
    """Whether the job had finished before this sync: its status or its result record says so."""
    recorded = any(name.endswith("-mxjob-result") for name in read.config_maps)
    return read.previous.terminal or recorded


def _with_status(body: Json, status: Json) -> Json:
    changed = copy.deepcopy(body)
    changed["parent"]["status"] = status
    return changed


def test_a_running_job_is_held_by_a_halved_budget_and_runs_on_once_it_is_put_back(
    make_client: Any,
) -> None:
    """The issue's upgrade: a job accepted at one budget, the hook restarted with half of it
    (more workers, less memory, a smaller MXJOB_MAX_ANSWER_BYTES). Before, it was Failed for
    good with MXJobInvalidSpec and its pods left unmanaged; now it keeps every child, says why,
    and the hook manages it again once the setting is back."""
    case = golden.load(golden.FIXTURES / "dist-all-running")
    job = parse_request(copy.deepcopy(case.request))
    size = sum(budget.estimate(_job(job)).values())
    usual = make_client(MAX_ANSWER_BYTES=size, CLOCK=lambda: case.now)
    halved = make_client(MAX_ANSWER_BYTES=size // 2, CLOCK=lambda: case.now)
    running = _with_status(
        case.request, usual.post("/sync", json=case.request).get_json()["status"]
    )
    accepted = usual.post("/sync", json=running).get_json()
    held = halved.post("/sync", json=running).get_json()
    assert held["children"] == _kept(job)
    last = held["status"]["conditions"][-1]
    assert (last["type"], last["status"], last["reason"]) == ("Running", "True", "MXJobRunning")
    assert last["message"] == (
        "MXJob mnist is running; held: the hook's answer for this job would be about 18.0 KiB "
        "(Scheduler: 1 of 2.1 KiB, Server: 2 of 2.2 KiB, Worker: 3 of 2.3 KiB, a pod and its "
        "Service each), over this installation's limit of 9.0 KiB (MXJOB_MAX_ANSWER_BYTES): "
        "every child is kept as it is, and nothing is created or deleted until it fits again."
    )
    back = usual.post("/sync", json=_with_status(running, held["status"])).get_json()
    assert back == accepted


def _kept(read: SyncRequest) -> list[Json]:
    """Every observed child of a request, as the hook lists a child it keeps."""
    kept = SyncResponse({"conditions": [], "replicaStatuses": {}}, retention.keep_all(read))
    children: list[Json] = as_sent(kept)["children"]
    return children


def _job(read: SyncRequest) -> Job:
    spec, problems = load(read.parent["spec"])
    assert spec is not None, problems
    return Job(read.name, read.namespace, spec, read.gang, read.created, read.spec_changed)


def test_nothing_is_created_that_would_come_back_over_the_body_limit() -> None:
    """A Worker to replace (exit 137 under ExitCode) beside a request that fills the body limit
    but for less than its replacement needs once Metacontroller sends it back: the pod is not
    made (a 413 on every later sync would wedge the job), the job says why, and once there is
    room (a smaller request, a larger limit) the replacement is made and the words go."""
    job = mxjob(replicas={"Worker": replica(2, "ExitCode")})
    first = run(request(job))
    pods = [running(c) if c["kind"] == "Pod" else c for c in cluster_after(first)]
    pods = [terminated(c, 137) if c["metadata"]["name"] == "mnist-worker-1" else c for c in pods]
    body = request(mxjob(replicas=job["spec"]["mxReplicaSpecs"], status=first.status), pods)
    usual = sync(parse_request(copy.deepcopy(body)), NOW, room=CEILING)
    (made,) = [c for c in usual.children if c["metadata"]["name"] == "mnist-worker-1-r1"]
    needed = budget.encoded([made]) * budget.RETURNED
    # The room left by the job's observed children; the job's own share is in RETURNED.
    parent = budget.encoded([body["parent"]])
    crowded = sync(parse_request(copy.deepcopy(body)), NOW, room=needed - 1 - parent)
    names = {c["metadata"]["name"] for c in crowded.children}
    assert "mnist-worker-1-r1" not in names
    assert {"mnist-worker-0", "mnist-worker-1"} <= names
    last = crowded.status["conditions"][-1]
    assert last["type"] == "Restarting"
    assert last["message"].endswith(
        f"; held: the children it would create ({budget.encoded([made]) / 1024:.1f} KiB, about "
        f"{needed / 1024:.1f} KiB as Metacontroller sends them back) do not fit in the "
        f"{(needed - 1) / 1024:.1f} KiB its other children leave under the hook's body limit "
        "(MXJOB_MAX_BODY_BYTES): nothing is created until it fits again."
    ), last["message"]
    roomy = sync(parse_request(copy.deepcopy(body)), NOW, room=needed - parent)
    assert roomy.children == usual.children
    held_body = _with_status(body, as_sent(crowded)["status"])
    parent = budget.encoded([held_body["parent"]])
    again = sync(parse_request(copy.deepcopy(held_body)), NOW, room=needed - 1 - parent)
    assert as_sent(again) == as_sent(crowded)
    restored = sync(parse_request(held_body), NOW, room=needed - parent)
    assert as_sent(restored) == as_sent(usual)


def test_the_app_gives_the_core_the_room_left_under_its_body_limit(make_client: Any) -> None:
    """The first sync of a job whose pods would come back over a 64 KiB body limit creates
    nothing; with 1 MiB it creates them all."""
    body = request(mxjob(replicas={"Worker": replica(4, command=["x" * 4000])}))
    small = make_client(MAX_CONTENT_LENGTH=64 * 1024).post("/sync", json=body).get_json()
    assert small["children"] == []
    assert (
        "(MXJOB_MAX_BODY_BYTES): nothing is created" in small["status"]["conditions"][-1]["message"]
    )
    large = make_client(MAX_CONTENT_LENGTH=MIB).post("/sync", json=body).get_json()
    assert len([c for c in large["children"] if c["kind"] == "Pod"]) == 4


def test_a_job_within_the_budget_has_room_for_its_first_pods_however_large_its_spec(
    make_client: Any,
) -> None:
    """A job of three 40 KB templates whose estimate is the budget, under a body limit of
    RETURNED budgets: its first request (the job alone, its spec, kubectl's copy of it) leaves
    less than RETURNED times its pods, but the job's own share of what comes back is in
    RETURNED already, so every pod is made."""
    big = {"Scheduler": replica(1, command=["x" * 40_000])}
    big |= {rtype: replica(1, command=["y" * 40_000]) for rtype in ("Server", "Worker")}
    job = mxjob(replicas=big)
    job["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "z" * 120_000
    }
    limit = sum(budget.estimate(_job(parse_request(request(job)))).values())
    client = make_client(MAX_CONTENT_LENGTH=limit * budget.RETURNED, MAX_ANSWER_BYTES=limit)
    answer = client.post("/sync", json=request(job)).get_json()
    assert len([c for c in answer["children"] if c["kind"] == "Pod"]) == 3
    assert "held" not in answer["status"]["conditions"][-1]["message"]


@pytest.mark.usefixtures("default_recursion_limit")
def test_a_job_nested_too_deep_to_measure_is_held_for_want_of_room_not_a_500() -> None:
    """The job's own share is measured only when its new children do not fit without it; a
    status nested 1000 levels deep (which the hook reads as none) is not measured, and the
    job gets no room back (the fuzz campaign's deep parent status found the 500)."""
    job = mxjob(replicas={"Worker": replica(2)}, status={"conditions": deep(1000)})
    crowded = sync(parse_request(request(job)), NOW, room=1024)
    assert crowded.children == []
    assert (
        "(MXJOB_MAX_BODY_BYTES): nothing is created" in crowded.status["conditions"][-1]["message"]
    )

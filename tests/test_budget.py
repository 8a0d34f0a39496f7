"""The answer budget (hooks/core/budget.py): the estimate bounds the real answer, a job over the
budget fails naming its size and the limit, the budget follows the body and memory limits, and
the CRD's floor of the answer stays below the real one and names the same ceiling."""

import copy
import re
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks import app, wire
from hooks.core import budget
from hooks.core.budget import CEILING, MIB
from hooks.core.request import parse_request
from hooks.core.sync import sync
from tests.builders import CONTROLLER, NOW, mxjob, request
from tests.manifest_support import cel_holds, mxjob_schema
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
        (256 * MIB, None, 1, 64 * MIB),  # `make run`: a quarter of the default body limit
        (128 * MIB, 3 * 1024 * MIB, 2, 32 * MIB),  # the manifests: the body limit binds
        (128 * MIB, 512 * MIB, 2, 8 * MIB),  # a smaller pod: its memory binds
        (128 * MIB, 512 * MIB, 0, 16 * MIB),  # no workers read: one
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
        ({}, 64 * MIB),
        ({"MXJOB_MAX_BODY_BYTES": str(128 * MIB)}, 32 * MIB),
        ({"MXJOB_MEMORY_LIMIT_BYTES": str(3 * 1024 * MIB), "WEB_CONCURRENCY": "4"}, 24 * MIB),
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
    """A job of either mode: any replicas, containers with names and images of any length, a
    command of any size, with or without a gang scheduler and a queue."""
    tune = draw(st.booleans())
    types = ("TunerTracker", "TunerServer", "Tuner") if tune else ("Scheduler", "Server", "Worker")
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
def test_the_estimate_bounds_the_first_answer_closely(job: Json, gang: str | None) -> None:
    """Every pod is created at the first sync (with scheduler-plugins too; Volcano waits for
    its PodGroup), so its answer is what the estimate is of: a budget one byte smaller refuses
    the job, one a tenth (and 8 KiB for the status and the fixed children) larger does not."""
    body = request(job, controller=controller(gang))
    answer = len(wire.encode(sync(parse_request(copy.deepcopy(body)), NOW).to_json()))
    below = sync(parse_request(copy.deepcopy(body)), NOW, max_answer_bytes=answer - 1)
    assert below.status["conditions"][-1]["reason"] == "MXJobInvalidSpec"
    above = sync(parse_request(body), NOW, max_answer_bytes=answer + answer // 10 + 8192)
    assert not above.invalid


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

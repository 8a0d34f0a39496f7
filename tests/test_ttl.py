"""The TTL controller (`mxjob/ttl/`) and its kustomize Component
(docs/run-policy.md#ttlsecondsafterfinished).

The decision (`mxjob.ttl.expiry.decide`) is tested as tables and properties. The loop
(`mxjob.ttl.controller.run_once`) runs against a thin in-memory stand-in for the four
`CustomObjectsApi` calls that keeps the API server's delete semantics (404 when absent, 409 when
a precondition fails); its behaviour against a real API server is the end-to-end tier's job.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import V1DeleteOptions
from kubernetes.client.exceptions import ApiException

from hooks.logs import JsonFormatter
from mxjob.component import kube
from mxjob.component.ref import JobRef
from mxjob.ttl import __main__ as cli
from mxjob.ttl import controller
from mxjob.ttl.controller import run_once, sleep_seconds
from mxjob.ttl.expiry import Action, Decision, decide
from tests.manifest_support import kustomize_command, policy_admits
from tests.required import unavailable

REPO = Path(__file__).resolve().parent.parent
COMPONENT = REPO / "manifests" / "components" / "ttl-controller"
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(ctype: str, status: str = "True", seconds: float = 0) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": f"MXJob{ctype}",
        "message": "",
        "lastUpdateTime": stamp(seconds),
        "lastTransitionTime": stamp(seconds),
    }


def mxjob(
    name: str = "train",
    *,
    namespace: str = "team-a",
    uid: str | None = None,
    resource_version: str = "1",
    conditions: list[dict[str, Any]] | None = None,
    completion: str | None = None,
    ttl: object = None,
    inline_ttl: object = None,
) -> dict[str, Any]:
    """An MXJob as the API server returns it; `ttl` goes to runPolicy, `inline_ttl` to spec."""
    spec: dict[str, Any] = {"mxReplicaSpecs": {"Worker": {"replicas": 1}}}
    if ttl is not None:
        spec["runPolicy"] = {"ttlSecondsAfterFinished": ttl}
    if inline_ttl is not None:
        spec["ttlSecondsAfterFinished"] = inline_ttl
    status: dict[str, Any] = {"conditions": conditions or []}
    if completion is not None:
        status["completionTime"] = completion
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": resource_version,
        },
        "spec": spec,
        "status": status,
    }


def succeeded(seconds: float = 0, completion: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """A job that succeeded `seconds` after T0 (completionTime and condition agree by default)."""
    return mxjob(
        conditions=[condition("Created", seconds=-60), condition("Succeeded", seconds=seconds)],
        completion=stamp(seconds) if completion is None else completion,
        **kwargs,
    )


# --- the decision -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    reason: str
    job: object
    now: datetime
    action: Action
    at: datetime | None = None
    malformed: bool = False
    says: str = ""


def refused(seconds: float) -> dict[str, Any]:
    """The Failed condition of a job the hook refused, dated by the spec's last change."""
    return {**condition("Failed", seconds=seconds), "reason": "MXJobInvalidSpec"}


def running_job() -> dict[str, Any]:
    return mxjob(conditions=[condition("Created"), condition("Running")], ttl=0)


CASES = [
    Case(
        "a running job is never deleted, even with TTL 0",
        running_job(),
        at(10**6),
        Action.NEVER,
        says="not finished",
    ),
    Case(
        "a job without status is not finished",
        {**mxjob(ttl=0), "status": None},
        at(9),
        Action.NEVER,
        says="not finished",
    ),
    Case("Succeeded, TTL passed", succeeded(ttl=60), at(61), Action.DELETE, at(60)),
    Case("Succeeded, exactly at expiry", succeeded(ttl=60), at(60), Action.DELETE, at(60)),
    Case(
        "Failed, TTL passed",
        mxjob(conditions=[condition("Failed", seconds=5)], completion=stamp(5), ttl=10),
        at(100),
        Action.DELETE,
        at(15),
    ),
    Case("TTL 0: deleted as soon as finished", succeeded(ttl=0), at(0), Action.DELETE, at(0)),
    Case(
        "refused by the hook while its pods may still run (no completionTime): never",
        mxjob(conditions=[refused(seconds=-(10**6))], ttl=3600),
        at(10**6),
        Action.NEVER,
        says="MXJobInvalidSpec",
    ),
    Case(
        "refused by the hook, its pods ended: counted from the completionTime the hook gave",
        mxjob(conditions=[refused(seconds=-(10**6))], completion=stamp(100), ttl=3600),
        at(3600),
        Action.RECHECK,
        at(3700),
    ),
    Case(
        "not yet: recheck at the exact expiry",
        succeeded(ttl=60),
        at(59),
        Action.RECHECK,
        at(60),
        says="expires at 2026-03-01T12:01:00Z",
    ),
    Case("no TTL: never", succeeded(), at(10**6), Action.NEVER, says="no ttlSecondsAfterFinished"),
    Case(
        "an empty runPolicy has no TTL",
        {**succeeded(), "spec": {"runPolicy": {}}},
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "inline layout (kubeflow/mxnet-operator v1)",
        succeeded(inline_ttl=30),
        at(30),
        Action.DELETE,
        at(30),
    ),
    Case(
        "runPolicy wins over the inline layout",
        succeeded(ttl=100, inline_ttl=30),
        at(30),
        Action.RECHECK,
        at(100),
    ),
    Case(
        "completionTime missing: the terminal condition's lastTransitionTime",
        mxjob(
            conditions=[condition("Running", seconds=1), condition("Failed", seconds=40)], ttl=20
        ),
        at(59),
        Action.RECHECK,
        at(60),
    ),
    Case(
        "completionTime preferred over the condition time",
        mxjob(conditions=[condition("Succeeded", seconds=40)], completion=stamp(30), ttl=20),
        at(50),
        Action.DELETE,
        at(50),
    ),
    Case(
        "completionTime with fractional seconds and an offset",
        succeeded(ttl=10, completion="2026-03-01T13:00:00.75+01:00"),
        at(10),
        Action.DELETE,
        at(10),
    ),
    Case(
        "Failed=False is not finished",
        mxjob(conditions=[condition("Failed", "False")], completion=stamp(0), ttl=0),
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "Succeeded=False is not finished",
        mxjob(conditions=[condition("Succeeded", "False")], completion=stamp(0), ttl=0),
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "Succeeded=Unknown is not finished",
        mxjob(conditions=[condition("Succeeded", "Unknown")], ttl=0),
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "condition types are exact: 'succeeded' is not terminal",
        mxjob(conditions=[condition("succeeded")], completion=stamp(0), ttl=0),
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "only Succeeded and Failed are terminal: Suspended is not",
        mxjob(conditions=[condition("Suspended")], completion=stamp(0), ttl=0),
        at(10**6),
        Action.NEVER,
    ),
    Case(
        "already being deleted",
        {**succeeded(ttl=0), "metadata": {"name": "x", "deletionTimestamp": stamp(1)}},
        at(100),
        Action.NEVER,
        says="already being deleted",
    ),
    Case(
        "naive `now` is taken as UTC",
        succeeded(ttl=60),
        at(60).replace(tzinfo=None),
        Action.DELETE,
        at(60),
    ),
]

MALFORMED = [
    Case("not an object", ["MXJob"], at(0), Action.NEVER, says="not a JSON object"),
    Case(
        "status is a string",
        {**succeeded(ttl=0), "status": "Succeeded"},
        at(9),
        Action.NEVER,
        says="status is a str",
    ),
    Case(
        "conditions is an object",
        {**succeeded(ttl=0), "status": {"conditions": {"type": "Succeeded"}}},
        at(9),
        Action.NEVER,
        says="status.conditions is not a list",
    ),
    Case(
        "a condition is a string",
        mxjob(conditions=["Succeeded", condition("Succeeded")], ttl=0),  # type: ignore[list-item]
        at(9),
        Action.NEVER,
        says="status.conditions[0]",
    ),
    Case("spec is a list", {**succeeded(), "spec": []}, at(9), Action.NEVER, says="spec is a list"),
    Case(
        "runPolicy is a list",
        {**succeeded(), "spec": {"runPolicy": [60]}},
        at(9),
        Action.NEVER,
        says="runPolicy is a list",
    ),
    Case(
        "TTL is a string",
        succeeded(ttl="60"),
        at(10**6),
        Action.NEVER,
        says="spec.runPolicy.ttlSecondsAfterFinished is '60'",
    ),
    Case("TTL is a boolean", succeeded(ttl=True), at(10**6), Action.NEVER),
    Case("TTL is a float", succeeded(ttl=1.5), at(10**6), Action.NEVER),
    Case(
        "TTL is negative",
        succeeded(inline_ttl=-1),
        at(10**6),
        Action.NEVER,
        says="spec.ttlSecondsAfterFinished is -1",
    ),
    Case(
        "completionTime unreadable (no fallback: a wrong time must not delete early)",
        succeeded(ttl=0, completion="yesterday"),
        at(10**6),
        Action.NEVER,
        says="status.completionTime is 'yesterday'",
    ),
    Case(
        "finished with no time at all",
        mxjob(conditions=[{"type": "Failed", "status": "True"}], ttl=0),
        at(10**6),
        Action.NEVER,
        says="the Failed condition's lastTransitionTime is missing",
    ),
]


def _check(case: Case) -> None:
    got = decide(case.job, case.now)
    assert isinstance(got, Decision)
    assert (got.action, got.at, got.malformed) == (case.action, case.at, case.malformed), (
        f"{case.reason}: got {got}"
    )
    assert case.says in got.reason, f"{case.reason}: {got.reason!r} lacks {case.says!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_decide(case: Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", MALFORMED, ids=[c.reason for c in MALFORMED])
def test_malformed_jobs_are_never_deleted(case: Case) -> None:
    _check(Case(**{**case.__dict__, "malformed": True}))


def test_huge_ttl_is_never() -> None:
    got = decide(succeeded(ttl=10**18), at(10**6))
    assert got.action is Action.NEVER
    assert "year 9999" in got.reason


CONDITION_TYPES = ["Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed", "x"]
conditions_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(CONDITION_TYPES),
            "status": st.sampled_from(["True", "False", "Unknown", "true", ""]),
        },
        optional={"lastTransitionTime": st.integers(-(10**6), 10**6).map(stamp)},
    ),
    max_size=6,
)
ttl_strategy = st.one_of(st.none(), st.integers(-5, 10**7), st.text(max_size=3), st.booleans())
now_strategy = st.integers(-(10**6), 10**9).map(at)


@given(conditions_strategy, st.one_of(st.none(), st.text(max_size=25)), ttl_strategy,
       ttl_strategy, now_strategy)  # fmt: skip
def test_a_job_without_a_true_terminal_condition_is_never_deleted(
    conditions: list[dict[str, Any]],
    completion: str | None,
    ttl: object,
    inline_ttl: object,
    now: datetime,
) -> None:
    unfinished = [
        c
        for c in conditions
        if not (c["type"] in ("Succeeded", "Failed") and c["status"] == "True")
    ]
    job = mxjob(conditions=unfinished, completion=completion, ttl=ttl, inline_ttl=inline_ttl)
    assert decide(job, now).action is Action.NEVER


@given(st.integers(0, 10**7), st.integers(-(10**6), 10**6), now_strategy,
       st.sampled_from(["Succeeded", "Failed"]))  # fmt: skip
def test_a_finished_job_is_deleted_exactly_once_its_ttl_has_passed(
    ttl: int, finished: int, now: datetime, terminal: str
) -> None:
    job = mxjob(conditions=[condition(terminal, seconds=finished)], ttl=ttl)
    got = decide(job, now)
    assert got.at == at(finished + ttl)
    assert got.action is (Action.DELETE if now >= at(finished + ttl) else Action.RECHECK)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "metadata": json_values,
            "spec": st.one_of(json_values, st.fixed_dictionaries({"runPolicy": json_values})),
            "status": st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {"conditions": json_values}, optional={"completionTime": json_values}
                ),
            ),
        },
    ),
    now_strategy,
)
def test_decide_never_raises_and_deletes_only_true_terminal_jobs(
    job: dict[str, Any], now: datetime
) -> None:
    got = decide(job, now)
    if got.action is Action.DELETE:
        conditions = job["status"]["conditions"]
        assert any(
            c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions
        )


# --- the loop ---------------------------------------------------------------------------------


def api_error(status: int) -> ApiException:
    return ApiException(status=status, reason={404: "Not Found", 409: "Conflict"}.get(status, "X"))


@dataclass
class FakeCustomObjects:
    """In-memory MXJobs behind the four calls `mxjob.ttl.controller` makes.

    Deletes follow the API server: 404 when the object is absent, 409 when the uid or
    resourceVersion precondition does not match. `listed` replaces what a list returns (a stale
    cache); `before_delete` runs just before a delete lands (a race); `delete_error` fails it.
    """

    jobs: list[dict[str, Any]]
    listed: list[dict[str, Any]] | None = None
    before_delete: Callable[[], None] | None = None
    delete_error: int | None = None
    calls: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    deletes: list[dict[str, Any]] = field(default_factory=list)

    def _find(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next(
            (j for j in self.jobs if (j["metadata"]["namespace"], j["metadata"]["name"])
             == (namespace, name)),
            None,
        )  # fmt: skip

    def _page(self, namespace: str | None, limit: int | None, token: str | None) -> object:
        """Like etcd: in key order, continuing after the last key returned."""

        def key(job: dict[str, Any]) -> str:
            return f"{job['metadata']['namespace']}/{job['metadata']['name']}"

        items = sorted(
            (j for j in (self.jobs if self.listed is None else self.listed)
             if namespace in (None, j["metadata"]["namespace"]) and key(j) > (token or "")),
            key=key,
        )  # fmt: skip
        page = items if limit is None else items[:limit]
        more = {"continue": key(page[-1])} if len(page) < len(items) else {}
        return {"kind": "MXJobList", "metadata": more, "items": page}

    def list_cluster_custom_object(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        limit: int | None = None,
        _continue: str | None = None,
        _request_timeout: int | None = None,
    ) -> object:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        self.calls.append(("list", None, _continue))
        return self._page(None, limit, _continue)

    def list_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        *,
        limit: int | None = None,
        _continue: str | None = None,
        _request_timeout: int | None = None,
    ) -> object:
        assert (group, version, plural) == ("kubeflow.org", "v1", "mxjobs")
        self.calls.append(("list", namespace, _continue))
        return self._page(namespace, limit, _continue)

    def get_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        *,
        _request_timeout: int | None = None,
    ) -> object:
        self.calls.append(("get", namespace, name))
        found = self._find(namespace, name)
        if found is None:
            raise api_error(404)
        return found

    def delete_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        *,
        body: V1DeleteOptions | None = None,
        _request_timeout: int | None = None,
    ) -> object:
        self.calls.append(("delete", namespace, name))
        assert body is not None
        options = body.model_dump(by_alias=True, exclude_none=True)  # the JSON on the wire
        self.deletes.append(options)
        if self.before_delete is not None:
            self.before_delete()
        if self.delete_error is not None:
            raise api_error(self.delete_error)
        found = self._find(namespace, name)
        if found is None:
            raise api_error(404)
        pre = options.get("preconditions", {})
        meta = found["metadata"]
        if pre.get("uid") not in (None, meta["uid"]) or pre.get("resourceVersion") not in (
            None,
            meta["resourceVersion"],
        ):
            raise api_error(409)
        self.jobs.remove(found)
        return {"kind": "Status", "status": "Success"}


def ref(job: dict[str, Any]) -> JobRef:
    meta = job["metadata"]
    return JobRef(meta["namespace"], meta["name"], meta["uid"])


def test_an_expired_job_is_read_again_then_deleted_with_preconditions() -> None:
    job = succeeded(ttl=60, resource_version="42")
    api = FakeCustomObjects([job])
    sweep = run_once(api, at(61))
    assert sweep.deleted == [ref(job)]
    assert (sweep.recheck_at, sweep.errors) == (None, 0)
    assert api.calls == [("list", None, None), ("get", "team-a", "train"),
                         ("delete", "team-a", "train")]  # fmt: skip
    assert api.deletes == [
        {
            "propagationPolicy": "Background",
            "preconditions": {"uid": "uid-team-a-train", "resourceVersion": "42"},
        }
    ]
    assert api.jobs == []


def test_unexpired_running_and_ttl_less_jobs_are_not_touched() -> None:
    jobs = [
        succeeded(ttl=600, name="later"),
        succeeded(ttl=120, name="sooner"),
        {**running_job(), "metadata": {**running_job()["metadata"], "name": "running"}},
        succeeded(name="forever"),
    ]
    api = FakeCustomObjects(list(jobs))
    sweep = run_once(api, at(60))
    assert sweep.deleted == []
    assert sweep.recheck_at == at(120)
    assert api.calls == [("list", None, None)]
    assert api.jobs == jobs


def test_a_stale_list_is_checked_against_a_fresh_get() -> None:
    # Listed: the old job, finished and expired. Stored now: a job re-created under its name.
    old = succeeded(ttl=0, uid="old")
    new = mxjob(uid="new", conditions=[condition("Running")], ttl=0)
    api = FakeCustomObjects([new], listed=[old])
    sweep = run_once(api, at(100))
    assert sweep.deleted == []
    assert sweep.errors == 0
    assert [c[0] for c in api.calls] == ["list", "get"]
    assert api.jobs == [new]


def test_a_ttl_raised_since_the_list_is_honoured() -> None:
    listed = succeeded(ttl=10)
    stored = succeeded(ttl=3600, resource_version="2")
    api = FakeCustomObjects([stored], listed=[listed])
    sweep = run_once(api, at(100))
    assert sweep.deleted == []
    assert sweep.recheck_at == at(3600)
    assert api.jobs == [stored]


def test_a_job_gone_before_the_get_is_skipped_quietly() -> None:
    api = FakeCustomObjects([], listed=[succeeded(ttl=0)])
    sweep = run_once(api, at(100))
    assert (sweep.deleted, sweep.errors) == ([], 0)
    assert [c[0] for c in api.calls] == ["list", "get"]


def test_a_job_gone_before_the_delete_is_skipped_quietly() -> None:
    api = FakeCustomObjects([succeeded(ttl=0)])
    api.before_delete = api.jobs.clear
    sweep = run_once(api, at(100))
    assert (sweep.deleted, sweep.errors) == ([], 0)


def test_a_job_recreated_between_get_and_delete_survives() -> None:
    api = FakeCustomObjects([succeeded(ttl=0)])
    recreated = mxjob(uid="second", conditions=[condition("Created")], ttl=0)

    def recreate() -> None:
        api.jobs[:] = [recreated]

    api.before_delete = recreate
    sweep = run_once(api, at(100))
    assert (sweep.deleted, sweep.errors) == ([], 0)
    assert sweep.recheck_at == at(100), "a conflict is judged again on the next pass"
    assert api.jobs == [recreated]


def test_a_job_changed_between_get_and_delete_survives() -> None:
    api = FakeCustomObjects([succeeded(ttl=0)])

    def touch() -> None:
        api.jobs[0]["metadata"]["resourceVersion"] = "2"

    api.before_delete = touch
    sweep = run_once(api, at(100))
    assert (sweep.deleted, sweep.errors) == ([], 0)
    assert len(api.jobs) == 1


def test_a_failed_delete_is_counted_and_the_pass_goes_on() -> None:
    api = FakeCustomObjects([succeeded(ttl=0, name="a"), succeeded(ttl=0, name="b")])
    api.delete_error = 403
    sweep = run_once(api, at(100))
    assert (sweep.deleted, sweep.errors) == ([], 2)
    assert [c[0] for c in api.calls] == ["list", "get", "delete", "get", "delete"]


def test_a_job_with_a_moment_outside_the_utc_years_stops_no_other_job() -> None:
    """Once an OverflowError that ended every pass at this job: the jobs listed after it
    were never deleted (issue 29)."""
    api = FakeCustomObjects(
        [succeeded(ttl=0, name="a", completion="0001-01-01T00:00:00+01:00"), succeeded(ttl=0)]
    )
    sweep = run_once(api, at(100))
    assert [r.name for r in sweep.deleted] == ["train"]
    assert [j["metadata"]["name"] for j in api.jobs] == ["a"]


def test_a_job_that_cannot_be_read_again_stops_no_other_job(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any failure on one job (here a read that times out) is logged with the job and counted;
    the pass goes on with the others."""

    class Stalled(FakeCustomObjects):
        def get_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> object:
            if args[-1] == "a":
                raise TimeoutError("read timed out")
            return super().get_namespaced_custom_object(*args, **kwargs)

    api = Stalled([succeeded(ttl=0, name="a"), succeeded(ttl=0)])
    with caplog.at_level(logging.ERROR, logger="ttl"):
        sweep = run_once(api, at(100))
    assert ([r.name for r in sweep.deleted], sweep.errors) == (["train"], 1)
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert (line["name"], line["action"]) == ("a", "error")
    assert "read timed out" in line["error"]


def test_one_namespace_and_every_page() -> None:
    jobs = [succeeded(ttl=0, name=f"j{i}", namespace=ns) for i in range(3) for ns in ("a", "b")]
    api = FakeCustomObjects(list(jobs))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kube, "PAGE_SIZE", 2)
        sweep = run_once(api, at(100), namespace="b")
    assert sweep.deleted == [ref(j) for j in jobs if j["metadata"]["namespace"] == "b"]
    assert [c for c in api.calls if c[0] == "list"] == [
        ("list", "b", None),
        ("list", "b", "b/j1"),
    ]
    assert {j["metadata"]["namespace"] for j in api.jobs} == {"a"}


def test_a_listed_object_without_identity_is_skipped() -> None:
    nameless = succeeded(ttl=0)
    del nameless["metadata"]["uid"]
    api = FakeCustomObjects([nameless])
    assert run_once(api, at(100)).deleted == []
    assert [c[0] for c in api.calls] == ["list"]


def test_log_lines_carry_the_job_and_the_action(caplog: pytest.LogCaptureFixture) -> None:
    api = FakeCustomObjects([succeeded(ttl=0, name="old"), succeeded(ttl=600, name="young"),
                             succeeded(ttl="soon", name="bad")])  # fmt: skip
    with caplog.at_level(logging.DEBUG, logger="ttl"):
        run_once(api, at(100))
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    by_name = {line["name"]: line for line in lines}
    assert set(by_name) == {"old", "young", "bad"}
    for line in lines:
        assert set(line) >= {"time", "level", "message", "namespace", "name", "uid", "action"}
    assert (by_name["old"]["level"], by_name["old"]["action"]) == ("info", "delete")
    assert (by_name["young"]["level"], by_name["young"]["action"]) == ("debug", "recheck")
    assert (by_name["bad"]["level"], by_name["bad"]["action"]) == ("warning", "never")
    assert "ttlSecondsAfterFinished is 'soon'" in by_name["bad"]["reason"]
    assert by_name["old"]["time"].endswith("Z")


@pytest.mark.parametrize(
    ("recheck_at", "want"),
    [(None, 30.0), (at(10), 10.0), (at(0.2), 1.0), (at(-5), 1.0), (at(3600), 30.0)],
)
def test_sleep_until_the_next_expiry_within_bounds(
    recheck_at: datetime | None, want: float
) -> None:
    assert sleep_seconds(recheck_at, at(0), 30.0) == want


def test_the_loop_survives_a_failed_pass_and_stops_on_request() -> None:
    stop = threading.Event()
    api = FakeCustomObjects([succeeded(ttl=0)])
    passes = 0

    class Flaky(FakeCustomObjects):
        def list_cluster_custom_object(self, *args: Any, **kwargs: Any) -> object:
            nonlocal passes
            passes += 1
            if passes == 1:
                raise ConnectionError("API server unreachable")
            stop.set()
            return super().list_cluster_custom_object(*args, **kwargs)

    flaky = Flaky(api.jobs)
    worker = threading.Thread(target=controller.run, args=(flaky, 0.01, stop))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert passes == 2
    assert flaky.jobs == []


# --- the command line -------------------------------------------------------------------------


def test_flags_default_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTL_INTERVAL_SECONDS", "5")
    monkeypatch.setenv("TTL_NAMESPACE", "team-a")
    monkeypatch.setenv("KUBECONFIG", "/tmp/kc")
    args = cli.parse_args([])
    assert (args.interval, args.namespace, args.kubeconfig, args.once) == (
        5.0, "team-a", "/tmp/kc", False)  # fmt: skip
    args = cli.parse_args(["--interval", "2", "--namespace", "x", "--kubeconfig", "k", "--once"])
    assert (args.interval, args.namespace, args.kubeconfig, args.once) == (2.0, "x", "k", True)
    monkeypatch.setenv("TTL_NAMESPACE", "")
    assert cli.parse_args([]).namespace is None


def test_a_bad_log_level_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_LEVEL", "loud")
    assert cli.main(["--once", "--kubeconfig", "/nonexistent"]) == 2


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig naming a closed local port: every call fails fast with a connection error."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def ttl_process(tmp_path: Path, *args: str) -> "subprocess.Popen[str]":
    """`python -m mxjob.ttl` against an unreachable API server, logging at debug."""
    env = {**os.environ, "LOG_LEVEL": "debug", "PYTHONPATH": str(REPO)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    kubeconfig = str(unreachable_kubeconfig(tmp_path))
    return subprocess.Popen(
        [sys.executable, "-m", "mxjob.ttl", "--kubeconfig", kubeconfig, *args],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_once_exits_1_when_the_api_server_is_unreachable(tmp_path: Path) -> None:
    proc = ttl_process(tmp_path, "--once")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    line = [json.loads(line) for line in err.splitlines()][-1]  # after urllib3's retry warnings
    assert (line["level"], line["action"], line["message"]) == ("error", "error", "pass failed")


def test_the_process_logs_json_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc = ttl_process(tmp_path, "--interval", "0.2")
    assert proc.stderr is not None
    lines = []
    while line := proc.stderr.readline():
        lines.append(json.loads(line))
        if lines[-1]["message"].startswith("pass failed"):
            break
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 0
    lines += [json.loads(line) for line in rest.splitlines()]
    assert lines[0]["action"] == "start"
    assert any(line["level"] == "error" and "error" in line for line in lines)
    assert lines[-1]["message"] == "stopped"


# --- the kustomize Component ------------------------------------------------------------------


def schema_version() -> str:
    versions: list[str] = kubernetes_validate.utils.all_versions()
    return next((v for v in versions if v.startswith("1.36.")), versions[-1])


def component_objects() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
    assert kustomization["kind"] == "Component"
    return [
        doc
        for name in kustomization["resources"]
        for doc in yaml.safe_load_all((COMPONENT / name).read_text())
        if doc
    ]


def build_with_kustomize(tmp_path: Path) -> list[dict[str, Any]]:
    """Build an overlay that only adds the component, as a user's overlay would."""
    command = kustomize_command()
    if command is None:
        unavailable("neither kustomize nor kubectl is installed")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "components": [os.path.relpath(COMPONENT, overlay)],
            }
        )
    )
    built = subprocess.run(
        [*command, str(overlay)], capture_output=True, text=True, check=False, timeout=120
    )
    assert built.returncode == 0, built.stderr
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = {o["kind"]: o for o in objects}
    assert len(kinds) == len(objects), "one object of each kind"
    return kinds


def test_kustomize_builds_the_component_into_valid_objects(tmp_path: Path) -> None:
    built = build_with_kustomize(tmp_path)
    assert by_kind(built).keys() == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                     "Deployment", "ValidatingAdmissionPolicy",
                                     "ValidatingAdmissionPolicyBinding"}  # fmt: skip
    assert sorted(built, key=lambda o: o["kind"]) == sorted(
        component_objects(), key=lambda o: o["kind"]
    )
    for obj in built:
        kubernetes_validate.validate(obj, schema_version(), strict=True)


@pytest.mark.parametrize("obj", component_objects(), ids=lambda o: o["kind"])
def test_each_object_is_valid_strictly(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, schema_version(), strict=True)


def test_rbac_grants_only_get_list_delete_on_mxjobs() -> None:
    kinds = by_kind(component_objects())
    assert kinds["ClusterRole"]["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mxjobs"],
            "verbs": ["get", "list", "delete"],
        }
    ]
    binding = kinds["ClusterRoleBinding"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": kinds["ClusterRole"]["metadata"]["name"],
    }
    account = kinds["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": "mxjob-system"}
    ]
    assert account["namespace"] == "mxjob-system"


#: The TTL controller's account, as the component's Deployment runs it.
TTL_ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-ttl-controller"


def admitted(job: object, username: str = TTL_ACCOUNT) -> bool:
    """Whether the component's ValidatingAdmissionPolicy lets `username` delete `job`, as the
    API server evaluates it (cel-python: tests/manifest_support.py)."""
    kinds = by_kind(component_objects())
    policy = kinds["ValidatingAdmissionPolicy"]["spec"]
    binding = kinds["ValidatingAdmissionPolicyBinding"]["spec"]
    assert binding == {"policyName": policy_name(), "validationActions": ["Deny"]}
    assert policy["failurePolicy"] == "Fail"
    (rule,) = policy["matchConstraints"]["resourceRules"]
    assert (rule["resources"], rule["operations"]) == (["mxjobs"], ["DELETE"])
    request = {"operation": "DELETE", "userInfo": {"username": username}}
    return policy_admits(policy, request, oldObject=job)


def policy_name() -> str:
    return str(by_kind(component_objects())["ValidatingAdmissionPolicy"]["metadata"]["name"])


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_the_policy_admits_every_delete_the_loop_decides(case: Case) -> None:
    """The policy never stands in the TTL's way: every job it decides to delete is admitted."""
    if decide(case.job, case.now).action is Action.DELETE:
        assert admitted(case.job)


@pytest.mark.parametrize(
    ("job", "why"),
    [
        (running_job(), "running"),
        (succeeded(ttl=None), "finished, with no TTL"),
        (mxjob(conditions=[condition("Created"), refused(0)], ttl=0), "refused, pods may run"),
        (mxjob(conditions=[condition("Succeeded", status="False")], ttl=0), "not finished"),
        ({"spec": {"runPolicy": {"ttlSecondsAfterFinished": 0}}}, "no status"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_stolen_ttl_token_cannot_delete_a_job_the_loop_would_keep(
    job: dict[str, Any], why: str
) -> None:
    """Once RBAC alone stood between its token and every MXJob of the cluster (and their
    pods): now the API server refuses its delete of any job not finished with a TTL."""
    assert decide(job, T0 + timedelta(days=10**4)).action is Action.NEVER, why
    assert not admitted(job), why
    assert admitted(job, username="system:serviceaccount:team-a:someone")  # only its account
    assert TTL_ACCOUNT.endswith(
        ":" + by_kind(component_objects())["ServiceAccount"]["metadata"]["name"]
    )


def test_the_deployment_runs_the_ttl_loop_locked_down() -> None:
    kinds = by_kind(component_objects())
    deployment = kinds["Deployment"]
    assert deployment["metadata"]["namespace"] == "mxjob-system"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod["containers"]
    assert container["command"] == ["python", "-m", "mxjob.ttl"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert set(container["resources"]) == {"requests", "limits"}
    assert {e["name"] for e in container["env"]} >= {"TTL_INTERVAL_SECONDS", "LOG_LEVEL"}

"""`GET /metrics`: outcomes read from the hook's answer, counters per call, and multiprocess
mode under gunicorn (every worker's counts in every scrape, dead workers included)."""

import json
import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from prometheus_client import REGISTRY

from hooks import metrics
from hooks.app import create_app
from tests import conversion_cases
from tests.builders import created, mxjob, replica, request, run, running, terminated
from testsupport.server import Server, serve

JSON = "application/json"


def condition(ctype: str, status: str = "True", reason: str = "") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason or f"MXJob{ctype}"}


OUTCOMES: list[tuple[str, dict[str, Any], bool, str]] = [
    ("no-status", {}, False, "created"),
    ("created", {"conditions": [condition("Created")]}, False, "created"),
    (
        "running-last",
        {"conditions": [condition("Created"), condition("Running")]},
        False,
        "running",
    ),
    (
        "last-true-wins",
        {"conditions": [condition("Running"), condition("Suspended", "False")]},
        False,
        "running",
    ),
    ("restarting", {"conditions": [condition("Restarting")]}, False, "restarting"),
    ("suspended", {"conditions": [condition("Suspended")]}, False, "suspended"),
    (
        "succeeded",
        {"conditions": [condition("Running", "False"), condition("Succeeded")]},
        False,
        "succeeded",
    ),
    (
        "failed",
        {"conditions": [condition("Failed", reason="BackoffLimitExceeded")]},
        False,
        "failed",
    ),
    (
        "invalid-reason",
        {"conditions": [condition("Failed", reason="MXJobInvalidSpec")]},
        False,
        "invalid",
    ),
    ("invalid-flag", {"conditions": [condition("Created")]}, True, "invalid"),
    ("garbage", {"conditions": "x"}, False, "created"),
    ("garbage-items", {"conditions": [1, None, {"status": "True"}]}, False, "created"),
]


@pytest.mark.parametrize(
    ("status", "invalid", "want"), [c[1:] for c in OUTCOMES], ids=[c[0] for c in OUTCOMES]
)
def test_outcome_of_a_status(status: dict[str, Any], invalid: bool, want: str) -> None:
    assert metrics.outcome(status, invalid=invalid) == want


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _lifecycle() -> dict[str, tuple[dict[str, Any], str]]:
    job = mxjob()
    first = [created(c) for c in run(request(job)).children]
    live = [running(c) if c["kind"] == "Pod" else c for c in first]
    previous = run(request(job, live)).status
    done = [terminated(c, 0) if c["kind"] == "Pod" else c for c in live]
    return {
        "created": (request(job), "created"),
        "running": (request(mxjob(status=previous), live), "running"),
        "succeeded": (request(mxjob(status=previous), done), "succeeded"),
        "invalid": (request(mxjob(replicas={"Server": replica(1)})), "invalid"),
        "suspended": (request(mxjob(run_policy={"suspend": True})), "suspended"),
    }


LIFECYCLE = _lifecycle()


@pytest.mark.parametrize("case", LIFECYCLE, ids=str)
def test_each_sync_is_counted_by_outcome(client: FlaskClient, case: str) -> None:
    body, outcome = LIFECYCLE[case]
    data = json.dumps(body).encode()
    labels = {"hook": "sync", "outcome": outcome}
    count = sample("mxjob_hook_syncs_total", **labels)
    durations = sample("mxjob_hook_sync_duration_seconds_count", hook="sync")
    size = sample("mxjob_hook_request_bytes_sum", hook="sync")
    invalid = sample("mxjob_hook_invalid_specs_total")
    answer = client.post("/sync", data=data, content_type=JSON)
    assert answer.status_code == 200
    assert sample("mxjob_hook_syncs_total", **labels) == count + 1
    assert sample("mxjob_hook_sync_duration_seconds_count", hook="sync") == durations + 1
    assert sample("mxjob_hook_request_bytes_sum", hook="sync") == size + len(data)
    assert sample("mxjob_hook_invalid_specs_total") == invalid + (outcome == "invalid")


@pytest.mark.parametrize(
    ("data", "content_type"),
    [(b"{", JSON), (b"[]", JSON), (b"{}", "text/plain")],
    ids=["malformed", "not-sync", "content-type"],
)
def test_refused_requests_are_counted_as_rejected(
    client: FlaskClient, data: bytes, content_type: str
) -> None:
    before = sample("mxjob_hook_syncs_total", hook="sync", outcome="rejected")
    answer = client.post("/sync", data=data, content_type=content_type)
    assert 400 <= answer.status_code < 500
    assert sample("mxjob_hook_syncs_total", hook="sync", outcome="rejected") == before + 1


def test_a_bug_is_counted_as_error() -> None:
    def broken() -> Any:
        raise RuntimeError("broken clock")

    client = create_app({"CLOCK": broken}).test_client()
    before = sample("mxjob_hook_syncs_total", hook="sync", outcome="error")
    answer = client.post("/sync", data=json.dumps(request(mxjob())), content_type=JSON)
    assert answer.status_code == 500
    assert sample("mxjob_hook_syncs_total", hook="sync", outcome="error") == before + 1


# --- multiprocess mode under gunicorn ------------------------------------------------------

_SYNCS = re.compile(r'^mxjob_hook_syncs_total\{hook="sync",outcome="created"\} (\S+)$', re.M)
SEED = json.dumps(request(mxjob())).encode()


def _post(server: Server) -> None:
    assert server.call("POST", "/sync", SEED)[0] == 200


def _counted(server: Server) -> float:
    status, text, _ = server.call("GET", "/metrics")
    assert status == 200, text
    found = _SYNCS.search(text.decode())
    return float(found.group(1)) if found else 0.0


def _serving_pids(server: Server) -> set[object]:
    return {line.get("pid") for line in server.log_lines() if line.get("hook") == "sync"}


def _metrics_dir(server: Server) -> Path:
    """The directory the server announced at start."""
    for line in server.log_lines():
        message = str(line.get("message", ""))
        if message.startswith("metrics of every worker are kept in "):
            return Path(message.rsplit(" ", 1)[1])
    raise AssertionError("gunicorn did not log its metrics directory")


def _wait(check: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for gunicorn")
        time.sleep(0.05)


def test_every_worker_is_counted_and_dead_workers_stay_counted() -> None:
    with serve(workers=2) as server:
        directory = _metrics_dir(server)
        assert directory.is_dir()
        sent = 0
        # Bounded by time, not by count: a worker slow to boot on a loaded machine is no failure.
        deadline = time.monotonic() + 30
        with ThreadPoolExecutor(4) as pool:
            while len(_serving_pids(server)) < 2 and time.monotonic() < deadline:
                list(pool.map(lambda _: _post(server), range(20)))
                sent += 20
        assert len(_serving_pids(server)) == 2, "one worker answered every request"
        # Whichever worker answers the scrape, it reports every worker's syncs.
        assert {_counted(server) for _ in range(6)} == {sent}
        # A worker killed (as the OOM killer would): gunicorn replaces it, its counts remain.
        victim = server.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        _wait(lambda: victim not in server.worker_pids() and len(server.worker_pids()) == 2)
        _post(server)
        assert _counted(server) == sent + 1
    assert not directory.exists(), "the metrics directory this server made is removed"


def test_a_given_metrics_directory_is_emptied_at_start_and_kept(tmp_path: Path) -> None:
    directory = tmp_path / "prometheus"
    directory.mkdir()
    (directory / "counter_1.db").write_bytes(b"stale values of an earlier run")
    with serve(workers=1, env={metrics.MULTIPROC_ENV: str(directory)}) as server:
        assert not (directory / "counter_1.db").exists()
        _post(server)
        assert _counted(server) == 1
    assert directory.is_dir()


def test_a_worker_file_not_yet_sized_does_not_break_scrapes(tmp_path: Path) -> None:
    """A worker creates its file empty and sizes it a moment later; a scrape in between, or
    after a worker was killed in between, still answers with every other worker's counts."""
    directory = tmp_path / "prometheus"
    with serve(workers=1, env={metrics.MULTIPROC_ENV: str(directory)}) as server:
        _post(server)
        (directory / "counter_4194304.db").touch()
        assert _counted(server) == 1


# --- the conversion webhook ----------------------------------------------------------------

CONVERSIONS = {
    "success": conversion_cases.v1alpha1_proposal_example(),
    "failure": conversion_cases.refused_type_twice(),
    "rejected": conversion_cases.broken_no_uid(),
}


@pytest.mark.parametrize("outcome", CONVERSIONS)
def test_each_conversion_is_counted_by_outcome(client: FlaskClient, outcome: str) -> None:
    data = json.dumps(CONVERSIONS[outcome]).encode()
    count = sample("mxjob_hook_syncs_total", hook="convert", outcome=outcome)
    size = sample("mxjob_hook_request_bytes_sum", hook="convert")
    client.post("/convert", data=data, content_type=JSON)
    assert sample("mxjob_hook_syncs_total", hook="convert", outcome=outcome) == count + 1
    assert sample("mxjob_hook_request_bytes_sum", hook="convert") == size + len(data)


def test_a_conversion_bug_is_counted_as_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(review: object) -> Any:
        raise RuntimeError("broken converter")

    monkeypatch.setattr("hooks.app.answer", broken)
    before = sample("mxjob_hook_syncs_total", hook="convert", outcome="error")
    data = json.dumps(CONVERSIONS["success"])
    answer = create_app().test_client().post("/convert", data=data, content_type=JSON)
    assert answer.status_code == 500
    assert answer.get_json()["error"] == "internal_server_error"
    assert sample("mxjob_hook_syncs_total", hook="convert", outcome="error") == before + 1

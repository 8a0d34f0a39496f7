"""The HTTP contract (docs/http.md) through the Flask test client, one test per status code the
adapter can answer, on both hooks (`/sync`, `/convert`), and once through the real gunicorn
server on a free loopback port."""

import contextlib
import gc
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from hooks import body
from hooks.app import create_app
from tests import conversion_cases, golden
from tests.builders import created, mxjob, replica, request, run
from testsupport.server import serve

SYNC_KEYS = {"status", "children"}
OPTIONAL_SYNC_KEYS = {"resyncAfterSeconds"}
JSON = "application/json"


def post(client: FlaskClient, body: object, path: str = "/sync") -> TestResponse:
    return client.post(path, data=json.dumps(body), content_type=JSON)


def assert_error(response: TestResponse, status: int, error: str) -> str:
    """A JSON error body with exactly `error` and `message`; returns the message."""
    assert response.status_code == status, response.data
    assert response.mimetype == JSON
    body = response.get_json()
    assert set(body) == {"error", "message"}
    assert body["error"] == error
    assert isinstance(body["message"], str) and body["message"]
    return str(body["message"])


def load_case(case: Path) -> tuple[bytes, datetime, dict[str, Any]]:
    recorded = golden.load(case)
    return (case / "request.json").read_bytes(), recorded.now, recorded.response


# --- 200 --------------------------------------------------------------------------------


def test_sync_answers_the_recorded_response(
    fixture_case: Path, make_client: Callable[..., FlaskClient]
) -> None:
    body, now, want = load_case(fixture_case)
    answer = make_client(CLOCK=lambda: now).post("/sync", data=body, content_type=JSON)
    assert answer.status_code == 200
    assert answer.mimetype == JSON
    got = answer.get_json()
    assert got == want
    assert SYNC_KEYS <= set(got) <= SYNC_KEYS | OPTIONAL_SYNC_KEYS


def test_sync_with_a_deadline_adds_only_resync_after_seconds(client: FlaskClient) -> None:
    job = mxjob(run_policy={"activeDeadlineSeconds": 7200})
    children = [created(c) for c in run(request(job)).children]
    answer = post(client, request(job, children))
    assert answer.status_code == 200
    assert set(answer.get_json()) == SYNC_KEYS | OPTIONAL_SYNC_KEYS


def test_hook_v2_request_keyed_by_namespace_and_name(client: FlaskClient) -> None:
    job = mxjob()
    children = [created(c) for c in run(request(job)).children]
    v1 = post(client, request(job, children)).get_json()
    v2 = post(client, request(job, children, v2=True)).get_json()
    assert v1 == v2


def test_invalid_mxjob_is_answered_200_with_a_failed_condition(client: FlaskClient) -> None:
    job = mxjob(replicas={"Server": replica(1), "Worker": replica(1)})
    answer = post(client, request(job))
    assert answer.status_code == 200
    body = answer.get_json()
    assert set(body) == SYNC_KEYS
    assert body["status"]["conditions"][-1]["reason"] == "MXJobInvalidSpec"


@pytest.mark.parametrize(("path", "want"), [("/healthz", "ok"), ("/readyz", "ready")])
def test_probes(client: FlaskClient, path: str, want: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200
    assert answer.get_json() == {"status": want}


def test_metrics_is_prometheus_text(client: FlaskClient) -> None:
    post(client, request(mxjob()))
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.mimetype == "text/plain"
    assert "version=" in answer.content_type
    assert b"mxjob_hook_syncs_total{" in answer.data


# --- 4xx --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [b"", b"{", b'{"parent": ', b"\xff\xfe", b"NaN", b'{"a": 1e999}'], ids=repr
)
def test_malformed_json_is_400(client: FlaskClient, data: bytes) -> None:
    answer = client.post("/sync", data=data, content_type=JSON)
    assert "not valid JSON" in assert_error(answer, 400, "malformed_json")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_wrong_content_type_is_415(client: FlaskClient, content_type: str | None) -> None:
    answer = client.post("/sync", data=json.dumps(request(mxjob())), content_type=content_type)
    assert "application/json" in assert_error(answer, 415, "unsupported_media_type")


def test_json_with_a_charset_is_accepted(client: FlaskClient) -> None:
    data = json.dumps(request(mxjob()))
    answer = client.post("/sync", data=data, content_type="application/json; charset=utf-8")
    assert answer.status_code == 200


def test_too_large_a_body_is_413(make_client: Callable[..., FlaskClient]) -> None:
    small = make_client(MAX_CONTENT_LENGTH=1024)
    answer = post(small, request(mxjob()))
    assert_error(answer, 413, "request_entity_too_large")


def test_max_body_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MXJOB_MAX_BODY_BYTES", "2048")
    assert create_app().config["MAX_CONTENT_LENGTH"] == 2048


NOT_SYNC_REQUESTS: dict[str, object] = {
    "array": [],
    "string": "sync",
    "no-parent": {"children": {}},
    "parent-not-object": {"parent": []},
    "no-name": {"parent": {"metadata": {}}},
    "name-not-string": {"parent": {"metadata": {"name": 7}}},
    "namespace-not-string": {"parent": {"metadata": {"name": "a", "namespace": 1}}},
    "children-list": {"parent": {"metadata": {"name": "a"}}, "children": []},
    "group-list": {"parent": {"metadata": {"name": "a"}}, "children": {"Pod.v1": []}},
    "child-not-object": {"parent": {"metadata": {"name": "a"}}, "children": {"Pod.v1": {"x": 1}}},
    "child-without-name": {
        "parent": {"metadata": {"name": "a"}},
        "children": {"Pod.v1": {"x": {}}},
    },
    "controller-list": {"parent": {"metadata": {"name": "a"}}, "controller": []},
}


@pytest.mark.parametrize("body", NOT_SYNC_REQUESTS.values(), ids=NOT_SYNC_REQUESTS.keys())
def test_not_a_sync_request_is_422(client: FlaskClient, body: object) -> None:
    assert_error(post(client, body), 422, "not_a_sync_request")


# /finalize too: there is no finalize hook (docs/metacontroller.md#deleting-a-job).
@pytest.mark.parametrize("path", ["/", "/sync/", "/hooks/sync", "/customize", "/finalize"])
def test_unknown_path_is_404(client: FlaskClient, path: str) -> None:
    assert_error(client.post(path, data="{}", content_type=JSON), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/sync"), ("PUT", "/sync"), ("POST", "/healthz"), ("GET", "/convert")],
)
def test_wrong_method_is_405(client: FlaskClient, method: str, path: str) -> None:
    assert_error(client.open(path, method=method), 405, "method_not_allowed")


# --- POST /convert ------------------------------------------------------------------------

CONVERSIONS = golden.folders(conversion_cases.FIXTURES)


@pytest.mark.parametrize("case", CONVERSIONS, ids=[p.name for p in CONVERSIONS])
def test_convert_answers_the_recorded_answer(client: FlaskClient, case: Path) -> None:
    """200 with the review's answer (Success or Failure); 422 for a body that is no review."""
    want = golden.load(case).response
    answer = client.post("/convert", data=(case / "request.json").read_bytes(), content_type=JSON)
    assert answer.status_code == (422 if "error" in want else 200)
    assert answer.mimetype == JSON
    assert answer.get_json() == want


@pytest.mark.parametrize(
    ("data", "content_type", "status", "error"),
    [
        (b"{", JSON, 400, "malformed_json"),
        (b"{}", "text/plain", 415, "unsupported_media_type"),
        (b"{}", JSON, 422, "not_a_conversion_review"),
    ],
    ids=["malformed", "content-type", "not-a-review"],
)
def test_convert_refuses_what_it_cannot_read(
    client: FlaskClient, data: bytes, content_type: str, status: int, error: str
) -> None:
    assert_error(client.post("/convert", data=data, content_type=content_type), status, error)


def test_convert_too_large_a_body_is_413(make_client: Callable[..., FlaskClient]) -> None:
    body = conversion_cases.review("kubeflow.org/v1", mxjob())
    answer = post(make_client(MAX_CONTENT_LENGTH=256), body, "/convert")
    assert_error(answer, 413, "request_entity_too_large")


# --- 500 --------------------------------------------------------------------------------


def test_a_bug_is_a_500_with_the_same_error_shape() -> None:
    def broken_clock() -> datetime:
        raise RuntimeError("clock broken")

    client = create_app({"CLOCK": broken_clock}).test_client()
    answer = post(client, request(mxjob()))
    assert_error(answer, 500, "internal_server_error")


def test_a_bug_propagates_in_testing_mode(make_client: Callable[..., FlaskClient]) -> None:
    def broken_clock() -> datetime:
        raise RuntimeError("clock broken")

    client = make_client(CLOCK=broken_clock)
    with pytest.raises(RuntimeError, match="clock broken"):
        post(client, request(mxjob()))


# --- the real server --------------------------------------------------------------------


def test_gunicorn_serves_the_seed_job(seed_case: Path) -> None:
    """gunicorn with the project's config on a free loopback port, like `make run`."""
    body, _, want = load_case(seed_case)
    with serve(workers=1) as server:
        status, data, headers = server.call("POST", "/sync", body)
        assert status == 200
        assert json.loads(data) == want
        # Sync workers close every connection after its response (no keep-alive).
        assert headers["Connection"] == "close"
        assert server.call("GET", "/healthz")[0] == 200
        status, text, _ = server.call("GET", "/metrics")
        assert status == 200
        assert b'mxjob_hook_syncs_total{hook="sync",outcome="created"} 1.0' in text
        status, data, _ = server.call("POST", "/sync", b"{")
        assert status == 400
        assert json.loads(data)["error"] == "malformed_json"
        review = json.dumps(conversion_cases.review("kubeflow.org/v1alpha1", mxjob())).encode()
        status, data, _ = server.call("POST", "/convert", review)
        assert status == 200
        (converted,) = json.loads(data)["response"]["convertedObjects"]
        assert converted["apiVersion"] == "kubeflow.org/v1alpha1"


def test_the_collector_stays_off_until_the_last_call_of_a_worker_ends() -> None:
    """A worker answers a few calls side by side in threads (hooks/worker.py). Once, the first
    call to end turned the process's collector back on under the others, which then decoded
    with it scanning their growing heaps."""
    gc.enable()
    try:
        with contextlib.ExitStack() as second:
            with body.collector_paused():
                second.enter_context(body.collector_paused())
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.enable()

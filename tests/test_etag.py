"""Metacontroller's ETag cache (hooks/etag.py): 304 for a body already answered, never for an
answer that depends on the clock."""

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from hooks import app
from tests.builders import NOW, created, mxjob, request, run
from tests.test_http import JSON
from tests.test_properties import PROFILE, states


def send(client: FlaskClient, data: bytes, path: str = "/sync", tag: str | None = None) -> Any:
    headers = {"If-None-Match": tag} if tag else {}
    return client.post(path, data=data, content_type=JSON, headers=headers)


def running_job(**run_policy: Any) -> bytes:
    job = mxjob(run_policy=run_policy)
    return json.dumps(request(job, [created(c) for c in run(request(job)).children])).encode()


def test_an_answer_carries_the_tag_of_its_body_and_the_same_body_gets_304(
    make_client: Callable[..., FlaskClient],
) -> None:
    client = make_client()
    data = running_job()
    first = send(client, data)
    tag = first.headers["ETag"]
    assert first.status_code == 200 and tag == app.sync_tag(client.application.config, data)
    again = send(client, data, tag=tag)
    assert again.status_code == 304
    assert again.data == b""
    assert again.headers["ETag"] == tag
    # A weak or listed tag matches too; another body's tag does not.
    assert send(client, data, tag=f'"x", W/{tag}').status_code == 304
    other = send(client, running_job(cleanPodPolicy="All"), tag=tag)
    assert other.status_code == 200 and other.headers["ETag"] != tag


def test_304_is_counted_and_logged_as_not_modified(
    make_client: Callable[..., FlaskClient],
) -> None:
    client = make_client()
    data = running_job()
    send(client, data, tag=send(client, data).headers["ETag"])
    exposition = client.get("/metrics").data.decode()
    assert 'mxjob_hook_syncs_total{hook="sync",outcome="not_modified"}' in exposition


def test_a_deadline_ahead_means_no_tag_and_a_full_answer(
    make_client: Callable[..., FlaskClient],
) -> None:
    """The answer changes when the deadline passes, and its resyncAfterSeconds every second."""
    data = running_job(activeDeadlineSeconds=7200)
    client = make_client()
    first = send(client, data)
    assert first.status_code == 200 and "ETag" not in first.headers
    assert "resyncAfterSeconds" in first.get_json()
    # Metacontroller keeps its last tagged entry and sends that tag: another body's, so the
    # hook answers in full. (This body's own tag is never issued while the deadline is ahead:
    # a tag issued for identical bytes means the answer was already clock-free, see etag.py.)
    earlier = send(client, running_job()).headers["ETag"]
    again = send(client, data, tag=earlier)
    assert again.status_code == 200 and "ETag" not in again.headers


def test_a_deadline_passed_is_tagged_again(
    make_client: Callable[..., FlaskClient],
) -> None:
    data = running_job(activeDeadlineSeconds=60)
    late = make_client(CLOCK=lambda: NOW + timedelta(days=1))
    answer = send(late, data)
    assert answer.status_code == 200
    assert "resyncAfterSeconds" not in answer.get_json()
    reasons = [c.get("reason") for c in answer.get_json()["status"]["conditions"]]
    assert "DeadlineExceeded" in reasons
    assert answer.headers["ETag"] == app.sync_tag(late.application.config, data)


def test_refused_requests_are_not_tagged(
    make_client: Callable[..., FlaskClient],
) -> None:
    """Metacontroller caches only answers that carried a tag: a 4xx never does."""
    refused = send(make_client(), b"{")
    assert refused.status_code == 400 and "ETag" not in refused.headers


@PROFILE
@given(states(), st.integers(1, 10**6))
def test_an_answer_without_resync_does_not_depend_on_the_clock(
    body: dict[str, Any], seconds: int
) -> None:
    """What makes tagging it safe: only a deadline ahead makes an answer depend on `now`, and
    that answer asks for a resync."""
    now = run(body, NOW)
    if now.resync_after_seconds is None:
        assert now.to_json() == run(body, NOW + timedelta(seconds=seconds)).to_json()


def test_a_hook_with_another_budget_answers_in_full(
    make_client: Callable[..., FlaskClient],
) -> None:
    """A job held by a lowered budget must not stay held, from Metacontroller's cache, once
    the hook is restarted with the budget put back (nor run on unheld when it is lowered)."""
    data = running_job()
    usual, lowered = make_client(), make_client(MAX_ANSWER_BYTES=1)
    tag = send(usual, data).headers["ETag"]
    held = send(lowered, data, tag=tag)
    assert held.status_code == 200, "answered from the old budget's cache"
    assert "; held: " in held.get_json()["status"]["conditions"][-1]["message"]
    back = send(usual, data, tag=held.headers["ETag"])
    assert back.status_code == 200
    assert "; held: " not in back.get_json()["status"]["conditions"][-1]["message"]

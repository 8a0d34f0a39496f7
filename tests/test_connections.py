"""Idle and slow connections against the real served process: gunicorn with the project's
config, as `make run` and the pods serve it, over HTTP and over TLS as the conversion webhook
(hooks/worker.py, docs/security.md#idle-and-slow-connections).

Each server runs one worker, as a webhook pod does, with a read deadline of 1 s so the tests are
quick: the deadline is what a connection gets to send its whole request, and the worker's
answers to others stop its clock.
"""

import contextlib
import json
import socket
import ssl
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from certs.authority import CA_CERT, TLS_CERT, TLS_KEY, plan
from hooks.worker import MAX_PENDING
from tests import golden
from tests.builders import mxjob, replica, request
from testsupport.server import Server, rss_kib, serve

CONVERSIONS = Path(__file__).parent / "conversion_fixtures"
DEADLINE = 1.0
IDLE = 20
SETTINGS = {"MXJOB_READ_TIMEOUT_SECONDS": str(DEADLINE), "MXJOB_MAX_BODY_BYTES": str(2**20)}


@pytest.fixture(scope="module")
def plain() -> Iterator[Server]:
    with serve(workers=1, env=SETTINGS) as server:
        yield server


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a serving certificate for localhost, made by the certificate keeper's plan."""
    folder = tmp_path_factory.mktemp("tls")
    data = plan(None, ["localhost"], datetime.now(UTC)).data
    assert data is not None
    for key in (CA_CERT, TLS_CERT, TLS_KEY):
        (folder / key).write_bytes(data[key])
    return folder


@pytest.fixture(scope="module")
def webhook(tls_dir: Path) -> Iterator[Server]:
    """The conversion webhook as its pods serve it: HTTPS, /convert and the probes only."""
    with serve(workers=1, env={**SETTINGS, "MXJOB_SERVE": "convert"}, tls=tls_dir) as server:
        yield server


@contextlib.contextmanager
def idle(server: Server, count: int = IDLE) -> Iterator[list[socket.socket]]:
    """`count` connections that send nothing, closed on exit."""
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(count)]
    try:
        yield held
    finally:
        for conn in held:
            conn.close()


def closed_after(conn: socket.socket, send: bytes = b"", every: float = 0.2) -> float:
    """Seconds until the server closes `conn`, sending `send` a byte at a time meanwhile."""
    started = time.monotonic()
    conn.settimeout(every)
    for byte in [send[i : i + 1] for i in range(len(send))] or [b""]:
        with contextlib.suppress(TimeoutError):
            if byte:
                conn.sendall(byte)
            if conn.recv(1) == b"":
                return time.monotonic() - started
    conn.settimeout(10)
    with contextlib.suppress(ConnectionResetError):
        assert conn.recv(1) == b""
    return time.monotonic() - started


def seed(server: Server) -> float:
    """Seconds the seed job's sync takes to be answered, asserting it is."""
    started = time.monotonic()
    body = (golden.FIXTURES / "dist-first-sync" / "request.json").read_bytes()
    status, _, _ = server.call("POST", "/sync", body, timeout=5)
    assert status == 200
    return time.monotonic() - started


def test_idle_connections_hold_no_worker(plain: Server) -> None:
    """Once, each idle connection held the one sync worker until gunicorn's worker timeout
    killed it (9 s), and the request behind them waited: now it is answered at once, and
    every idle connection is closed at its deadline."""
    with idle(plain) as held:
        time.sleep(0.2)  # accepted before the honest request comes
        assert seed(plain) < DEADLINE
        waited = [closed_after(conn) for conn in held]
    assert max(waited) < DEADLINE + 1.5


def test_more_idle_connections_than_a_worker_waits_on_hold_no_worker() -> None:
    """Past MAX_PENDING waiting connections a new one closes the oldest: the honest request is
    not left in the listen queue until they expire (5 s here)."""
    with serve(workers=1, env={"MXJOB_READ_TIMEOUT_SECONDS": "5"}) as server:
        held = idle(server, MAX_PENDING + 40)
        with held:
            time.sleep(0.3)
            assert seed(server) < 2


def test_a_slow_head_is_closed_at_the_deadline(plain: Server) -> None:
    """A byte every 0.2 s keeps no connection open past its deadline (slowloris)."""
    head = b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n" * 5
    with socket.create_connection(("127.0.0.1", plain.port)) as conn:
        assert DEADLINE - 0.3 < closed_after(conn, head) < DEADLINE + 1.5
    assert seed(plain) < DEADLINE


def test_a_slow_body_is_closed_at_the_deadline(plain: Server) -> None:
    head = b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
    with socket.create_connection(("127.0.0.1", plain.port)) as conn:
        conn.sendall(head + b"Content-Length: 1000\r\n\r\n")
        assert DEADLINE - 0.3 < closed_after(conn, b"{" * 100) < DEADLINE + 1.5


def test_a_body_over_the_limit_is_refused_unread(plain: Server) -> None:
    """413 from the declared length, before a byte of the body is sent."""
    head = b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
    with socket.create_connection(("127.0.0.1", plain.port), timeout=5) as conn:
        conn.sendall(head + b"Content-Length: 1073741824\r\n\r\n")
        answer = b"".join(iter(lambda: conn.recv(4096), b""))
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert b'"error":"request_entity_too_large"' in answer


def test_the_clock_stops_while_the_worker_answers_another(plain: Server) -> None:
    """A connection that sent its request while the worker was busy longer than its deadline
    is answered: the time the worker gave to another was not the client's to use."""
    body = (golden.FIXTURES / "dist-first-sync" / "request.json").read_bytes()
    head = (
        b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    slow = slow_request()
    with (
        socket.create_connection(("127.0.0.1", plain.port), timeout=30) as waiting,
        socket.create_connection(("127.0.0.1", plain.port), timeout=30) as busy,
    ):
        time.sleep(0.2)  # both accepted
        busy.sendall(slow)
        time.sleep(0.3)  # the worker is answering `busy`
        waiting.sendall(head + body)
        assert busy.recv(12) == b"HTTP/1.1 200"
        assert waiting.recv(12) == b"HTTP/1.1 200"


def slow_request() -> bytes:
    """A sync the worker takes longer than the deadline to answer: 5000 Workers at once."""
    body = (golden.FIXTURES / "dist-first-sync" / "request.json").read_bytes()
    body = body.replace(b'"replicas": 2', b'"replicas": 5000', 1)
    return (
        b"POST /sync HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body


def test_tls_connections_that_never_finish_the_handshake_hold_no_worker(
    webhook: Server,
) -> None:
    """TCP connections that send no ClientHello, or half of one, are closed at their deadline
    while the API server's calls are answered."""
    hello = bytes.fromhex("160301020001")  # a TLS record header promising a ClientHello
    with idle(webhook, IDLE) as held, socket.create_connection(("127.0.0.1", webhook.port)) as half:
        half.sendall(hello)
        time.sleep(0.2)
        started = time.monotonic()
        status, _, _ = webhook.call("GET", "/readyz", timeout=5)
        assert (status, time.monotonic() - started < DEADLINE) == (200, True)
        assert closed_after(half) < DEADLINE + 1.5
        assert max(closed_after(conn) for conn in held) < DEADLINE + 1.5


def test_the_webhook_serves_convert_and_the_probes_only(webhook: Server) -> None:
    body = (CONVERSIONS / "v1-job-read-at-v1alpha1" / "request.json").read_bytes()
    assert webhook.call("POST", "/convert", body)[0] == 200
    assert webhook.call("GET", "/healthz")[0] == 200
    sync = (golden.FIXTURES / "dist-first-sync" / "request.json").read_bytes()
    assert webhook.call("POST", "/sync", sync)[0] == 404
    assert webhook.call("GET", "/metrics")[0] == 404


def test_plain_http_to_the_webhook_is_closed(webhook: Server) -> None:
    with socket.create_connection(("127.0.0.1", webhook.port), timeout=5) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        with contextlib.suppress(ConnectionResetError):
            assert conn.recv(4096) == b""


def test_tls_clients_are_read_as_fast_as_they_send(webhook: Server, tls_dir: Path) -> None:
    """A request sent at once over TLS, whatever its size within the limit, is answered."""
    context = ssl.create_default_context(cafile=tls_dir / CA_CERT)
    body = b'{"padding": "' + b"x" * 900_000 + b'"}'
    with (
        socket.create_connection(("127.0.0.1", webhook.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as conn,
    ):
        conn.sendall(
            b"POST /convert HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body
        )
        assert conn.recv(12) == b"HTTP/1.1 422"


def test_a_review_at_the_webhooks_body_limit_fits_its_memory(tmp_path: Path) -> None:
    """The webhook as its Deployment sets it (body limit, worker timeout), given a list read at
    v1alpha1 as large as its body limit: answered, the worker's peak memory under the pod's
    limit with room to spare."""
    deployment = convert_deployment()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    limit = int(env["MXJOB_MAX_BODY_BYTES"])
    memory = quantity(container["resources"]["limits"]["memory"])
    review = list_review(limit)
    settings = {k: env[k] for k in ("MXJOB_SERVE", "MXJOB_MAX_BODY_BYTES", "GUNICORN_TIMEOUT")}
    with serve(workers=1, env=settings) as server:
        (worker,) = server.worker_pids()
        started = time.monotonic()
        status, answer, _ = server.call("POST", "/convert", review, timeout=60)
        took = time.monotonic() - started
        peak = rss_kib(worker, "VmHWM") * 1024
    assert status == 200 and b'"status":"Success"' in answer
    print(
        f"webhook: a {len(review) / 2**20:.1f} MiB review converted in {took:.1f} s, "
        f"worker peak {peak / 2**20:.0f} MiB of a {memory / 2**20:.0f} MiB limit"
    )
    assert peak < memory * 0.75


def convert_deployment() -> dict[str, Any]:
    path = Path(__file__).parents[1] / "manifests" / "components" / "conversion" / "convert.yaml"
    (found,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "Deployment"]
    return dict(found)


def quantity(text: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    return int(text[:-2]) * units[text[-2:]]


def list_review(size: int) -> bytes:
    """A ConversionReview of stored v1 jobs to v1alpha1 just under `size` bytes."""
    sent = json.loads((CONVERSIONS / "v1-job-read-at-v1alpha1" / "request.json").read_bytes())
    (job,) = sent["request"]["objects"]
    each = len(json.dumps(job)) + 2
    sent["request"]["objects"] = [
        {**job, "metadata": {**job["metadata"], "name": f"job-{i}"}} for i in range(size // each)
    ]
    while len(encoded := json.dumps(sent).encode()) > size:
        sent["request"]["objects"].pop()
    return encoded


def test_a_large_sync_is_read_and_answered_within_the_workers_time() -> None:
    """A 64 MB sync through the worker's buffer: answered, its pieces handed to gunicorn's
    readers a MiB at a time (handed at once, they copied the whole body for every MiB read, and
    the worker was killed at 9 s)."""
    job = mxjob(replicas={"Worker": replica(1, command=["x" * 64_000_000])})
    body = orjson.dumps(request(job))
    with serve(workers=1, env={"MXJOB_MAX_BODY_BYTES": str(128 * 2**20)}) as server:
        status, _, _ = server.call("POST", "/sync", body, timeout=60)
    assert status == 200

"""`make bench`: the hook's time per sync against a JSON floor, from 1 to 5000 replicas.

For each size, one realistic request of a running job (testsupport/requests.py) is timed three ways,
interleaved so that noise from other processes hits all three alike:
- floor: the standard library's `json.loads` of the request plus `json.dumps` of the response,
  the least any Python hook must spend on a sync, with the garbage collector paused as the hook
  pauses it (`hooks.body.collector_paused`); the floor with the collector running is shown too;
- in-process: the Flask app through its test client, bytes in, bytes out (no sockets);
- HTTP: a POST over loopback to gunicorn (the project's config, one sync worker).
It prints a markdown table: medians and p99s, the ratios hook/floor, the growth exponent
log(t2/t1)/log(n2/n1) between consecutive sizes (1 is linear), and the bytes per replica of
request and response (constant as the job grows: docs/environment.md#mx_config). Iterations
per size fit a time budget.

It ends with the performance goals (docs/performance.md), each marked met or NOT MET. The
machine it runs on may be shared: the ratios (hook and floor timed in the same run,
interleaved) are what to compare.

    python -m bench.run [--sizes 1,10,100] [--budget SECONDS] [--profile REPLICAS]
"""

import argparse
import cProfile
import gc
import json
import logging
import math
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from hooks import etag, wire
from hooks.app import create_app
from hooks.body import collector_paused
from hooks.core.sync import sync
from hooks.logs import LOGGER_NAME
from testsupport.requests import BENCH_NOW, encode, sync_request
from testsupport.server import Server, rss_kib, serve

SIZES = (1, 10, 100, 1000, 5000)
MIN_ITERATIONS = 5
MAX_ITERATIONS = 2000
FLOOR_GC_ITERATIONS = 3
#: The performance goals: through HTTP at 1000 replicas, at most a quarter of the floor
#: (median), and a worker's peak resident memory at most 3 times the request body at 5000.
GOAL_RATIO = 0.25
GOAL_SIZE = 1000
GOAL_RSS_RATIO = 3.0
GOAL_RSS_SIZE = 5000
_DEVNULL = open(os.devnull, "w")  # noqa: SIM115  (for the life of the process)


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one way of answering, over `len(samples)` iterations."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p99(self) -> float:
        if len(self.samples) < 2:
            return self.samples[0]
        return statistics.quantiles(self.samples, n=100, method="inclusive")[98]


@dataclass(frozen=True)
class Row:
    replicas: int
    request_bytes: int
    response_bytes: int
    floor: Timing
    floor_gc: Timing
    in_process: Timing
    http: Timing
    #: The gunicorn worker's peak resident memory once this size was served (VmHWM), KiB.
    worker_peak_kib: int


def _quiet_in_process_logs() -> None:
    """In-process sync lines go to /dev/null: still formatted (part of the cost), not shown."""
    for handler in logging.getLogger(LOGGER_NAME).handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is not _DEVNULL:
            handler.setStream(_DEVNULL)


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(replicas: int, server: Server, budget: float) -> Row:
    """Time one size: floor, in-process and HTTP, interleaved, within about `budget` seconds."""
    data = encode(sync_request(replicas, "running"))
    client = create_app({"CLOCK": lambda: BENCH_NOW}).test_client()
    _quiet_in_process_logs()
    conn = server.connection(timeout=120)
    response = json.loads(client.post("/sync", data=data, content_type="application/json").data)

    def floor_gc() -> None:
        json.loads(data)
        json.dumps(response, separators=(",", ":"))

    def floor() -> None:
        with collector_paused():
            floor_gc()

    def in_process() -> None:
        answer = client.post("/sync", data=data, content_type="application/json")
        if answer.status_code != 200:
            raise RuntimeError(f"in-process sync answered {answer.status_code}")

    def over_http() -> None:
        conn.request("POST", "/sync", body=data, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            raise RuntimeError(f"HTTP sync answered {answer.status}")

    calls = {"floor": floor, "in_process": in_process, "http": over_http}
    warm = {name: _timed(call) for name, call in calls.items()}  # also warms caches
    iterations = int(budget / max(sum(warm.values()), 1e-6))
    iterations = max(MIN_ITERATIONS, min(MAX_ITERATIONS, iterations))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(iterations):
        for name, call in calls.items():
            samples[name].append(_timed(call))
    # For comparison only (slow at large sizes): a few runs with the collector running.
    gc_on = [_timed(floor_gc) for _ in range(1 if replicas >= 1000 else FLOOR_GC_ITERATIONS)]
    conn.close()
    response_bytes = len(json.dumps(response, separators=(",", ":")).encode())
    row = Row(
        replicas,
        len(data),
        response_bytes,
        Timing(samples["floor"]),
        Timing(gc_on),
        Timing(samples["in_process"]),
        Timing(samples["http"]),
        max(rss_kib(pid, "VmHWM") for pid in server.worker_pids()),
    )
    gc.collect()
    return row


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _growth(rows: list[Row], i: int, value: Callable[[Row], float]) -> str:
    if i == 0:
        return "-"
    a, b = rows[i - 1], rows[i]
    return f"{math.log(value(b) / value(a)) / math.log(b.replicas / a.replicas):.2f}"


def table(rows: list[Row]) -> str:
    """The markdown table of the README's performance section."""
    head = (
        "| replicas | request | B/replica req / resp | floor ms (GC on) "
        "| in-process ms median / p99 | HTTP ms median / p99 | hook/floor in-process / HTTP "
        "| growth HTTP | worker peak RSS | iterations |"
    )
    lines = [head, "|" + "---|" * 10]
    for i, r in enumerate(rows):
        size = r.request_bytes / 1e6
        lines.append(
            f"| {r.replicas} | {size:.3g} MB "
            f"| {r.request_bytes / r.replicas:.0f} / {r.response_bytes / r.replicas:.0f} "
            f"| {_ms(r.floor.median)} ({_ms(r.floor_gc.median)}) "
            f"| {_ms(r.in_process.median)} / {_ms(r.in_process.p99)} "
            f"| {_ms(r.http.median)} / {_ms(r.http.p99)} "
            f"| {r.in_process.median / r.floor.median:.2f} / {r.http.median / r.floor.median:.2f} "
            f"| {_growth(rows, i, lambda x: x.http.median)} "
            f"| {r.worker_peak_kib / 1024:.0f} MiB "
            f"| {len(r.http.samples)} |"
        )
    return "\n".join(lines)


def verdict(rows: list[Row]) -> list[str]:
    """The goals of the issue, checked: ratio at 1000 replicas, memory at 5000, linear growth,
    constant bytes."""
    notes = []
    goal = next((r for r in rows if r.replicas == GOAL_SIZE), None)
    if goal is not None:
        ratio = goal.http.median / goal.floor.median
        mark = "met" if ratio <= GOAL_RATIO else "NOT MET"
        notes.append(
            f"HTTP/floor at {GOAL_SIZE} replicas (median): {ratio:.2f} "
            f"(goal ≤ {GOAL_RATIO}: {mark})"
        )
    big_job = next((r for r in rows if r.replicas == GOAL_RSS_SIZE), None)
    if big_job is not None:
        ratio = big_job.worker_peak_kib * 1024 / big_job.request_bytes
        mark = "met" if ratio <= GOAL_RSS_RATIO else "NOT MET"
        notes.append(
            f"worker peak RSS / request body at {GOAL_RSS_SIZE} replicas: {ratio:.2f} "
            f"(goal ≤ {GOAL_RSS_RATIO:g}: {mark})"
        )
    big = [r for r in rows if r.replicas >= 100]
    if len(big) >= 2:
        worst = max(_growth(big, i, lambda x: x.http.median) for i in range(1, len(big)))
        notes.append(f"largest growth exponent from 100 replicas on: {worst} (1.00 is linear)")
        per = [r.request_bytes / r.replicas for r in big]
        notes.append(
            f"request bytes per replica from 100 replicas on: {min(per):.0f} to {max(per):.0f}"
        )
    return notes


def profile(replicas: int, top: int = 25) -> None:
    """cProfile of what a sync costs past HTTP, on one request, to stderr: the ETag hash, the
    fast decoding, the core and the encoding, as hooks/app.py runs them."""
    data = encode(sync_request(replicas, "running"))

    def one() -> None:
        etag.of("sync", data)
        decoded = wire.decode(data)
        if decoded is None:
            raise RuntimeError("the fast decoding refused the benchmark request")
        wire.encode(sync(decoded, BENCH_NOW).to_json())

    profiler = cProfile.Profile()
    with collector_paused():  # as the hook runs it; collections would blur the profile
        one()  # warm
        profiler.enable()
        one()
        profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--budget", type=float, default=6.0, help="seconds per size, about")
    parser.add_argument("--profile", type=int, default=0, help="profile the core at N replicas")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = []
    # LOG_LEVEL stays as the service runs it (info: one line per sync), timeouts do not kill
    # a slow worker mid-measurement: the table should show the time, not a failure.
    with serve(workers=1, env={"GUNICORN_TIMEOUT": "120"}) as server:
        for replicas in sizes:
            started = time.monotonic()
            rows.append(measure(replicas, server, args.budget))
            print(
                f"measured {replicas} replicas in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
    today = datetime.now(UTC).date().isoformat()
    print(
        f"Measured {today} with `make bench`: Python {platform.python_version()}, "
        f"{platform.machine()}, gunicorn 1 sync worker on loopback; a running job "
        "(pods with full status and managedFields, 3 containers each)."
    )
    print()
    print(table(rows))
    print()
    for note in verdict(rows):
        print(f"- {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

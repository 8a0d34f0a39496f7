"""`make load`: concurrent clients against gunicorn on loopback, bounded in count and time.

The service runs as deployed (hooks/gunicorn_config.py, one sync worker per CPU, logs at info
to a temporary file). Client processes (no GIL contention with each other) send a fixed mix of
realistic requests (testsupport/requests.py: jobs of MIX_SIZES replicas in every state of STATES,
including invalid specs and jobs being deleted), each over its own connection (gunicorn's sync
workers close it after every response; http.client reopens it).

After a warm-up it reads every worker's VmRSS (/proc/<pid>/status), sends `--requests`
requests, and reads it again. It reports throughput, latency percentiles, errors (any answer
but 200, any exception), RSS before/after per worker, and checks `GET /metrics` counted every
sync once across workers. Exits non-zero when a goal is missed: errors, a worker restarted,
RSS growth beyond noise, a wrong metrics total, or the deadline reached.

    python -m bench.load [--requests 100000] [--clients 3] [--workers 2] [--deadline 600]
"""

import argparse
import http.client
import multiprocessing
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field

from testsupport.requests import STATES, encode, sync_request
from testsupport.server import Server, rss_kib, serve

#: Job sizes of the mix (replicas) and how many times each appears: small jobs dominate.
MIX_SIZES = {2: 3, 5: 2, 10: 1}
#: Growth of a worker's RSS over the run that still counts as noise: allocator slack.
RSS_NOISE_KIB = 8 * 1024
RSS_NOISE_FRACTION = 0.10
_SYNCS = re.compile(r"^mxjob_hook_syncs_total\{[^}]*\} ([0-9.e+]+)$", re.MULTILINE)


@dataclass(frozen=True)
class Item:
    """One request of the mix."""

    label: str
    path: str
    body: bytes


def build_mix() -> list[Item]:
    """Every state at every size, repeated by weight, in a fixed interleaved order."""
    items = []
    for replicas, weight in MIX_SIZES.items():
        for state in STATES:
            body = sync_request(replicas, state)
            item = Item(f"{replicas}/{state}", "/sync", encode(body))
            items.extend([item] * weight)
    # Deterministic shuffle: spread sizes and states over time.
    return sorted(items, key=lambda i: (hash_of(i.label) % 97, i.label))


def hash_of(text: str) -> int:
    """A hash stable across runs (str hash is salted per process)."""
    value = 0
    for char in text.encode():
        value = (value * 131 + char) % 1_000_003
    return value


#: The mix, built before the client processes fork so that they share it.
MIX: list[Item] = []


@dataclass
class ClientResult:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    sent: int = 0


def client(args: tuple[int, int, int, float]) -> ClientResult:
    """Send `count` requests starting at mix position `offset`, stop at the `deadline`."""
    port, offset, count, deadline = args
    result = ClientResult()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    for i in range(count):
        if time.monotonic() > deadline:
            result.errors["deadline"] = result.errors.get("deadline", 0) + (count - i)
            break
        item = MIX[(offset + i) % len(MIX)]
        started = time.perf_counter()
        try:
            conn.request("POST", item.path, body=item.body, headers=headers)
            answer = conn.getresponse()
            answer.read()
            status = answer.status
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            key = type(exc).__name__
            result.errors[key] = result.errors.get(key, 0) + 1
            continue
        result.latencies.append(time.perf_counter() - started)
        result.sent += 1
        if status != 200:
            key = f"HTTP {status} ({item.label})"
            result.errors[key] = result.errors.get(key, 0) + 1
    conn.close()
    return result


def run_clients(server: Server, total: int, clients: int, deadline: float) -> list[ClientResult]:
    """`total` requests spread over `clients` processes."""
    share = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    jobs = [(server.port, i * 7919, share[i], deadline) for i in range(clients)]
    context = multiprocessing.get_context("fork")
    with context.Pool(clients) as pool:
        return pool.map(client, jobs)


def syncs_counted(server: Server) -> float:
    """Sum of mxjob_hook_syncs_total over every label set, from one scrape."""
    text = server.call("GET", "/metrics")[1].decode()
    return sum(float(v) for v in _SYNCS.findall(text))


def rss(server: Server) -> dict[int, int]:
    return {pid: rss_kib(pid) for pid in server.worker_pids()}


def percentile(samples: list[float], p: int) -> float:
    if len(samples) < 2:
        return samples[0] if samples else float("nan")
    return statistics.quantiles(samples, n=100, method="inclusive")[p - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=3_000)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--deadline", type=float, default=600, help="seconds for the whole run")
    args = parser.parse_args(argv)
    MIX.extend(build_mix())
    sizes = sorted({len(i.body) for i in MIX})
    print(
        f"mix: {len(MIX)} requests, jobs of {', '.join(map(str, MIX_SIZES))} replicas in "
        f"states {', '.join(STATES)}; bodies {sizes[0] / 1e3:.0f}-{sizes[-1] / 1e3:.0f} kB, "
        f"mean {statistics.mean(len(i.body) for i in MIX) / 1e3:.0f} kB"
    )
    started = time.monotonic()
    deadline = started + args.deadline
    with serve(workers=args.workers) as server:
        pids = server.worker_pids()
        boot = rss(server)
        warm = run_clients(server, args.warmup, args.clients, deadline)
        before = rss(server)
        t0 = time.monotonic()
        results = run_clients(server, args.requests, args.clients, deadline)
        elapsed = time.monotonic() - t0
        after = rss(server)
        counted = syncs_counted(server)
        restarted = server.worker_pids() != pids
    latencies = sorted(x for r in results for x in r.latencies)
    errors: dict[str, int] = {}
    for r in [*warm, *results]:
        for key, n in r.errors.items():
            errors[key] = errors.get(key, 0) + n
    sent = sum(r.sent for r in results)
    expected = args.warmup + args.requests
    print(
        f"{sent} requests in {elapsed:.1f} s with {args.clients} client processes against "
        f"{args.workers} gunicorn sync workers: {sent / elapsed:.0f} requests/s"
    )
    print(
        f"latency ms: p50 {percentile(latencies, 50) * 1e3:.2f}, "
        f"p99 {percentile(latencies, 99) * 1e3:.2f}, max {latencies[-1] * 1e3:.1f}"
    )
    print(f"errors: {sum(errors.values())} {errors if errors else ''}".rstrip())
    failed = bool(errors)
    for pid in pids:
        grown = after.get(pid, 0) - before.get(pid, 0)
        noise = max(RSS_NOISE_KIB, before.get(pid, 0) * RSS_NOISE_FRACTION)
        mark = "ok" if grown <= noise else "GREW"
        failed |= grown > noise
        print(
            f"worker {pid} VmRSS MiB: boot {boot.get(pid, 0) / 1024:.1f}, after warm-up "
            f"{before.get(pid, 0) / 1024:.1f}, after {sent} requests "
            f"{after.get(pid, 0) / 1024:.1f} ({grown / 1024:+.1f}, {mark})"
        )
    print(f"metrics: mxjob_hook_syncs_total = {counted:.0f} (expected {expected})")
    failed |= counted != expected or restarted
    if restarted:
        print("a worker was restarted during the run: its memory cannot be compared")
    print(f"whole run {time.monotonic() - started:.0f} s: {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

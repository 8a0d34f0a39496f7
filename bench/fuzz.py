"""`make fuzz`: a long fuzz campaign against the hook as `make run` serves it (gunicorn).

Generated requests (testsupport/fuzzing.py: structure-aware mutations of realistic requests, plus
malformed bodies) go from client processes to gunicorn on 127.0.0.1, over keep-alive
connections; every answer is checked (no 5xx; a 4xx only with `{"error", "message"}`; the
response shape, child names and the invalid-spec rule), every `--determinism-every`th case is
sent twice (same bytes back) and every `--fixpoint-every`th answer is fed back as observed
children and parent status (it must settle). Bounded by `--requests` (every request sent counts,
re-sends included) and `--deadline` seconds.

Failures are grouped by root-cause signature: for a 5xx, the exception and the innermost hook
frame, found by replaying the case in-process; otherwise the check and the mutated field. One
reproducer per signature is shrunk in-process and saved under `--out` (request body, how to
send it, what went wrong). Worker memory is read before and after. Exits non-zero when anything
failed, a worker was restarted (crash or timeout) or the deadline was reached.

    python -m bench.fuzz [--requests 100000] [--clients 2] [--workers 2] [--seed 0]
"""

import argparse
import http.client
import logging
import multiprocessing
import os
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hooks import logs
from testsupport import fuzzing
from testsupport.server import Server, rss_kib, serve

#: Predicate evaluations a shrink may spend.
SHRINK_BUDGET = 400
#: Paths deeper than this are not tried.
SHRINK_DEPTH = 12


@dataclass
class ClientResult:
    """What one client process sent and saw."""

    sent: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    #: Failures by root-cause signature, and the first case of each: (number, detail).
    failures: Counter[str] = field(default_factory=Counter)
    examples: dict[str, tuple[int, str]] = field(default_factory=dict)
    deadline_hit: bool = False


class _Connection:
    """A keep-alive connection to the server, reopened after an error."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(self, path: str, body: bytes, content_type: str | None) -> fuzzing.Answer:
        headers = {"Content-Type": content_type} if content_type is not None else {}
        unsent: OSError | None = None
        try:
            self.conn.request("POST", path, body=body, headers=headers)
        except (BrokenPipeError, ConnectionResetError) as exc:
            unsent = exc  # answered (413) and closed before reading the body: read the answer
        try:
            answer = self.conn.getresponse()
            data = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            if unsent is not None:  # the reset discarded the answer too
                return fuzzing.CLOSED_UNREAD, "", f"closed while sending: {unsent!r}".encode()
            return 599, "", f"connection error: {exc!r}".encode()
        if answer.getheader("Connection", "").lower() == "close":
            self.conn.close()
        return answer.status, answer.getheader("Content-Type", ""), data


def client(args: tuple[int, int, int, int, int, int, int, float]) -> ClientResult:
    """Cases `first`, `first + step`, … until `budget` requests are sent or the deadline."""
    port, seed, first, step, budget, determinism, fixpoint, deadline = args
    generator = fuzzing.Generator(seed)
    conn = _Connection(port)
    result = ClientResult()
    number = first
    while result.sent < budget:
        if time.monotonic() > deadline:
            result.deadline_hit = True
            break
        case = generator.case(number)
        index = number // step
        verdict = fuzzing.check_case(
            case,
            conn.post,
            determinism=index % determinism == 0,
            fixpoint=index % fixpoint == 0,
        )
        result.sent += verdict.requests
        result.classes[case.label] += 1
        result.classes["(re-sends: determinism, fixpoint)"] += verdict.requests - 1
        for failure in verdict.failures:
            sig = signature(case, failure)
            result.failures[sig] += 1
            result.examples.setdefault(sig, (number, failure.detail))
        number += step
    return result


def run_clients(server: Server, args: argparse.Namespace, deadline: float) -> list[ClientResult]:
    share = [
        args.requests // args.clients + (i < args.requests % args.clients)
        for i in range(args.clients)
    ]
    jobs = [
        (
            server.port,
            args.seed,
            i,
            args.clients,
            share[i],
            args.determinism_every,
            args.fixpoint_every,
            deadline,
        )
        for i in range(args.clients)
    ]
    fuzzing.bases()  # built once, before the fork, shared by the clients
    with multiprocessing.get_context("fork").Pool(args.clients) as pool:
        return pool.map(client, jobs)


# --- root causes and reproducers ------------------------------------------------------------


def signature(case: fuzzing.Case, failure: fuzzing.Failure) -> str:
    """A 5xx by where the hook raises (replayed in-process); anything else by the check and
    its cause."""
    if failure.check == "http-5xx":
        return f"5xx {fuzzing.crash_site(case)}"
    return f"{failure.check}: {failure.cause}" if failure.cause else failure.check


def still_fails(case: fuzzing.Case, sig: str) -> bool:
    """Whether a (shrunk) case still fails with the same signature."""
    if sig.startswith("5xx "):
        return f"5xx {fuzzing.crash_site(case)}" == sig
    verdict = fuzzing.check_case(case, fuzzing.post_in_process, determinism=True, fixpoint=True)
    return any(signature(case, f) == sig for f in verdict.failures)


def shrink(case: fuzzing.Case, sig: str) -> fuzzing.Case:
    """Greedy: drop keys and list entries, outermost first, while the failure stays."""
    try:
        body = fuzzing.decode(case.body)
    except ValueError:
        return case
    if not isinstance(body, dict | list) or not still_fails(case, sig):
        return case
    budget = SHRINK_BUDGET
    changed = True
    while changed and budget > 0:
        changed = False
        for path, _, _ in list(fuzzing.walk(body)):
            if budget <= 0:
                break
            if len(path) > SHRINK_DEPTH:
                continue  # inside a deep value: its depth is usually the point
            try:
                smaller = fuzzing.replace_at(body, path, _drop)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier drop removed it
            candidate = fuzzing.with_body(case, smaller)
            budget -= 1
            if still_fails(candidate, sig):
                body, case, changed = smaller, candidate, True
    return case


def _drop(node: object, key: object) -> None:
    del node[key]  # type: ignore[attr-defined]


def save(out: Path, sig: str, case: fuzzing.Case, detail: str, count: int) -> Path:
    """The reproducer's directory: the body, and how to send it."""
    slug = re.sub(r"[^a-z0-9]+", "-", sig.lower()).strip("-")[:80]
    where = out / slug
    where.mkdir(parents=True, exist_ok=True)
    (where / "request.json").write_bytes(case.body)
    header = f"-H 'Content-Type: {case.content_type}' " if case.content_type is not None else ""
    (where / "README.txt").write_text(
        f"signature: {sig}\n"
        f"seen: {count} times; first as case {case.number} (class {case.label})\n"
        f"mutations: {', '.join(case.mutations) or '-'}\n"
        f"what went wrong: {detail}\n\n"
        "send it to `make run`:\n"
        f"  curl -sS -X POST {header}--data-binary @request.json "
        f"http://127.0.0.1:8080{case.path}\n"
    )
    return where


def _quiet_in_process() -> None:
    """Replays in this process (and the forked clients) log nothing: the table says it all."""
    logging.getLogger(logs.LOGGER_NAME).disabled = True
    fuzzing.post_in_process("/sync", b"{}", fuzzing.JSON)


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--determinism-every", type=int, default=25)
    parser.add_argument("--fixpoint-every", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=900, help="seconds for the whole run")
    parser.add_argument("--out", type=Path, default=Path(".fuzz"))
    args = parser.parse_args(argv)
    _quiet_in_process()
    started = time.monotonic()
    env = {"MXJOB_MAX_BODY_BYTES": str(fuzzing.CAMPAIGN_MAX_BODY)}
    with serve(workers=args.workers, env=env) as server:
        pids = server.worker_pids()
        before = {pid: rss_kib(pid) for pid in pids}
        t0 = time.monotonic()
        results = run_clients(server, args, started + args.deadline)
        elapsed = time.monotonic() - t0
        restarted = server.worker_pids() != pids
        after = {pid: rss_kib(pid) for pid in pids if not restarted}
    sent = sum(r.sent for r in results)
    classes: Counter[str] = sum((r.classes for r in results), Counter())
    print(
        f"{sent} requests in {elapsed:.1f} s ({sent / elapsed:.0f} requests/s), seed {args.seed}, "
        f"{args.clients} client processes against {args.workers} gunicorn sync workers"
    )
    print("requests by input class:")
    for label, count in sorted(classes.items()):
        print(f"  {label:40} {count:7}")
    for pid, kib in after.items():
        print(f"worker {pid} VmRSS MiB: {before[pid] / 1024:.1f} before, {kib / 1024:.1f} after")
    failed = _report_failures(results, args)
    if restarted:
        print("a gunicorn worker was restarted during the run (crashed or timed out)")
        failed = True
    if any(r.deadline_hit for r in results):
        print(f"deadline of {args.deadline:.0f} s reached before {args.requests} requests")
        failed = True
    print(f"whole run {time.monotonic() - started:.0f} s: {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


def _report_failures(results: list[ClientResult], args: argparse.Namespace) -> bool:
    """Failures by signature, with one shrunk reproducer each saved under `args.out`."""
    counts: Counter[str] = sum((r.failures for r in results), Counter())
    print(f"failures: {sum(counts.values())} from {len(counts)} root-cause signatures")
    if args.out.exists():
        shutil.rmtree(args.out)
    if not counts:
        return False
    generator = fuzzing.Generator(args.seed)
    for sig, count in counts.most_common():
        number, detail = min(r.examples[sig] for r in results if sig in r.examples)
        case = shrink(generator.case(number), sig)
        where = save(args.out, sig, case, detail, count)
        print(
            f"  {count:6}  {sig}\n          e.g. case {number}: {detail[:150]}\n"
            f"          reproducer: {where}/"
        )
    return True


if __name__ == "__main__":
    sys.exit(main())

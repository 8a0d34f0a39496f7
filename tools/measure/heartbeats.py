"""Measure ps-lite heartbeat settings with real MXNet processes (docs/environment.md).

Runs 1 Scheduler, 1 Server and 2 Workers on 127.0.0.1 with the DMLC_* variables the hook
injects, a `dist_sync` kvstore that pushes and pulls one key for `--rounds` rounds and checks the
aggregated value, SIGKILLs Worker 1 after `--kill-after` rounds and starts a replacement with
the same environment `--delay` seconds later. Prints one JSON line: whether every process
exited 0, how long the job stalled (kill → first round completed after the kill), and the
rounds each Worker ran.

A replacement Worker resumes at the job's round: it pulls the key first (the Servers hold the
state, as a real replacement reloads parameters) and derives the round from the aggregated
value; a Worker "finishes its rounds" when the job's round counter reaches `--rounds`.

Needs a separate venv: `python -m venv /tmp/mxvenv && /tmp/mxvenv/bin/pip install mxnet==1.9.1
'numpy<1.24'` (and `apt-get install -y libquadmath0 libgomp1` if `import mxnet` fails). Run
from the repository's root:

    /tmp/mxvenv/bin/python -m tools.measure.heartbeats --interval 1 --timeout 3 --delay 1
    /tmp/mxvenv/bin/python -m tools.measure.heartbeats --interval 1 --timeout 3 --delay 30
    /tmp/mxvenv/bin/python -m tools.measure.heartbeats --no-heartbeat --delay 1   # hangs: control
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tools.ports import free_port

KEY = 3
SHAPE = (4,)
PROGRESS = re.compile(r"^round (\d+) ok at ([0-9.]+)$")


def worker(rounds: int, pace: float) -> None:
    """One Worker: resume at the job's round, then push (round + 1) and check the sum."""
    import mxnet as mx  # noqa: PLC0415  (only in the measuring venv)

    kv = mx.kv.create("dist_sync")
    workers = kv.num_workers
    kv.init(KEY, mx.nd.zeros(SHAPE))
    out = mx.nd.zeros(SHAPE)
    kv.pull(KEY, out=out)
    start = int(out.asnumpy()[0] / workers + 0.5)  # value after round r is workers * (r + 1)
    print(f"rank {kv.rank} starts at round {start}", flush=True)
    for r in range(start, rounds):
        kv.push(KEY, mx.nd.ones(SHAPE) * (r + 1))
        kv.pull(KEY, out=out)
        got = out.asnumpy()
        want = workers * (r + 1)
        if not (got == want).all():
            print(f"round {r} wrong: got {got.tolist()}, want {want}", flush=True)
            sys.exit(3)
        print(f"round {r} ok at {time.time():.3f}", flush=True)
        time.sleep(pace)
    print("finished", flush=True)


def launch(
    role: str, env: dict[str, str], log: Path, args: argparse.Namespace
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "tools.measure.heartbeats",
        "--node",
        "--rounds",
        str(args.rounds),
        "--pace",
        str(args.pace),
    ]
    if role != "worker":
        cmd = [sys.executable, "-c", "import mxnet"]  # importing mxnet runs a Scheduler/Server
    handle = log.open("wb")
    return subprocess.Popen(
        cmd, env={**env, "DMLC_ROLE": role}, stdout=handle, stderr=subprocess.STDOUT
    )


def progress(log: Path) -> list[tuple[int, float]]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = PROGRESS.match(line)
        if match:
            found.append((int(match[1]), float(match[2])))
    return found


def measure(args: argparse.Namespace) -> dict[str, object]:
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DMLC_PS_ROOT_URI": "127.0.0.1",
        "DMLC_PS_ROOT_PORT": str(free_port()),
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": "2",
        "OMP_NUM_THREADS": "1",
        "MXNET_CPU_WORKER_NTHREADS": "1",
    }
    if not args.no_heartbeat:
        env["PS_HEARTBEAT_INTERVAL"] = str(args.interval)
        env["PS_HEARTBEAT_TIMEOUT"] = str(args.timeout)
    procs = {
        "scheduler": launch("scheduler", env, logs / "scheduler.log", args),
        "server": launch("server", env, logs / "server.log", args),
        "worker-a": launch("worker", env, logs / "worker-a.log", args),
        "worker-b": launch("worker", env, logs / "worker-b.log", args),
    }
    deadline = time.time() + args.limit
    # Kill the Worker that is not rank 0 (rank 0 sends the Servers their stop command).
    victim = None
    while victim is None and time.time() < deadline:
        for name in ("worker-a", "worker-b"):
            text = (logs / f"{name}.log").read_text(errors="replace")
            done = progress(logs / f"{name}.log")
            if "rank 1 " in text and done and done[-1][0] + 1 >= args.kill_after:
                victim = name
        time.sleep(0.05)
    killed_at = time.time()
    if victim is not None:
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].wait()
        time.sleep(args.delay)
        procs["worker-r"] = launch("worker", env, logs / "worker-r.log", args)
    codes: dict[str, int | None] = {}
    while time.time() < deadline and any(p.poll() is None for n, p in procs.items() if n != victim):
        time.sleep(0.2)
    for name, proc in procs.items():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            codes[name] = None  # still blocked when the time limit came
        else:
            codes[name] = proc.returncode
    survivor = "worker-b" if victim == "worker-a" else "worker-a"
    after = [t for _, t in progress(logs / f"{survivor}.log") if t > killed_at]
    rounds = {
        n: [r for r, _ in progress(logs / f"{n}.log")]
        for n in ("worker-a", "worker-b", "worker-r")
        if (logs / f"{n}.log").exists()
    }
    return {
        "interval": None if args.no_heartbeat else args.interval,
        "timeout": None if args.no_heartbeat else args.timeout,
        "delay": args.delay,
        "killed": victim,
        "exit_codes": codes,
        "completed": all(codes[n] == 0 for n in codes if n != victim),
        "kill_to_recovery_s": round(after[0] - killed_at, 1) if after else None,
        "rounds": {n: f"{r[0]}..{r[-1]}" if r else "none" for n, r in rounds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", action="store_true", help="internal: run as a Worker")
    parser.add_argument("--interval", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=3)
    parser.add_argument("--no-heartbeat", action="store_true")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds before the replacement")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--kill-after", type=int, default=10)
    parser.add_argument("--pace", type=float, default=0.1, help="seconds between rounds")
    parser.add_argument("--limit", type=float, default=120, help="give up after this many seconds")
    parser.add_argument("--logs", default="/tmp/heartbeats")
    args = parser.parse_args()
    if args.node:
        worker(args.rounds, args.pace)
        return
    print(json.dumps(measure(args)), flush=True)


if __name__ == "__main__":
    main()

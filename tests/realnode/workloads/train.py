"""Data-parallel training for the real-node tier: linear regression on synthetic data.

Every role runs this file. For DMLC_ROLE=scheduler or server, `import mxnet` itself serves
ps-lite and exits when the job is done. A worker trains with the kvstore named by $KVSTORE
(default dist_sync) for $ROUNDS rounds and checks, every round, that the value it pulls is exactly
the sum of what all workers pushed (it can recompute every worker's push: the data are seeded by
rank and round); it exits 1 on a wrong value and 0 when the model fits.

The server adds every merged push to what it stores (optimizer `test`); the last element of the
key counts pushes, so a replacement worker reads how far the job has come and joins at the next
round instead of starting over (ps-lite gives it the dead worker's rank).

One thing ps-lite and MXNet 1.9.1 do on a replacement, measured on the real node: ranks follow
registration order, not pod names, and a replacement that inherits rank 0 pushes its `init`
value again (KVStoreDist::InitImpl only skips the barrier on recovery). That push is merged into
the round the survivors are waiting in, so that one round holds fewer real pushes than workers.
The check below therefore takes the number of pushes a round merged from the counter and
requires the pulled value to be exactly the previous value plus this worker's push plus that
many pushes of the others (all of them in every ordinary round); the replacement starts at the
round after the one its `init` completed.

A training script's own error, on demand: the pod named $RAISE_IN raises FloatingPointError at
round $RAISE_AT_ROUND (its replacement, named `-r1`, does not). Its traceback goes to the log,
where the kubelet finds the end of it for the termination message, and the process exits 1 at
once: through MXNet's own shutdown it would wait in a ps-lite barrier for the other workers.
"""

import itertools
import math
import os
import socket
import sys
import time
import traceback

import mxnet as mx
import numpy as np

DIM = 8
BATCH = 16
LR = 0.05


def shard(rank: int, step: int, w_true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Worker `rank`'s batch for round `step`: the same on every worker that asks."""
    rng = np.random.default_rng(1000 * rank + step)
    x = rng.standard_normal((BATCH, DIM)).astype(np.float32)
    return x, x @ w_true


def push_of(rank: int, step: int, w: np.ndarray, w_true: np.ndarray) -> np.ndarray:
    """What worker `rank` pushes in round `step` from weights w: -lr * gradient, and 1."""
    x, y = shard(rank, step, w_true)
    grad = x.T @ (x @ w - y) / BATCH
    return np.concatenate([-LR * grad, [1.0]]).astype(np.float32)


def exact_sum(
    value: np.ndarray,
    base: np.ndarray,
    rank: int,
    step: int,
    w: np.ndarray,
    w_true: np.ndarray,
    workers: int,
    merged: int,
) -> bool:
    """Whether value is base plus the pushes of `merged - 1` other workers, exactly."""
    if not 1 <= merged <= workers:
        return False
    others = [push_of(r, step, w, w_true) for r in range(workers) if r != rank]
    return any(
        np.allclose(value, base + sum(chosen, np.zeros_like(base)), rtol=1e-4, atol=1e-4)
        for chosen in itertools.combinations(others, merged - 1)
    )


def main() -> int:
    kv = mx.kv.create(os.environ.get("KVSTORE", "dist_sync"))
    rounds = int(os.environ.get("ROUNDS", "30"))
    pause = float(os.environ.get("ROUND_SECONDS", "0"))
    rank, workers = kv.rank, kv.num_workers
    w_true = np.linspace(-1.0, 1.0, DIM).astype(np.float32)
    kv.init(0, mx.nd.zeros(DIM + 1))
    kv.set_optimizer(mx.optimizer.create("test", rescale_grad=1.0))
    stored = mx.nd.zeros(DIM + 1)
    kv.pull(0, out=stored)
    value = stored.asnumpy()
    done = math.ceil(value[-1] / workers - 1e-3)
    # What a script that resumes from a checkpoint reads (docs/restarts.md).
    again = f"run {os.environ.get('MXJOB_RUN')}, attempt {os.environ.get('MXJOB_ATTEMPT')}"
    print(f"worker {rank}/{workers} ({kv.type}) starts at round {done} of {rounds}", flush=True)
    print(f"this process is {again}", flush=True)
    raise_at = int(os.environ.get("RAISE_AT_ROUND", "-1"))
    raising = os.environ.get("RAISE_IN") == socket.gethostname()
    for step in range(done, rounds):
        if raising and step == raise_at:
            raise FloatingPointError(f"loss is nan at round {step}")
        previous = value
        w = previous[:DIM]
        mine = push_of(rank, step, w, w_true)
        kv.push(0, mx.nd.array(mine))
        kv.pull(0, out=stored)
        value = stored.asnumpy()
        merged = round(float(value[-1] - previous[-1]))
        if not exact_sum(value, previous + mine, rank, step, w, w_true, workers, merged):
            print(f"round {step}: pulled {value}, not the sum of {merged} pushes", flush=True)
            return 1
        loss = float(np.mean((value[:DIM] - w_true) ** 2))
        note = "" if merged == workers else " (a replacement's init filled a dead worker's place)"
        print(
            f"worker {rank} round {step} ok: pulled the sum of {merged} pushes{note}, "
            f"weight error {loss:.5f}",
            flush=True,
        )
        time.sleep(pause)
    error = float(np.mean((value[:DIM] - w_true) ** 2))
    print(f"worker {rank} finished {rounds} rounds, weight error {error:.5f}", flush=True)
    return 0 if error < 0.05 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FloatingPointError:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)

"""Data-parallel training for the real-node tier: linear regression on synthetic data.

Every role runs this file. For DMLC_ROLE=scheduler or server, `import mxnet` itself serves
ps-lite and exits when the job is done. A worker trains with the kvstore named by $KVSTORE
(default dist_sync) for $ROUNDS rounds and checks, every round, that the value it pulls is exactly
the sum of what all workers pushed (it can recompute every worker's push: the data are seeded by
rank and round); it exits 1 on a wrong value and 0 when the model fits.

The server adds every merged push to what it stores (optimizer `test`); the last element of the
key counts pushes, so a replacement worker reads how many rounds the job has completed and joins
at the next one instead of starting over (ps-lite gives it the dead worker's rank).
"""

import os
import sys
import time

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
    done = round(value[-1] / workers)
    print(f"worker {rank}/{workers} ({kv.type}) starts at round {done} of {rounds}", flush=True)
    for step in range(done, rounds):
        w = value[:DIM]
        kv.push(0, mx.nd.array(push_of(rank, step, w, w_true)))
        kv.pull(0, out=stored)
        value = stored.asnumpy()
        expected = np.concatenate([w, [workers * step]]) + sum(
            push_of(r, step, w, w_true) for r in range(workers)
        )
        if not np.allclose(value, expected, rtol=1e-4, atol=1e-4):
            print(f"round {step}: pulled {value}, expected {expected}", flush=True)
            return 1
        loss = float(np.mean((value[:DIM] - w_true) ** 2))
        print(
            f"worker {rank} round {step} ok: pulled the sum of {workers} pushes, "
            f"weight error {loss:.5f}",
            flush=True,
        )
        time.sleep(pause)
    error = float(np.mean((value[:DIM] - w_true) ** 2))
    print(f"worker {rank} finished {rounds} rounds, weight error {error:.5f}", flush=True)
    return 0 if error < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())

"""A stock MXNet training script for the real-node tier: `Module.fit` with
`mx.callback.Speedometer`, as MXNet's own examples write it, nothing added for mxjob.

Every role runs this file: for DMLC_ROLE=scheduler or server, `import mxnet` serves ps-lite and
exits when the job is done. A worker fits a small multi-layer perceptron to synthetic data with
the kvstore $KVSTORE (default dist_sync) for $MXJOB_EPOCHS epochs (default 5) of $BATCHES
batches; Speedometer logs every $FREQUENT batches (`Epoch[2] Batch [20-40]\tSpeed: …`) and
Module.fit ends each epoch with `Epoch[2] Time cost=…`: the lines the progress component reads
(docs/status.md#progress). $BATCH_SECONDS slows each batch (a real model's step), so an epoch
lasts long enough to be seen.
"""

import logging
import os
import time

import mxnet as mx
import numpy as np

logging.basicConfig(level=logging.INFO)


class Slow(mx.io.NDArrayIter):  # type: ignore[misc]  # mxnet has no type hints
    """The data iterator, each batch taking at least $BATCH_SECONDS."""

    def next(self) -> mx.io.DataBatch:
        time.sleep(float(os.environ.get("BATCH_SECONDS", "0.05")))
        return super().next()


def dataset(kv: mx.kvstore.KVStore) -> Slow:
    """$BATCHES batches of 32 synthetic samples, this Worker's own (seeded by its rank)."""
    batches, batch_size = int(os.environ.get("BATCHES", "40")), 32
    rng = np.random.default_rng(kv.rank)
    x = rng.standard_normal((batches * batch_size, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    return Slow(x, y, batch_size, shuffle=True, label_name="softmax_label")


def network() -> mx.sym.Symbol:
    """A small multi-layer perceptron with a softmax output."""
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=32)
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=2)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def speedometer() -> mx.callback.Speedometer:
    """A line every $FREQUENT batches (default 10) of 32 samples."""
    return mx.callback.Speedometer(32, int(os.environ.get("FREQUENT", "10")))


def main() -> None:
    kv = mx.kv.create(os.environ.get("KVSTORE", "dist_sync"))
    module = mx.mod.Module(network(), context=mx.cpu())
    module.fit(
        dataset(kv),
        num_epoch=int(os.environ.get("MXJOB_EPOCHS", "5")),
        kvstore=kv,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1},
        batch_end_callback=speedometer(),
    )


if __name__ == "__main__":
    main()

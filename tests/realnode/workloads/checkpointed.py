"""fit.py with checkpoints (docs/restarts.md#checkpoints): the lines a `Module.fit` script adds
to keep its work across a whole-job restart.

Worker 0 saves the model into $MXJOB_CHECKPOINT_DIR at the end of every epoch
(`mx.callback.do_checkpoint`: `model-symbol.json` and `model-<epoch>.params`, the epoch counted
from 1); on start every Worker loads the newest (Workers in dist_sync must begin at the same
epoch, and all see the same claim) and `Module.fit` carries on from the epoch after it. A run
that found none begins at epoch 0.
"""

import os
import re

import mxnet as mx
from fit import dataset, network, speedometer  # type: ignore[import-not-found]  # beside it


def newest_epoch(prefix: str) -> int:
    """The highest epoch saved under `prefix`, 0 when none is."""
    folder, stem = os.path.split(prefix)
    saved = re.compile(re.escape(stem) + r"-(\d{4})\.params$")
    found = [int(m.group(1)) for name in os.listdir(folder) if (m := saved.match(name))]
    return max(found, default=0)


def main() -> None:
    kv = mx.kv.create(os.environ.get("KVSTORE", "dist_sync"))
    prefix = os.path.join(os.environ["MXJOB_CHECKPOINT_DIR"], "model")
    begin = newest_epoch(prefix)
    args, auxs = None, None
    if begin > 0:
        _, args, auxs = mx.model.load_checkpoint(prefix, begin)
    print(f"resuming at epoch {begin}" if begin else "no checkpoint: epoch 0", flush=True)
    module = mx.mod.Module(network(), context=mx.cpu())
    module.fit(
        dataset(kv),
        num_epoch=int(os.environ.get("MXJOB_EPOCHS", "5")),
        begin_epoch=begin,
        arg_params=args,
        aux_params=auxs,
        kvstore=kv,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1},
        batch_end_callback=speedometer(),
        epoch_end_callback=mx.callback.do_checkpoint(prefix) if kv.rank == 0 else None,
    )


if __name__ == "__main__":
    main()

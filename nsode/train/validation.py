"""What training is judged by: the two-hot loss and token accuracy on held-out skeletons, and the
R^2 of expressions decoded from their observed trajectories (`Validation`; OUT/best is chosen by
its loss).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from nsode.train.batching import observe, two_hot_loss
from nsode.train.stream import stream_examples
from nsode.train.loader import batches


@torch.no_grad()
def mean_loss(model, batches, device) -> tuple[float, float]:
    """Two-hot loss and token accuracy over batches, each batch weighted by its size."""
    losses, accs, sizes = [], [], []
    for b in batches:
        b = b.to(device)
        loss, acc = two_hot_loss(model(b.bits, b.dec_ids, b.dec_w, b.mask), b.tgt_ids, b.tgt_w)
        losses.append(float(loss))
        accs.append(float(acc))
        sizes.append(len(b.bits))
    return float(np.average(losses, weights=sizes)), float(np.average(accs, weights=sizes))


class Validation:
    """A fixed validation set of held-out skeletons: batches for loss/accuracy and observed
    trajectories for the R^2 of decoded expressions (beam 4, best of the beam by R^2).

    An equal share comes from each data folder (two families are two folders): filled in folder
    order, as until session 21, the first family dominated it and the best checkpoint by its loss
    was worse on the other. Built from the shards present at the start; rebuilt at an evaluation
    while smaller than asked for (training may start while the generator is still writing shards).
    """

    def __init__(self, data: list[Path], args, bos: int, pad: int, max_rows: int):
        self.data, self.args, self.bos, self.pad, self.max_rows = data, args, bos, pad, max_rows
        self.wanted = args.val_batches * args.batch_size
        self.build()

    def build(self) -> None:
        a = self.args
        per_folder = -(-4 * self.wanted // len(self.data))  # each folder (family) its share, not the first's all
        examples = [e for folder in self.data
                    for e in stream_examples(folder, split="val", val_percent=a.val_percent, limit=per_folder,
                                             max_rows=self.max_rows)]
        rng = np.random.default_rng(12345)  # the same observations at every evaluation
        # spread over many ODEs: consecutive rows are initial values of one ODE
        pick = rng.permutation(len(examples))[: self.wanted]
        examples = [examples[i] for i in sorted(pick)] if len(examples) > self.wanted else examples
        rng.shuffle(examples)
        self.batches = list(batches(examples, a.variant, a.batch_size, self.bos, self.pad, rng, keep_last=True,
                                    off_grid=a.off_grid, scaling=a.input_scaling))
        self.decode = [observe(e.t, e.y, a.variant, rng, a.off_grid) for e in examples[: a.val_decode]]  # user units
        self.size = len(examples)

    @torch.no_grad()
    def __call__(self, model, device) -> dict:
        if self.size < self.wanted:
            self.build()
        if not self.batches:
            return {"val_n": 0}
        model.eval()
        val_loss, val_acc = mean_loss(model, self.batches, device)
        from nsode.predict import Predictor  # decoding is kept out of the training imports

        predictor = Predictor(model, beam=4, exact=2)
        r2 = np.array([predictor.predict(t, y).r2 for t, y in self.decode])  # -inf: nothing integrable
        model.train()
        return {"val_n": self.size, "val_loss": val_loss, "val_acc": val_acc,
                "val_r2_median": float(np.median(r2)) if len(r2) else math.nan,
                "val_r2_above_0.9": float(np.mean(r2 > 0.9)) if len(r2) else math.nan}

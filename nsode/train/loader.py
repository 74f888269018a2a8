"""The batches training reads: the generator's shards streamed (nsode.train.stream), each example
observed as the variant says (points and noise drawn afresh: `batching.observe`) and put in the
model's view (`batching.model_view`); in this process or in `--workers` data processes.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from nsode.train.batching import collate, model_view, observe
from nsode.train.stream import list_shards, stream_examples


def batches(examples, variant: str, batch_size: int, bos: int, pad: int, rng, keep_last: bool = False,
            off_grid: float | None = None, scaling: str = "none"):
    """Batches of observed examples (observation points and noise drawn per variant, then the
    model's view of them: `batching.model_view`); an example whose scaled target cannot be
    encoded is skipped."""
    buf = []
    for ex in examples:
        view = model_view(*observe(ex.t, ex.y, variant, rng, off_grid), ex.expression, ex.rows, scaling)
        if view is None:
            continue
        buf.append(view)
        if len(buf) == batch_size:
            yield collate([(t, y) for t, y, _ in buf], [r for _, _, r in buf], bos, pad)
            buf = []
    if buf and keep_last:
        yield collate([(t, y) for t, y, _ in buf], [r for _, _, r in buf], bos, pad)


class TrainingBatches(torch.utils.data.IterableDataset):
    """The training stream of one data worker: its own share of the shards (`stream.in_part`), so
    each worker computes and caches the scaled targets of its share only, with its own seeds."""

    def __init__(self, data: list[Path], args, cfg, step: int):
        self.data, self.args, self.cfg, self.step = data, args, cfg, step

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        k, n = (info.id, info.num_workers) if info is not None else (0, 1)
        a, cfg = self.args, self.cfg
        rng = np.random.default_rng([a.seed, self.step, k])
        while True:  # a folder still being written: waits for shards, then for its own share
            part = (k, n) if list_shards(self.data, part=(k, n)) else (0, 1)  # an empty share reads all
            yield from training_batches(self.data, a, cfg, rng, int(rng.integers(2**31)), part)
            time.sleep(10)


def training_batches(data: list[Path], args, cfg, rng, seed: int, part: tuple[int, int] = (0, 1)):
    """The endless training batches of `part` of the shards (shard order and buffer from `seed`,
    observation points and noise from `rng`)."""
    examples = stream_examples(data, split="train", val_percent=args.val_percent, seed=seed, repeat=True,
                               max_rows=cfg.max_tokens, weights=args.weights, part=part)
    return batches(examples, args.variant, args.batch_size, cfg.bos_token_id, cfg.pad_token_id, rng,
                   off_grid=args.off_grid, scaling=args.input_scaling)


def training_stream(data: list[Path], args, cfg, step: int, device):
    """Batches for the loop: prepared in this process (`--workers 0`, the default: the measured
    best on two CPU cores) or by `--workers` processes (a GPU outruns one process's preparation)."""
    if args.workers == 0:  # a resumed run sees new noise and points
        return training_batches(data, args, cfg, np.random.default_rng([args.seed, step]), args.seed + step)
    loader = torch.utils.data.DataLoader(TrainingBatches(data, args, cfg, step), batch_size=None,
                                         num_workers=args.workers, prefetch_factor=4,
                                         pin_memory=device.type == "cuda")
    return worker_batches(loader)


def worker_batches(loader):
    """The loader's batches, its worker processes stopped when this generator is closed: left to
    the garbage collector, they outlive training, and their slow join can end up interrupted at exit."""
    workers = iter(loader)
    try:
        yield from workers
    finally:
        del workers  # the last reference: torch joins the workers here

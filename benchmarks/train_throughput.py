"""Samples per second of NSODE's whole training step on this machine, per setting.

The step is what `nsode.train` runs: stream examples from shards, draw observations, the model's
view (input scaling), collate to bits and two-hot rows, forward through encoder and decoder,
two-hot loss, backward, clip, AdamW. Settings: fp32 vs bf16 autocast, 1 vs 2 torch threads,
batch size, `torch.compile`, and data preparation in a separate process (a producer feeding
batches through a queue, so that it overlaps the model's step).

    python benchmarks/train_throughput.py --data ~/nsode-runs/data/cpu-s2031 --steps 30
"""
from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import time

import numpy as np
import torch
from tabulate import tabulate

from odecore.arguments import existing_folder, whole_number
from nsode import model as nsode_model
from nsode.train.batching import two_hot_loss
from nsode.train.stream import stream_examples
from nsode.train.run import cpu_has_bf16
from nsode.train.loader import batches


def batch_stream(data, batch_size, scaling, seed=0):
    examples = stream_examples(data, split="train", seed=seed, repeat=True, max_rows=64)
    return batches(examples, "nsode-eps", batch_size, 1, 0, np.random.default_rng(seed), scaling=scaling)


def _producer(data, batch_size, scaling, queue):
    torch.set_num_threads(1)
    for b in batch_stream(data, batch_size, scaling):
        queue.put(b)


def measure(data, preset, batch_size, threads, bf16, compile_, separate, scaling, steps, warmup=3) -> float:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nsode_model.build(preset)
    model.train()
    step_fn = torch.compile(model) if compile_ else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if separate:
        queue = mp.get_context("fork").Queue(maxsize=8)
        proc = mp.get_context("fork").Process(target=_producer, args=(data, batch_size, scaling, queue), daemon=True)
        proc.start()
        source = iter(queue.get, None)
    else:
        source = batch_stream(data, batch_size, scaling)
    try:
        for i in range(warmup + steps):
            if i == warmup:
                start = time.perf_counter()
            b = next(source)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = step_fn(b.bits, b.dec_ids, b.dec_w, b.mask)
            loss, _ = two_hot_loss(logits, b.tgt_ids, b.tgt_w)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return steps * batch_size / (time.perf_counter() - start)
    finally:
        if separate:
            proc.kill()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", nargs="+", type=existing_folder, required=True, help="data folder(s) of nsode.data generate")
    p.add_argument("--preset", nargs="+", default=["tiny"])
    p.add_argument("--batch-size", nargs="+", type=whole_number(1), default=[32, 64])
    p.add_argument("--threads", nargs="+", type=whole_number(1), default=[1, 2])
    p.add_argument("--scaling", default="pow2", choices=["none", "pow2"])
    p.add_argument("--steps", type=whole_number(1), default=30, help="timed steps per setting (after 3 warm-up steps)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    a = p.parse_args(argv)
    rows = []
    grid = itertools.product(a.preset, a.batch_size, a.threads, (False, True), (False, True),
                             (False,) if a.no_compile else (False, True))
    for preset, bs, threads, bf16, separate, compile_ in grid:
        if compile_ and (separate or bs != a.batch_size[0]):
            continue  # compile measured once per preset/threads/precision, in-process
        sps = measure(a.data, preset, bs, threads, bf16, compile_, separate, a.scaling, a.steps)
        rows.append([preset, bs, threads, "bf16" if bf16 else "fp32", "yes" if separate else "no",
                     "yes" if compile_ else "no", f"{sps:.0f}"])
        print(tabulate(rows[-1:], tablefmt="plain"), flush=True)
    print()
    print(tabulate(rows, headers=["preset", "batch", "threads", "precision", "data process", "compile", "samples/s"],
                   tablefmt="github"))
    if not cpu_has_bf16():  # without AVX-512 BF16 or AMX, oneDNN emulates bf16: several times slower
        print("\nthis CPU has no native bf16 instructions: the bf16 rows are emulated (nsode.train --bf16 would be slower)")


if __name__ == "__main__":
    main()

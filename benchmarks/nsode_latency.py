"""Seconds per trajectory of NSODE inference, split into encoding, beam search and selection,
for a range of beam widths, and the speed-up of the fast selection path over the naive one.

The naive path integrates every beam candidate with LSODA; the fast path ranks them by the
integral-form residual and integrates only the best `EXACT_TOP`. The table also says how often
both paths choose the same expression, and the largest R^2 the fast path gave up where they differ.
Prints a markdown table.

    python benchmarks/nsode_latency.py [--checkpoint DIR] [--beams 16 64 256] [--trajectories 5]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from odecore.arguments import whole_number
from odecore.expressions import compile_scalar
from odecore.solving import solve
from nsode.data.tokens import parse_infix
from nsode.predict import Predictor, default_checkpoint
from nsode.select import select

ODES = ["-0.5*y", "y*(1 - y/4)", "sin(y) + 0.5", "y - y**3", "2 - sqrt(y)", "-exp(y/3) + 2", "cos(y)",
        "0.3*y*(2 - y)", "-y**2 + 1", "log(y + 3)"]


def trajectories(n: int, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """n noisy (sigma 0.01) trajectories of 128 random grid points: the ODEs above, y0 ~ U(0.5, 2)."""
    out = []
    for text in (ODES * n)[:n]:
        t = np.sort(rng.choice(np.linspace(0, 2, 1024), 128, replace=False))
        y = solve(compile_scalar(parse_infix(text)), rng.uniform(0.5, 2.0), t)
        out.append((t, y * rng.normal(1, 0.01, t.shape)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(default_checkpoint()),
                   help="checkpoint folder (default: the shipped one)")
    p.add_argument("--beams", type=whole_number(1), nargs="+", default=[16, 64, 256, 1536],
                   help="beam widths to time (default: %(default)s)")
    p.add_argument("--trajectories", type=whole_number(1), default=10,
                   help="generated trajectories timed per width (default: %(default)s)")
    p.add_argument("--threads", type=whole_number(1), default=1, help="torch threads (default: %(default)s)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    pred = Predictor(args.checkpoint)
    data = trajectories(args.trajectories, np.random.default_rng(0))
    device = next(pred.model.parameters()).device
    print(f"device: {device}, threads: {args.threads}, {len(data)} trajectories of 128 points\n")
    print("| beam | encode s | beam search s | candidates | select fast s | select naive s | speed-up | same choice | max R^2 lost |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for width in args.beams:
        pred.beam = width
        enc, dec, fast_s, naive_s, same, n_c, lost = [], [], [], [], 0, [], [0.0]
        for t, y in data:
            timings = {}
            s = time.perf_counter()
            exprs = [e for e, _ in pred.candidates(t, y, timings)]
            enc.append(timings["encode_s"])
            dec.append(time.perf_counter() - s - timings["encode_s"])
            n_c.append(len(exprs))
            s = time.perf_counter()
            fast = select(exprs, t, y)
            fast_s.append(time.perf_counter() - s)
            s = time.perf_counter()
            naive = select(exprs, t, y, exact=None)
            naive_s.append(time.perf_counter() - s)
            same += bool(fast and naive and (fast[0].expr == naive[0].expr or fast[0].r2 == naive[0].r2))
            if fast and naive:
                lost.append(naive[0].r2 - fast[0].r2)
        print(f"| {width} | {np.mean(enc):.4f} | {np.mean(dec):.3f} | {np.mean(n_c):.0f} | {np.mean(fast_s):.3f} "
              f"| {np.mean(naive_s):.3f} | {np.mean(naive_s) / max(np.mean(fast_s), 1e-9):.1f}x | {same}/{len(data)} | {max(lost):.2g} |",
              flush=True)



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

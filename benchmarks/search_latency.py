"""Seconds per trajectory of the shipped search (`nsode predict`, `nsode-eps+refine`), stage by
stage, for trajectories the raw-input model reads and for ones outside its range, which the
scale-invariant model reads (y in other units): encoding, beam search, decoding the beams into
expressions in the user's units, and the search (proposals, fits, choice). Where the time goes
decides what to optimise. Prints a markdown table of medians.

    python benchmarks/search_latency.py [--trajectories 12] [--scales 1 100 0.01]
"""
from __future__ import annotations

import argparse
import sys
import platform
import time
import warnings

import numpy as np
import torch

from odecore.arguments import positive_number, whole_number
from nsode import SCALED_CHECKPOINT, SEARCH_CHECKPOINT, default_checkpoint
from nsode.predict import Predictor
from nsode.search.funnel import SEARCH_BEAM, SEARCH_BRANCHES
from nsode.search.settings import Settings
from nsode_quality import SIMPLE_T, simple_cases  # this folder is on the path when run as a script


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trajectories", type=whole_number(1), default=12, help="simple ODEs per scale (sigma 0.01)")
    p.add_argument("--scales", type=positive_number, nargs="+", default=[1.0, 100.0, 0.01],
                   help="units of y (1: the raw model reads them; 100 and 0.01: the scale-invariant one)")
    p.add_argument("--seed", type=whole_number(0), default=5)
    p.add_argument("--threads", type=whole_number(1), default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    predictor = Predictor(default_checkpoint(SEARCH_CHECKPOINT), beam=SEARCH_BEAM, branches=SEARCH_BRANCHES,
                          search=Settings(), scaled=default_checkpoint(SCALED_CHECKPOINT))  # as nsode predict
    print(f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} thread(s), "
          f"{args.trajectories} trajectories of 128 points per scale, medians in seconds\n")
    print("| y units | read by | encode | beam search | decode | search | total |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for scale in args.scales:
        rows, readers = [], set()
        for _, y, _ in simple_cases(args.trajectories, 0.01, args.seed, scale=scale):
            start = time.perf_counter()
            result = predictor.predict(SIMPLE_T, y)
            total = time.perf_counter() - start
            tm = result.timings
            readers.add(tm["reader"])
            decode = tm.get("decode_s", np.nan)  # nan: a version that did not time it (inside beam search)
            beam = tm["beam_s"] - tm["encode_s"] - np.nan_to_num(decode)
            rows.append((tm["encode_s"], beam, decode, tm["select_s"], total))
        medians = np.median(np.array(rows), axis=0)
        print(f"| x{scale:g} | {', '.join(sorted(readers))} | " + " | ".join(f"{m:.2f}" for m in medians) + " |",
              flush=True)



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

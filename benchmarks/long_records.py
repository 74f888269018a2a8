"""Seconds and peak memory of `python -m nsode predict` against the length of the record.

Each record is one noisy trajectory (1% multiplicative noise, irregular times on [0, 2]) of
y' = -0.5 y from 3, written as a CSV file and read by `nsode predict` in a fresh process, so the
figures are what a user sees, model loading included. With `--max-points` above the longest
record every observation is searched, as before version 19 of the search; the default reads a
long record through the means of 1,024 groups (odecore.fitting.bin_means).

    python benchmarks/long_records.py [--points 1000 10000 100000] [--max-points 1024]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from odecore import protocol
from odecore.arguments import whole_number

ROOT = Path(__file__).resolve().parents[1]
# the child prints its own peak resident memory (kilobytes on Linux) after the prediction
CHILD = ("import resource, sys; from nsode.cli import main; code = main(sys.argv[1:]); "
         "print('peak_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(code)")


def record(path: Path, points: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    t = np.r_[0.0, np.sort(rng.uniform(0, 2, points - 1))]
    y = 3 * np.exp(-0.5 * t) * (1 + 0.01 * rng.standard_normal(points))
    np.savetxt(path, np.c_[t, y], delimiter=",", header="t,y", comments="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=whole_number(protocol.MIN_POINTS), nargs="+",
                        default=[1000, 10000, 100000], help="lengths of the records")
    parser.add_argument("--max-points", type=whole_number(protocol.MIN_POINTS), default=None,
                        help="the search's --max-points (default: nsode predict's)")
    args = parser.parse_args()
    extra = [] if args.max_points is None else ["--max-points", str(args.max_points)]
    print("| points | seconds | peak memory (GB) | y' = |")
    print("|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for points in args.points:
            path = Path(folder) / f"decay-{points}.csv"
            record(path, points)
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", CHILD, "predict", str(path), "--top", "0", *extra],
                                  cwd=ROOT, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if done.returncode:
                print(f"| {points:,} | {seconds:.1f} | - | failed: {done.stderr.strip().splitlines()[-1:]} |",
                      flush=True)
                continue
            lines = done.stdout.splitlines()
            peak = next(int(line.split()[1]) for line in lines if line.startswith("peak_kb"))
            law = lines[0].removeprefix("y' = ")
            print(f"| {points:,} | {seconds:.1f} | {peak / 2**20:.2f} | `{law}` |", flush=True)


if __name__ == "__main__":
    main()

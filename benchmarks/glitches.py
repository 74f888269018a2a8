"""How often `odecore.noise.isolated_glitches` (the glitch note of `nsode predict`) speaks.

On every record of the built-in datasets, observed as the harness observes them (random times,
multiplicative noise): how many glitch-free records it flags (n 32, 128, 256; sigma 0 to 0.05;
two seeds), and how often it finds one reading made 1.5 times too large, by noise level and n.

    python benchmarks/glitches.py [--threshold 8]
"""
from __future__ import annotations

import argparse

import numpy as np

from bench import datasets
from bench.tasks import observe
from odecore.arguments import positive_number
from odecore.noise import GLITCH_NOISES, isolated_glitches

DATASETS = ("textbook", "classic", "large", "science")
SIGMAS, POINTS = (0.0, 0.01, 0.02, 0.05), (32, 128, 256)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threshold", type=positive_number, default=GLITCH_NOISES, help="robust noise levels off the course")
    args = p.parse_args(argv)
    trajectories = [tr for name in DATASETS for tr in datasets.load(name)]
    flagged = [bool(isolated_glitches(*observe(tr, sigma, n, seed), args.threshold))
               for sigma in SIGMAS for n in POINTS for seed in (0, 1) for tr in trajectories]
    print(f"glitch-free records flagged: {sum(flagged)} of {len(flagged)}")
    rng = np.random.default_rng(1)
    for sigma in SIGMAS[1:]:
        for n in POINTS:
            found = 0
            for tr in trajectories:
                t, y = observe(tr, sigma, n, 0)
                k = int(rng.integers(3, len(y) - 3))
                y[k] *= 1.5
                found += k in isolated_glitches(t, y, args.threshold)
            print(f"sigma {sigma:g}, n {n}: one reading x1.5 found in {found} of {len(trajectories)} records")


if __name__ == "__main__":
    main()

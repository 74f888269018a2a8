"""Evaluations per second of the GP family: the shared numpy evaluator alone, then each algorithm.

The evaluator is timed on random programs (ellyn's initial lengths, <= 20 nodes) on `--points`
values of y in [1, 4.9] with the logistic target 0.23 y (1 - y) (about a training half of n = 192); each algorithm is timed on a short run of its own loop,
counting every program it scores (its overhead - selection, linkage learning, predictor
co-evolution - included; FE-AFP's evaluations on a predictor's 10 points count as 10/n of
one). Prints a markdown table. The ellyn grid's populations are 100, 500 and 1000.

    python benchmarks/gp_throughput.py [--points 96] [--seconds 3] [--population 100]
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np

from odebaselines import gp
from odebaselines.gp_ellyn import AFPRegressor, EHCRegressor, EPLEXRegressor, FEAFPRegressor
from odebaselines.gp_gomea import GPGOMEARegressor
from odecore.arguments import positive_number, whole_number

ALGORITHMS = {  # each runs until `--seconds` have passed
    "AFP": lambda p, s: AFPRegressor(population_size=p, generations=10**6, random_state=0, max_time=s),
    "FE-AFP": lambda p, s: FEAFPRegressor(population_size=p, generations=10**6, random_state=0, max_time=s),
    "EHC": lambda p, s: EHCRegressor(population_size=p, generations=10**6, random_state=0, max_time=s),
    "EPLEX": lambda p, s: EPLEXRegressor(population_size=p, generations=10**6, random_state=0, max_time=s),
    "GP-GOMEA": lambda p, s: GPGOMEARegressor(population_size=p, max_evaluations=10**9, random_state=0, max_time=s),
}


def evaluator_rate(y: np.ndarray, target: np.ndarray, seconds: float) -> tuple[float, float]:
    """(evaluations per second, mean program length) of the shared evaluator on random programs."""
    random.seed(0)
    pset = gp.primitive_set(gp.ELLYN_FUNCTIONS)
    programs = [t for t in (gp.random_tree(pset, 1, 4) for _ in range(2000)) if len(t) <= 20][:1000]
    evaluator = gp.Evaluator(y, target, max_time=None)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for program in programs:
            evaluator.error(program)
    return evaluator.count / (time.perf_counter() - start), float(np.mean([len(p) for p in programs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--points", type=whole_number(10), default=96, help="training points (FD protocol: ~half of n=192)")
    parser.add_argument("--seconds", type=positive_number, default=3.0, help="wall-clock seconds per measurement")
    parser.add_argument("--population", type=whole_number(2), default=100, help="population size of every algorithm")
    args = parser.parse_args()
    y = np.linspace(1.0, 4.9, args.points)
    target = 0.23 * y * (1 - y)
    rate, length = evaluator_rate(y, target, args.seconds)
    print("| what | evaluations/s | notes |\n|---|---|---|")
    print(f"| shared evaluator | {rate:,.0f} | random programs, mean length {length:.1f}, {args.points} points |")
    for name, make in ALGORITHMS.items():
        start = time.perf_counter()
        model = make(args.population, args.seconds).fit(y[:, None], target)
        elapsed = time.perf_counter() - start
        print(f"| {name} | {model.n_evaluations_ / elapsed:,.0f} | population {args.population}, {model.n_evaluations_:,.0f} evaluations in {elapsed:.1f} s |")


if __name__ == "__main__":
    main()

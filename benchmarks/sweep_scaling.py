"""Tasks per second of a sweep of a cheap method with 1 and 2 workers, on joblib and on a Dask
LocalCluster, and the driver's own time per task.

The method is `truth` (the oracle: almost no fitting, so the harness dominates) on Textbook
with several noise levels. Each configuration is timed end to end (worker or cluster start-up
included) and, to separate the start-up, also on a second, four times larger sweep: the
marginal rate is the extra tasks over the extra time. The driver's time per task is what the
driver itself spends outside waiting: building and resume-checking the job list and writing
rows to the store.

    python benchmarks/sweep_scaling.py [--noise-levels 4]
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time

from bench import registry, runner, store
from odecore.arguments import whole_number


def timed_sweep(backend: str, workers: int, noise: tuple[float, ...]) -> tuple[float, int]:
    spec = registry.discover()["truth"]
    with tempfile.TemporaryDirectory() as out:
        sweep = runner.Sweep(datasets=("textbook",), methods=(spec,), noise=noise, out=out,
                             jobs=workers, backend=backend)
        start = time.perf_counter()
        rows = runner.run(sweep, progress=False).read()
        return time.perf_counter() - start, len(rows)


def driver_time_per_task(noise: tuple[float, ...]) -> float:
    """Seconds per task the driver spends building jobs and writing rows (timed around those calls)."""
    spent = [0.0]

    def timing(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
        return wrapper

    originals = store.ResultStore.append, store.ResultStore.flush, runner.pending_jobs
    store.ResultStore.append, store.ResultStore.flush = timing(originals[0]), timing(originals[1])
    runner.pending_jobs = timing(originals[2])
    try:
        _, tasks = timed_sweep("joblib", 1, noise)
    finally:
        store.ResultStore.append, store.ResultStore.flush, runner.pending_jobs = originals
    return spent[0] / tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--noise-levels", type=whole_number(1), default=2, help="noise levels of the small sweep (12 tasks each)")
    args = parser.parse_args()
    levels = (0.0, 0.001, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04)
    small = levels[:args.noise_levels]
    large = tuple(sorted({round(a + b, 6) for a in small for b in (0.0, 0.1, 0.2, 0.3)}))  # 4x the tasks
    results = {}
    for backend in ("joblib", "dask"):
        for workers in (1, 2):
            t_small, n_small = timed_sweep(backend, workers, small)
            t_large, n_large = timed_sweep(backend, workers, large)
            # the larger sweep no slower than the small one: its extra tasks' cost is lost in the timing noise
            marginal = (n_large - n_small) / (t_large - t_small) if t_large > 1.05 * t_small else math.nan
            results[backend, workers] = (n_large / t_large, marginal, t_small - n_small / marginal)
            told = (f"marginal {marginal:6.2f} tasks/s; start-up ~{results[backend, workers][2]:.1f} s"
                    if math.isfinite(marginal) else "marginal not measurable: the larger sweep took no longer "
                    f"({t_small:.2f} s for {n_small} tasks); give more --noise-levels")
            print(f"{backend:6} {workers} worker(s): {n_large} tasks in {t_large:6.2f} s = {n_large / t_large:6.2f} tasks/s "
                  f"end to end; {told}", flush=True)
    print_ratios(results)
    print(f"\ndriver time per task (job list + store writes): {1e3 * driver_time_per_task(small):.2f} ms")


def print_ratios(results: dict) -> None:
    """Each backend's and worker count's marginal rate against joblib with one worker."""
    if not all(math.isfinite(marginal) for _, marginal, _ in results.values()):
        print("\nratios (marginal tasks/s): not measurable at this size")
        return
    print("\nratios (marginal tasks/s):")
    base = results["joblib", 1][1]
    for (backend, workers), (_, marginal, _) in results.items():
        print(f"  {backend:6} x{workers}: {marginal / base:5.2f} x joblib x1")
    print(f"  2 vs 1 workers: joblib {results['joblib', 2][1] / results['joblib', 1][1]:.2f} x, "
          f"dask {results['dask', 2][1] / results['dask', 1][1]:.2f} x")


if __name__ == "__main__":
    main()

"""The runner's overhead per task against calling the method directly in one process.

Both paths run the `truth` method and score its prediction on every Textbook task (noise 0,
n 128, seed 0). Direct: the method class from bench.registry, `run` + bench.scoring.score in this
process. Runner: bench.runner.run with one warm worker process (`-j 1`), store writes included.
Prints both times, the ratio and the overhead per task, with and without the worker start-up.

    python benchmarks/harness_overhead.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from bench import datasets, registry, runner
from bench.method import Budget
from bench.scoring import score
from bench.tasks import Task
from odecore.arguments import whole_number


MULTIPLE = 8  # the larger sweep has this many times the tasks (noise levels)


def direct(tasks) -> float:
    method = registry.discover()["truth"].load()()
    method.setup()
    start = time.perf_counter()
    for task in tasks:
        method.receive_truth(task.trajectory.expression)
        prediction = method.run(task.observations(), Budget(seed=task.seed))
        score(prediction.expression, task.trajectory)
    return time.perf_counter() - start


def through_runner(spec, noise=(0.0,)) -> float:
    with tempfile.TemporaryDirectory() as out:
        sweep = runner.Sweep(datasets=("textbook",), methods=(spec,), noise=noise, out=out)
        start = time.perf_counter()
        runner.run(sweep, progress=False)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=whole_number(1), default=3, help="repetitions; the median is reported")
    args = parser.parse_args()
    tasks = [Task(tr, 0.0, 128, 0) for tr in datasets.load("textbook")]
    spec = registry.discover()["truth"]
    through_runner(spec)  # the driver's first sweep pays its one-off imports (pandas, pyarrow): not timed
    t_direct = statistics.median(direct(tasks) for _ in range(args.repeat))
    t_runner = statistics.median(through_runner(spec) for _ in range(args.repeat))
    # the same with 8x the tasks separates the one-off worker start-up from the per-task cost
    more = tuple(0.001 * k for k in range(MULTIPLE))
    t_runner_more = statistics.median(through_runner(spec, noise=more) for _ in range(args.repeat))
    n = len(tasks)
    per_task_runner = (t_runner_more - t_runner) / ((MULTIPLE - 1) * n)
    startup = t_runner - per_task_runner * n
    print(f"truth on {n} Textbook tasks (median of {args.repeat})")
    print(f"  direct, in-process:         {t_direct:8.3f} s  ({1e3 * t_direct / n:7.2f} ms/task)")
    print(f"  runner, 1 worker:           {t_runner:8.3f} s  ({1e3 * t_runner / n:7.2f} ms/task, start-up included)")
    print(f"  runner ratio (end to end):  {t_runner / t_direct:8.1f} x")
    overhead = per_task_runner - t_direct / n
    resolution = " (below what this measurement resolves)" if overhead <= 0 else ""
    print(f"  runner per task (marginal): {1e3 * per_task_runner:8.2f} ms  -> ratio {per_task_runner / (t_direct / n):.2f} x, "
          f"overhead {1e3 * overhead:.2f} ms/task{resolution}")
    print(f"  one-off start-up (worker spawn, imports, store): {startup:.2f} s")


if __name__ == "__main__":
    main()

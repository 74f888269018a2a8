"""A sweep: datasets x noise levels x sample sizes x seeds x methods, run in warm workers.

The driver builds the task list, skips what the store already holds, hands the rest to an
executor, and appends every row to the store as it arrives; the driver is the only writer, so
rerunning the same sweep resumes it. Executors: `joblib` (here: `jobs` supervising threads that
each own one warm worker process) and `dask` (bench.dask_backend: the same warm workers, started
inside the processes of a Dask cluster).
"""
from __future__ import annotations

import json
import queue
from dataclasses import asdict, dataclass, field
from pathlib import Path

from joblib import Parallel, delayed
from tqdm import tqdm

from bench import datasets
from core import protocol
from bench.registry import MethodSpec
from bench.store import KEY, ResultStore
from bench.tasks import Task
from bench.workers import Job, Worker


@dataclass(frozen=True)
class Sweep:
    datasets: tuple[str, ...]
    methods: tuple[MethodSpec, ...]
    noise: tuple[float, ...] = (0.0,)
    n: tuple[int, ...] = (128,)
    seeds: tuple[int, ...] = (0,)
    jobs: int = 1
    time_limit: float | None = None  # None: each method's own default
    memory_limit: int | None = None  # bytes of address space per worker
    out: str = "results/sweep"
    method_files: tuple[str, ...] = field(default=())
    backend: str = "joblib"  # "joblib" (this machine) or "dask" (a cluster, or a LocalCluster)
    scheduler: str | None = None  # tcp://HOST:PORT of a running Dask scheduler (dask backend)


def build_tasks(sweep: Sweep) -> list[Task]:
    tasks = []
    for name in sweep.datasets:
        for trajectory in datasets.load(name):
            for noise in sweep.noise:
                for n in sweep.n:
                    for seed in sweep.seeds:
                        tasks.append(Task(trajectory, float(noise), int(n), int(seed)))
    return tasks


class WorkerPool:
    """`size` warm workers handed out to supervising threads; a killed worker is replaced."""

    def __init__(self, size: int, memory_limit: int | None):
        self.memory_limit = memory_limit
        self.idle: queue.Queue[Worker] = queue.Queue()
        self.everyone: list[Worker] = []
        for _ in range(size):
            self.idle.put(self._start())

    def _start(self) -> Worker:
        worker = Worker(self.memory_limit)
        self.everyone.append(worker)
        return worker

    def execute(self, job: Job) -> dict:
        worker = self.idle.get()
        try:
            return worker.execute(job)
        finally:
            self.idle.put(worker if worker.alive else self._start())

    def close(self) -> None:
        """Stop every worker, busy ones included (after Ctrl-C, a busy worker is killed)."""
        for worker in self.everyone:
            worker.close()


class JoblibExecutor:
    """Rows of jobs run by `jobs` supervising threads (joblib threading backend), one warm worker each."""

    def __init__(self, jobs: int, memory_limit: int | None):
        self.jobs, self.memory_limit = jobs, memory_limit
        self.pool: WorkerPool | None = None

    def rows(self, jobs: list[Job], versions: dict[str, str]):
        self.pool = WorkerPool(min(self.jobs, len(jobs)), self.memory_limit)
        yield from Parallel(n_jobs=self.jobs, backend="threading", return_as="generator_unordered")(
            delayed(_run_job)(self.pool, job, versions[job.spec.name]) for job in jobs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def make_executor(sweep: Sweep):
    """The executor named by `sweep.backend`; each yields one store row per job, in any order."""
    if sweep.backend == "joblib":
        return JoblibExecutor(sweep.jobs, sweep.memory_limit)
    if sweep.backend == "dask":
        from bench.dask_backend import DaskExecutor
        return DaskExecutor(sweep.jobs, sweep.memory_limit, sweep.scheduler)
    raise ValueError(f"unknown backend {sweep.backend!r}")


def pending_jobs(sweep: Sweep, store: ResultStore) -> tuple[list[Job], dict[str, str]]:
    """The jobs of `sweep` that `store` does not hold yet, and each method's version."""
    classes = {spec.name: spec.load() for spec in sweep.methods}
    versions = {name: cls.version for name, cls in classes.items()}
    done = store.finished(versions)
    tasks = build_tasks(sweep)
    jobs = []
    for spec in sweep.methods:
        limit = sweep.time_limit or classes[spec.name].time_limit
        for task in tasks:
            if task.key + (spec.name,) not in done:
                jobs.append(Job(spec, task, limit))
    return jobs, versions


def run(sweep: Sweep, progress: bool = True) -> ResultStore:
    store = ResultStore(sweep.out)
    _write_config(sweep, store.folder)
    jobs, versions = pending_jobs(sweep, store)
    if not jobs:
        return store
    executor = make_executor(sweep)
    bar = tqdm(total=len(jobs), disable=not progress, unit="task", dynamic_ncols=True)
    try:
        for row in executor.rows(jobs, versions):
            store.append(row)
            bar.set_postfix_str(f"{row['method']} {row['dataset']}/{row['equation_id']}: {row['status']}")
            bar.update()
    finally:
        store.flush()
        bar.close()
        executor.close()
    return store


def _run_job(pool: WorkerPool, job: Job, version: str) -> dict:
    return make_row(job, version, pool.execute(job))


def make_row(job: Job, version: str, result: dict) -> dict:
    """The store row of one job: its key, what is known about the task, and the worker's result."""
    task, trajectory = job.task, job.task.trajectory
    row = dict(zip(KEY, task.key + (job.spec.name,)))
    row.update(
        method_version=version,
        truth_expression=trajectory.expression,
        truth_kind="solution" if trajectory.has_truth else "observations",
        truth_complexity=trajectory.complexity,
        y0=trajectory.y0,
        n_observed=min(task.n, len(trajectory.t)),
        time_limit=job.time_limit,
    )
    row.update({k: result.get(k) for k in _RESULT_FIELDS})
    return row


_RESULT_FIELDS = ("status", "reason", "expression", "candidates", "metadata", "fit_time", "setup_time",
                  "score_status", "score_reason", "complexity",
                  *(f"{m}_{p}" for p in ("interp", "extrap") for m in ("r2", "l1", "linf", "isclose")))


def _write_config(sweep: Sweep, folder: Path) -> None:
    config = asdict(sweep)
    config["methods"] = [spec.name for spec in sweep.methods]
    config["protocol"] = {"T": protocol.T, "T_extra": protocol.T_EXTRA, "grid": protocol.GRID}
    (folder / "sweep.json").write_text(json.dumps(config, indent=1) + "\n")

"""A sweep: datasets x noise levels x sample sizes x seeds x methods, run in warm workers.

The driver builds the task list, skips what the store already holds, and hands the rest to an
executor as jobs: a method, the observations and a budget, nothing else (the truth stays here,
except for an `Oracle`). Executors return each job's result (a prediction or a failure); the
driver alone scores it (`bench.scoring.score`, the function `bench score` uses), builds the
row (`bench.rows.make_row`) and appends it to the store; the driver is the only writer, so
rerunning the same sweep resumes it. Executors: `joblib` (here: `jobs` supervising threads that
each own one warm worker process) and `dask` (bench.dask_backend: the same warm workers, started
inside the processes of a Dask cluster).
"""
from __future__ import annotations

import json
import queue
import shutil
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed
from tqdm import tqdm

from bench import data_digests, datasets, provenance
from bench.method import Budget, Oracle
from bench.registry import MethodSpec
from bench.rows import make_row
from bench.scoring import score
from bench.store import ResultStore, SweepFileError, read_sweep_file, sole_writer
from bench.tasks import Task
from bench.workers import Job, Worker, not_tried_again, setup_overran
from odecore import processes, protocol
from odecore.arguments import is_finite_number, is_noise_level, is_whole
from odecore.cluster import ClusterError, check_address
from odecore.files import write_text_atomic
from odecore.trajectories import TY

MIN_MEMORY_LIMIT = 2**26  # bytes: below 64 MiB of address space no Python worker starts (a unit slip)


@dataclass(frozen=True)
class Sweep:
    datasets: tuple[str, ...]
    methods: tuple[MethodSpec, ...]
    noise: tuple[float, ...] = (0.0,)
    n: tuple[int, ...] = (128,)
    seeds: tuple[int, ...] = (0,)
    jobs: int = 1
    time_limit: float | None = None  # None: each method's own default
    time_limits: dict[str, float] = field(default_factory=dict)  # per method name (or variant label), over time_limit
    subset: dict[str, int] = field(default_factory=dict)  # per dataset: this many evenly spread trajectories
    memory_limit: int | None = None  # bytes of address space per worker
    out: str = "results/sweep"
    method_files: tuple[str, ...] = field(default=())
    backend: str = "joblib"  # "joblib" (this machine) or "dask" (a cluster, or a LocalCluster)
    scheduler: str | None = None  # tcp://HOST:PORT of a running Dask scheduler (dask backend)
    columns: tuple[str, str] = TY  # the columns a CSV dataset's t and y are read from
    by: str | None = None  # the column that tells several records in one CSV file apart

    def __post_init__(self):
        """A sweep built from Python is checked as the command line checks its options: a bad value
        is a SweepError naming the field, before any folder is made or task is run."""
        for name, value, ok, want in (
                ("datasets", self.datasets, lambda v: isinstance(v, str) and v, "dataset names or paths"),
                ("methods", self.methods, lambda v: isinstance(v, MethodSpec),
                 "method specs, e.g. registry.select(['truth'], registry.discover())"),
                ("noise", self.noise, is_noise_level, "noise levels in [0, 1)"),
                ("n", self.n, lambda v: is_whole(v, protocol.MIN_POINTS), f"whole numbers >= {protocol.MIN_POINTS}"),
                ("seeds", self.seeds, lambda v: is_whole(v, 0), "whole numbers >= 0")):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") or not value \
                    or not all(ok(v) for v in value):
                raise SweepError(f"Sweep {name}={value!r}: expected a non-empty sequence of {want}")
        if not is_whole(self.jobs, 1):
            raise SweepError(f"Sweep jobs={self.jobs!r}: expected a whole number >= 1")
        limits = {"time_limit": self.time_limit, **{f"time_limits[{k!r}]": v for k, v in self.time_limits.items()}}
        for name, value in limits.items():
            if value is not None and not (is_finite_number(value) and value > 0):
                raise SweepError(f"Sweep {name}={value!r}: expected a number of seconds > 0")
        if not isinstance(self.subset, dict) or not all(is_whole(v, 1) for v in self.subset.values()):
            raise SweepError(f"Sweep subset={self.subset!r}: expected {{dataset: whole number >= 1}}")
        if unknown := sorted(set(self.subset) - set(self.datasets)):
            raise SweepError(f"Sweep subset={self.subset!r}: names {', '.join(map(repr, unknown))}, not among "
                             f"its datasets {list(self.datasets)}")
        if self.memory_limit is not None and not is_whole(self.memory_limit, MIN_MEMORY_LIMIT):
            raise SweepError(f"Sweep memory_limit={self.memory_limit!r}: expected None or a whole number of bytes "
                             f">= {MIN_MEMORY_LIMIT} (64 MiB; 2 GB is 2 * 2**30, as --memory-limit 2 gives)")
        if self.backend not in ("joblib", "dask"):
            raise SweepError(f"Sweep backend={self.backend!r}: expected 'joblib' or 'dask'")
        for spec in self.methods:
            if (spec.entry_point or "").partition(":")[0] == "__main__" and not _main_has_file():
                raise SweepError(f"method {spec.name}: its class is defined in __main__ without a file (a notebook, "
                                 "python -c or stdin), which worker processes cannot import; define it in a .py "
                                 "file and load it with registry.discover(extra_files=('that_file.py',))")

    @property
    def reading(self) -> datasets.CsvReading:
        return datasets.CsvReading(self.columns, self.by)


def _main_has_file() -> bool:
    file = getattr(sys.modules.get("__main__"), "__file__", None)
    return bool(file) and Path(file).is_file()


class SweepError(ValueError):
    """A Sweep built with a value the runner cannot use; the message names the field."""


def evenly_spread(items: list, count: int | None) -> list:
    """`count` items spread evenly over `items` (item i * len / count for i < count, the first
    included), or all of them when `count` is None or not smaller than their number."""
    if count is None or count >= len(items):
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def build_tasks(sweep: Sweep) -> list[Task]:
    """Every (trajectory, noise, n, seed) of the sweep once; n is capped at the points a
    trajectory has (a 64-point CSV file is one task at n = 64, whatever n the sweep asks for)."""
    tasks, origin = {}, {}
    for name in sweep.datasets:
        source = datasets.resolve(name).resolve()
        for trajectory in evenly_spread(datasets.load(name, sweep.reading), sweep.subset.get(name)):
            identity = (trajectory.dataset, trajectory.equation_id, trajectory.y0_index)
            if origin.setdefault(identity, source) != source:
                raise datasets.DatasetError(
                    f"{origin[identity]} and {source} both give trajectory {'/'.join(map(str, identity))}: "
                    "rename one (rows are keyed by dataset and file name)")
            for noise in sweep.noise:
                for n in sweep.n:
                    for seed in sweep.seeds:
                        task = Task(trajectory, float(noise), min(int(n), len(trajectory.t)), int(seed))
                        tasks.setdefault(task.key, task)
    return list(tasks.values())


def sweep_rows(sweep: Sweep, rows: pd.DataFrame) -> pd.DataFrame:
    """The stored rows of this sweep's grid (its tasks x its methods): a result folder may hold
    rows of other sweeps (other noise levels, n, seeds or methods), which its summary leaves out."""
    if rows.empty:
        return rows
    tasks = {task.key for task in build_tasks(sweep)}
    methods = {spec.label for spec in sweep.methods}
    keys = zip(rows["dataset"], rows["equation_id"].astype(str), rows["y0_index"].astype(int),
               rows["noise"].astype(float), rows["n"].astype(int), rows["seed"].astype(int))
    mine = [key in tasks and method in methods for key, method in zip(keys, rows["method"])]
    return rows[mine].reset_index(drop=True)


class WorkerPool:
    """`size` warm workers handed out to supervising threads; a killed worker is replaced."""

    def __init__(self, size: int, memory_limit: int | None):
        self.memory_limit = memory_limit
        self.idle: queue.Queue[Worker] = queue.Queue()
        self.everyone: list[Worker] = []
        self.closed, self.lock = False, threading.Lock()
        self.setup_timeouts: dict[str, dict] = {}  # methods whose setup overran: not set up again
        for _ in range(size):
            self.idle.put(self._start())

    def _start(self) -> Worker:
        worker = Worker(self.memory_limit)
        self.everyone.append(worker)
        return worker

    def _give_back(self, worker: Worker) -> None:
        """Return a worker to the idle queue, or a fresh one for a killed worker; none once closed
        (a thread whose worker was killed by `close` would otherwise start one nobody stops)."""
        with self.lock:
            if not self.closed:
                self.idle.put(worker if worker.alive else self._start())

    def execute(self, job: Job) -> dict:
        if job.spec.label in self.setup_timeouts:
            return not_tried_again(self.setup_timeouts[job.spec.label])
        worker = self.idle.get()
        try:
            result = worker.execute(job)
            if setup_overran(result):
                self.setup_timeouts[job.spec.label] = result
            return result
        finally:
            self._give_back(worker)

    def close(self) -> None:
        """Stop every worker, busy ones included (after Ctrl-C, a busy worker is killed)."""
        with self.lock:
            self.closed = True
        for worker in self.everyone:
            worker.close()


class JoblibExecutor:
    """Results of jobs run by `jobs` supervising threads (joblib threading backend), one warm worker each."""

    def __init__(self, jobs: int, memory_limit: int | None):
        self.jobs, self.memory_limit = jobs, memory_limit
        self.pool: WorkerPool | None = None

    def start(self, n_jobs: int) -> None:
        """Nothing to reach beforehand: workers start with their first job."""

    def results(self, jobs: list[Job]):
        """(index of the job, the worker's result) for every job, in any order."""
        self.pool = WorkerPool(min(self.jobs, len(jobs)), self.memory_limit)
        yield from Parallel(n_jobs=self.jobs, backend="threading", return_as="generator_unordered")(
            delayed(_execute)(self.pool, i, job) for i, job in enumerate(jobs))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def _execute(pool: WorkerPool, index: int, job: Job) -> tuple[int, dict]:
    return index, pool.execute(job)


def make_executor(sweep: Sweep):
    """The executor named by `sweep.backend`; each yields (job index, result) per job, in any order."""
    if sweep.backend == "joblib":
        return JoblibExecutor(sweep.jobs, sweep.memory_limit)
    if sweep.backend == "dask":
        from bench.dask_backend import DaskExecutor
        return DaskExecutor(sweep.jobs, sweep.memory_limit, sweep.scheduler)
    raise ValueError(f"unknown backend {sweep.backend!r}")


@dataclass(frozen=True)
class Pending:
    """A job and what only the driver knows about it: the task (with its truth) and the version."""

    job: Job
    task: Task
    version: str


def pending_jobs(sweep: Sweep, store: ResultStore) -> list[Pending]:
    """The jobs of `sweep` that `store` does not hold yet (a result cut short by a shorter time
    limit than the sweep's now, a timeout or a run stopped at its limit, is run again)."""
    versions, limits = budgets(sweep)
    done = store.finished(versions, limits)
    tasks = build_tasks(sweep)
    pending = []
    lawless = [task for task in tasks if not task.trajectory.expression]
    for spec in sweep.methods:
        oracle = issubclass(spec.load(), Oracle)
        limit = limits[spec.label]
        if oracle and lawless:
            some, them = ((f"{len(lawless)} tasks (trajectory, noise, n, seed) come", "them") if len(lawless) > 1
                          else ("1 task comes", "it"))
            print(f"{spec.label} knows the law, and {some} without one: it skips {them}", file=sys.stderr)
        for task in tasks:
            if oracle and not task.trajectory.expression:
                continue
            if task.key + (spec.label,) not in done:
                truth = task.trajectory.expression if oracle else None  # the one door
                job = Job(spec, task.observations(), Budget(time_limit=limit, seed=task.seed), truth=truth)
                pending.append(Pending(job, task, versions[spec.label]))
    return pending


def budgets(sweep: Sweep) -> tuple[dict[str, str], dict[str, float]]:
    """Each method's current version and task time limit, by label: what a stored row must match to count."""
    return ({spec.label: spec.version for spec in sweep.methods},
            {spec.label: method_time_limit(sweep, spec) for spec in sweep.methods})


def method_time_limit(sweep: Sweep, spec: MethodSpec) -> float:
    """The task deadline of a method: the sweep's entry for its label, else for its name, else the
    sweep's `time_limit`, else the method's own default."""
    for key in (spec.label, spec.name):
        if key in sweep.time_limits:
            return float(sweep.time_limits[key])
    return sweep.time_limit or spec.time_limit


def finish(pending: Pending, result: dict) -> dict:
    """The store row of a finished job: the worker's result, scored here against the truth."""
    scores = score(result["expression"], pending.task.trajectory).as_row() if result.get("status") == "ok" else None
    return make_row(pending.task, pending.job.spec.label, pending.version, pending.job.time_limit, result, scores)


def run(sweep: Sweep, progress: bool = True) -> ResultStore:
    """Run the pairs of `sweep` not yet stored in its folder, storing each row as it finishes."""
    if sweep.backend == "dask" and sweep.scheduler:
        check_address(sweep.scheduler)  # before any folder is made
    digests = data_digests.digests(sweep.datasets, readings=dict.fromkeys(sweep.datasets, sweep.reading))
    out = Path(sweep.out)
    fresh = not out.exists()
    try:
        with sole_writer(out):
            return _run(sweep, digests, progress)
    except ClusterError:  # a scheduler that answers but cannot run the sweep: leave no folder made for it
        if fresh and not any((out / "parts").glob("*.parquet")):
            shutil.rmtree(out, ignore_errors=True)
        raise


def _run(sweep: Sweep, digests: dict, progress: bool) -> ResultStore:
    store = ResultStore(sweep.out)
    resuming = any(store.parts.glob("*.parquet"))  # pending_jobs reads the rows themselves
    previous = _previous_config(store.folder)
    if resuming and not previous:  # nothing to check the stored rows' data against
        raise datasets.DatasetError(f"{store.folder} holds results but no readable sweep.json, so they cannot be "
                                    "checked against this data: write to a new --out folder, or restore it")
    data_digests.check_unchanged(digests, previous.get("data_digests", {}), store.folder,
                                 advice="write to a new --out folder, or delete the old one")
    pending = pending_jobs(sweep, store)
    store.folder.mkdir(parents=True, exist_ok=True)
    grid = _sweep_grid(sweep)
    executor, bar = make_executor(sweep), None
    try:
        if pending:  # reached before the start is recorded: one that cannot run tasks leaves no `runs` entry
            executor.start(len(pending))
        _write_config(sweep, store.folder, grid, pending=len(pending), digests=digests)
        if progress and resuming:
            print(f"resuming {sweep.out}: {len(pending)} (task, method) pairs to run, the rest already stored "
                  "(a longer time limit reruns only the results it cut short; a new method version reruns its "
                  "rows)", file=sys.stderr)
            longer = store.under_longer_limits(*budgets(sweep), sweep_rows(sweep, store.read()))
            if longer:
                print(f"note: {longer} stored row{'s' * (longer != 1)} ran under a longer time limit than now and "
                      f"{'are' if longer != 1 else 'is'} kept (the time_limit column says which; a new --out runs "
                      "every method under one limit)", file=sys.stderr)
        if not pending:
            _mark_finished(store.folder, grid)  # an interrupted start of this grid, now complete
            return store
        bar = tqdm(total=len(pending), disable=not progress, unit="task", dynamic_ncols=True)
        for index, result in executor.results([p.job for p in pending]):
            row = finish(pending[index], result)
            store.append(row)
            bar.set_postfix_str(f"{row['method']} {row['dataset']}/{row['equation_id']}: {row['status']}")
            bar.update()
        store.flush()
        _mark_finished(store.folder, grid)
    finally:  # a second Ctrl-C or kill while the workers stop must not leave them running
        with processes.interrupts_ignored(), processes.signal_handled(signal.SIGTERM, signal.SIG_IGN):
            try:
                store.flush()
            finally:  # a failed write must not leave the workers running, or the driver never exits
                if bar is not None:
                    bar.close()
                executor.close()
    return store


def _previous_config(folder: Path) -> dict:
    """The folder's sweep.json, or {} where none is readable (a folder with rows and no readable
    sweep.json is refused by `run`)."""
    try:
        return read_sweep_file(folder)
    except SweepFileError:
        return {}


def _new_data(digests: dict[str, dict], before: dict) -> dict[str, dict]:
    """The entries of `digests` that are not the stored data: a resume from a copy of a file at
    another path keeps the first file on record, so an edit of that file reads "changed since"."""
    return {key: entry for key, entry in digests.items()
            if not (isinstance(before.get(key), dict) and before[key]["sha256"] == entry["sha256"])}


def _grid(config: dict) -> dict:
    """What a start ran: its datasets (with their subsets), noise levels, n, seeds and methods."""
    keys = ("datasets", "subset", "noise", "n", "seeds", "methods")
    return {key: config[key] for key in keys}


def _write_config(sweep: Sweep, folder: Path, grid: dict, pending: int, digests: dict[str, dict]) -> None:
    """sweep.json: the last sweep's settings, and under "runs" the commit, machine, start time,
    grid and pending pairs of every start that had tasks to run (a resume adds one; a start with
    nothing to do does not; `_mark_finished` adds the time a start ran to its end), so a folder
    that holds several sweeps says which, and an interrupted one says so. Datasets and data digests
    accumulate over the sweeps written to the folder, so `bench score` finds the truth of every
    stored row."""
    config = _settings(sweep)  # `grid` (`_sweep_grid`) is this start's, before the datasets accumulate
    config["protocol"] = {"T": protocol.T, "T_extra": protocol.T_EXTRA, "grid": protocol.GRID}
    before = _previous_config(folder)
    config["datasets"] = list(dict.fromkeys([*before.get("datasets", []), *sweep.datasets]))
    config["data_digests"] = {**before.get("data_digests", {}), **_new_data(digests, before.get("data_digests", {}))}
    runs = before.get("runs") or ([before["provenance"]] if "provenance" in before else [])  # d3898b7 wrote one
    start = {**provenance.describe(), "started_at": time.time(), "grid": grid, "pending": pending}
    config["runs"] = runs + ([start] if pending else [])
    if before.get("rescored"):  # `bench score`'s record (bench.rescoring) outlives a resume
        config["rescored"] = before["rescored"]
    write_text_atomic(json.dumps(config, indent=1) + "\n", folder / "sweep.json")


def _settings(sweep: Sweep) -> dict:
    """The sweep's settings as sweep.json records them, methods by label."""
    return {**asdict(sweep), "methods": [spec.label for spec in sweep.methods]}


def _sweep_grid(sweep: Sweep) -> dict:
    """The grid a start of `sweep` records in sweep.json (`_grid`), as JSON reads it back."""
    return json.loads(json.dumps(_grid(_settings(sweep))))


def _mark_finished(folder: Path, grid: dict) -> None:
    """Mark the last start in sweep.json as run to its end, where it ran `grid` (every pair stored)."""
    config = _previous_config(folder)
    if config.get("runs") and "finished_at" not in config["runs"][-1] and config["runs"][-1].get("grid") == grid:
        config["runs"][-1]["finished_at"] = time.time()
        write_text_atomic(json.dumps(config, indent=1) + "\n", folder / "sweep.json")


def unfinished_starts(folder: Path) -> list[dict]:
    """The starts recorded in `folder`'s sweep.json that stopped before their end (interrupted, or
    killed) and were not run to their end by a later start of the same grid; starts recorded
    before starts were marked finished are not counted."""
    runs = _previous_config(folder).get("runs") or []
    return [run for i, run in enumerate(runs)
            if "pending" in run and "finished_at" not in run
            and not any("finished_at" in later and later.get("grid") == run.get("grid") for later in runs[i + 1:])]

"""Sweeps on a Dask cluster: each Dask task runs one job in a warm bench worker process.

The hard deadline of a job is kept the same way as on one machine: inside each Dask worker
process, the job goes to a `bench.workers.Worker` child process (its own process group, killed
at the deadline) that is kept warm for the next job of that Dask worker. Dask worker processes
are daemonic by default and daemonic processes may not start children, so workers must run with
`distributed.worker.daemon: False`:

- `LocalCluster` (``--backend dask`` without ``--scheduler``): set here before the cluster starts;
- `dask worker tcp://HOST:PORT`: start it with ``DASK_DISTRIBUTED__WORKER__DAEMON=False`` in the
  environment (or with ``--no-nanny``, where the worker is the non-daemonic main process).

The driver stays the only writer of the result store and the only scorer: each Dask task returns
the worker's result (prediction or failure), and the driver scores it and builds the row. A Dask
worker that dies takes its running task with it; the scheduler reruns that task on another worker
(up to `distributed.scheduler.allowed-failures` times), and a task that still cannot finish is
recorded as an error row, so no job is ever lost. A method whose setup overruns its limit has
its unfinished tasks cancelled and recorded as timeouts, as on one machine.
"""
from __future__ import annotations

import atexit
import contextlib
import queue
import sys
import threading
import uuid

import dask

from bench.rows import DASK_FAILED
from bench.workers import Job, Worker, not_tried_again, setup_overran
from odecore.cluster import ClusterError, connect

NON_DAEMONIC = {"distributed.worker.daemon": False}


def local_cluster(workers: int, **kwargs):
    """A LocalCluster whose worker processes may start bench worker children."""
    from distributed import LocalCluster

    dask.config.set(NON_DAEMONIC)  # global: the nanny reads it again when it restarts a worker
    options = dict(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    options.update(kwargs)
    return LocalCluster(**options)


# Warm bench workers of this (Dask worker) process, by memory limit; one per busy Dask thread.
_idle: dict[int | None, queue.SimpleQueue] = {}
_lock = threading.Lock()
_closing = threading.Event()  # the driver asked to stop: a job still running closes its worker when done


def run_job(job: Job, memory_limit: int | None) -> dict:
    """The worker's result for `job`, run in a warm bench worker of this Dask worker process."""
    with _lock:
        if not _idle:
            # before multiprocessing's own exit handler, which would wait for the idle children
            atexit.register(_close_idle_workers)
        idle = _idle.setdefault(memory_limit, queue.SimpleQueue())
    _closing.clear()  # a new sweep's job
    try:
        worker = idle.get_nowait()
    except queue.Empty:
        worker = Worker(memory_limit)
    try:
        result = worker.execute(job)
    finally:
        if worker.alive and not _closing.is_set():
            idle.put(worker)
        else:  # dead, or its sweep was stopped while it ran: kept warm, it would outlive the sweep
            worker.close()  # reaps it and removes its output file
    return result


def _daemonic() -> bool:
    """Run on each Dask worker: whether its process may not start children."""
    import multiprocessing

    return multiprocessing.current_process().daemon


def _close_idle_workers() -> None:
    _closing.set()  # the jobs still running close theirs when they end (a running task cannot be cancelled)
    for idle in _idle.values():
        while not idle.empty():
            idle.get_nowait().close()


@contextlib.contextmanager
def _driver_logs_quiet():
    """Dask's own logs silenced in this process for a block, then as they were: a LocalCluster
    closed on Ctrl-C logged 'Worker process still alive after 4.0 seconds, killing' beside the
    sweep's one-line message."""
    import logging

    loggers = _dask_loggers()
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _quiet_for_shutdown() -> None:
    """Run on each worker of a cluster of our own just before it closes: a worker whose heartbeat
    meets the scheduler already gone logs an error with a traceback (seen on a busy machine), which
    says nothing about the sweep and would read as if it had failed."""
    import logging

    for logger in _dask_loggers():
        logger.setLevel(logging.CRITICAL)


def _dask_loggers() -> list:
    import logging

    names = [name for name in logging.Logger.manager.loggerDict if name.startswith("distributed.")]
    return [logging.getLogger(name) for name in ("distributed", *names)]


class DaskExecutor:
    """Rows of jobs run on a Dask cluster: the one at `scheduler`, or a new LocalCluster of `jobs` workers."""

    def __init__(self, jobs: int, memory_limit: int | None, scheduler: str | None):
        self.jobs, self.memory_limit, self.scheduler = jobs, memory_limit, scheduler
        self.cluster = self.client = None
        self.futures = []

    def start(self, n_jobs: int) -> None:
        """Connect to the scheduler (or start the local cluster) for `n_jobs` jobs; ClusterError
        where its workers cannot run them."""
        from distributed import Client

        if self.client is not None:
            return
        if self.scheduler:
            self.client = connect(self.scheduler)
            daemonic = sorted(address for address, flag in self.client.run(_daemonic).items() if flag)
            if daemonic:  # every job would fail on them, and a resume would keep those rows
                raise ClusterError(f"the Dask worker(s) {', '.join(daemonic)} are daemonic and cannot run bench "
                                   "workers: restart them with DASK_DISTRIBUTED__WORKER__DAEMON=False in the "
                                   "environment (or with --no-nanny)")
            if not self.client.scheduler_info().get("workers"):  # else it waits at 0% without a word
                print(f"note: the scheduler at {self.scheduler} has no workers yet; the sweep waits for them "
                      f"(DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker {self.scheduler})", file=sys.stderr)
        else:
            self.cluster = local_cluster(min(self.jobs, n_jobs))
            self.client = Client(self.cluster)

    def results(self, jobs: list[Job]):
        """(index of the job, the worker's result) for every job, in any order."""
        from distributed import as_completed

        self.start(len(jobs))
        tag = uuid.uuid4().hex[:8]  # task keys unique on a scheduler shared by several sweeps
        self.futures = [self.client.submit(run_job, job, self.memory_limit, pure=False, key=f"bench-{tag}-{i}")
                        for i, job in enumerate(jobs)]
        index = {future.key: i for i, future in enumerate(self.futures)}
        answered: set[int] = set()
        for future in as_completed(self.futures):
            i = index[future.key]
            if i in answered:  # cancelled below, already answered
                continue
            answered.add(i)
            if future.status == "finished":
                result = future.result()
            else:  # e.g. KilledWorker: every worker that tried it died
                error = future.exception()
                reason = f"{DASK_FAILED}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                result = {"status": "error", "reason": reason[:500]}
            self.futures[i] = None  # stored by the driver: free it on the worker, where a lost machine's
            future.release()  # finished results would otherwise be computed again (and held all sweep)
            yield i, result
            if setup_overran(result):  # the method's other tasks are cancelled, as on joblib
                for j in self._cancel(jobs, jobs[i].spec.label, answered):
                    answered.add(j)
                    yield j, not_tried_again(result)

    def _cancel(self, jobs: list[Job], label: str, answered: set[int]) -> list[int]:
        """Cancel the unanswered, unfinished tasks of method `label`; their indices. A task that has
        already finished (on a worker whose setup did not overrun) keeps its result: `as_completed`
        yields it later."""
        chosen = [j for j, job in enumerate(jobs) if job.spec.label == label and j not in answered
                  and self.futures[j].status == "pending"]
        self.client.cancel([self.futures[j] for j in chosen])
        return chosen

    def close(self) -> None:
        if self.client is not None:
            for future in self.futures:
                if future is not None:  # None: answered and released
                    future.cancel()
            try:  # stop the warm bench workers; a Dask worker waits for its children on exit
                self.client.run(_close_idle_workers)
                if self.cluster is not None:  # a user's own workers keep their logging
                    self.client.run(_quiet_for_shutdown)
            except Exception:
                pass
            self.client.close()
        if self.cluster is not None:
            with _driver_logs_quiet():  # its nannies log from this process while they stop the workers
                self.cluster.close()

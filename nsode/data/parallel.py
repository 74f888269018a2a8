"""A parallel map for the data generator: joblib processes on this machine, or a Dask cluster
through joblib's dask backend, behind one `run(fn, argument tuples, ordered)` call."""
from __future__ import annotations

import os
import signal

from odecore.cluster import ClusterError, connect  # noqa: F401  (ClusterError: what callers catch)
from odecore.processes import when_orphaned


class Executor:
    """`run(fn, list of argument tuples, ordered=True)` -> iterator of results, on joblib processes
    (-j) or, with a scheduler address, on a Dask cluster through joblib's dask backend."""

    def __init__(self, jobs: int, scheduler: str | None):
        self.jobs, self.scheduler, self.client = max(1, int(jobs)), scheduler, None

    def __enter__(self):
        if self.scheduler:
            self.client = connect(self.scheduler)
        return self.run

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()

    def run(self, fn, args: list[tuple], ordered: bool = True):
        from joblib import Parallel, delayed, parallel_config

        if not args:
            return iter(())
        if self.client is None and self.jobs == 1:
            return (fn(*a) for a in args)
        return_as = "generator" if ordered else "generator_unordered"
        if self.client is not None:
            with parallel_config(backend="dask"):  # uses the client opened in __enter__
                parallel = Parallel(n_jobs=-1, return_as=return_as)
        else:
            parallel = Parallel(n_jobs=self.jobs, backend="loky", return_as=return_as)
            driver = os.getpid()
            return parallel(delayed(_in_worker)(fn, driver, *a) for a in args)
        return parallel(delayed(fn)(*a) for a in args)


_WATCHED = False


def _in_worker(fn, driver: int, *args):
    """fn(*args) in a loky worker that stops once the generator that started it is gone: killed with
    SIGKILL, it would otherwise leave its workers to finish their shards for nobody."""
    global _WATCHED
    if not _WATCHED and os.getppid() == driver:
        _WATCHED = True
        when_orphaned(lambda: os.kill(os.getpid(), signal.SIGKILL))
    return fn(*args)

"""A parallel map for the data generator: joblib processes on this machine, or a Dask cluster
through joblib's dask backend, behind one `run(fn, argument tuples, ordered)` call."""
from __future__ import annotations

from core.cluster import ClusterError, connect  # noqa: F401  (ClusterError: what callers catch)


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
        return parallel(delayed(fn)(*a) for a in args)

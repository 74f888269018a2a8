"""Sweeps on a Dask cluster store the same rows as on joblib, and a killed Dask worker loses no task."""
import os
import signal
import threading
import time
from types import SimpleNamespace
from pathlib import Path

import pytest

from bench import registry, runner
from bench.dask_backend import local_cluster
from bench.store import KEY, ResultStore

FIXTURES = str(Path(__file__).parent / "fixtures" / "misbehaving_methods.py")
COMPARED = KEY + ["status", "reason", "expression", "score_status", "complexity", "method_version",
                  "truth_expression", *(f"{m}_{p}" for p in ("interp", "extrap") for m in ("r2", "l1", "linf", "isclose"))]


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2, silence_logs=50) as cluster:
        yield cluster


def sweep(out, method, **kwargs):
    specs = registry.discover((FIXTURES,))
    return runner.Sweep(datasets=("textbook",), methods=(specs[method],), noise=(0.0, 0.01), out=str(out),
                        method_files=(FIXTURES,), **kwargs)


@pytest.mark.parametrize("method", ["truth", "data-dependent"])
def test_dask_sweep_stores_the_same_rows_as_joblib(tmp_path, cluster, method):
    """`data-dependent` answers with a function of every observed value (and its metadata holds
    n and the sums of t and y), so a backend that drew other noise, times or n fails here."""
    on_joblib = runner.run(sweep(tmp_path / "joblib", method, jobs=2), progress=False).read()
    on_dask = runner.run(sweep(tmp_path / "dask", method, jobs=2, backend="dask",
                               scheduler=cluster.scheduler_address), progress=False).read()
    assert len(on_joblib) == 24 and (on_joblib.status == "ok").all()
    if method == "data-dependent":
        assert on_joblib.expression.nunique() == 24
        assert list(on_joblib.sort_values(KEY).metadata) == list(on_dask.sort_values(KEY).metadata)
    a, b = (frame[COMPARED].sort_values(KEY).reset_index(drop=True) for frame in (on_joblib, on_dask))
    assert a.equals(b)


def test_killing_a_dask_worker_mid_sweep_loses_no_task(tmp_path, cluster):
    from distributed import Client

    out = tmp_path / "killed"
    with Client(cluster) as client:
        pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    killed = threading.Event()
    killed_at = []

    def kill_when_half_way():
        store, deadline = ResultStore(out), time.time() + 120
        while time.time() < deadline and len(store.read()) < 4:
            time.sleep(0.1)
        killed_at.append(time.time())
        os.kill(victim, signal.SIGKILL)
        killed.set()

    killer = threading.Thread(target=kill_when_half_way, daemon=True)
    killer.start()
    rows = runner.run(sweep(out, "slow", jobs=2, backend="dask", scheduler=cluster.scheduler_address),
                      progress=False).read()
    killer.join(timeout=5)
    assert killed.is_set(), "the sweep ended before a worker could be killed"
    assert (rows.finished_at > killed_at[0]).sum() >= 2, "the kill landed after the last rows"
    assert len(rows) == 24 and not rows.duplicated(KEY).any()
    assert set(rows.status) <= {"ok", "error"} and (rows.status == "ok").sum() >= 22


def test_daemonic_dask_workers_are_refused_before_any_row_is_stored(tmp_path):
    import dask
    from distributed import LocalCluster

    from odecore.cluster import ClusterError

    with dask.config.set({"distributed.worker.daemon": True}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                         silence_logs=50) as daemonic:
        with pytest.raises(ClusterError, match="DAEMON=False"):
            runner.run(sweep(tmp_path / "out", "truth", backend="dask", scheduler=daemonic.scheduler_address),
                       progress=False)
    assert not (tmp_path / "out").exists()  # refused before anything was stored: no folder left for it


def test_each_stored_result_is_released_on_the_workers(tmp_path, cluster):
    """Every finished result stayed on the workers until the sweep ended, and a lost worker made
    Dask compute again the results it held, which the driver had stored already."""
    from distributed import Client

    from bench.dask_backend import DaskExecutor

    planned = sweep(tmp_path / "out", "truth", backend="dask", scheduler=cluster.scheduler_address)
    jobs = [pending.job for pending in runner.pending_jobs(planned, ResultStore(planned.out))]
    executor = DaskExecutor(jobs=2, memory_limit=None, scheduler=cluster.scheduler_address)
    try:
        answered = sum(1 for _ in executor.results(jobs))
        assert answered == len(jobs) == 24 and all(future is None for future in executor.futures)
        with Client(cluster) as client:
            deadline = time.time() + 10
            while (held := client.run_on_scheduler(_bench_keys)) and time.time() < deadline:
                time.sleep(0.1)
        assert held == 0
    finally:
        executor.close()


def test_a_scheduler_without_workers_is_named_not_waited_on_in_silence(capsys):
    from distributed import LocalCluster

    from bench.dask_backend import DaskExecutor

    with LocalCluster(n_workers=0, dashboard_address=":0", silence_logs=50) as empty:
        executor = DaskExecutor(jobs=1, memory_limit=None, scheduler=empty.scheduler_address)
        try:
            executor.start(1)
        finally:
            executor.close()
    assert f"note: the scheduler at {empty.scheduler_address} has no workers yet" in capsys.readouterr().err


def _bench_keys(dask_scheduler) -> int:
    return sum(str(key).startswith("bench-") for key in dask_scheduler.tasks)


def _short_setup_limit():
    import bench.workers

    bench.workers.SETUP_TIME_LIMIT = 2.0


def test_a_setup_that_overruns_on_dask_is_not_tried_again_on_every_task(tmp_path):
    from distributed import Client

    with local_cluster(1, silence_logs=50) as one, Client(one) as client:
        client.run(_short_setup_limit)  # in the Dask worker, which supervises the bench worker
        rows = runner.run(sweep(tmp_path / "out", "hangs-in-setup", subset={"textbook": 4}, backend="dask",
                                scheduler=one.scheduler_address), progress=False).read()
    assert len(rows) == 8 and (rows["status"] == "timeout").all()
    assert rows["reason"].str.contains("not tried again").sum() >= 6  # the limit waited out once or twice, not eight times


def test_workers_of_our_own_cluster_are_quiet_when_it_closes(cluster):
    """A heartbeat that meets the scheduler already gone must not print a traceback after a sweep."""
    import logging

    from distributed import Client

    from bench.dask_backend import _quiet_for_shutdown

    def error_shown() -> bool:
        return logging.getLogger("distributed.worker").isEnabledFor(logging.ERROR)

    with Client(cluster) as client:
        assert all(client.run(error_shown).values())
        client.run(_quiet_for_shutdown)
        assert not any(client.run(error_shown).values())


def test_closing_quiets_the_workers_of_our_own_cluster_only():
    """`DaskExecutor.close` quiets the workers of the cluster it started, never a user's own."""
    from types import SimpleNamespace

    from bench.dask_backend import DaskExecutor, _close_idle_workers, _quiet_for_shutdown

    for own_cluster in (True, False):
        ran = []
        executor = DaskExecutor(jobs=1, memory_limit=None, scheduler=None if own_cluster else "tcp://theirs:8786")
        executor.client = SimpleNamespace(run=ran.append, close=lambda: None)
        executor.cluster = SimpleNamespace(close=lambda: None) if own_cluster else None
        executor.close()
        assert ran == ([_close_idle_workers, _quiet_for_shutdown] if own_cluster else [_close_idle_workers])


@pytest.mark.parametrize("says, problem", [
    (None, "accepts but says nothing within 1 s: not a Dask scheduler"),  # a dashboard, a web server
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", "answers, but not as a Dask scheduler"),  # read as frames: exabytes
])
def test_an_address_that_is_not_a_dask_scheduler_is_one_line_not_a_hang(says, problem):
    import socket

    from odecore.cluster import ClusterError, connect

    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = server.accept()
        if says:
            conn.sendall(says)
        time.sleep(3)
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    with pytest.raises(ClusterError, match=problem):
        connect(address, timeout="1s")
    server.close()


def test_a_job_still_running_when_its_sweep_stops_closes_its_warm_worker(monkeypatch):
    """A running Dask task cannot be cancelled: after an interrupted sweep it put its bench worker
    back among the warm ones, which outlived the sweep on the user's Dask workers."""
    from bench import dask_backend

    started, release = threading.Event(), threading.Event()

    class FakeWorker:
        def __init__(self, memory_limit):
            self.alive, self.closed = True, False

        def execute(self, job):
            started.set()
            release.wait(10)
            return {"status": "ok"}

        def close(self):
            self.closed = True

    made = []
    monkeypatch.setattr(dask_backend, "Worker", lambda limit: made.append(FakeWorker(limit)) or made[-1])
    monkeypatch.setattr(dask_backend, "_idle", {})
    monkeypatch.setattr(dask_backend, "atexit", SimpleNamespace(register=lambda fn: None))
    running = threading.Thread(target=dask_backend.run_job, args=(None, None))
    running.start()
    assert started.wait(10)
    dask_backend._close_idle_workers()  # what DaskExecutor.close runs on every Dask worker
    release.set()
    running.join(10)
    assert made[0].closed and dask_backend._idle[None].empty()
    release.clear()
    started.clear()
    finishing = threading.Thread(target=dask_backend.run_job, args=(None, None))  # the next sweep keeps it warm
    finishing.start()
    assert started.wait(10)
    release.set()
    finishing.join(10)
    assert not made[1].closed and dask_backend._idle[None].get_nowait() is made[1]


def test_a_dask_job_s_bench_worker_gets_the_sweep_s_memory_limit(monkeypatch):
    """--memory-limit on Dask: each warm bench worker is started with it, and one per limit is kept."""
    from bench import dask_backend

    class FakeWorker:
        def __init__(self, memory_limit):
            self.memory_limit, self.alive = memory_limit, True

        def execute(self, job):
            return {"status": "ok"}

        def close(self):
            self.alive = False

    made = []
    monkeypatch.setattr(dask_backend, "Worker", lambda limit: made.append(FakeWorker(limit)) or made[-1])
    monkeypatch.setattr(dask_backend, "_idle", {})
    monkeypatch.setattr(dask_backend, "atexit", SimpleNamespace(register=lambda fn: None))
    for limit in (2 * 2**30, 2 * 2**30, None):
        assert dask_backend.run_job(None, limit) == {"status": "ok"}
    assert [worker.memory_limit for worker in made] == [2 * 2**30, None]  # the first kept warm for the second job


def test_a_setup_overrun_cancels_only_the_method_s_unfinished_tasks():
    """A task of that method already finished on another Dask worker keeps its real result (the
    futures `as_completed` has not yet yielded): it was once cancelled and stored as not tried."""
    from bench.dask_backend import DaskExecutor

    cancelled = []
    executor = DaskExecutor(jobs=2, memory_limit=None, scheduler=None)
    executor.client = SimpleNamespace(cancel=cancelled.extend)
    executor.futures = [SimpleNamespace(status=status) for status in ("finished", "finished", "pending", "error",
                                                                      "pending", "pending")]
    labels = ["m", "m", "m", "m", "other", "m"]
    jobs = [SimpleNamespace(spec=SimpleNamespace(label=label)) for label in labels]
    assert executor._cancel(jobs, "m", answered={0}) == [2, 5]
    assert cancelled == [executor.futures[2], executor.futures[5]]
    executor.client = None  # nothing to close

"""The runner survives misbehaving methods, resumes after a hard kill, and loads plugins."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import registry, runner
from bench.rows import COLUMNS
from bench.store import KEY, ResultStore

FIXTURES = str(Path(__file__).parent / "fixtures" / "misbehaving_methods.py")
ROOT = Path(__file__).resolve().parents[2]


def sweep(tmp_path, *names, **kwargs):
    specs = registry.discover((FIXTURES,))
    config = dict(datasets=("textbook",), methods=tuple(registry.select(list(names), specs)),
                  out=str(tmp_path / "out"), method_files=(FIXTURES,))
    config.update(kwargs)
    return runner.Sweep(**config)


def test_method_file_is_discovered():
    specs = registry.discover((FIXTURES,))
    assert {"hangs", "crashes", "garbage", "slow", "truth"} <= set(specs)


def test_hanging_crashing_and_garbage_methods_are_recorded_and_the_sweep_goes_on(tmp_path):
    config = sweep(tmp_path, "hangs", "crashes", "exits", "dies", "garbage", "truth", jobs=2)
    # 12 Textbook tasks per method (the hanging one waits out its 2 s limit on each)
    store = runner.run(config, progress=False)
    rows = store.read()
    assert len(rows) == 6 * 12
    by = rows.groupby("method")["status"].agg(set)
    assert by["hangs"] == {"timeout"}
    assert by["crashes"] == {"error"} and by["dies"] == {"error"} and by["exits"] == {"error"}
    assert by["garbage"] == {"invalid"}
    assert by["truth"] == {"ok"}
    assert rows.loc[rows.method == "crashes", "reason"].iloc[0] == "RuntimeError: this method always fails"
    assert set(rows.loc[rows.method == "exits", "reason"]) == {"SystemExit: a library gave up"}
    assert "died" in rows.loc[rows.method == "dies", "reason"].iloc[0]
    hang_times = rows.loc[rows.method == "hangs"]
    assert "2 s limit" in hang_times["reason"].iloc[0]


def test_resume_after_kill_9_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "bench", "run", "--dataset", "textbook", "--noise", "0", "0.01",
           "--methods", "slow", "--method-file", FIXTURES, "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = ResultStore(out, flush_rows=1)
    deadline = time.time() + 120
    while time.time() < deadline and len(store.read()) < 3:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(store.read())
    assert 3 <= partial < 24
    assert [start["pending"] for start in runner.unfinished_starts(out)] == [24]
    report = subprocess.run([sys.executable, "-m", "bench", "report", str(out)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0 and "stopped before its end (24 pairs" in report.stderr, report.stderr
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert runner.unfinished_starts(out) == []  # the resume ran the same grid to its end
    rows = store.read()
    assert len(rows) == 24
    files = sorted((out / "parts").glob("*.parquet"))
    import pandas as pd
    everything = pd.concat([pd.read_parquet(f) for f in files])
    assert not everything.duplicated(KEY).any(), "a finished task was run twice"


@pytest.mark.parametrize("signals", [1, 2])  # a second one while the workers are being stopped
def test_sigterm_saves_finished_rows_and_stops_the_workers(tmp_path, signals):
    import threading

    import psutil

    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "bench", "run", "--methods", "truth", "hangs", "--method-file", FIXTURES,
           "--time-limit", "300", "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: proc.stderr.read(1), "")), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and "12/24" not in "".join(seen):  # the progress bar: truth done, its rows
        time.sleep(0.2)  # waiting in the driver's buffer while `hangs` runs
    workers = psutil.Process(proc.pid).children(recursive=True)
    proc.terminate()
    if signals == 2:
        time.sleep(0.5)  # within the busy worker's 2 s grace to exit
        proc.terminate()
    proc.wait(timeout=60)
    reader.join(timeout=10)
    assert proc.returncode == 143 and "Traceback" not in "".join(seen), "".join(seen)
    assert (ResultStore(out).read().method == "truth").sum() == 12  # none left in the driver's buffer
    _, alive = psutil.wait_procs(workers, timeout=10)  # SIGKILL lands asynchronously on a loaded machine
    assert not [w for w in alive if _running(w)]


def _running(process) -> bool:
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_method_exhausting_memory_fails_alone(tmp_path):
    config = sweep(tmp_path, "eats-memory", "truth", memory_limit=2 * 2**30)
    rows = runner.run(config, progress=False).read()
    by = rows.groupby("method")["status"].agg(set)
    assert by["eats-memory"] == {"error"} and by["truth"] == {"ok"}
    assert "MemoryError" in rows.loc[rows.method == "eats-memory", "reason"].iloc[0]


def test_a_timeout_is_rerun_when_the_time_limit_grows_and_kept_otherwise(tmp_path):
    short = sweep(tmp_path, "slow", subset={"textbook": 2}, time_limit=0.1)
    rows = runner.run(short, progress=False).read()
    assert set(rows["status"]) == {"timeout"} and len(rows) == 2
    assert runner.pending_jobs(short, ResultStore(short.out)) == []  # the same limit: nothing to redo
    longer = sweep(tmp_path, "slow", subset={"textbook": 2}, time_limit=30)
    rows = runner.run(longer, progress=False).read()
    assert set(rows["status"]) == {"ok"} and len(rows) == 2 and set(rows["time_limit"]) == {30}
    parts = pd.read_parquet(Path(longer.out) / "parts")  # a part of timeouts alone joins the others
    assert len(parts) == 4 and set(parts["status"]) == {"ok", "timeout"}


def test_a_resume_under_a_shorter_limit_keeps_the_rows_and_says_so(tmp_path, capsys):
    """Its rows once mixed two budgets without a word: the tables do not show the limits."""
    runner.run(sweep(tmp_path, "truth", subset={"textbook": 2}, time_limit=30), progress=True)
    capsys.readouterr()
    shorter = sweep(tmp_path, "truth", subset={"textbook": 2}, time_limit=5)
    assert set(runner.run(shorter, progress=True).read()["time_limit"]) == {30}
    assert "note: 2 stored rows ran under a longer time limit than now and are kept" in capsys.readouterr().err


def test_the_note_on_longer_limits_counts_only_this_sweep_s_rows(tmp_path, capsys):
    """The folder's rows of another noise level, under a longer limit, are not this sweep's to keep."""
    runner.run(sweep(tmp_path, "truth", subset={"textbook": 2}, time_limit=30), progress=False)
    capsys.readouterr()
    other = sweep(tmp_path, "truth", subset={"textbook": 2}, noise=(0.01,), time_limit=5)
    assert len(runner.pending_jobs(other, ResultStore(other.out))) == 2
    runner.run(other, progress=True)
    assert "ran under a longer time limit" not in capsys.readouterr().err


def test_a_task_lost_with_its_dask_workers_is_run_again_on_resume(tmp_path):
    config = sweep(tmp_path, "truth", subset={"textbook": 2})
    store = runner.run(config, progress=False)
    rows = store.read()
    rows.loc[0, ["status", "reason"]] = ["error", "dask task failed: KilledWorker: Attempted to run task bench-1 "
                                                  "on 4 different workers, but all those workers died"]
    rows.loc[1, ["status", "reason"]] = ["error", "worker process died during fit: exit code 3"]  # the method's
    store.replace_all(rows)
    redo = runner.pending_jobs(config, ResultStore(config.out))
    assert [pending.task.key for pending in redo] == [tuple(rows.loc[0, list(KEY[:-1])])]


def test_a_result_cut_short_by_its_time_limit_is_rerun_when_the_limit_grows(tmp_path):
    short = sweep(tmp_path, "cut-short", "truth", subset={"textbook": 2}, time_limit=5)
    runner.run(short, progress=False)
    assert runner.pending_jobs(short, ResultStore(short.out)) == []
    longer = sweep(tmp_path, "cut-short", "truth", subset={"textbook": 2}, time_limit=20)
    redo = runner.pending_jobs(longer, ResultStore(longer.out))
    assert {pending.job.spec.label for pending in redo} == {"cut-short"} and len(redo) == 2  # truth was not cut
    rows = runner.run(longer, progress=False).read()
    assert set(rows.loc[rows.method == "cut-short", "time_limit"]) == {20}
    assert rows.loc[rows.method == "cut-short", "metadata"].str.contains('"runs_stopped_by_time": 0').all()


def test_a_method_out_of_time_is_a_timeout_and_rerun_when_the_limit_grows(tmp_path):
    """An FD baseline whose every run was killed at its share of the limit was an error row, never rerun."""
    short = sweep(tmp_path, "out-of-time", subset={"textbook": 2}, time_limit=5)
    rows = runner.run(short, progress=False).read()
    assert set(rows["status"]) == {"timeout"} and rows["reason"].str.contains("FitTimeout").all()
    assert runner.pending_jobs(short, ResultStore(short.out)) == []
    longer = sweep(tmp_path, "out-of-time", subset={"textbook": 2}, time_limit=20)
    assert set(runner.run(longer, progress=False).read()["status"]) == {"ok"}


def test_a_failed_write_still_stops_the_workers(tmp_path, monkeypatch):
    """Otherwise the driver waits on its workers at exit and never returns."""
    closed = []
    close = runner.JoblibExecutor.close
    monkeypatch.setattr(runner.JoblibExecutor, "close", lambda self: (closed.append(True), close(self)))
    monkeypatch.setattr(ResultStore, "flush", lambda self: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        runner.run(sweep(tmp_path, "truth", subset={"textbook": 2}), progress=False)
    assert closed == [True]


def test_a_sweeps_summary_leaves_out_the_folders_rows_of_other_sweeps(tmp_path):
    runner.run(sweep(tmp_path, "truth", subset={"textbook": 2}, noise=(0.0,)), progress=False)
    second = sweep(tmp_path, "truth", subset={"textbook": 2}, noise=(0.01,))
    rows = runner.run(second, progress=False).read()
    assert len(rows) == 4 and set(runner.sweep_rows(second, rows)["noise"]) == {0.01}
    assert len(runner.sweep_rows(second, rows)) == 2


def test_a_setup_that_overruns_its_limit_is_not_tried_again_on_every_task(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.workers.SETUP_TIME_LIMIT", 2.0)
    rows = runner.run(sweep(tmp_path, "hangs-in-setup", subset={"textbook": 4}, jobs=1), progress=False).read()
    assert (rows["status"] == "timeout").all() and len(rows) == 4
    assert rows["reason"].str.contains("not tried again").sum() == 3  # the limit waited out once, not four times


def test_what_a_method_prints_is_kept_in_its_row_not_shown(tmp_path, capfd):
    rows = runner.run(sweep(tmp_path, "chatty", "dies", subset={"textbook": 1}), progress=False).read()
    chatty = rows.loc[rows["method"] == "chatty"].iloc[0]
    assert chatty["status"] == "ok" and chatty["output"].endswith("generation 4999\nfrom C: done\n")
    assert len(chatty["output"]) <= 2000
    assert "generation" not in capfd.readouterr().out


def test_reading_a_mistyped_result_folder_creates_nothing(tmp_path):
    from bench.store import ResultStore

    assert ResultStore(tmp_path / "typo").read().empty and not (tmp_path / "typo").exists()


def test_a_start_is_unfinished_until_a_start_of_the_same_grid_runs_to_its_end(tmp_path):
    import json

    a, b = {"noise": [0.0]}, {"noise": [0.01]}
    runs = [{"grid": a, "pending": 4}, {"grid": b, "pending": 2, "finished_at": 1.0}, {"grid": a}]  # the last: old
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": runs}))
    assert runner.unfinished_starts(tmp_path) == [runs[0]]
    runs.append({"grid": a, "pending": 3, "finished_at": 2.0})
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": runs}))
    assert runner.unfinished_starts(tmp_path) == []


def test_a_closed_pool_starts_no_worker_for_a_thread_whose_worker_it_killed():
    pool = runner.WorkerPool(1, None)
    busy = pool.idle.get()  # as a supervising thread holds it
    pool.close()  # Ctrl-C: the busy worker is killed
    pool._give_back(busy)  # that thread's job returns
    assert pool.idle.empty() and pool.everyone == [busy] and not busy.alive


def test_a_second_writer_into_a_folder_is_refused_while_the_first_runs(tmp_path):
    from bench.store import FolderBusy, sole_writer

    with sole_writer(tmp_path / "out"):  # as a `bench run` in another terminal holds it
        with pytest.raises(FolderBusy, match=f"pid {os.getpid()}"):
            runner.run(sweep(tmp_path, "truth", noise=(0.0,)), progress=False)
    assert ResultStore(tmp_path / "out").read().empty
    assert len(runner.run(sweep(tmp_path, "truth", noise=(0.0,)), progress=False).read()) == 12  # lock released


def test_the_writer_clears_the_temporary_file_a_killed_write_left(tmp_path):
    from bench.store import sole_writer

    (tmp_path / "out" / "parts").mkdir(parents=True)
    left = tmp_path / "out" / "parts" / ".part-20261207T000000-0123abcd.parquet.tmp"
    left.write_bytes(b"half a part")
    with sole_writer(tmp_path / "out"):
        assert not left.exists()


def test_a_folder_on_a_file_system_without_locks_is_written_unguarded(tmp_path, monkeypatch):
    import errno
    import fcntl

    from bench.store import sole_writer

    def no_locks(handle, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with sole_writer(tmp_path / "out"), sole_writer(tmp_path / "out"):  # neither refused: no lock to be had
        pass
    assert len(runner.run(sweep(tmp_path, "truth", noise=(0.0,)), progress=False).read()) == 12  # rows written


def test_a_sweep_file_of_the_wrong_shape_is_named_not_a_traceback(tmp_path):
    import json

    from bench.store import SweepFileError, read_sweep_file

    for text in ("[]", '"x"', '{"runs": 5}', '{"runs": [1]}', '{"data_digests": []}'):
        (tmp_path / "sweep.json").write_text(text)
        with pytest.raises(SweepFileError, match="not a sweep file"):
            read_sweep_file(tmp_path)
        assert runner.unfinished_starts(tmp_path) == []
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": [{"pending": 1}]}))
    assert runner.unfinished_starts(tmp_path) == [{"pending": 1}]


def test_a_method_name_that_cannot_be_typed_is_refused(tmp_path):
    plugin = tmp_path / "odd.py"
    plugin.write_text("from bench import Method, Prediction\n\nclass Odd(Method):\n    name = 'col:on'\n\n"
                      "    def run(self, observations, budget):\n        return Prediction('-y')\n")
    with pytest.raises(registry.RegistryError, match="cannot be typed"):
        registry.discover((str(plugin),))


@pytest.mark.parametrize("bad", [dict(methods=("truth",)), dict(noise=(-1.0,)), dict(noise=0.01), dict(seeds=(-1,)),
                                 dict(jobs=0), dict(n=(0,)), dict(time_limit=-1), dict(datasets="textbook"),
                                 dict(subset={"textbook": 0}), dict(subset={"textbok": 2}), dict(memory_limit=-1),
                                 dict(memory_limit=2)])
def test_a_sweep_built_from_python_names_a_bad_field_before_anything_runs(tmp_path, bad):
    field = next(iter(bad))
    with pytest.raises(runner.SweepError, match=f"Sweep {field}="):
        sweep(tmp_path, "truth", **bad)
    assert not (tmp_path / "out").exists()


def test_a_method_raising_keyboardinterrupt_or_an_unprintable_law_fails_alone(tmp_path):
    rows = runner.run(sweep(tmp_path, "interrupts", "huge-power", "truth", jobs=2), progress=False).read()
    by = rows.groupby("method")
    assert set(by.get_group("interrupts")["reason"]) == {"KeyboardInterrupt"}  # not "worker process died"
    huge = by.get_group("huge-power")
    assert set(huge["status"]) == {"invalid"}, set(huge["reason"])  # at once, not at the time limit
    assert "beyond 1e+-300" in huge["reason"].iloc[0]
    assert set(by.get_group("truth")["status"]) == {"ok"}


def test_children_a_method_leaves_behind_do_not_outlive_the_sweep(tmp_path, process_gone):
    pids = tmp_path / "pids"
    runner.run(sweep(tmp_path, f"forks:pid_file={pids}", jobs=1), progress=False)
    left = [int(line) for line in pids.read_text().split()]
    assert len(left) == 12
    assert all(process_gone(pid, 5) for pid in left)


def test_a_busy_worker_dies_with_its_driver_when_the_driver_is_killed(tmp_path, process_gone):
    pids = tmp_path / "pids"
    cmd = [sys.executable, "-m", "bench", "run", "--dataset", "textbook", "--methods", f"spins:pid_file={pids}",
           "--method-file", FIXTURES, "--out", str(tmp_path / "out"), "--quiet", "--time-limit", "600"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (pids.exists() and pids.read_text().strip()):
            time.sleep(0.2)
        worker = int(pids.read_text().split()[0])
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone: nobody is left to stop its worker
        proc.wait()
        assert process_gone(worker, 10), "the worker kept spinning after its driver died"
    finally:
        for group in (proc.pid, worker):  # whatever failed above, leave nothing spinning
            with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
                os.killpg(group, signal.SIGKILL)


def _row(key=("d", "e", 0, 0.0, 128, 0, "m"), **fields):
    """A stored row of (task..., method) `key`: ok at version "1" under 10 s, 128 points; `fields` over it."""
    row = dict.fromkeys(COLUMNS)
    row.update(zip(KEY, key), method_version="1", status="ok", time_limit=10.0, n_observed=128)
    row.update(fields)
    return row


def test_a_new_method_version_reruns_its_stored_rows(tmp_path):
    store = ResultStore(tmp_path)
    store.append(_row())
    store.flush()
    assert store.finished({"m": "1"}) == {("d", "e", 0, 0.0, 128, 0, "m")}
    assert store.finished({"m": "2"}) == set()


# Session 105's mutation review of the harness: resume, limits, seeds and the warm worker

def _stored(store, sweep, **fields):
    """Rows for every (task, method) of `sweep`, as a finished run stores them, without running it."""
    for task in runner.build_tasks(sweep):
        for spec in sweep.methods:
            store.append(_row((*task.key, spec.label), method_version=spec.version,
                              time_limit=runner.method_time_limit(sweep, spec), n_observed=task.n, **fields))
    store.flush()


def test_a_sweeps_summary_leaves_out_the_folders_rows_of_other_methods(tmp_path):
    """The summary printed after `bench run` names this sweep's methods only, on the same tasks too."""
    mine = sweep(tmp_path, "truth", subset={"textbook": 2})
    other = sweep(tmp_path, "slow", subset={"textbook": 2})
    store = ResultStore(tmp_path / "rows")
    _stored(store, mine)
    _stored(store, other)
    rows = store.read()
    assert len(rows) == 4 and set(runner.sweep_rows(mine, rows)["method"]) == {"truth"}


def test_a_resume_finds_the_stored_rows_of_a_method_run_with_parameters(tmp_path):
    """Rows are keyed by the label (`scaled:rate=0.25`), not the name: looked up by the name, every
    stored row of a method given parameters would be run again on each resume."""
    config = sweep(tmp_path, "scaled:rate=0.25", subset={"textbook": 2})
    _stored(ResultStore(config.out), config)
    assert runner.pending_jobs(config, ResultStore(config.out)) == []


def test_each_job_s_budget_carries_its_task_s_seed():
    """`--seeds 0 3`: the seed reaches the method (`budget.seed`), not only the noise draw."""
    config = runner.Sweep(datasets=("textbook",), methods=(registry.discover()["truth"],), seeds=(0, 3),
                          subset={"textbook": 1}, out="unused")
    pending = runner.pending_jobs(config, ResultStore("/nonexistent/folder"))
    assert sorted((p.task.seed, p.job.budget.seed) for p in pending) == [(0, 0), (3, 3)]


def test_a_time_limit_for_a_label_wins_over_one_for_its_name(tmp_path):
    config = sweep(tmp_path, "scaled:rate=0.25", "scaled", time_limits={"scaled": 5, "scaled:rate=0.25": 9})
    assert [runner.method_time_limit(config, spec) for spec in config.methods] == [9.0, 5.0]


def test_a_start_whose_rows_were_all_stored_before_its_kill_is_marked_finished_by_the_next(tmp_path):
    """Killed after its last row was stored, before its end was recorded: the same command again has
    nothing to run, and says the start is complete rather than leaving the report to call it stopped."""
    config = sweep(tmp_path, "truth", subset={"textbook": 2})
    runner.run(config, progress=False)
    file = Path(config.out) / "sweep.json"
    record = json.loads(file.read_text())
    del record["runs"][-1]["finished_at"]  # as a kill between the last row and the end leaves it
    file.write_text(json.dumps(record))
    assert len(runner.unfinished_starts(config.out)) == 1
    runner.run(config, progress=False)
    assert runner.unfinished_starts(config.out) == []


def test_a_start_with_nothing_to_do_leaves_another_grid_s_interrupted_start_unfinished(tmp_path):
    config = sweep(tmp_path, "truth", subset={"textbook": 2})
    runner.run(config, progress=False)
    file = Path(config.out) / "sweep.json"
    record = json.loads(file.read_text())
    other = {**record["runs"][-1]["grid"], "noise": [0.01]}
    interrupted = {"grid": other, "pending": 2, "started_at": 1.0}  # a sweep at another noise level, killed
    record["runs"].append(interrupted)
    file.write_text(json.dumps(record))
    runner.run(config, progress=False)  # the first grid again: nothing to run
    assert runner.unfinished_starts(config.out) == [interrupted]


def test_the_newest_row_of_a_task_counts_whatever_its_part_is_named(tmp_path):
    """Parts written within one second sort by a random suffix: the row finished last wins, not the
    one in the part whose name sorts last."""
    def part(name, finished_at, status):
        (tmp_path / "parts").mkdir(exist_ok=True)
        pd.DataFrame([_row(status=status, finished_at=finished_at)]).to_parquet(tmp_path / "parts" / name)

    part("part-20261207T000000-aaaaaaaa.parquet", 2.0, "ok")  # the rerun under a longer limit
    part("part-20261207T000000-ffffffff.parquet", 1.0, "timeout")
    assert list(ResultStore(tmp_path).read()["status"]) == ["ok"]


def test_only_a_task_lost_with_its_dask_workers_is_run_again_not_any_dask_failure(tmp_path):
    """A Dask failure of the task itself (a result that could not be sent back) is the method's row:
    rerunning it on every resume would never end."""
    config = sweep(tmp_path, "truth", subset={"textbook": 1})
    _stored(ResultStore(config.out), config, status="error", reason="dask task failed: CancelledError: bench-1")
    assert runner.pending_jobs(config, ResultStore(config.out)) == []


# the worker (bench.workers): one process, one method instance per label, its own output and limits

def _plugin(tmp_path, body):
    """A method file `plugin.py` in tmp_path; its specs."""
    path = tmp_path / "plugin.py"
    path.write_text("import os, sys, time\nfrom bench import Method, Prediction\n\n" + body)
    return registry.discover((str(path),))


def _executed(spec, *jobs):
    """Each job's result from one warm worker, closed after."""
    from bench.workers import Worker

    worker = Worker()
    try:
        return [worker.execute(job) for job in jobs]
    finally:
        worker.close()


def _job(spec, time_limit=30.0):
    from bench.method import Budget, Observations
    from bench.workers import Job

    t = np.linspace(0, 1, 20)
    return Job(spec, Observations(t, np.exp(-t)), Budget(time_limit=time_limit))


def test_a_worker_sets_a_method_up_once_for_all_its_tasks(tmp_path):
    from bench.workers import _run_job

    spec = _plugin(tmp_path, "class Counts(Method):\n    name = 'counts'\n    setups = 0\n\n"
                             "    def setup(self):\n        type(self).setups += 1\n\n"
                             "    def run(self, observations, budget):\n        return Prediction(f'{self.setups}*y')\n")["counts"]
    methods = {}
    first, second = (list(_run_job(_job(spec), methods)) for _ in range(2))
    assert second[0] == {"phase": "started", "setup_time": 0.0}
    assert first[-1]["expression"] == second[-1]["expression"] == "y"  # one setup for both tasks


def test_a_setup_longer_than_the_task_s_limit_is_not_a_timeout(tmp_path):
    """Setup (imports, loading a model) has its own limit, SETUP_TIME_LIMIT: a task limit of 1 s must
    not kill a method whose first setup takes 1.5 s."""
    spec = _plugin(tmp_path, "class SlowSetup(Method):\n    name = 'slow-setup'\n\n"
                             "    def setup(self):\n        time.sleep(1.5)\n\n"
                             "    def run(self, observations, budget):\n        return Prediction('-y')\n")["slow-setup"]
    result, = _executed(spec, _job(spec, time_limit=1.0))
    assert result["status"] == "ok" and result["setup_time"] >= 1.5, result


def test_a_row_keeps_only_what_the_method_printed_during_its_own_task(tmp_path):
    spec = _plugin(tmp_path, "class Counter(Method):\n    name = 'counter'\n    calls = 0\n\n"
                             "    def run(self, observations, budget):\n        type(self).calls += 1\n"
                             "        print(f'task {self.calls}')\n        return Prediction('-y')\n")["counter"]
    assert [result["output"] for result in _executed(spec, _job(spec), _job(spec))] == ["task 1\n", "task 2\n"]


def test_a_method_that_returns_no_prediction_is_an_invalid_row():
    """Not an AttributeError that kills the worker (the row would read "worker process died")."""
    from bench.workers import _check_prediction

    assert _check_prediction(None) == {"status": "invalid", "reason": "method returned NoneType, not a Prediction"}
    assert _check_prediction("-y")["status"] == "invalid"  # a bare string is not a Prediction either


def test_a_worker_that_dies_is_reported_with_the_last_line_it_printed(tmp_path):
    spec = _plugin(tmp_path, "class Dies(Method):\n    name = 'dies-loudly'\n\n"
                             "    def run(self, observations, budget):\n        print('loading libfoo.so')\n"
                             "        print('   ')\n        sys.stdout.flush()\n        os._exit(3)\n")["dies-loudly"]
    result, = _executed(spec, _job(spec))
    assert result["status"] == "error"
    assert result["reason"] == "worker process died during fit: exit code 3; it last printed: loading libfoo.so"

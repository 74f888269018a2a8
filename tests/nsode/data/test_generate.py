"""The generator end to end: the shard contract, determinism, -j independence, resume, errors."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from nsode.data import config, generate
from nsode.data import shards as store
from nsode.data import tokens as tok
from nsode.data.__main__ import main
from nsode.data.parallel import Executor
from odecore.expressions import compile_vector, complexity
from odecore.solving import fd_residual

ROOT = Path(__file__).resolve().parents[3]


def _contents(folder):
    """Every table of a folder (data and metadata), keyed by relative path."""
    files = sorted(p for p in folder.rglob("*.parquet"))
    return {str(p.relative_to(folder)): pq.read_table(p) for p in files}


def _assert_same(a, b):
    ta, tb = _contents(a), _contents(b)
    assert ta.keys() == tb.keys() and len(ta) > 2
    for name in ta:
        assert ta[name].equals(tb[name]), name
        assert ta[name].schema.metadata == tb[name].schema.metadata, name
    assert json.loads((a / "config.json").read_text()) == json.loads((b / "config.json").read_text())


def test_shards_follow_the_contract(tiny_folder, tiny_config):
    config, provenance = store.read_config(tiny_folder)
    assert config == tiny_config and provenance["seed"] == 3
    assert provenance["generator_version"] == generate.GENERATOR_VERSION
    paths = store.shard_paths(tiny_folder)
    assert [p.name for p in paths] == ["shard-00000.parquet", "shard-00001.parquet", "shard-00002.parquet"]
    assert pq.read_schema(paths[0]).remove_metadata() == store.SOLUTION_SCHEMA
    rows = 0
    for path in paths:
        frame, extra = store.read_shard(path), store.read_shard(store.extra_path(path))
        rows += len(frame)
        for r in frame.itertuples():
            expr = tok.parse_infix(r.expression)
            assert tok.decode(tok.from_strings(list(r.tokens))) == expr
            assert tok.skeleton(expr) == r.skeleton and generate.skeleton_id(r.skeleton) == r.skeleton_id
            assert list(r.constants) == tok.constants(tok.from_strings(list(r.tokens)))
            assert r.complexity == complexity(expr)  # what the dataset statistics count
            assert len(r.y) == config.grid and r.y[0] == r.y0 and -5 <= r.y0 <= 5
            e = extra.iloc[r.extra_row]
            assert (e.ode_id, e.y0_index) == (r.ode_id, r.y0_index) and e.y_extra[0] == r.y[-1]
            # the stored solution solves the stored ODE
            assert fd_residual(compile_vector(expr), config.t_train(), np.array(r.y)) <= config.fd_tolerance
    assert rows == generate.totals(tiny_folder)["solutions"] > 0
    assert len(list(store.iter_rows(tiny_folder, columns=["ode_id"]))) == rows


def test_skeletons_are_deduplicated(tmp_path, tiny_config, monkeypatch):
    # one operator at most: few skeletons exist (c*y, sin(y), y + c, ...), so candidates repeat them
    # (without the Large list, which holds several of these few)
    monkeypatch.setattr(generate, "EXCLUDED_FILE", tmp_path / "none.yaml")
    config = tiny_config.replace(max_ops=1)
    generate.generate(tmp_path / "d", 8, 5, config, progress=False)
    table = pq.read_table(tmp_path / "d" / store.SKELETON_FILE)
    skeletons = table.column("skeleton").to_pylist()
    assert len(skeletons) == 8 == len(set(skeletons))
    assert json.loads(table.schema.metadata[b"search"])["candidates"]["duplicate skeleton"] > 0
    per_row = {r["skeleton"] for r in store.iter_rows(tmp_path / "d", columns=["skeleton"])}
    assert per_row <= set(skeletons)


def test_a_folder_of_other_files_and_a_negative_seed_are_refused_before_anything_is_written(tmp_path, tiny_config,
                                                                                            capsys):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(generate.GenerateError, match=r"files the generator did not write \(notes.txt\)"):
        generate.generate(tmp_path, 2, 1, tiny_config, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    with pytest.raises(SystemExit) as stop:
        main(["generate", "--out", str(tmp_path / "new"), "--n-skeletons", "2", "--seed", "-1", "-q"])
    assert stop.value.code == 2 and "must be at least 0" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_asking_for_more_skeletons_than_exist_is_a_one_line_error(tmp_path, tiny_config, monkeypatch):
    monkeypatch.setattr(generate, "MAX_DRY_CANDIDATES", 300)
    with pytest.raises(generate.GenerateError, match="fewer than 500 skeletons"):
        generate.find_skeletons(tmp_path, 500, 5, tiny_config.replace(max_ops=1), Executor(1, None).run,
                                progress=False)


def test_generation_is_deterministic_and_independent_of_the_number_of_workers(tmp_path, tiny_folder, tiny_config):
    generate.generate(tmp_path / "j2", 7, 3, tiny_config, jobs=2, progress=False)
    _assert_same(tiny_folder, tmp_path / "j2")


def test_a_dask_cluster_gives_the_same_shards(tmp_path, tiny_folder, tiny_config):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        generate.generate(tmp_path / "dask", 7, 3, tiny_config, scheduler=cluster.scheduler_address, progress=False)
    _assert_same(tiny_folder, tmp_path / "dask")


def test_resume_after_interruption_produces_identical_shards(tmp_path, tiny_folder, tiny_config, monkeypatch):
    real = generate.solve_shard

    def interrupted(folder, shard, *args):
        if shard == 1:
            raise KeyboardInterrupt
        return real(folder, shard, *args)

    monkeypatch.setattr(generate, "solve_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate.generate(tmp_path / "r", 7, 3, tiny_config, progress=False)
    assert len(store.shard_paths(tmp_path / "r")) == 1
    monkeypatch.setattr(generate, "solve_shard", real)
    generate.generate(tmp_path / "r", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "r")
    # a deleted shard and a half-written temporary file are made again
    (tmp_path / "r" / "shards" / "shard-00002.parquet").unlink()
    (tmp_path / "r" / "shards" / ".shard-00002.parquet.123.tmp").write_bytes(b"partial")
    generate.generate(tmp_path / "r", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "r")
    (tmp_path / "r" / "extra" / "shard-00001.parquet").unlink()  # and a lost extension file
    generate.generate(tmp_path / "r", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "r")
    # and so is a shard cut short (a copy stopped halfway), where stats names it in one line
    shard = tmp_path / "r" / "shards" / "shard-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:1000])
    with pytest.raises(store.ShardError, match="shard-00001.parquet: not a readable parquet file"):
        generate.totals(tmp_path / "r")
    generate.generate(tmp_path / "r", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "r")


@pytest.mark.parametrize("save_seconds", [0.0, 1e9])  # saved by time, or only by the interrupt itself
def test_an_interrupted_skeleton_search_resumes_where_it_saved(tmp_path, tiny_folder, tiny_config, monkeypatch,
                                                               save_seconds):
    real = generate.candidate_block

    def interrupted(block, *args):
        if block >= 1:  # the second wave: Ctrl-C
            raise KeyboardInterrupt
        return real(block, *args)

    monkeypatch.setattr(generate, "SAVE_SECONDS", save_seconds)
    monkeypatch.setattr(generate, "candidate_block", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate.generate(tmp_path / "k", 7, 3, tiny_config, progress=False)
    kept = pq.read_table(tmp_path / "k" / store.SKELETON_FILE)
    assert kept.num_rows == 5 and json.loads(kept.schema.metadata[b"search"])["block"] == 1
    monkeypatch.setattr(generate, "candidate_block", real)
    generate.generate(tmp_path / "k", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "k")


def test_sigterm_keeps_the_skeletons_found_as_ctrl_c_does(tmp_path, tiny_folder, monkeypatch, capsys):
    """`timeout`, `kill` and batch schedulers stop a run with SIGTERM; it once ended the search without a word."""
    import os
    import signal

    from tests.nsode.data.conftest import TINY

    real = generate.candidate_block

    def terminated(block, *args):
        if block >= 1:  # the second wave
            os.kill(os.getpid(), signal.SIGTERM)
        return real(block, *args)

    class Unhandled(Exception):
        pass

    def unhandled(signum, frame):  # without the command's own handler, SIGTERM would end pytest itself
        raise Unhandled

    (tmp_path / "tiny.yaml").write_text("".join(f"{key}: {value}\n" for key, value in TINY.items()))
    monkeypatch.setattr(generate, "SAVE_SECONDS", 1e9)  # saved only by the interrupt itself
    monkeypatch.setattr(generate, "candidate_block", terminated)
    before = signal.signal(signal.SIGTERM, unhandled)
    try:
        code = main(["generate", "--out", str(tmp_path / "k"), "--n-skeletons", "7", "--seed", "3",
                     "--config", str(tmp_path / "tiny.yaml"), "-q"])
    finally:
        signal.signal(signal.SIGTERM, before)
    assert code == 143 and "interrupted: run the same command again to resume" in capsys.readouterr().err
    kept = pq.read_table(tmp_path / "k" / store.SKELETON_FILE)
    assert kept.num_rows == 5 and json.loads(kept.schema.metadata[b"search"])["block"] == 1


def test_a_larger_n_extends_the_same_skeleton_list(tmp_path, tiny_folder, tiny_config):
    generate.generate(tmp_path / "e", 4, 3, tiny_config, progress=False)
    generate.generate(tmp_path / "e", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "e")
    before = _contents(tmp_path / "e")
    with pytest.raises(generate.GenerateError, match="already holds solved skeletons up to 7"):
        generate.generate(tmp_path / "e", 3, 3, tiny_config, progress=False)  # would re-solve a shard short
    assert _contents(tmp_path / "e") == before


def test_a_list_searched_alone_is_solved_later_into_the_same_folder(tmp_path, tiny_folder, tiny_config):
    generate.generate(tmp_path / "s", 7, 3, tiny_config, progress=False, solve=False)
    assert not list((tmp_path / "s").glob("shards/*.parquet"))
    assert pq.read_table(tmp_path / "s" / store.SKELETON_FILE).equals(pq.read_table(tiny_folder / store.SKELETON_FILE))
    generate.generate(tmp_path / "s", 7, 3, tiny_config, progress=False)
    _assert_same(tiny_folder, tmp_path / "s")


def test_a_list_solved_with_another_solution_seed_gives_new_solutions_of_the_same_skeletons(tmp_path, tiny_folder,
                                                                                             tiny_config):
    folder = tmp_path / "again"
    folder.mkdir()
    shutil.copy(tiny_folder / store.SKELETON_FILE, folder / store.SKELETON_FILE)  # no search again
    generate.generate(folder, 7, 3, tiny_config, progress=False, solution_seed=30)
    assert json.loads((folder / "config.json").read_text())["solution_seed"] == 30
    def solutions(f):
        return {(r["skeleton"], r["expression"], r["y0"]) for r in store.iter_rows(f, columns=["skeleton", "expression", "y0"])}

    first, again = solutions(tiny_folder), solutions(folder)
    assert {s for s, *_ in again} <= {s for s, *_ in first}  # the same laws...
    assert not first & again  # ...from other initial values, most with other numbers
    assert len({e for _, e, _ in again} - {e for _, e, _ in first}) > len(again) // 4
    with pytest.raises(generate.GenerateError, match="solution_seed"):  # resumed only as it was made
        generate.generate(folder, 7, 3, tiny_config, progress=False)


def test_a_list_copied_into_a_run_with_another_seed_or_config_is_refused(tmp_path, tiny_folder, tiny_config):
    for key, seed, other in [("seed", 4, tiny_config), ("max_ops", 3, tiny_config.replace(max_ops=3))]:
        folder = tmp_path / key
        folder.mkdir()
        shutil.copy(tiny_folder / store.SKELETON_FILE, folder / store.SKELETON_FILE)
        with pytest.raises(generate.GenerateError, match=f"searched with different {key}"):
            generate.generate(folder, 7, seed, other, progress=False, solve=False)


def test_large_skeletons_are_never_used_for_training(tmp_path, tiny_folder, tiny_config, monkeypatch):
    first = pq.read_table(tiny_folder / store.SKELETON_FILE).column("skeleton").to_pylist()[:2]
    excluded = tmp_path / "excluded.yaml"
    excluded.write_text(json.dumps({"skeletons": first}))  # JSON is YAML
    monkeypatch.setattr(generate, "EXCLUDED_FILE", excluded)
    generate.generate(tmp_path / "x", 7, 3, tiny_config, progress=False)
    skeletons = pq.read_table(tmp_path / "x" / store.SKELETON_FILE).column("skeleton").to_pylist()
    assert len(skeletons) == 7 and not set(first) & set(skeletons)
    assert not set(first) & {r["skeleton"] for r in store.iter_rows(tmp_path / "x", columns=["skeleton"])}


def test_resuming_with_another_seed_is_refused_in_one_line(tmp_path, tiny_folder, capsys):
    folder = tmp_path / "copy"
    shutil.copytree(tiny_folder, folder)
    assert main(["generate", "--out", str(folder), "--n-skeletons", "7", "--seed", "4", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed" in err and "Traceback" not in err


def test_an_unknown_config_key_is_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_ops: 4\nn_solutions: 3\n")
    code = main(["generate", "--out", str(tmp_path / "o"), "--n-skeletons", "2", "--seed", "1", "--config", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "n_solutions" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, problem", [("{oops", "not valid JSON"), ("[1]", "not a generator's configuration")])
def test_a_damaged_config_json_is_refused_in_one_line(tmp_path, capsys, text, problem):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "config.json").write_text(text)
    assert main(["generate", "--out", str(tmp_path / "o"), "--n-skeletons", "2", "--seed", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err


@pytest.mark.parametrize("value, ok", [(64, True), (64.0, True), (64.5, False), (True, False), ("ten", False)])
def test_a_whole_number_setting_is_never_truncated(value, ok):
    data = {**config.default().to_dict(), "grid": value}
    if ok:
        assert config.from_dict(data).grid == 64
    else:
        with pytest.raises(config.ConfigError, match="grid: .* is not a whole number"):
            config.from_dict(data)


@pytest.mark.parametrize("value, ok", [([-10, 10], True), ([-10.0, 10.0], True), ([-10.7, 10.9], False),
                                       ([True, 5], False)])
def test_a_whole_number_range_is_never_truncated(value, ok):
    """As a single whole-number setting: [-10.7, 10.9] read as (-10, 10) would change the setting silently."""
    data = {**config.default().to_dict(), "int_range": value}
    if ok:
        assert config.from_dict(data).int_range == (-10, 10)
    else:
        with pytest.raises(config.ConfigError, match="int_range: .* is not a pair of whole numbers"):
            config.from_dict(data)


@pytest.mark.parametrize("key, value, problem", [
    ("t_extra", float("inf"), "t_extra: inf is not a finite number"),  # passed 0 < t_max < t_extra, failed in a solve
    ("t_max", float("nan"), "t_max: nan is not a finite number"),
    ("y0_range", [float("-inf"), 5], r"y0_range: \[-inf, 5\] must be finite"),
    ("int_range", [-10, float("inf")], "int_range: .* is not a pair of whole numbers"),
    ("unary_ops", {"exp": float("nan")}, "unary_ops: weights must be finite"),
])
def test_a_setting_that_is_not_finite_is_refused_when_the_config_is_read(key, value, problem):
    with pytest.raises(config.ConfigError, match=problem):
        config.from_dict({**config.default().to_dict(), key: value})


def test_listing_skeletons_of_a_solved_folder_says_how_many_are_solved(tmp_path, tiny_folder, tiny_config, capsys):
    from tests.nsode.data.conftest import TINY

    folder = tmp_path / "copy"
    shutil.copytree(tiny_folder, folder)
    (tmp_path / "tiny.yaml").write_text(json.dumps(TINY))  # JSON is YAML
    args = ["generate", "--out", str(folder), "--n-skeletons", "7", "--seed", "3", "--config", str(tmp_path / "tiny.yaml")]
    assert main(args + ["--skeletons-only", "-q"]) == 0
    assert "7 skeletons listed in skeletons.parquet (already solved into 3 shards)" in capsys.readouterr().out


def test_pool_workers_stop_when_the_generator_is_killed(tmp_path, process_gone):
    """`kill -9` of a `-j 2` generation left its workers solving their shards for nobody."""
    driver = (f"import os, time\nfrom nsode.data.parallel import Executor\n"
              f"def job(i):\n    open(r'{tmp_path}' + f'/{{os.getpid()}}', 'w').close()\n    time.sleep(120)\n"
              f"list(Executor(2, None).run(job, [(0,), (1,)]))\n")
    child = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT)
    deadline = time.time() + 120
    while len(list(tmp_path.iterdir())) < 2 and time.time() < deadline:
        time.sleep(0.2)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    assert len(workers) == 2
    child.kill()
    child.wait()
    assert all(process_gone(pid, 10) for pid in workers)


def test_a_range_whose_ends_are_equal_is_refused():
    from nsode.data import config

    values = config.default().to_dict()
    values["y0_range"] = [5, 5]
    with pytest.raises(config.ConfigError, match="low must be below high"):
        config.from_dict(values)


def test_the_solution_seed_is_recorded_only_where_it_differs_from_the_seed(tiny_config):
    """A folder solved with its own seed records no solution_seed, so its config.json is the one a
    folder written before the solution seed existed holds, and resuming it is not refused."""
    assert "solution_seed" not in generate.provenance(tiny_config, 3, 3)
    assert "solution_seed" not in generate.provenance(tiny_config, 3)
    assert generate.provenance(tiny_config, 3, 4)["solution_seed"] == 4


def test_asking_for_no_skeletons_is_refused_before_anything_is_written(tmp_path, tiny_config):
    """--n-skeletons 0 is an error, not an empty folder with a config.json."""
    with pytest.raises(generate.GenerateError, match="at least 1"):
        generate.generate(tmp_path / "o", 0, 1, tiny_config, progress=False)
    assert not (tmp_path / "o").exists()


def test_the_extrapolation_grid_is_the_stored_y_extra_grid(tiny_config):
    """Config.t_extrapolate is the grid of y_extra: `grid` points from T (the last point of y) to T_extra."""
    t = generate.ode_grid(tiny_config)
    np.testing.assert_array_equal(tiny_config.t_extrapolate(), t[tiny_config.grid - 1:])
    np.testing.assert_array_equal(tiny_config.t_train(), t[:tiny_config.grid])


@pytest.mark.parametrize("key, value, problem", [
    ("grid", 15, "grid must have at least 16 points"),  # the FD stencil (9 wide) needs room on each interval
    ("p_sym", 0.0, "p_sym must be in"),  # no leaf would ever be y: every tree constant, all rejected
    ("t_extra", 2.0, "need 0 < t_max < t_extra"),  # an extrapolation window of no length
    ("science_n_terms", [1, 1], "science_n_terms must be three weights"),
    ("science_n_terms", [1, 1, 1, 1], "science_n_terms must be three weights"),
    ("science_rate_range", [-1.0, 2.0], "must be positive"),  # log-uniform draws of a magnitude
    ("science_y0_range", [0.0, 2.0], "must be positive"),
    ("binary_ops", {"add": 1.0, "mul": -0.5}, "binary_ops: weights must be finite and >= 0"),
    ("candidates_per_block", 0, "block and shard sizes must be >= 1"),
    ("skeletons_per_shard", 0, "block and shard sizes must be >= 1"),
])
def test_a_setting_out_of_its_range_is_refused_naming_it(key, value, problem):
    with pytest.raises(config.ConfigError, match=problem):
        config.from_dict({**config.default().to_dict(), key: value})


def test_constant_sets_that_cannot_be_drawn_are_counted_as_dropped(tiny_config, monkeypatch):
    """A skeleton that gets fewer than n_const constant sets counts the rest as dropped ("constant
    sets missing", in the shard's counts); a law without constants has one set and drops none."""
    from nsode.data import tokens as tok
    from odecore.expressions import complexity

    def row(law):
        expr = tok.parse_infix(law)
        return generate.SkeletonRow(0, tok.skeleton(expr), tok.to_infix(expr), complexity(expr))

    assert "constant sets missing" not in generate.solve_skeleton(row("y"), 0, tiny_config)[2]
    real = generate.draw_sets
    monkeypatch.setattr(generate, "draw_sets", lambda *args: tuple(part[:1] for part in real(*args)))
    rows, _, drops = generate.solve_skeleton(row("-0.5*y"), 0, tiny_config)
    assert drops["constant sets missing"] == tiny_config.n_const - 1 and rows


def test_files_left_by_an_interrupted_write_are_removed_when_the_folder_is_resumed(tmp_path, tiny_config):
    """The hidden .tmp files of a write that was cut short are deleted when the run resumes."""
    folder = tmp_path / "o"
    generate.prepare_folder(folder, tiny_config, 1)
    (folder / "shards").mkdir()
    stale = folder / "shards" / ".shard-00002.parquet.123.tmp"
    stale.write_bytes(b"partial")
    generate.prepare_folder(folder, tiny_config, 1)
    assert not stale.exists() and (folder / "config.json").exists()

import json
import pickle

import numpy as np
import pytest

from bench import datasets
from odecore import protocol
from bench.method import InvalidInput, Observations
from bench.tasks import Task, Trajectory


@pytest.fixture(scope="module")
def logistic():
    return next(tr for tr in datasets.load("textbook") if tr.equation_id == "logistic")


def test_noise_is_nested_across_levels(logistic):
    clean = Task(logistic, 0.0, 128, 0).observations()
    low = Task(logistic, 0.01, 128, 0).observations()
    high = Task(logistic, 0.02, 128, 0).observations()
    np.testing.assert_array_equal(clean.t, low.t)
    eps_low = (low.y / clean.y - 1) / 0.01
    eps_high = (high.y / clean.y - 1) / 0.02
    np.testing.assert_allclose(eps_low, eps_high, rtol=1e-9)
    assert 0.5 < np.std(eps_low) < 1.5


def test_observations_are_sorted_distinct_grid_points(logistic):
    obs = Task(logistic, 0.0, 192, 3).observations()
    assert len(obs.t) == 192 and np.all(np.diff(obs.t) > 0)
    assert np.all(np.isin(obs.t, protocol.interpolation_grid()))
    np.testing.assert_array_equal(obs.y, np.interp(obs.t, logistic.t, logistic.y))


def test_seed_changes_the_sample_and_is_reproducible(logistic):
    a, b, c = (Task(logistic, 0.01, 128, s).observations() for s in (0, 0, 1))
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.t, c.t)


@pytest.mark.parametrize("t, y, message", [
    (np.arange(20.0), np.r_[np.nan, np.ones(19)], "NaN or infinite"),
    (np.arange(20.0), np.r_[np.inf, np.ones(19)], "NaN or infinite"),
    (np.arange(20.0)[::-1], np.ones(20), "not sorted"),
    (np.r_[0.0, 0.0, np.arange(1.0, 19.0)], np.ones(20), "duplicate time"),
    (np.r_[np.arange(1.0, 19.0), 3.0, 0.0], np.ones(20), "duplicate time 3"),  # out of order too
    (np.arange(5.0), np.ones(5), "at least 10"),
    (np.arange(20.0), np.full(20, 3e200), "rescale y"),
    (np.arange(20.0), np.full(20, -3e-300), "rescale y"),
    (np.arange("2024-01-01", "2024-01-21", dtype="datetime64[D]"), np.ones(20), "dates"),  # else days since 1970
    (np.arange(20.0), np.arange(20) % 2 == 0, "booleans"),
    (np.arange(20.0), ["a"] * 20, "not numbers"),
])
def test_bad_trajectories_are_refused_with_a_reason(t, y, message):
    with pytest.raises(InvalidInput, match=message):
        Observations(t, y)


def test_an_unwritable_cache_only_costs_the_speed_up(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(datasets, "CACHE_DIR", blocker / "cache")
    with pytest.warns(UserWarning, match="not cached"):
        solved = datasets.load("textbook")
    assert len(solved) == 12 and all(np.isfinite(tr.y).all() for tr in solved)
    assert list(tmp_path.iterdir()) == [blocker]  # no temporary file left behind


def test_observations_keep_their_own_frozen_copy_and_leave_the_caller_s_arrays_writable():
    t, y = np.arange(20.0), np.ones(20)
    seen = Observations(t, y)
    y[0] = 99.0  # the caller goes on using its array
    assert seen.y[0] == 1.0 and not seen.y.flags.writeable
    sent = pickle.loads(pickle.dumps(seen))  # as a worker process receives them
    assert not (sent.t.flags.writeable or sent.y.flags.writeable) and np.array_equal(sent.t, seen.t)


def test_data_at_rest_and_at_the_size_limits_are_accepted():
    for y in (np.zeros(20), np.full(20, 1e99), np.r_[0.0, np.full(19, 1e-99)]):
        assert np.array_equal(Observations(np.arange(20.0), y).y, y)  # accepted as given, not rescaled


def test_a_dataset_file_that_is_not_json_hints_at_the_csv_ending(tmp_path):
    (tmp_path / "data.txt").write_text("t,y\n0,1\n")
    with pytest.raises(datasets.DatasetError, match="needs a .csv ending"):
        datasets.read_spec(tmp_path / "data.txt")
    (tmp_path / "data.json").write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(datasets.DatasetError, match="not a readable JSON"):
        datasets.read_spec(tmp_path / "data.json")


def test_a_dataset_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Windows editors (Notepad, PowerShell 5) start UTF-8 files with one; CSV files are read with it too."""
    import json
    spec = {"format": "bench-dataset/1", "name": "mine", "version": "1",
            "equations": [{"id": "decay", "expression": "-0.5*y", "y0": [1.0]}]}
    (tmp_path / "mine.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(spec).encode())
    assert datasets.read_spec(tmp_path / "mine.json")["name"] == "mine"


def _dataset(tmp_path, equations, **fields) -> str:
    import json
    spec = {"format": "bench-dataset/1", "name": "mine", "version": "1", "equations": equations, **fields}
    (tmp_path / "mine.json").write_text(json.dumps(spec))
    return str(tmp_path / "mine.json")


def test_a_dataset_file_of_another_format_or_shape_says_which(tmp_path):
    with pytest.raises(datasets.DatasetError, match="unsupported format 'bench-dataset/2'"):
        datasets.read_spec(_dataset(tmp_path, [], format="bench-dataset/2"))
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(datasets.DatasetError, match="expected a JSON object"):
        datasets.read_spec(tmp_path / "list.json")


def test_every_equation_that_cannot_be_solved_is_named_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "CACHE_DIR", tmp_path / "cache")
    path = _dataset(tmp_path, [{"id": "good", "expression": "-0.5*y", "y0": [3]},
                               {"id": "bad", "expression": "y**2", "y0": [10]},
                               {"id": "neg", "expression": "sqrt(y)", "y0": [-1]}])
    with pytest.raises(datasets.DatasetError, match=r"\(2 cannot be solved\): equation 'bad'.*; equation 'neg'"):
        datasets.load(path)


def test_observations_out_of_range_name_their_equation(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "CACHE_DIR", tmp_path / "cache")
    trajectory, = datasets.load(_dataset(tmp_path, [{"id": "e", "expression": "-0.5*y", "y0": [1e200]}]))
    with pytest.raises(InvalidInput, match="dataset 'mine', equation 'e', y0=1e.200: the largest"):
        Task(trajectory, 0.01, 32, 0).observations()


def test_an_edited_built_in_dataset_is_other_data_to_a_stored_folder(tmp_path, monkeypatch):
    """A regenerated large.json (or an edited textbook.json) must not resume on, or be re-scored
    against, rows stored for the old one: built-in datasets are recorded like a user's files."""
    import json

    from bench import data_digests

    before = data_digests.digests(["textbook"])
    assert set(before) == {"textbook"}
    spec = json.loads((datasets.DATASETS_DIR / "textbook.json").read_text())
    spec["equations"][0]["y0"] = [0.99 * v for v in spec["equations"][0]["y0"]]
    (tmp_path / "textbook.json").write_text(json.dumps(spec))
    monkeypatch.setattr(datasets, "DATASETS_DIR", tmp_path)
    monkeypatch.setattr(datasets, "CACHE_DIR", tmp_path / "cache")
    with pytest.raises(datasets.DatasetError, match="different data under one name, 'textbook'"):
        data_digests.check_unchanged(data_digests.digests(["textbook"]), before, tmp_path / "out", "start anew")
    data_digests.check_unchanged(data_digests.digests(["textbook"]), {}, tmp_path / "out", "")  # an older folder


def test_a_task_or_budget_built_with_a_bad_value_names_its_field(logistic):
    from bench.method import Budget

    for noise, n, seed, field in ((-0.5, 128, 0, "noise"), (5, 128, 0, "noise"), (0.01, 0, 0, "n"),
                                  (0.01, 128, -3, "seed"), (0.01, 128.5, 0, "n")):
        with pytest.raises(ValueError, match=f"Task {field}="):
            Task(logistic, noise, n, seed)
    for limit, seed, field in ((-1, 0, "time_limit"), ("x", 0, "time_limit"), (10, 1.5, "seed")):
        with pytest.raises(ValueError, match=f"Budget {field}="):
            Budget(limit, seed)


def test_an_empty_dataset_name_is_refused_not_read_as_the_current_folder():
    for empty in ("", "  ", None):
        with pytest.raises(datasets.DatasetError, match="give a built-in name"):
            datasets.load(empty)


def test_an_edited_law_is_solved_again_not_served_from_the_cache(tmp_path, monkeypatch):
    """The cache's key holds every law and start: one cache folder, the same file name, a new law."""
    monkeypatch.setattr(datasets, "CACHE_DIR", tmp_path / "cache")
    for rate in (0.5, 0.9):
        trajectory, = datasets.load(_dataset(tmp_path, [{"id": "e", "expression": f"-{rate}*y", "y0": [1]}]))
        np.testing.assert_allclose(trajectory.y, np.exp(-rate * trajectory.t), rtol=1e-5)


def test_a_task_draws_the_same_points_and_noise_in_every_process():
    """Python salts its string hashes per process: the draw must not depend on them."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from bench import datasets; from bench.tasks import Task; "
            "tr = datasets.load('textbook')[0]; print(Task(tr, 0.01, 32, 0).observations().y[:4].tolist())")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1 and outputs.pop().startswith("[")


FAST_CLASSIC = ("koza-1", "koza-2", "koza-3", "nguyen-4", "nguyen-5", "nguyen-6", "nguyen-7", "nguyen-8",
                "keijzer-1", "keijzer-4", "keijzer-7", "keijzer-9")  # draws of under a second each


def test_classic_s_starts_follow_from_its_own_draw_rule():
    spec = json.loads((datasets.DATASETS_DIR / "classic.json").read_text())
    rule = spec["y0_draw"]
    for eq in (eq for eq in spec["equations"] if eq["id"] in FAST_CLASSIC):
        drawn = datasets.draw_initial_values(eq["expression"], rule["count"], rule["low"], rule["high"],
                                             rule["seed"], rule["max_draws"])
        assert drawn == (eq["y0"], eq["y0_range"]), eq["id"]


def test_a_draw_rule_may_judge_starts_in_units_of_y_for_laws_in_large_units(tmp_path):
    def filled(residual):
        rule = {"count": 2, "low": 1e8, "high": 2e8, "seed": 0, "max_draws": 2, **residual}
        path = tmp_path / "big.json"
        path.write_text(json.dumps({"format": "bench-dataset/1", "name": "big", "version": "1", "y0_draw": rule,
                                    "equations": [{"id": "decay", "expression": "-0.5*y"}]}))
        assert datasets.fill_initial_values(path) == 1 and datasets.fill_initial_values(path) == 0
        return json.loads(path.read_text())["equations"][0]

    absolute = filled({})  # y' = -0.5 y from 1e8 misses the absolute FD check on the solver's rounding alone
    assert absolute["y0_range"][1] < 1e8 and max(absolute["y0"]) < 1e8
    relative = filled({"residual": "relative"})
    assert relative["y0_range"] == [1e8, 2e8] and all(1e8 <= v <= 2e8 for v in relative["y0"])
    assert filled({"residual": "relative"}) == relative  # the same rule draws the same starts
    with pytest.raises(datasets.DatasetError, match="residual must be one of absolute, relative"):
        (tmp_path / "big.json").write_text(json.dumps({"format": "bench-dataset/1", "name": "big", "version": "1",
                                                       "y0_draw": {"count": 1, "low": 1, "high": 2, "seed": 0,
                                                                   "residual": "units"},
                                                       "equations": [{"id": "a", "expression": "-y"}]}))
        datasets.fill_initial_values(tmp_path / "big.json")


def _dataset(tmp_path, equations, **fields) -> str:
    spec = {"format": "bench-dataset/1", "name": "mine", "version": "1", "equations": equations, **fields}
    (tmp_path / "mine.json").write_text(json.dumps(spec))
    return str(tmp_path / "mine.json")


@pytest.mark.parametrize("y0", [[float("nan")], [1.0, float("inf")], ["1.0"], [True]])
def test_initial_values_that_are_not_finite_numbers_are_refused(tmp_path, y0):
    with pytest.raises(datasets.DatasetError, match="'y0' must be a non-empty list of finite numbers"):
        datasets.read_spec(_dataset(tmp_path, [{"id": "decay", "expression": "-0.5*y", "y0": y0}]))


def test_an_equation_id_with_spaces_around_it_is_refused(tmp_path):
    """Rows and file names key by the id: ' decay' and 'decay' would be two tasks of one law."""
    with pytest.raises(datasets.DatasetError, match="without '/' or spaces around it"):
        datasets.read_spec(_dataset(tmp_path, [{"id": " decay", "expression": "-0.5*y", "y0": [1.0]}]))


@pytest.mark.parametrize("version", [True, ""])
def test_a_version_that_is_neither_text_nor_a_number_is_refused(tmp_path, version):
    with pytest.raises(datasets.DatasetError, match="'version' must be text or a number"):
        datasets.read_spec(_dataset(tmp_path, [{"id": "decay", "expression": "-0.5*y", "y0": [1.0]}], version=version))


def _flat(level: float, points: int, equation_id: str = "flat") -> Trajectory:
    t = np.linspace(0.0, 2.0, points)
    return Trajectory("mine", equation_id, 0, None, level, t, np.full(points, level), np.empty(0), np.empty(0))


def test_asking_for_more_points_than_a_record_holds_gives_all_of_them():
    """A user's record of 20 points observed at n = 128 is seen whole, sorted, not refused by numpy."""
    obs = Task(_flat(1.0, 20), 0.0, 128, 0).observations()
    assert len(obs.t) == 20 and np.array_equal(obs.t, np.linspace(0.0, 2.0, 20))


def test_two_equations_under_one_seed_draw_different_points_and_noise():
    """The random stream depends on the trajectory too: otherwise every equation of a dataset would
    share its sampled times and its noise draws."""
    a, b = (Task(_flat(1.0, 1024, name), 0.01, 128, 0).observations() for name in ("first", "second"))
    assert not np.array_equal(a.t, b.t) and not np.array_equal(a.y, b.y)

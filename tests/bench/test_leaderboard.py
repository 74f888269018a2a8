"""The leaderboard ranks methods by the share of tasks they solve, counting failures as unsolved."""
import numpy as np
import pandas as pd

from bench import report
from bench.rows import EXTRAP_DIVERGED, METRIC_COLUMNS


def rows(method, r2_interp, r2_extrap, status="ok", truth_kind="solution", dataset="classic", score_status="ok"):
    out = []
    for i, (a, b) in enumerate(zip(r2_interp, r2_extrap)):
        row = dict.fromkeys(METRIC_COLUMNS, np.nan)
        row.update(dataset=dataset, equation_id=f"e{i}", y0_index=0, noise=0.0, n=128, seed=0, method=method,
                   status=status, score_status=score_status, truth_kind=truth_kind, r2_interp=a, r2_extrap=b, fit_time=1.0)
        out.append(row)
    return out


def test_methods_are_ranked_by_extrapolation_share_and_failures_count_as_unsolved():
    frame = pd.DataFrame(rows("steady", [0.95] * 4, [0.95, 0.95, 0.95, 0.2])
                         + rows("sharp", [1.0] * 4, [1.0, 1.0, 0.1, 0.1])
                         + rows("crashes", [1.0] * 4, [1.0] * 4, status="error"))
    board = report.leaderboard(frame)
    assert list(board["method"]) == ["steady", "sharp", "crashes"]
    assert list(board["extrap_r2_above_0.9"]) == [0.75, 0.5, 0.0]
    assert list(board["failed"]) == [0, 0, 4]
    assert board.loc[board["method"] == "sharp", "median_r2_extrap"].item() == 0.55
    shown = report.format_leaderboard(board)
    assert "75%" in shown and "extrap R^2 > 0.9" in shown


def test_tasks_without_a_true_solution_are_left_out_of_the_extrapolation_share_only():
    frame = pd.DataFrame(rows("m", [0.95, 0.95], [0.95, 0.95])
                         + rows("m", [0.5, 0.5], [np.nan, np.nan], truth_kind="observations", dataset="user"))
    board = report.leaderboard(frame)
    assert board["interp_r2_above_0.9"].item() == 0.5
    assert board["extrap_r2_above_0.9"].item() == 1.0


def test_a_leaderboard_per_dataset_keeps_the_datasets_apart():
    frame = pd.DataFrame(rows("m", [0.95], [0.95]) + rows("m", [0.1], [0.1], dataset="large"))
    board = report.leaderboard(frame, by=("dataset",))
    assert dict(zip(board["dataset"], board["interp_r2_above_0.9"])) == {"classic": 1.0, "large": 0.0}


def test_a_prediction_that_diverges_after_T_fails_extrapolation_only():
    frame = pd.DataFrame(rows("m", [0.99], [np.nan], score_status="diverged-extrap")
                         + rows("m", [np.nan], [np.nan], score_status="diverged"))
    board = report.leaderboard(frame)
    assert board["interp_r2_above_0.9"].item() == 0.5 and board["extrap_r2_above_0.9"].item() == 0.0
    assert board["failed"].item() == 2


def test_latex_tables_keep_variant_labels_verbatim():
    frame = pd.DataFrame(rows("gplearn:grid={'generations': [8]}", [0.95], [np.nan], score_status="diverged-extrap")
                         + rows("sindy_x", [np.nan], [np.nan], status="error"))
    frame["complexity"], frame["fit_time"] = 5.0, 1.0
    latex = report.format_latex(frame)
    assert r"gplearn:grid=\{\textquotesingle{}generations\textquotesingle{}: [8]\}" in latex
    assert r"sindy\_x" in latex and r"$-\infty$" in latex


def test_each_share_has_an_interval_from_resampled_equations_not_tasks():
    """A method solving 10 of 20 equations: its interval lies about 50% and is the same when every
    equation is run again at a second noise level (twice the tasks, no more equations), where
    tasks drawn as if independent would narrow it; a method solving all reads 100% (100-100)."""
    once = pd.DataFrame(rows("half", [0.95, 0.1] * 10, [0.95, 0.1] * 10) + rows("all", [0.95] * 20, [0.95] * 20))
    twice = pd.concat([once, once.assign(noise=0.01)])
    board, again = (report.leaderboard(frame).set_index("method") for frame in (once, twice))
    low, high = board.loc["half", "interp_r2_above_0.9_low"], board.loc["half", "interp_r2_above_0.9_high"]
    assert 0.2 < low < 0.5 < high < 0.8 and (low, high) == (again.loc["half", "interp_r2_above_0.9_low"],
                                                             again.loc["half", "interp_r2_above_0.9_high"])
    assert (board.loc["all", "extrap_r2_above_0.9_low"], board.loc["all", "extrap_r2_above_0.9_high"]) == (1.0, 1.0)
    shown = report.format_leaderboard(board.reset_index())
    assert f"50% ({round(100 * low)}-{round(100 * high)})" in shown and "100% (100-100)" in shown
    assert report.leaderboard(once).equals(report.leaderboard(once))  # seeded: one table each time
    sizes = np.arange(1, 21)  # equations of 1-20 tasks, each solved in its own share: bounds other draws move
    solved = np.random.default_rng(0).random(sizes.sum()) < np.repeat(np.linspace(0.1, 0.9, 20), sizes)
    uneven = pd.DataFrame({"method": "m", "dataset": "d", "equation_id": np.repeat(np.arange(20), sizes),
                           "solved": solved})
    first, same, other = (report.share_interval(uneven, ["method"], seed=s) for s in (0, 0, 1))
    assert first.equals(same) and not first.equals(other)
    observed = pd.DataFrame(rows("m", [0.95, 0.1], [np.nan, np.nan], truth_kind="observations"))
    assert "| not scored " in report.format_leaderboard(report.leaderboard(observed))  # no truth beyond the data
    one_file = observed.assign(equation_id="plate1", record=["A1", "A2"])  # one law's records: nothing to resample
    assert "| 50%  " in report.format_leaderboard(report.leaderboard(one_file))
    per_equation = report.leaderboard(once, by=("dataset", "equation_id"))  # a cell per equation: no interval
    assert per_equation["interp_r2_above_0.9_low"].isna().all() and len(per_equation) == 40


def test_the_share_of_laws_of_the_true_form_counts_failures_as_not_and_unknown_laws_not_at_all():
    frame = pd.DataFrame(rows("m", [0.95] * 3, [0.95] * 3) + rows("m", [np.nan], [np.nan], status="error")
                         + rows("m", [0.9], [np.nan], truth_kind="observations", dataset="user"))
    frame["truth_expression"] = ["-0.5*y"] * 4 + [None]
    frame["skeleton"] = [1.0, 1.0, 0.0, np.nan, np.nan]  # the error wrote no law; the user's record has none
    board = report.leaderboard(frame)
    assert board["true_skeleton"].item() == 0.5  # 2 of the 4 tasks with a known law
    assert "true form" in report.format_leaderboard(board)
    older = report.leaderboard(frame.drop(columns="skeleton"))  # rows stored before the score existed
    assert np.isnan(older["true_skeleton"].item()) and "not scored" in report.format_leaderboard(older)
    mixed = frame.assign(skeleton=[1.0, np.nan, 0.0, np.nan, np.nan])  # a resumed sweep: one row from before
    assert np.isnan(report.leaderboard(mixed)["true_skeleton"].item())  # not a share of the newer rows alone


def test_the_interval_is_the_central_95_percent_of_the_bootstrap_over_equations():
    frame = pd.DataFrame({"method": "m", "dataset": "d", "equation_id": np.arange(20), "solved": [True, False] * 10})
    draws = np.random.default_rng(0).integers(0, 20, (report.RESAMPLES, 20))
    expected = np.percentile(frame["solved"].to_numpy(float)[draws].mean(axis=1), [2.5, 97.5])
    interval = report.share_interval(frame, ["method"], seed=0)
    np.testing.assert_allclose(interval.loc["m", ["low", "high"]].to_numpy(float), expected)


def test_medians_count_every_task_and_failure_of_a_cell_and_keep_a_cell_without_noise():
    rows = pd.DataFrame({"dataset": "d", "method": "m", "noise": [0.0, 0.0, 0.0, np.nan], "n": 64,
                         "status": ["ok", "error", "error", "ok"], "score_status": "ok", "truth_kind": "solution",
                         "reason": ["", "boom", "boom", ""], "score_reason": "", "r2_interp": [0.9, 0.5, 0.5, 0.8]})
    table = report.medians(rows)
    assert list(table["tasks"]) == [3, 1] and list(table["failed"]) == [2, 0]
    mixed = rows.assign(status=["ok", "error", "timeout", "ok"])
    assert report.failure_counts(mixed).set_index("method").loc["m", "total"] == 2


def test_quartile_columns_are_the_25th_and_75th_percentiles():
    frame = pd.DataFrame(rows("m", [0.0, 1.0, 2.0, 3.0, 4.0], [np.nan] * 5))
    q = report.quartiles(frame, metrics=("r2_interp",)).iloc[0]
    assert (q["r2_interp_q25"], q["r2_interp_median"], q["r2_interp_q75"]) == (1.0, 2.0, 3.0)


def test_the_leaderboard_s_median_r2_is_a_median_and_extrapolation_ranks_first():
    board = report.leaderboard(pd.DataFrame(rows("m", [0.1, 0.2, 0.9], [0.1, 0.2, 0.9]))).iloc[0]
    assert board["median_r2_interp"] == 0.2 and board["median_r2_extrap"] == 0.2  # not the mean, 0.4
    frame = pd.DataFrame(rows("extrap-good", [0.0, 0.0], [0.95, 0.95]) + rows("interp-good", [0.95, 0.95], [0.95, 0.0]))
    assert list(report.leaderboard(frame)["method"]) == ["extrap-good", "interp-good"]


def test_r2_exactly_at_the_threshold_is_not_solved():
    frame = pd.DataFrame(rows("a", [report.GOOD_R2] * 2, [report.GOOD_R2] * 2) + rows("b", [1.0] * 2, [1.0] * 2))
    board = report.leaderboard(frame).set_index("method")
    assert board.loc["a", f"interp_r2_above_{report.GOOD_R2:g}"] == 0.0  # "R^2 above 0.9"


def test_a_prediction_that_diverges_beyond_the_data_keeps_its_law_s_skeleton_score():
    frame = pd.DataFrame(rows("m", [0.99, 0.99], [np.nan, 0.99])).assign(skeleton=1.0, truth_expression="-y")
    frame.loc[0, "score_status"] = EXTRAP_DIVERGED
    assert report.leaderboard(frame).iloc[0]["true_skeleton"] == 1.0


def test_methods_level_in_extrapolation_are_ranked_by_their_interpolation_share():
    """The second key of the ranking: of two methods with the same extrapolation share, the one
    solving more tasks in interpolation comes first."""
    frame = pd.DataFrame(rows("weaker", [0.95, 0.1], [0.95, 0.1]) + rows("stronger", [0.95, 0.95], [0.95, 0.1]))
    assert list(report.leaderboard(frame)["method"]) == ["stronger", "weaker"]


def test_a_failure_in_scoring_gives_the_scorer_s_status_and_reason():
    """A prediction that ran (status ok) but failed its scoring is listed under the score's status
    and reason, not under an empty reason."""
    frame = pd.DataFrame(rows("m", [np.nan], [np.nan], score_status="diverged")
                         + rows("m", [np.nan], [np.nan], status="error"))
    frame["reason"] = ["", "boom"]
    frame["score_reason"] = ["LSODA stopped at t = 1.5", ""]
    found = report.failures(frame).set_index("status")["reason"]
    assert found["diverged"] == "LSODA stopped at t = 1.5" and found["error"] == "boom"


def test_the_true_form_share_of_a_cell_without_a_noise_level_is_shown():
    """Every row is scored: a cell whose key holds no noise level is not marked as scored before the
    score existed (leaderboard_by_dataset.md groups by dataset and noise)."""
    frame = pd.DataFrame(rows("m", [0.95, 0.95], [0.95, 0.95])).assign(noise=np.nan, skeleton=1.0,
                                                                          truth_expression="-y")
    assert report.leaderboard(frame, by=("dataset", "noise"))["true_skeleton"].tolist() == [1.0]

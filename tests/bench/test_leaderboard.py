"""The leaderboard ranks methods by the share of tasks they solve, counting failures as unsolved."""
import numpy as np
import pandas as pd

from bench import report
from bench.rows import METRIC_COLUMNS


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

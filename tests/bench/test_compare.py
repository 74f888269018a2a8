"""Two methods are compared on the tasks both ran, with a sign test on the tasks only one solves."""
import numpy as np
import pandas as pd
import pytest

from bench import compare
from bench.rows import METRIC_COLUMNS


def rows(method, r2, *, status="ok", dataset="classic", first=0):
    out = []
    for i, value in enumerate(r2, start=first):
        row = dict.fromkeys(METRIC_COLUMNS, np.nan)
        row.update(dataset=dataset, equation_id=f"e{i}", y0_index=0, noise=0.01, n=128, seed=0, method=method,
                   status=status, score_status="ok", truth_kind="solution", r2_interp=value, r2_extrap=value,
                   fit_time=1.0)
        out.append(row)
    return out


def test_discordant_tasks_decide_and_the_sign_test_is_exact():
    frame = pd.DataFrame(rows("a", [0.99] * 10) + rows("b", [0.99, 0.99] + [0.5] * 8))
    table = compare.paired(frame, "a", "b")
    cell = table.iloc[0]
    assert (cell["tasks"], cell["interp solved 1"], cell["interp solved 2"]) == (10, 10, 2)
    assert (cell["interp only 1"], cell["interp only 2"], cell["interp both"], cell["interp neither"]) == (8, 0, 2, 0)
    assert cell["interp p"] == pytest.approx(2 * 0.5 ** 8)  # 8 of 8 discordant tasks go one way
    assert list(table["dataset"]) == ["classic", "all"]


def test_the_sign_test_counts_each_law_once():
    """Three laws, each solved only by a at two noise levels: 6 vs 0 tasks, but 3 vs 0 laws (p 0.25);
    read as six independent tasks, p was 0.031."""
    frame = pd.DataFrame([{**row, "noise": noise} for noise in (0.01, 0.02)
                          for row in rows("a", [0.99] * 3) + rows("b", [0.5] * 3)])
    cell = compare.paired(frame, "a", "b", by=()).iloc[0]
    assert (cell["interp only 1"], cell["interp only 2"], cell["interp laws 1"], cell["interp laws 2"]) == (6, 0, 3, 0)
    assert cell["interp p"] == pytest.approx(0.25)
    mixed = frame.copy()  # a law each method solves once alone is a draw, not evidence
    mixed.loc[(mixed.method == "b") & (mixed.equation_id == "e0") & (mixed.noise == 0.02), "r2_interp"] = 0.99
    mixed.loc[(mixed.method == "a") & (mixed.equation_id == "e0") & (mixed.noise == 0.02), "r2_interp"] = 0.5
    cell = compare.paired(mixed, "a", "b", by=()).iloc[0]
    assert (cell["interp only 1"], cell["interp only 2"], cell["interp laws 1"], cell["interp laws 2"]) == (5, 1, 2, 0)


def test_only_shared_tasks_count_and_a_failure_is_unsolved():
    frame = pd.DataFrame(rows("a", [0.99, 0.99, 0.99]) + rows("b", [0.99, 0.99], status="error"))
    cell = compare.paired(frame, "a", "b", by=()).iloc[0]
    assert cell["tasks"] == 2  # e2 has no row of b
    assert (cell["extrap only 1"], cell["extrap only 2"], cell["extrap p"]) == (2, 0, 0.5)
    assert "2 / 0 (2 vs 0; laws 2 vs 0, p 0.5)" in compare.format_markdown(compare.paired(frame, "a", "b", by=()), "a", "b")


def test_an_unknown_method_or_no_shared_task_is_a_clear_error():
    frame = pd.DataFrame(rows("a", [0.99]) + rows("b", [0.99], first=5))
    with pytest.raises(ValueError, match="'c'"):
        compare.paired(frame, "a", "c")
    with pytest.raises(ValueError, match="share no task"):
        compare.paired(frame, "a", "b")


def test_observations_without_a_truth_beyond_them_are_not_scored_there():
    frame = pd.DataFrame(rows("a", [0.99, 0.5]) + rows("b", [0.99, 0.99]))
    frame["r2_extrap"] = np.nan  # CSV observations: no truth on [T, T_extra]
    shown = compare.format_markdown(compare.paired(frame, "a", "b", by=()), "a", "b")
    assert "not scored (no truth there)" in shown and "1 / 2 (0 vs 1; laws 0 vs 1, p 1)" in shown


def test_cells_by_the_true_law_and_a_column_that_is_not_the_tasks():
    frame = pd.DataFrame(rows("a", [0.99, 0.5]) + rows("b", [0.99, 0.99]))
    frame["truth_expression"] = ["-y", "y", "-y", "y"]
    table = compare.paired(frame, "a", "b", by=("truth_expression",))
    assert list(table["truth_expression"]) == ["-y", "y", "all"] and list(table["interp solved 1"]) == [1, 0, 1]
    with pytest.raises(ValueError, match="not a column of the task"):
        compare.paired(frame, "a", "b", by=("status",))


def test_a_markdown_table_keeps_a_pipe_or_a_line_break_in_its_cell():
    import pandas as pd

    from bench.report import markdown_table

    text = markdown_table(pd.DataFrame({"record": ["A|1", "two\nlines"], "r2": [0.5, 1.0]}))
    assert text.count("\n") == 3 and "A\\|1" in text and "two lines" in text


def test_the_paired_figure_counts_as_the_table_and_writes_its_points(tmp_path, monkeypatch):
    """Its panels count the tasks only one method solves, as `paired` counts them (a failure
    unsolved), and its CSV holds each task's two R^2 under the methods' names."""
    import matplotlib.figure

    from bench import plots

    frame = pd.DataFrame(rows("a", [0.99] * 6 + [0.999999, 0.5]) + rows("b", [0.5] * 3 + [0.95] * 3)
                         + rows("b", [0.9999, 0.2], first=6, status="error"))
    frame["record"] = [f"well {i % 8}" for i in range(16)]  # one file's records
    texts, save = [], matplotlib.figure.Figure.savefig
    legends = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *args, **kwargs: (
        texts.extend(ax.get_title() for ax in fig.axes),
        legends.append(len(fig.legends) if not any(ax.get_legend() for ax in fig.axes) else -1),
        save(fig, *args, **kwargs)))
    paths = plots.paired_figure(compare.pair_tasks(frame, "a", "b"), "a", "b", tmp_path / "pair.png")
    assert paths == [tmp_path / "pair.png", tmp_path / "pair.csv"] and paths[0].stat().st_size > 0
    assert len(texts) == 2 and all("only a (upper left) 4, only b (lower right) 0,\nboth 3, neither 1" in t for t in texts)
    assert legends == [1]  # the datasets' key lies below the panels: in the lower right it hid "only b"'s points
    points = pd.read_csv(paths[1])
    assert list(points.columns[-5:]) == ["record", "r2_interp a", "r2_interp b", "r2_extrap a", "r2_extrap b"]
    assert points["record"].tolist() == [f"well {i}" for i in range(8)]
    assert np.isneginf(points["r2_interp b"]).sum() == 2 and points["r2_interp a"].tolist() == [0.99] * 6 + [0.999999, 0.5]


def test_the_paired_figure_puts_the_first_method_on_x_and_keeps_every_point_on_its_axes(tmp_path, monkeypatch):
    """Tasks that both methods fail, or that one solves exactly while the other fails, are drawn on
    the axes' edges (an axis of infinite length once ended the report); the first method is x."""
    import matplotlib.figure

    from bench import plots

    frame = pd.DataFrame(rows("a", [1.0, 0.99, np.nan]) + rows("b", [np.nan, 0.5, np.nan]))
    frame.loc[frame.r2_interp.isna(), "status"] = "error"
    axes = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *args, **kwargs: (
        axes.append(fig.axes[0]), save(fig, *args, **kwargs)))
    plots.paired_figure(compare.pair_tasks(frame, "a", "b"), "a", "b", tmp_path / "pair.png")
    panel = axes[0]
    points = panel.collections[0].get_offsets()
    (x_low, x_high), (y_low, y_high) = panel.get_xlim(), panel.get_ylim()
    assert len(points) == 3 and all(x_low < x < x_high and y_low < y < y_high for x, y in points)
    # a's 1 - R^2 on x (0, on the floor at 0.01; 0.01; failed: 4), b's on y (failed: 4; 0.5; failed: 4)
    assert sorted(tuple(np.round(point, 9)) for point in points) == [(0.01, 0.5), (0.01, 4.0), (4.0, 4.0)]
    assert x_low < 1 - 0.9 < x_high  # the line of the solved tasks is drawn


def test_only_tasks_scored_for_both_methods_count_and_r2_at_the_threshold_is_unsolved():
    frame = pd.DataFrame(rows("a", [0.99, np.nan]) + rows("b", [0.99, 0.99]))
    cell = compare.paired(frame, "a", "b", by=()).iloc[-1]
    assert cell["interp scored"] == 1 and cell["interp only 2"] == 0 and cell["interp solved 2"] == 1
    frame = pd.DataFrame(rows("a", [0.9, 0.9]) + rows("b", [1.0, 1.0]))
    cell = compare.paired(frame, "a", "b", by=()).iloc[-1]
    assert cell["interp solved 1"] == 0 and cell["interp only 2"] == 2


def test_the_paired_fit_time_is_a_median():
    frame = pd.DataFrame(rows("a", [0.99] * 3) + rows("b", [0.99] * 3))
    frame.loc[2, "fit_time"] = 10.0  # one slow task of a
    assert compare.paired(frame, "a", "b", by=()).iloc[-1]["median fit 1 (s)"] == 1.0

"""Every figure and table is drawn from a small result table, and shows that table's numbers."""
import re
from collections import Counter

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import seaborn as sns

from bench import plots, report


@pytest.fixture(scope="module")
def rows():
    """A seeded result table: 3 methods x 2 datasets x 2 noise levels x 2 n x 4 equations;
    'fails' errors on half of its tasks and 'awful' is far below R^2 = -3."""
    rng = np.random.default_rng(0)
    records = []
    for dataset in ("textbook", "classic"):
        for noise in (0.0, 0.01):
            for n in (128, 192):
                for eq in range(4):
                    for method, r2 in (("good", 0.99), ("fails", 0.5), ("awful", -50.0)):
                        failed = method == "fails" and eq % 2 == 0
                        value = r2 - noise * 10 + rng.normal(0, 0.01)
                        records.append(dict(
                            dataset=dataset, equation_id=f"eq{eq}", y0_index=0, noise=noise, n=n, seed=0,
                            method=method, status="error" if failed else "ok",
                            reason="RuntimeError: boom" if failed else "", truth_kind="solution",
                            score_status=None if failed else "ok", score_reason="",
                            r2_interp=np.nan if failed else value, r2_extrap=np.nan if failed else value - 0.1,
                            l1_interp=rng.uniform(0.01, 1), l1_extrap=rng.uniform(0.01, 1),
                            linf_interp=rng.uniform(0.1, 2), linf_extrap=rng.uniform(0.1, 2),
                            isclose_interp=rng.uniform(), isclose_extrap=rng.uniform(),
                            complexity=float(rng.integers(3, 20)), fit_time=rng.uniform(0.1, 5)))
    return pd.DataFrame(records)


@pytest.fixture(scope="module")
def drawn(rows, tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    return out, plots.draw_all(rows, out, dataset="classic", n_main=192, n_datasets=128)


def test_every_figure_is_written_as_png_and_pdf(drawn):
    out, paths = drawn
    for name in ("main", "solved", "r2_interp", "r2_extrap", "appendix_interp", "appendix_extrap", "dataset_stats"):
        for suffix in ("png", "pdf", "csv"):
            path = out / f"{name}.{suffix}"
            assert path in paths and path.stat().st_size > 0


def medians_by_hand(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's medians computed here, not by the code under test: a failed task counts as
    R^2 = -inf and an error of +inf; numpy's median of each group."""
    rows = rows.copy()
    failed = (rows.status != "ok") | (rows.score_status != "ok")
    rows.loc[failed, ["r2_interp", "r2_extrap"]] = -np.inf
    rows.loc[failed, ["linf_extrap"]] = np.inf
    columns = ["r2_interp", "r2_extrap", "linf_extrap", "complexity", "fit_time"]
    return rows.groupby(["dataset", "method", "noise", "n"])[columns].agg(lambda s: float(np.median(s.to_numpy(float))))


def test_figures_show_the_medians_of_the_table(rows, drawn):
    out, _ = drawn
    expected = medians_by_hand(rows)
    main = pd.read_csv(out / "main.csv")
    assert set(main.dataset) == {"classic"} and set(main.n) == {192}
    for name, columns in (("main", ["r2_interp", "complexity", "fit_time"]), ("r2_interp", ["r2_interp"]),
                          ("r2_extrap", ["r2_extrap"]), ("appendix_extrap", ["r2_extrap", "linf_extrap", "fit_time"])):
        shown = pd.read_csv(out / f"{name}.csv").set_index(["dataset", "method", "noise", "n"])
        np.testing.assert_allclose(shown[columns].to_numpy(float),
                                   expected.loc[shown.index, columns].to_numpy(float), rtol=1e-12)
    # the failure policy reaches the figures: 'fails' has R^2 = -inf on half its tasks, so its median is -inf
    main = main.set_index(["dataset", "method", "noise", "n"])
    assert np.isneginf(main.loc[("classic", "fails", 0.0, 192), "r2_interp"])


def test_dataset_statistics_count_each_equation_once(drawn):
    from bench import datasets

    out, _ = drawn
    stats = pd.read_csv(out / "dataset_stats.csv")
    for name in ("textbook", "classic"):
        equations = {tr.equation_id for tr in datasets.load(name)}
        assert (stats.dataset == name).sum() == len(equations)
    operators = pd.read_csv(out / "dataset_operators.csv")
    assert {"add", "mul"} <= set(operators.operator)


def test_each_method_keeps_its_colour_across_figures(rows, tmp_path, monkeypatch):
    """The main figure, without 'awful' (not run on its dataset; first by name), draws the other
    methods in the colours the appendix gives them beside 'awful'."""
    import matplotlib.colors
    import matplotlib.figure

    assert list(plots.palette(["second", "lead", "second"])) == ["second", "lead"]  # in the order given: best first
    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    plots.draw_all(rows[~((rows.method == "awful") & (rows.dataset == "classic"))], tmp_path, dataset="classic",
                   n_main=192, n_datasets=128, statistics=False)

    def legend_colours(fig) -> dict:
        legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
        return {text.get_text(): matplotlib.colors.to_hex(handle.get_color())
                for legend in legends for handle, text in zip(legend.legend_handles, legend.get_texts())}

    drawn = [legend_colours(fig) for fig in figures]
    main = next(colours for colours in drawn if "fails" in colours and "awful" not in colours)
    appendix = next(colours for colours in drawn if {"good", "fails", "awful"} <= set(colours))
    assert main == {method: appendix[method] for method in main} and len(set(appendix.values())) >= 3


def test_quartiles_are_numpys_and_a_failure_next_to_one_is_the_quartile():
    """The brackets of medians_iqr.md were taken outside ('lower' and 'higher'): 0.1...0.8 read
    [0.2, 0.7] instead of [0.275, 0.625]."""
    values = np.linspace(0.1, 0.8, 8)
    assert [report.quantile(values, q) for q in (0.25, 0.5, 0.75)] == pytest.approx(np.quantile(values, [0.25, 0.5, 0.75]))
    failed = [-np.inf, 0.5, 0.9, 1.0, np.nan]  # as the median does: -inf beside the quartile is the quartile
    assert report.quantile(failed, 0.25) == -np.inf and report.quantile(failed, 0.75) == pytest.approx(0.925)
    assert report.quantile([-np.inf, -np.inf, 0.5], 0.5) == -np.inf and np.isnan(report.quantile([np.nan], 0.5))


def test_tables_give_medians_with_interquartile_ranges_and_failure_counts(rows, tmp_path):
    paths = report.write(rows, tmp_path)
    quart = report.quartiles(rows).set_index(["dataset", "method", "noise", "n"])
    good = rows[(rows.method == "good") & (rows.dataset == "textbook") & (rows.noise == 0) & (rows.n == 128)]
    assert quart.loc[("textbook", "good", 0.0, 128), "r2_interp_median"] == pytest.approx(good.r2_interp.median())
    assert quart.loc[("textbook", "good", 0.0, 128), "r2_interp_q25"] <= good.r2_interp.median()
    latex = paths["latex"].read_text()
    assert "\\begin{tabular}" in latex and "awful" in latex
    counts = report.failure_counts(rows).set_index("method")
    assert counts.loc["fails", "error"] == 16 and "good" not in counts.index
    assert "RuntimeError: boom" in paths["failures_markdown"].read_text()
    from bench.store import ResultStore

    with pytest.raises(ValueError, match="no result rows here"):  # a mistyped folder reads as no rows
        report.with_failure_policy(ResultStore(tmp_path / "my-sweeep").read())


def test_laws_csv_holds_each_task_s_law_and_the_printed_table_rounds_its_constants(tmp_path):
    frame = pd.DataFrame([
        dict(dataset="mine", equation_id=eq, record=None, y0_index=0, noise=0.0, n=64, seed=0, method=m,
             status=status, score_status=score, expression=law, r2_interp=r2, r2_extrap=np.nan, fit_time=1.0,
             truth_kind="observations", reason="", score_reason="")
        for eq, m, status, score, law, r2 in [
            ("growth", "b", "ok", "ok", "1.9974*y - 1.99512345*y**2", 0.9995),
            ("growth", "a", "timeout", None, None, np.nan),
            ("decay", "a", "ok", "diverged", "-0.50099464007*y", np.nan)]])
    paths = report.write(frame, tmp_path)
    table = pd.read_csv(paths["laws"])
    assert list(zip(table.equation_id, table.method, table.status)) == [
        ("decay", "a", "diverged"), ("growth", "a", "timeout"), ("growth", "b", "ok")]
    assert table.law[2] == "1.9974*y - 1.99512345*y**2" and "record" not in table  # in full; no records here
    shown = report.format_laws(report.laws(frame))
    assert "1.997*y - 1.995*y**2" in shown and "-0.501*y" in shown and "y0_index" not in shown  # as nsode predict writes it
    assert "r2_extrap" not in shown  # user data has no extrapolation window
    assert "and 1 more row:" in report.format_laws(report.laws(frame), limit=2)
    long = " + ".join(f"{k}.123456*y**{k}" for k in range(2, 30))  # a sindy fit of many terms
    shown = report.format_laws(report.laws(frame.assign(expression=long)))
    assert max(map(len, shown.splitlines())) < 160 and " ..." in shown


def test_failures_md_counts_each_kind_of_reason_once_and_the_csv_keeps_them_in_full(rows, tmp_path):
    """Reasons that differ only in their numbers (the time a solve stopped) are one kind."""
    failed = rows.copy()
    mask = (failed.method == "fails") & (failed.status == "error")
    failed.loc[mask, "reason"] = [f"LSODA stopped near t = {0.1 * i:.3g} (blows up)" for i in range(mask.sum())]
    paths = report.write(failed, tmp_path)
    text = paths["failures_markdown"].read_text()
    assert re.search(rf"\| LSODA stopped near t = # \(blows up\) \| +{mask.sum()} \|", text)
    assert pd.read_csv(paths["failures"])["reason"].str.startswith("LSODA").sum() == mask.sum()


def test_a_dataset_without_true_laws_has_no_statistics_figure(tmp_path, capsys):
    folder = tmp_path / "observed"
    folder.mkdir()
    t = np.linspace(0, 2, 20)
    pd.DataFrame({"t": t, "y": 3 * np.exp(-0.5 * t)}).to_csv(folder / "decay.csv", index=False)
    assert plots.dataset_statistics([str(folder)], tmp_path / "figures") == []
    assert "no true f(y)" in capsys.readouterr().out


def test_no_appendix_is_drawn_for_a_part_nothing_was_scored_in(rows):
    """Observed records have no extrapolation window: the figure was drawn with every panel blank
    but complexity and fit time, which do not depend on the part."""
    observed = rows.assign(truth_kind="observations",
                           **{column: np.nan for column in rows.columns if column.endswith("_extrap")})
    medians = report.medians(observed)
    assert plots.appendix_figure(medians, plots.palette(medians["method"]), part="extrap") is None
    assert plots.appendix_figure(medians, plots.palette(medians["method"]), part="interp") is not None


def test_the_appendix_legend_lies_beside_its_grid_of_equal_panels(rows):
    """Eighteen methods' legend inside the first panel covered its data, and the layout then
    squeezed every row to a strip: the legend belongs to the figure, and each panel keeps its height."""
    import matplotlib.pyplot as plt

    medians = report.medians(rows)
    fig, _ = plots.appendix_figure(medians, plots.palette(medians["method"]))
    try:
        assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
        heights = [ax.get_position().height * fig.get_figheight() for ax in fig.axes]
        assert min(heights) > 1.5  # inches: of the 2.6 each row is given
    finally:
        plt.close(fig)


def test_a_failed_median_is_drawn_on_the_axis_edge_and_never_has_the_smallest_error(rows):
    """'fails' fails half its tasks: its median R^2 is -inf and its median L-inf +inf (not the
    median of the tasks it did not fail); both are drawn as open triangles on the panel's edge."""
    import matplotlib.pyplot as plt

    medians = report.medians(rows)
    failing = medians[medians.method == "fails"]
    assert np.isneginf(failing.r2_extrap).all() and np.isposinf(failing.linf_extrap).all()
    assert plots.best_first(medians) == ["good", "awful", "fails"]  # -50 and -inf both count as -3: a tie, by name
    fig, _ = plots.appendix_figure(medians, plots.palette(medians["method"]), part="extrap")
    try:
        r2_panel, linf_panel = fig.axes[0], fig.axes[2]
        edge = {ax: [tuple(point) for c in ax.collections for point in c.get_offsets()] for ax in fig.axes[:3]}
        assert (0.0, plots.R2_LIMITS[0]) in edge[r2_panel] and (0.01, plots.R2_LIMITS[0]) in edge[r2_panel]
        assert max(y for _, y in edge[linf_panel]) < linf_panel.get_ylim()[1] < np.inf
        assert "open triangles" in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_statistics_say_which_datasets_they_leave_out(capsys):
    assert plots._datasets_found(["textbook", "mine"]) == ["textbook"]  # "mine": e.g. a JSON file's own name
    assert "dataset statistics leave out mine: not a built-in dataset" in capsys.readouterr().out


def test_figures_name_a_run_by_its_method_and_note_the_settings_left_out(rows):
    """A method's only run is drawn as `gp`, its settings in small print under the figure; two runs
    of one method keep their full labels, which tell them apart. Tables keep the full labels."""
    import matplotlib.pyplot as plt

    labels = {"good": "gp:grid={'generations': [8]}", "fails": "sindy:threshold=0.1", "awful": "sindy:threshold=0.5"}
    medians = report.medians(rows.assign(method=rows.method.map(labels)))
    names = plots.shown_names(medians["method"])
    assert names == {labels["good"]: "gp", labels["fails"]: labels["fails"], labels["awful"]: labels["awful"]}
    assert plots.settings_note(names) == "gp: grid={'generations': [8]}"
    assert plots.shown_names(["m:cost='$1'"]) == {"m:cost='$1'": "m"}  # a $ would start mathtext: drawn as \\$
    assert plots.settings_note(plots.shown_names(["m:cost='$1'"])) == "m: cost='\\$1'"
    fig, data = plots.appendix_figure(medians, plots.palette(medians["method"]))
    try:
        shown = [text.get_text() for text in fig.legends[0].get_texts()]
        assert sorted(shown) == sorted(names.values()) and set(data["method"]) == set(labels.values())
        assert any("gp: grid={'generations': [8]}" in text.get_text() for text in fig.texts)
    finally:
        plt.close(fig)


def test_the_leaderboard_figure_shows_each_share_with_its_interval_best_first(rows, drawn, monkeypatch, tmp_path):
    import matplotlib.figure

    out, _ = drawn
    board = report.leaderboard(rows)
    shown = pd.read_csv(out / "solved.csv")
    assert list(shown["method"]) == list(board["method"]) == ["good", "awful", "fails"]  # a tie: by name
    pd.testing.assert_frame_equal(shown, board, check_dtype=False)
    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    plots.solved_figure(rows, tmp_path, plots.palette(rows.method))
    interp = figures[0].axes[0]
    assert [label.get_text() for label in interp.get_yticklabels()] == ["good", "awful", "fails"]
    bars = [container.lines[2][0].get_segments()[0] for container in interp.containers]  # each share's interval
    share = "interp_r2_above_0.9"
    expected = 100 * board[[f"{share}_low", f"{share}_high"]].to_numpy()
    np.testing.assert_allclose([[segment[0][0], segment[1][0]] for segment in bars], expected)


def test_the_r2_axis_follows_the_better_half_so_the_leaders_stay_apart():
    """One method far below -3 stretched the panel to [-3, 1], and the leaders' medians of 0.97 and
    0.999 drew as one line; the worse half now lies on the lower edge as open triangles."""
    import matplotlib.pyplot as plt

    medians = pd.DataFrame({"method": ["a", "b", "c", "d"] * 2, "noise": [0.0] * 4 + [0.01] * 4,
                            "r2_interp": [0.999, 0.97, 0.5, -50.0, 0.998, 0.96, 0.4, -np.inf]})
    order = plots.best_first(medians)
    fig, ax = plt.subplots()
    try:
        assert plots.metric_panel(ax, medians, "r2_interp", plots.palette(order), order)  # some on the edge
        low, high = ax.get_ylim()
        assert 0.89 < low < 0.9 and 1 < high < 1.01  # down to 0.9 at least: the solved line
        edge = [tuple(point) for c in ax.collections for point in c.get_offsets()]
        assert (0.0, 0.9) in edge and (0.01, 0.9) in edge  # c and d at the lower edge, marked
    finally:
        plt.close(fig)
    errors = medians.assign(l1_interp=[1e-3, 1e-2, 1.0, 1e14] * 2)  # an error panel: up to the better half's largest
    fig, ax = plt.subplots()
    try:
        assert plots.metric_panel(ax, errors, "l1_interp", plots.palette(order), order, log=True, decades=6)
        assert ax.get_ylim()[1] == pytest.approx(2e-2)  # 1e14 had pressed every other median onto the floor
    finally:
        plt.close(fig)


def test_a_paired_figure_names_runs_short_and_notes_their_settings(rows, tmp_path, monkeypatch):
    """Full labels such as operon's grid ran the two panels' titles into each other."""
    import matplotlib.figure

    from bench import compare

    labels = {"good": "gp:grid={'max_length': [20], 'generations': [30]}", "awful": "sindy:threshold=0.5"}
    relabelled = rows[rows.method.isin(labels)].assign(method=lambda frame: frame.method.map(labels))
    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: figures.append(fig))
    plots.paired_figure(compare.pair_tasks(relabelled, *labels.values()), *labels.values(), tmp_path / "pair.png")
    (fig,) = figures
    titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text()]
    assert all("grid=" not in title for title in titles) and "gp against sindy" in titles[-1]
    assert any("gp: grid={'max_length': [20], 'generations': [30]}" in text.get_text() for text in fig.texts)


def test_tick_and_cell_labels_neither_collide_nor_round_a_near_one_to_one():
    assert plots._spaced_labels([0.0, 0.001, 0.005, 0.01, 0.02, 0.05]) == ["0", "", "0.005", "0.01", "0.02", "0.05"]
    assert plots._spaced_labels([0.0]) == ["0"] and plots._spaced_labels([0.0, 0.01, 0.02]) == ["0", "0.01", "0.02"]
    assert [plots._r2_label(v) for v in (1.0, 0.9997, 0.99999, 0.997, -5.0, -np.inf)] == [
        "1", "0.9997", "0.9999", "0.997", "<-3", "failed"]


@pytest.fixture
def figures(monkeypatch):
    """The figures the code under test saves, kept open for inspection instead of written."""
    kept = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: kept.append(fig))
    yield kept
    for fig in kept:
        plt.close(fig)


def _medians(cells):
    """Medians as report.medians gives them, one row per (dataset, n, method, noise)."""
    columns = ["dataset", "n", "method", "noise", "r2_interp"]
    frame = pd.DataFrame(cells, columns=columns)
    return frame.assign(r2_extrap=frame["r2_interp"], complexity=5.0, fit_time=[0.5 + k for k in range(len(frame))])


def test_more_than_ten_methods_get_tab20_s_strong_hues_before_its_pale_tints():
    tab20 = sns.color_palette("tab20", 20)
    colours = list(plots.palette([f"m{k:02d}" for k in range(12)]).values())
    assert colours[:2] == [tab20[0], tab20[2]] and colours[10:] == [tab20[1], tab20[3]]


def test_medians_below_the_plotted_floor_tie_at_it_and_rank_by_name():
    """-10 and -50 both draw at -3: neither is ranked (or coloured) as the better."""
    medians = pd.DataFrame({"method": ["b", "a", "c"], "r2_interp": [-10.0, -50.0, 0.9]})
    assert plots.best_first(medians) == ["c", "a", "b"]


def test_the_figures_cell_is_the_one_asked_for_else_the_middle_one():
    assert plots.pick([256, 128, 192, 128], 192) == 192 and plots.pick([256, 128, 192], 100) == 192


def test_the_main_figure_takes_a_sample_size_its_dataset_has_and_fit_time_on_a_log_axis(tmp_path, figures):
    """Asked for classic at n = 192 where classic was run at 128 only (textbook at 192): classic at 128;
    asked for a dataset not run: one that was."""
    medians = _medians([("classic", 128, "a", 0.0, 0.9), ("classic", 128, "a", 0.01, 0.8),
                        ("textbook", 192, "a", 0.0, 0.7), ("textbook", 192, "a", 0.01, 0.6)])
    colours = plots.palette(["a"])
    plots.main_figure(medians, tmp_path, colours, dataset="classic", n=192)
    shown = pd.read_csv(tmp_path / "main.csv")
    assert set(shown["dataset"]) == {"classic"} and set(shown["n"]) == {128} and len(shown) == 2
    assert [ax.get_yscale() for ax in figures[0].axes] == ["linear", "linear", "log"]
    plots.main_figure(medians[medians.dataset == "textbook"], tmp_path, colours, dataset="classic", n=192)
    assert set(pd.read_csv(tmp_path / "main.csv")["dataset"]) == {"textbook"}


def test_an_error_panel_spans_its_decades_below_the_better_half_s_largest():
    """An error far below the rest (1e-12) lies on the axis's floor, `decades` below the top, not
    stretching the axis down to it."""
    medians = pd.DataFrame({"method": ["a", "b", "c", "d"], "noise": [0.0] * 4, "r2_interp": [0.999, 0.97, 0.5, -50.0],
                            "l1_interp": [1e-3, 1e-2, 1.0, 1e-12]})
    order = plots.best_first(medians)
    fig, ax = plt.subplots()
    try:
        assert plots.metric_panel(ax, medians, "l1_interp", plots.palette(order), order, log=True, decades=6)
        assert ax.get_ylim() == pytest.approx((1e-8 / 2, 1e-2 * 2))
        edge = [tuple(point) for c in ax.collections for point in c.get_offsets()]
        assert (0.0, pytest.approx(1e-8)) in edge
    finally:
        plt.close(fig)


def test_the_heatmap_lists_methods_best_first(tmp_path, figures):
    medians = _medians([("classic", 128, "a", 0.0, -1.0), ("classic", 128, "b", 0.0, 0.99),
                        ("classic", 128, "c", 0.0, 0.5)])
    plots.r2_by_dataset(medians, tmp_path, "interp", 128)
    assert [label.get_text() for label in figures[0].axes[0].get_yticklabels()] == ["b", "c", "a"]


def test_the_leaderboard_figure_puts_the_best_method_on_top(tmp_path, figures, rows_of_two):
    plots.solved_figure(rows_of_two, tmp_path, plots.palette(rows_of_two["method"]))
    interp = figures[0].axes[0]
    assert interp.yaxis_inverted() and interp.get_yticklabels()[0].get_text() == "good"


@pytest.fixture
def rows_of_two():
    """'good' solves every task of one dataset, 'poor' none (R^2 below 0)."""
    from bench.rows import COLUMNS

    records = []
    for method, r2 in (("good", 0.99), ("poor", -0.5)):
        for noise in (0.0, 0.01):
            for eq in range(3):
                row = dict.fromkeys(COLUMNS, np.nan)
                row.update(dataset="textbook", equation_id=f"e{eq}", y0_index=0, noise=noise, n=128, n_observed=128,
                           seed=0, method=method, status="ok", score_status="ok", truth_kind="solution",
                           r2_interp=r2 - eq * 0.1, r2_extrap=r2 - eq * 0.2, l1_interp=0.1, l1_extrap=0.2,
                           linf_interp=0.3, linf_extrap=0.4, isclose_interp=0.5, isclose_extrap=0.5,
                           complexity=5.0, fit_time=1.0 + eq)
                records.append(row)
    return pd.DataFrame(records)


def test_the_leader_gets_the_first_colour_in_every_figure(tmp_path, figures, rows_of_two):
    """Colours go best first, not by name ('alpha' sorts first by name, 'zeta' leads)."""
    import matplotlib.colors

    rows = rows_of_two.assign(method=rows_of_two["method"].map({"good": "zeta", "poor": "alpha"}))
    plots.draw_all(rows, tmp_path, dataset="textbook", n_main=128, n_datasets=128, statistics=False)
    legend = figures[0].legends[0]  # the main figure's
    colours = {text.get_text(): matplotlib.colors.to_hex(handle.get_color())
               for handle, text in zip(legend.legend_handles, legend.get_texts())}
    first = matplotlib.colors.to_hex(sns.color_palette("colorblind", 10)[plots.COLOUR_ORDER[0]])
    assert colours["zeta"] == first and colours["alpha"] != first


def test_a_paired_figure_always_shows_the_solved_lines(tmp_path, figures, rows_of_two):
    """Where every task's 1 - R^2 is 1 or more, the axis still reaches below 0.1 (R^2 = 0.9)."""
    from bench import compare

    both_poor = pd.concat([rows_of_two[rows_of_two.method == "poor"],
                           rows_of_two[rows_of_two.method == "poor"].assign(method="worse", r2_interp=-2.0)])
    plots.paired_figure(compare.pair_tasks(both_poor, "poor", "worse"), "poor", "worse", tmp_path / "pair.png")
    for ax in figures[0].axes[:2]:
        assert ax.get_xlim()[0] < 0.1 < ax.get_xlim()[1] and ax.get_ylim()[0] < 0.1


def test_a_json_dataset_that_cannot_be_read_is_an_error_in_the_statistics(tmp_path):
    from bench import datasets

    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(datasets.DatasetError, match="not a readable JSON"):
        plots.dataset_statistics([str(tmp_path / "broken.json")], tmp_path / "figures")


def test_operator_counts_count_operators_only():
    """Symbols and numbers are leaves, not operators; a law that cannot be parsed is left out."""
    assert plots.operator_counts(["-0.5*y + y**2", "sin(y)", "y +* 2"]) == Counter(add=1, mul=1, pow=1, sin=1)


def test_observed_records_get_no_extrapolation_heatmap_and_a_blank_panel_says_why(tmp_path, figures, rows_of_two):
    """Records without a true law have no extrapolation window: no r2_extrap figure is drawn, and
    the leaderboard's extrapolation panel says it was not scored rather than standing empty."""
    from bench import report

    observed = rows_of_two.assign(truth_kind="observations",
                                  **{column: np.nan for column in rows_of_two.columns if column.endswith("_extrap")})
    assert plots.r2_by_dataset(report.medians(observed), tmp_path, "extrap", 128) == []
    assert not (tmp_path / "r2_extrap.csv").exists()
    plots.solved_figure(observed, tmp_path, plots.palette(observed["method"]))
    interp, extrap, _ = figures[-1].axes
    assert [text.get_text() for text in extrap.texts] == ["not scored (no truth there)"] and not interp.texts


def test_a_long_law_is_cut_at_law_width_characters_in_the_printed_table():
    """laws.csv keeps a law in full; the printed table cuts one a little over LAW_WIDTH characters to
    LAW_WIDTH, " ..." included."""
    long = " + ".join(f"{k}.123456*y**{k}" for k in range(2, 11))  # about 110 characters, rounded
    frame = pd.DataFrame([dict(dataset="mine", equation_id="e", record=None, y0_index=0, noise=0.0, n=64, seed=0,
                               method="sindy", status="ok", score_status="ok", expression=long, r2_interp=0.99,
                               r2_extrap=np.nan, fit_time=1.0, truth_kind="observations", reason="", score_reason="")])
    cells = [cell.strip() for line in report.format_laws(report.laws(frame)).splitlines() for cell in line.split("|")
             if cell.strip().endswith(" ...")]
    assert len(cells) == 1 and len(cells[0]) <= report.LAW_WIDTH
    assert report.laws(frame)["law"].item() == long

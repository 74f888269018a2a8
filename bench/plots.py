"""The paper's figures from a table of stored results, drawn with seaborn.

Every figure is saved as PNG and PDF, together with a CSV of exactly the numbers it shows
(`<name>.csv`), so a figure can be checked against the report tables. Medians follow the report's
failure policy (failed tasks count as R^2 = -inf and errors of +inf); a median beyond a panel's
axis (below R^2 = -3, a failed median, an oracle's rounding error) is drawn on the axis's edge
as an open triangle, never dropped; an R^2 or error axis follows the better half of the methods.
Each method keeps one colour in every figure: colours are assigned in the order of `best_first`
over all the results, so the leaders get the strongest colours; each figure lists its methods
best first on the cells it shows. A run is drawn under its method's short name where it is that
method's only run (`shown_names`), its settings noted under the figure.
"""
from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from bench import report  # noqa: E402
from odecore import protocol  # noqa: E402

R2_LIMITS = (-3.0, 1.0)  # the paper's x-axis range for R^2; methods below it are marked
METRIC_LABELS = {"r2": "median $R^2$", "l1": "median $L_1$", "linf": "median $L_\\infty$",
                 "isclose": "median share within 5%\n(isclose)", "complexity": "median complexity (nodes)",
                 "fit_time": "median fit time (s)"}
COLOUR_ORDER = (0, 1, 2, 4, 7, 3, 5, 9, 8, 6)  # seaborn's colorblind palette: blue, orange, green, pink, grey, ...
ERROR_DECADES = 6  # L1 and L-inf panels span this many decades below their largest median
EDGE_NOTE = "open triangles: medians beyond the axis (failed: $\\pm\\infty$), drawn on its edge"
APPENDIX_METRICS = ("r2", "l1", "linf", "isclose", "complexity", "fit_time")
PART_LABELS = {"interp": "interpolation $[0, T]$", "extrap": "extrapolation $[T, T_{extra}]$"}


def palette(methods) -> dict[str, tuple]:
    """One colour per method, the same in every figure drawn from the same results, given in
    `methods`' order (`draw_all`: best first, so that tab20's strong hues go to the leaders and its
    pale tints to the rest). Up to 20 methods get distinct colours: up to 10 from seaborn's
    colour-blind palette, else tab20's hues and tints."""
    names = list(dict.fromkeys(methods))
    if len(names) <= 10:  # told apart with red-green colour blindness too; its two orange-reds far apart
        colours = [sns.color_palette("colorblind", 10)[k] for k in COLOUR_ORDER[:len(names)]]
    elif len(names) <= 20:
        tab20 = sns.color_palette("tab20", 20)
        colours = (tab20[0::2] + tab20[1::2])[:len(names)]
    else:
        colours = sns.color_palette("husl", len(names))
    return dict(zip(names, colours))


def shown_names(methods) -> dict[str, str]:
    """How figures name each run: its method's name where no other run of that method is in the
    results (`gplearn` for `gplearn:grid={'generations': [8]}`), its full label where two are;
    `settings_note` lists the settings a short name leaves out. Tables keep the full labels."""
    labels = sorted(set(methods))
    runs = Counter(label.partition(":")[0] for label in labels)
    return {label: _plain(label.partition(":")[0] if runs[label.partition(":")[0]] == 1 else label) for label in labels}


def _plain(text: str) -> str:
    """`text` drawn as written: a `$` in a method's label (`m:cost=$1`) would start mathtext."""
    return str(text).replace("$", r"\$")


def settings_note(names: dict[str, str]) -> str:
    """One line per run whose figure name leaves its settings out ('' when none does)."""
    return "\n".join(f"{short}: {_plain(label.partition(':')[2])}"
                     for label, short in sorted(names.items(), key=lambda kv: kv[1]) if ":" in label and short != _plain(label))


def _as_shown(data: pd.DataFrame, colours: dict, order: list[str], names: dict[str, str]):
    """`data`, `colours` and `order` under the figure names of `names`."""
    return (data.assign(method=data["method"].map(names)), {names[m]: c for m, c in colours.items() if m in names},
            [names[m] for m in order])


def _note_below(fig, note: str) -> None:
    """`note` in small print under everything drawn (tick labels included), left-aligned."""
    if not note:
        return
    renderer = fig.canvas.get_renderer()
    drawn = [artist.get_tightbbox(renderer) for artist in (*fig.axes, *fig.legends)]
    bottom, left = min(box.y0 for box in drawn), min(box.x0 for box in drawn)
    width, height = fig.bbox.width, fig.bbox.height
    fig.text(left / width, (bottom - 6) / height, "settings of the runs named short:\n" + note,
             ha="left", va="top", fontsize=7, color="0.3")


def _save(fig, data: pd.DataFrame, out: Path, name: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.csv"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    data.to_csv(paths[2], index=False)
    return paths


def _column(metric: str, part: str) -> str:
    return metric if metric in ("complexity", "fit_time") else f"{metric}_{part}"


def pick(values, preferred):
    """`preferred` when `values` hold it, else their middle value: the cell a figure shows."""
    values = sorted(set(values))
    return preferred if preferred in values else values[len(values) // 2]


def best_first(medians: pd.DataFrame, column: str = "r2_interp") -> list[str]:
    """Methods by their mean median R^2 over the cells given, each clipped at the plotted floor
    (-3; a failed cell counts as -3), best first, ties by name."""
    clipped = medians[column].astype(float).fillna(-np.inf).clip(lower=R2_LIMITS[0])
    score = clipped.groupby(medians["method"]).mean()
    return sorted(score.index, key=lambda method: (-score[method], method))


def metric_panel(ax, data: pd.DataFrame, column: str, colours: dict, order: list[str], *, legend: bool = False,
                 limits: tuple[float, float] | None = None, log: bool = False, decades: float | None = None) -> bool:
    """One method's median per line against the noise level, on `limits` (R^2: `_r2_limits`; on a
    log axis with `decades`, that many decades below the largest median of the better half of the
    methods: the worse half's 1e14 pressed all others onto the floor). A median beyond the axis is
    drawn on its edge as an open triangle pointing out of it: a failed median (+-inf) stays
    visible. Returns whether any was."""
    values = data[column].astype(float)
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    log = log and not positive.empty
    if column.startswith("r2") and not log:
        limits = _r2_limits(data, column, order)
    elif limits is None and log and decades:  # errors: up to the better half's largest, as R^2 down to its lowest
        better = _better_half(data, order)[column].astype(float)
        drawable = better[np.isfinite(better) & (better > 0)]
        top = drawable.max() if not drawable.empty else positive.max()
        limits = (max(positive.min(), top / 10**decades), top)
    elif limits is None and log:
        limits = (positive.min(), positive.max())
    elif limits is None:
        limits = (finite.min(), finite.max()) if not finite.empty else (0.0, 1.0)
    low, high = limits
    below, above = (values < low).to_numpy(), (values > high).to_numpy()
    shown = data.assign(**{column: values.clip(low, high)})
    sns.lineplot(shown, x="noise", y=column, hue="method", hue_order=order, palette=colours, marker="o", ax=ax,
                 legend=legend)
    for outside, marker in ((below, "v"), (above, "^")):
        for method, points in shown[outside].groupby("method"):
            ax.scatter(points["noise"], points[column], marker=marker, s=70, facecolors="none",
                       edgecolors=[colours[method]], linewidths=1.5, zorder=5)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(low / 2, high * 2)
    elif column.startswith("r2"):  # room for the markers
        ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
    ticks = sorted(data["noise"].unique())
    ax.set_xticks(ticks, _spaced_labels(ticks))
    ax.set_xlabel("noise level $\\sigma$")
    return bool(below.any() or above.any())


def _better_half(data: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """The rows of the better half of the methods (`order`: best first), which set a panel's axis."""
    return data[data["method"].isin(order[:max(1, (len(order) + 1) // 2)])]


def _spaced_labels(ticks: list[float], gap: float = 0.06) -> list[str]:
    """Tick labels, each left blank where it would stand within `gap` of the axis's span of the
    last one written: the paper's grid (0, 0.001, 0.005, 0.01, ...) wrote 0 and 0.001 on each other."""
    span, last, labels = (ticks[-1] - ticks[0]) or 1.0, -np.inf, []
    for tick in ticks:
        labels.append(f"{tick:g}" if tick - last >= gap * span else "")
        last = tick if labels[-1] else last
    return labels


def _r2_limits(data: pd.DataFrame, column: str, order: list[str]) -> tuple[float, float]:
    """From the lowest median of the better half of the methods (`order`: best first; at most 0.9,
    at least -3) to 1: medians of 0.97 and 0.999 stay apart, where [-3, 1] drew the leaders as
    one line as soon as one method fell below -3. A lower median lies on the axis's edge as an
    open triangle (`metric_panel`)."""
    better = _better_half(data, order)[column].astype(float)
    finite = better[np.isfinite(better)]
    low = min(float(finite.min()) if not finite.empty else R2_LIMITS[0], 0.9)
    return max(low, R2_LIMITS[0]), R2_LIMITS[1]


def main_figure(medians: pd.DataFrame, out: Path, colours: dict, dataset: str = protocol.MAIN_FIGURE["dataset"],
                n: int = protocol.MAIN_FIGURE["n"]) -> list[Path]:
    """Median R^2, complexity and fit time per method against noise, on one dataset and n
    (paper: Classic, n = 192; otherwise what the results have). Legend ordered by best R^2."""
    dataset = pick(medians["dataset"], dataset)
    n = pick(medians.loc[medians.dataset == dataset, "n"], n)
    data = medians[(medians.dataset == dataset) & (medians.n == n)]
    data = data[["dataset", "n", "method", "noise", "r2_interp", "complexity", "fit_time"]].reset_index(drop=True)
    names = shown_names(medians["method"])
    shown, colours, order = _as_shown(data, colours, best_first(data), names)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    edges = False
    for ax, col in zip(axes, ("r2_interp", "complexity", "fit_time")):
        edges |= metric_panel(ax, shown, col, colours, order, legend=ax is axes[0], log=col == "fit_time")
        ax.set_ylabel(METRIC_LABELS["r2" if col == "r2_interp" else col])
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].get_legend().remove()
    fig.legend(handles, labels, title="method (best $R^2$ first)", fontsize=9, loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False)
    _titled(fig, f"{dataset}, n = {n} ($R^2$ on the {PART_LABELS['interp']})", edges)
    _note_below(fig, settings_note({m: names[m] for m in data["method"].unique()}))
    return _save(fig, data, out, "main")


def _titled(fig, title: str, edges: bool) -> None:
    """The figure's title, with the note on medians drawn at the edge when there are any, above
    the panels: room for each line of it is kept free (two lines overlapped the panels' tops)."""
    lines = 2 if edges else 1
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.2 + 0.3 * lines) / fig.get_figheight()))
    fig.suptitle(f"{title}\n{EDGE_NOTE}" if edges else title)


def r2_by_dataset(medians: pd.DataFrame, out: Path, part: str = "interp",
                 n: int = protocol.DATASET_FIGURE_N) -> list[Path]:
    """Median R^2 of every method (rows, best first) on every dataset and noise level (columns)
    at one n, as an annotated heatmap: with a dozen or more methods the paper's grouped bars can
    no longer be told apart. Colours span the paper's range [-3, 1]; cells below it read '<-3',
    failed medians 'failed'."""
    n = pick(medians["n"], n)
    col = f"r2_{part}"
    data = medians[medians.n == n][["dataset", "n", "method", "noise", col]].reset_index(drop=True)
    grid = data.pivot_table(index="method", columns=["dataset", "noise"], values=col, aggfunc="first")
    if grid.empty:  # nothing scored in this part (observed data have no extrapolation window)
        return []
    grid = grid.loc[best_first(data, col)]
    names = shown_names(medians["method"])
    grid.index = [names[m] for m in grid.index]
    values = grid.to_numpy(dtype=float)
    labels = np.vectorize(_r2_label)(values)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * grid.shape[1] + 0.09 * max(len(m) for m in grid.index),
                                    1.2 + 0.32 * grid.shape[0]))
    sns.heatmap(np.clip(values, *R2_LIMITS), annot=labels, fmt="", cmap="viridis", vmin=R2_LIMITS[0],
                vmax=R2_LIMITS[1], ax=ax, annot_kws={"fontsize": 7}, cbar_kws={"label": "median $R^2$"},
                xticklabels=[f"{d}\n$\\sigma$ = {v:g}" for d, v in grid.columns], yticklabels=grid.index)
    for position in range(1, grid.shape[1]):
        if grid.columns[position][0] != grid.columns[position - 1][0]:
            ax.axvline(position, color="white", linewidth=3)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(axis="x", labelsize=8, rotation=0)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(f"median $R^2$, {PART_LABELS[part]}, n = {n} (failed tasks count as $-\\infty$)")
    _note_below(fig, settings_note({m: names[m] for m in data["method"].unique()}))
    return _save(fig, data, out, f"r2_{part}")


def _r2_label(value: float) -> str:
    """A heatmap cell's text: three significant digits (0.997 and 0.999 differ), four where three
    would write 0.9997 as 1 (the oracle's exact 1 beside it), '<-3' below the plotted range,
    'failed' where the median is a failure, empty where not run."""
    if np.isnan(value):
        return ""
    if value == -np.inf:  # most of the cell's tasks failed: not a poor law, no law
        return "failed"
    if value < R2_LIMITS[0]:
        return f"<{R2_LIMITS[0]:g}"
    text = f"{value:.3g}"
    return f"{min(value, 0.9999):.4f}" if text == "1" and value < 1 else text


def appendix_grid(medians: pd.DataFrame, out: Path, colours: dict, part: str = "interp") -> list[Path]:
    """Every dataset x n (rows) x metric (columns): the median against noise per method."""
    drawn = appendix_figure(medians, colours, part)
    return _save(*drawn, out, f"appendix_{part}") if drawn else []


def appendix_figure(medians: pd.DataFrame, colours: dict, part: str = "interp") -> tuple | None:
    """`appendix_grid`'s figure and the numbers it shows; None when nothing was scored."""
    combos = medians[["dataset", "n"]].drop_duplicates().sort_values(["dataset", "n"]).values.tolist()
    columns = [_column(m, part) for m in APPENDIX_METRICS]
    data = medians[["dataset", "n", "method", "noise", *columns]].reset_index(drop=True)
    scored = [_column(m, part) for m in APPENDIX_METRICS if _column(m, part) != m]  # not complexity and time
    if data[scored].replace([-np.inf, np.inf], np.nan).isna().all().all():  # nothing scored (observed data, extrapolation)
        return None
    names = shown_names(medians["method"])
    shown, colours, order = _as_shown(data, colours, best_first(data, f"r2_{part}"), names)
    edges = False
    fig, axes = plt.subplots(len(combos), len(columns), figsize=(2.9 * len(columns), 2.5 * len(combos)), squeeze=False)
    for row, (dataset, n) in enumerate(combos):
        subset = shown[(shown.dataset == dataset) & (shown.n == n)]
        for ax, metric, col in zip(axes[row], APPENDIX_METRICS, columns):
            error = metric in ("l1", "linf")
            edges |= metric_panel(ax, subset, col, colours, order, legend=(row == 0 and metric == "r2"),
                                  limits=(0.0, 1.0) if metric == "isclose" else None,
                                  log=error or metric == "fit_time", decades=ERROR_DECADES if error else None)
            if ax.get_legend():  # moved beside the grid: inside a panel it covers the data and squeezes the rows
                handles, labels = ax.get_legend_handles_labels()
                ax.get_legend().remove()
            if metric == "isclose":
                ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{dataset}, n = {n}", fontsize=9)
            ax.set_xlabel("$\\sigma$", fontsize=9)
            ax.set_ylabel(METRIC_LABELS[metric], fontsize=9)
            ax.tick_params(labelsize=8)
    fig.legend(handles, labels, title="method (best $R^2$ first)", fontsize=9, loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False)
    _titled(fig, f"All metrics, {PART_LABELS[part]}", edges)
    _note_below(fig, settings_note({m: names[m] for m in data["method"].unique()}))
    return fig, data


def solved_figure(rows: pd.DataFrame, out: Path, colours: dict) -> list[Path]:
    """The leaderboard drawn (`report.leaderboard`, every task pooled): per method, best first, the
    share of tasks solved (R^2 > 0.9) in interpolation and in extrapolation with its 95% interval
    (`report.share_interval`), and the median fit time, so that a gap can be read against its
    uncertainty and its cost."""
    board = report.leaderboard(rows)
    names = shown_names(rows["method"])
    position = np.arange(len(board))
    fig, axes = plt.subplots(1, 3, figsize=(12, 1.3 + 0.3 * len(board)), sharey=True,
                             gridspec_kw={"width_ratios": [1, 1, 0.8]})
    for ax, part in zip(axes, ("interp", "extrap")):
        share = f"{part}_r2_above_{report.GOOD_R2:g}"
        values = 100 * board[[share, f"{share}_low", f"{share}_high"]].astype(float).to_numpy()
        for y, (mid, low, high), method in zip(position, values, board["method"]):
            if np.isfinite(mid):
                bar = [[mid - low], [high - mid]] if np.isfinite(low) else None
                ax.errorbar(mid, y, xerr=bar, fmt="o", color=colours[method], capsize=3, markersize=5)
        if not np.isfinite(values[:, 0]).any():
            ax.text(0.5, 0.5, "not scored (no truth there)", ha="center", va="center", transform=ax.transAxes)
        ax.set(xlim=(-3, 103), title=f"{PART_LABELS[part]}:\ntasks with $R^2$ > {report.GOOD_R2:g} (%)")
        ax.grid(axis="x", alpha=0.3)
    seconds = board["median_fit_s"].astype(float)
    axes[2].scatter(seconds.clip(lower=1e-6), position, c=[colours[m] for m in board["method"]], s=25)
    axes[2].set(xscale="log", title="median fit time (s)")
    axes[2].grid(axis="x", alpha=0.3)
    axes[0].set_yticks(position, [names[m] for m in board["method"]], fontsize=9)
    axes[0].invert_yaxis()
    for ax in axes:
        ax.title.set_fontsize(10)
    fig.suptitle(f"Leaderboard, every task pooled, best first by extrapolation ({int(board['tasks'].max())} tasks "
                 "a method; bars: 95% intervals from resampling the equations)", fontsize=10)
    fig.tight_layout()
    _note_below(fig, settings_note({m: names[m] for m in board["method"]}))
    return _save(fig, board, out, "solved")


def paired_figure(wide: pd.DataFrame, first: str, second: str, path: Path) -> list[Path]:
    """Two methods task by task (`bench compare --plot`): one point per task, first's 1 - R^2
    against second's on log axes (R^2 near 1 is where methods differ; linear R^2 draws them as one
    dot), coloured by dataset, interpolation and extrapolation side by side. Lines at R^2 = 0.9
    cut the panel into the tasks both, one or neither solve, counted as the table counts them
    (`compare.counts`). Points beyond the axes (a failure, 1 - R^2 above 4 or below the floor)
    lie on its edges. Also writes the points as `path` with .csv."""
    from bench.compare import counts

    gaps = {f"{part}_{k}": 1 - wide[f"r2_{part}_{k}"].astype(float) for part in ("interp", "extrap") for k in (1, 2)}
    positive = [g[(g > 0) & np.isfinite(g)].min() for g in gaps.values() if ((g > 0) & np.isfinite(g)).any()]
    floor = 10.0 ** np.floor(np.log10(min(positive))) if positive else 1e-6
    low, high = max(min(floor, (1 - report.GOOD_R2) / 10), 1e-12), 1 - R2_LIMITS[0]  # the 0.9 lines always shown
    names = shown_names([first, second])  # settings noted below: full labels ran over both panels
    first_text, second_text = names[first], names[second]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2))
    numbers, datasets, keyed = counts(wide), sorted(wide["dataset"].unique()), None
    for ax, part in zip(axes, ("interp", "extrap")):
        x, y = gaps[f"{part}_1"], gaps[f"{part}_2"]
        scored = x.notna() & y.notna()
        if not scored.any():
            ax.text(0.5, 0.5, "not scored (no truth there)", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            continue
        shown = pd.DataFrame({"x": x[scored].clip(low, high), "y": y[scored].clip(low, high),
                              "dataset": wide.loc[scored, "dataset"]})
        sns.scatterplot(shown, x="x", y="y", hue="dataset", hue_order=datasets, ax=ax, s=22, alpha=0.7,
                        legend=keyed is None)
        keyed = keyed or ax
        solved = 1 - report.GOOD_R2
        ax.plot([low, high], [low, high], color="0.6", linewidth=0.8, zorder=0)
        ax.axvline(solved, color="0.3", linestyle="--", linewidth=0.8)
        ax.axhline(solved, color="0.3", linestyle="--", linewidth=0.8)
        ax.set(xscale="log", yscale="log", xlim=(low / 2, high * 2), ylim=(low / 2, high * 2),
               xlabel=f"{first_text}: 1 - $R^2$", ylabel=f"{second_text}: 1 - $R^2$")
        ax.set_title(f"{PART_LABELS[part]}: {numbers[f'{part} scored']} tasks, "
                     f"sign test on the laws p {numbers[f'{part} p']:.2g}\n"
                     f"only {first_text} (upper left) {numbers[f'{part} only 1']}, only {second_text} (lower right) "
                     f"{numbers[f'{part} only 2']},\nboth {numbers[f'{part} both']}, neither {numbers[f'{part} neither']}",
                     fontsize=9)
    if keyed is not None and keyed.get_legend():  # the first scored panel's, below both: inside, it hid a corner's points
        handles, labels = keyed.get_legend_handles_labels()
        keyed.get_legend().remove()
        fig.legend(handles, labels, title="dataset", loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=min(len(labels), 6), fontsize=8, title_fontsize=8, frameon=False)
    fig.suptitle(f"{first_text} against {second_text}, task by task (solved: $R^2$ > {report.GOOD_R2:g}, dashed; lower is "
                 "better; points beyond the axes lie on their edges)", fontsize=10)
    fig.tight_layout()
    _note_below(fig, settings_note(names))
    path = Path(path)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    names = {"record_1": "record"} if "record_1" in wide else {}  # which of a file's records (one a task)
    names |= {f"r2_{part}_{k}": f"r2_{part} {method}" for part in ("interp", "extrap") for k, method in ((1, first), (2, second))}
    task = [column for column in report.TASK if column in wide]
    wide[[*task, *names]].rename(columns=names).to_csv(path.with_suffix(".csv"), index=False)
    return [path, path.with_suffix(".csv")]


def operator_counts(expressions) -> Counter:
    """How often each operator occurs in the parsed expressions (sympy's node names in lower case,
    as `nsode.data stats` names its tokens: add, mul, pow, sin, ...)."""
    import sympy

    from odecore.expressions import ExpressionError, parse

    counts = Counter()
    for text in expressions:
        try:
            expr = parse(text)
        except ExpressionError:
            continue
        for node in sympy.preorder_traversal(expr):
            if node.args:
                counts[type(node).__name__.lower()] += 1
    return counts


def dataset_statistics(names, out: Path, data_folder: str | Path | None = None) -> list[Path]:
    """Complexity histogram and operator frequencies per dataset (one entry per equation), and of
    the training data when `data_folder` is given and nsode.data can describe it."""
    from bench import datasets

    records = []
    for name in names:
        seen = {}
        try:
            trajectories = datasets.load(name)
        except datasets.DatasetError:
            if not datasets.is_csv(datasets.resolve(name)):
                raise  # a JSON dataset that cannot be read is the user's to know
            continue  # a CSV dataset read another way (`--columns`, `--by`): its laws cannot be told here
        for tr in trajectories:
            if tr.expression:
                seen.setdefault(tr.equation_id, (tr.expression, tr.complexity))
        records += [{"dataset": name, "expression": e, "complexity": c} for e, c in seen.values()]
    training = _training_expressions(data_folder) if data_folder else None
    if training is not None:
        records += [{"dataset": "training", "expression": e, "complexity": c} for e, c in training]
    frame = pd.DataFrame(records, columns=["dataset", "expression", "complexity"])
    if frame.empty:
        print("skipping dataset statistics: no true f(y) in " + ", ".join(map(str, names)))
        return []
    ops = [{"dataset": name, "operator": op, "count": count}
           for name, part in frame.groupby("dataset") for op, count in operator_counts(part.expression).items()]
    ops = pd.DataFrame(ops, columns=["dataset", "operator", "count"])
    ops["frequency"] = ops["count"] / ops.groupby("dataset")["count"].transform("sum")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    sns.histplot(frame, x="complexity", hue="dataset", stat="density", common_norm=False, element="step",
                 fill=False, linewidth=1.5, discrete=True, ax=axes[0])  # outlines: overlaps do not mix colours
    axes[0].set(title="complexity of the true f(y)", xlabel="complexity (nodes)", ylabel="share of equations")
    sns.barplot(ops, x="frequency", y="operator", hue="dataset", orient="h", ax=axes[1])
    axes[1].set(title="operator frequencies", xlabel="share of operator nodes", ylabel="operator")
    paths = _save(fig, frame, out, "dataset_stats")
    ops.to_csv(out / "dataset_operators.csv", index=False)
    return paths + [out / "dataset_operators.csv"]


def _training_expressions(folder) -> list[tuple[str, int]] | None:
    """(expression, complexity) of each distinct ODE of a training-data folder, read from its
    parquet shards (`DIR/shards/shard-*.parquet`, columns ode_id, expression, complexity) as
    plain data: the harness does not import the generator. None with a message when there are none."""
    files = sorted((Path(folder) / "shards").glob("shard-*.parquet"))
    if not files:
        print(f"skipping training-data statistics: no shards in {folder}/shards")
        return None
    frame = pd.concat([pd.read_parquet(f, columns=["ode_id", "expression", "complexity"]) for f in files])
    frame = frame.drop_duplicates("ode_id")
    return list(zip(frame["expression"], frame["complexity"].astype(int)))


def draw_all(rows: pd.DataFrame, out: str | Path, dataset: str = protocol.MAIN_FIGURE["dataset"],
             n_main: int = protocol.MAIN_FIGURE["n"],
             n_datasets: int = protocol.DATASET_FIGURE_N, data_folder: str | Path | None = None, statistics: bool = True) -> list[Path]:
    """Every figure of the paper from stored result rows; returns the written files."""
    out = Path(out)
    medians = report.medians(rows)
    colours = palette(best_first(medians))  # the leaders get the strongest colours
    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # log axes of all-equal values, empty legends
        paths += main_figure(medians, out, colours, dataset, n_main)
        paths += solved_figure(rows, out, colours)
        for part in ("interp", "extrap"):
            paths += r2_by_dataset(medians, out, part, n_datasets)
            paths += appendix_grid(medians, out, colours, part)
        if statistics and (found := _datasets_found(rows["dataset"].unique())):
            paths += dataset_statistics(found, out, data_folder)
    return paths


def _datasets_found(names) -> list[str]:
    """The stored dataset names that can be read from here, saying which cannot (a dataset file
    given by its path is stored under the name inside it)."""
    from bench import datasets

    found = []
    for name in sorted(names):
        try:
            datasets.resolve(name)
            found.append(name)
        except datasets.DatasetError:
            pass
    if len(found) < len(names):
        print("dataset statistics leave out " + ", ".join(sorted(set(names) - set(found)))
              + ": not a built-in dataset or a path from here")
    return found

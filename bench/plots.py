"""The paper's figures from a table of stored results, drawn with seaborn.

Every figure is saved as PNG and PDF, together with a CSV of exactly the numbers it shows
(`<name>.csv`), so a figure can be checked against the report tables. Medians follow the report's
failure policy (failed tasks count as R^2 = -inf). Each method keeps one colour in every figure:
colours are assigned from the sorted names of all methods in the results.
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
from core import protocol  # noqa: E402

R2_LIMITS = (-3.0, 1.0)  # the paper's x-axis range for R^2; methods below it are marked
METRIC_LABELS = {"r2": "median $R^2$", "l1": "median $L_1$", "linf": "median $L_\\infty$",
                 "isclose": "median isclose", "complexity": "median complexity", "fit_time": "median fit time (s)"}
APPENDIX_METRICS = ("r2", "l1", "linf", "isclose", "complexity", "fit_time")
PART_LABELS = {"interp": "interpolation $[0, T]$", "extrap": "extrapolation $[T, T_{extra}]$"}


def palette(methods) -> dict[str, tuple]:
    """One colour per method, the same in every figure drawn from the same results."""
    names = sorted(set(methods))
    colours = sns.color_palette("tab10" if len(names) <= 10 else "husl", len(names))
    return dict(zip(names, colours))


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


def _pick(values, preferred):
    values = sorted(set(values))
    return preferred if preferred in values else values[len(values) // 2]


def main_figure(medians: pd.DataFrame, out: Path, colours: dict, dataset: str = protocol.MAIN_FIGURE["dataset"],
                n: int = protocol.MAIN_FIGURE["n"]) -> list[Path]:
    """Median R^2, complexity and fit time per method against noise, on one dataset and n
    (paper: Classic, n = 192; otherwise what the results have). Legend ordered by best R^2."""
    dataset = _pick(medians["dataset"], dataset)
    n = _pick(medians.loc[medians.dataset == dataset, "n"], n)
    data = medians[(medians.dataset == dataset) & (medians.n == n)]
    data = data[["dataset", "n", "method", "noise", "r2_interp", "complexity", "fit_time"]].reset_index(drop=True)
    order = data.groupby("method")["r2_interp"].max().sort_values(ascending=False).index.tolist()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, col in zip(axes, ("r2_interp", "complexity", "fit_time")):
        shown = data.replace([-np.inf], np.nan)
        sns.lineplot(shown, x="noise", y=col, hue="method", hue_order=order, palette=colours,
                     marker="o", ax=ax, legend=ax is axes[0])
        ax.set_xlabel("noise level $\\sigma$")
        ax.set_ylabel(METRIC_LABELS["r2" if col == "r2_interp" else col])
        if col == "r2_interp":
            ax.set_ylim(R2_LIMITS)
        if col == "fit_time":
            ax.set_yscale("log")
    axes[0].legend(title="method (best $R^2$ first)", fontsize=8, loc="lower left")
    fig.suptitle(f"{dataset}, n = {n}, interpolation")
    return _save(fig, data, out, "main")


def r2_by_dataset(medians: pd.DataFrame, out: Path, colours: dict, part: str = "interp",
                 n: int = protocol.DATASET_FIGURE_N) -> list[Path]:
    """Median R^2 per method and noise for each dataset at one n, on [-3, 1]; bars below -3 are
    drawn at the edge and marked with '<'."""
    n = _pick(medians["n"], n)
    col = f"r2_{part}"
    data = medians[medians.n == n][["dataset", "n", "method", "noise", col]].reset_index(drop=True)
    names = sorted(data.dataset.unique())
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), max(3.5, 1.0 + 0.3 * data.groupby("dataset").size().max())),
                             squeeze=False)
    for ax, name in zip(axes[0], names):
        part_data = data[data.dataset == name].copy()
        order = part_data.groupby("method")[col].max().sort_values(ascending=False).index.tolist()
        part_data["clipped"] = part_data[col].fillna(-np.inf).clip(lower=R2_LIMITS[0])
        part_data["noise_label"] = part_data["noise"].map(lambda v: f"{v:g}")
        noise_order = [f"{v:g}" for v in sorted(part_data.noise.unique())]
        sns.barplot(part_data, x="clipped", y="noise_label", hue="method", hue_order=order, order=noise_order,
                    palette=colours, orient="h", ax=ax, errorbar=None)
        for container, method in zip(ax.containers, order):
            for bar, noise in zip(container, noise_order):
                value = part_data.loc[(part_data.method == method) & (part_data.noise_label == noise), col]
                if len(value) and not value.iloc[0] >= R2_LIMITS[0]:
                    ax.text(R2_LIMITS[0], bar.get_y() + bar.get_height() / 2, "<", va="center", ha="left", fontsize=7)
        ax.set_xlim(R2_LIMITS)
        ax.set_xlabel(f"median $R^2$ ({PART_LABELS[part]}); '<': below {R2_LIMITS[0]:g}")
        ax.set_ylabel("noise level $\\sigma$")
        ax.set_title(f"{name}, n = {n}")
        ax.legend(fontsize=7, loc="lower left")
    return _save(fig, data, out, f"r2_{part}")


def appendix_grid(medians: pd.DataFrame, out: Path, colours: dict, part: str = "interp") -> list[Path]:
    """Every dataset x n (rows) x metric (columns): the median against noise per method."""
    combos = medians[["dataset", "n"]].drop_duplicates().sort_values(["dataset", "n"]).values.tolist()
    columns = [_column(m, part) for m in APPENDIX_METRICS]
    data = medians[["dataset", "n", "method", "noise", *columns]].reset_index(drop=True)
    fig, axes = plt.subplots(len(combos), len(columns), figsize=(3.3 * len(columns), 2.6 * len(combos)), squeeze=False)
    shown = data.replace([-np.inf], np.nan)
    for row, (dataset, n) in enumerate(combos):
        subset = shown[(shown.dataset == dataset) & (shown.n == n)]
        for ax, metric, col in zip(axes[row], APPENDIX_METRICS, columns):
            sns.lineplot(subset, x="noise", y=col, hue="method", palette=colours, marker="o", ax=ax,
                         legend=(row == 0 and metric == "r2"))
            ax.set_title(f"{dataset}, n = {n}", fontsize=9)
            ax.set_xlabel("$\\sigma$")
            ax.set_ylabel(METRIC_LABELS[metric], fontsize=8)
            if metric == "r2":
                ax.set_ylim(R2_LIMITS)
            if metric in ("l1", "linf", "fit_time") and (subset[col] > 0).any():
                ax.set_yscale("log")
    fig.suptitle(f"All metrics, {PART_LABELS[part]}", y=1.0)
    fig.tight_layout()
    return _save(fig, data, out, f"appendix_{part}")


def operator_counts(expressions) -> Counter:
    """How often each operator occurs in the parsed expressions (sympy node names: Add, Mul, Pow, sin, ...)."""
    import sympy

    from core.expressions import ExpressionError, parse

    counts = Counter()
    for text in expressions:
        try:
            expr = parse(text)
        except ExpressionError:
            continue
        for node in sympy.preorder_traversal(expr):
            if node.args:
                counts[type(node).__name__] += 1
    return counts


def dataset_statistics(names, out: Path, data_folder: str | Path | None = None) -> list[Path]:
    """Complexity histogram and operator frequencies per dataset (one entry per equation), and of
    the training data when `data_folder` is given and nsode.data can describe it."""
    from bench import datasets

    records = []
    for name in names:
        seen = {}
        for tr in datasets.load(name):
            if tr.expression:
                seen.setdefault(tr.equation_id, (tr.expression, tr.complexity))
        records += [{"dataset": name, "expression": e, "complexity": c} for e, c in seen.values()]
    training = _training_expressions(data_folder) if data_folder else None
    if training is not None:
        records += [{"dataset": "training", "expression": e, "complexity": c} for e, c in training]
    frame = pd.DataFrame(records, columns=["dataset", "expression", "complexity"])
    ops = [{"dataset": name, "operator": op, "count": count}
           for name, part in frame.groupby("dataset") for op, count in operator_counts(part.expression).items()]
    ops = pd.DataFrame(ops, columns=["dataset", "operator", "count"])
    ops["frequency"] = ops["count"] / ops.groupby("dataset")["count"].transform("sum")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    sns.histplot(frame, x="complexity", hue="dataset", stat="density", common_norm=False, element="step",
                 discrete=True, ax=axes[0])
    axes[0].set_title("complexity of the true f(y)")
    sns.barplot(ops, x="frequency", y="operator", hue="dataset", orient="h", ax=axes[1])
    axes[1].set_title("operator frequencies")
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
    colours = palette(medians["method"])
    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # log axes of all-equal values, empty legends
        paths += main_figure(medians, out, colours, dataset, n_main)
        for part in ("interp", "extrap"):
            paths += r2_by_dataset(medians, out, colours, part, n_datasets)
            paths += appendix_grid(medians, out, colours, part)
        if statistics:
            names = [d for d in sorted(rows["dataset"].unique()) if _is_dataset(d)]
            if names:
                paths += dataset_statistics(names, out, data_folder)
    return paths


def _is_dataset(name: str) -> bool:
    from bench import datasets

    try:
        datasets.resolve(name)
        return True
    except datasets.DatasetError:
        return False

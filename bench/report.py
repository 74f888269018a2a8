"""Tables of median scores from a result store.

Policy for failed rows (stated once, applied everywhere): a task whose prediction failed
(error, timeout, invalid expression, or an integration that diverged) counts with R^2 = -inf,
L1 = L-infinity = +inf and isclose = 0 in the medians; its complexity is left out unless it
wrote a law (a diverged prediction keeps the complexity of its law, and its form's skeleton
score; one without a law is not of the true form). So a method that fails on
most tasks has a median R^2 of -inf, as in the paper's figures, and never the smallest median
error from the few tasks it did not fail.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from bench.rows import EXTRAP_DIVERGED, METRIC_COLUMNS
from odecore import protocol
from odecore.expressions import parse, rounded

GROUP = ["dataset", "method", "noise", "n"]
TABLE_METRICS = ("r2_interp", "r2_extrap", "complexity", "fit_time")  # columns of the paper-style tables
LATEX_NAMES = {"method": "Method", "noise": "$\\sigma$", "n": "$n$", "r2_interp": "$R^2$ (interp.)",
               "r2_extrap": "$R^2$ (extrap.)", "complexity": "Complexity", "fit_time": "Time (s)"}
METRICS = list(METRIC_COLUMNS)


def with_failure_policy(rows: pd.DataFrame) -> pd.DataFrame:
    """Failed rows' R^2 = -inf, L1 = L-infinity = +inf and isclose = 0, per part: a prediction that
    diverged after T (score status "diverged-extrap") fails extrapolation only. A failed row without
    a law scores skeleton 0 where the true law is known (one that diverged keeps its law's). `failed`:
    failed in either part."""
    absent = [column for column in ("status", "score_status", "truth_kind") if column not in rows]
    if absent:  # an empty frame: ResultStore of a mistyped or empty folder
        raise ValueError(f"no result rows here (no column {absent[0]!r}): read them with ResultStore(FOLDER).read() "
                         "from a folder that `bench run` wrote")
    rows = rows.copy()
    for col in METRICS:
        rows[col] = pd.to_numeric(rows.get(col), errors="coerce")
    failed = (rows["status"] != "ok") | (rows["score_status"] != "ok")
    for part in ("interp", "extrap"):
        unknown = rows["truth_kind"] != "solution" if part == "extrap" else False
        lost = failed & ~(rows["score_status"] == EXTRAP_DIVERGED) if part == "interp" else failed
        rows.loc[lost & ~unknown, f"r2_{part}"] = protocol.R2_FLOOR
        rows.loc[lost & ~unknown, f"isclose_{part}"] = 0.0
        rows.loc[lost & ~unknown, [f"l1_{part}", f"linf_{part}"]] = np.inf
    if "skeleton" in rows:  # rows scored before the skeleton score existed stay unscored
        rows["skeleton"] = pd.to_numeric(rows["skeleton"], errors="coerce")
        truths = rows["truth_expression"] if "truth_expression" in rows else pd.Series("", index=rows.index)
        known = truths.map(lambda law: isinstance(law, str) and law != "")
        rows.loc[failed & known & rows["skeleton"].isna(), "skeleton"] = 0.0
    rows["failed"] = failed
    return rows


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x method x noise x n: task count, failures and the median of each metric."""
    rows = with_failure_policy(rows)
    grouped = rows.groupby(GROUP, dropna=False)
    table = grouped[METRICS].median()
    table.insert(0, "failed", grouped["failed"].sum().astype(int))
    table.insert(0, "tasks", grouped.size())
    return table.reset_index()


def failures(rows: pd.DataFrame) -> pd.DataFrame:
    """Counts of failed rows per method, status and reason."""
    rows = with_failure_policy(rows)
    bad = rows[rows["failed"]].copy()
    bad["status"] = np.where(bad["status"] != "ok", bad["status"], bad["score_status"])
    bad["reason"] = np.where(bad["reason"].fillna("") != "", bad["reason"], bad["score_reason"])
    return bad.groupby(["method", "status", "reason"], dropna=False).size().rename("count").reset_index()


def quartiles(rows: pd.DataFrame, metrics=TABLE_METRICS) -> pd.DataFrame:
    """Per dataset x method x noise x n: median, 25th and 75th percentile of each metric (failure policy applied)."""
    rows = with_failure_policy(rows)
    grouped = rows.groupby(GROUP, dropna=False)[list(metrics)]
    parts = {"median": grouped.median(), "q25": grouped.agg(lambda s: quantile(s, 0.25)),
             "q75": grouped.agg(lambda s: quantile(s, 0.75))}
    table = pd.concat({f"{m}_{stat}": parts[stat][m] for m in metrics for stat in parts}, axis=1)
    return table.reset_index()


def quantile(values, q: float) -> float:
    """The q-quantile of `values` (NaN left out), interpolated linearly as numpy's default does, but
    where a failure's -inf (or +inf) is one of the two neighbours it is the answer, as in the
    median: numpy's interpolation reads -inf + g * inf as nan. Before, the quartiles were taken
    as the neighbours outside ('lower' and 'higher'), which widened every bracket."""
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    if not len(x):
        return np.nan
    position = q * (len(x) - 1)
    low = int(np.floor(position))
    high, weight = min(low + 1, len(x) - 1), position - low
    if weight == 0 or x[low] == x[high]:
        return float(x[low])
    if np.isinf(x[low]) or np.isinf(x[high]):
        return float(x[low] if np.isinf(x[low]) else x[high])
    return float(x[low] + weight * (x[high] - x[low]))


def _cell(median: float, q25: float, q75: float) -> str:
    if pd.isna(median):
        return "-"
    return f"{median:.3g} [{q25:.3g}, {q75:.3g}]"


def iqr_table(rows: pd.DataFrame, metrics=TABLE_METRICS) -> pd.DataFrame:
    """`quartiles` as text cells "median [q25, q75]", one column per metric."""
    table = quartiles(rows, metrics)
    out = table[GROUP].copy()
    for m in metrics:
        out[m] = [_cell(*v) for v in zip(table[f"{m}_median"], table[f"{m}_q25"], table[f"{m}_q75"])]
    return out


def format_iqr_markdown(rows: pd.DataFrame, metrics=TABLE_METRICS) -> str:
    return "Median [25th, 75th percentile]; failed tasks count as R^2 = -inf.\n\n" + \
        markdown_table(iqr_table(rows, metrics))


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%", "&": r"\&",
                 "#": r"\#", "$": r"\$", "^": r"\^{}", "~": r"\~{}", "'": r"\textquotesingle{}"}


def _latex_text(value) -> str:
    """A table cell as LaTeX: method labels such as `gplearn:grid={'generations': [8]}` verbatim."""
    text = "".join(LATEX_SPECIAL.get(ch, ch) for ch in str(value))
    return text.replace("-inf", "$-\\infty$")


def format_latex(rows: pd.DataFrame, metrics=TABLE_METRICS) -> str:
    """A booktabs tabular of medians with interquartile ranges, one per dataset, ready to \\input."""
    table = iqr_table(rows, metrics)
    chunks = []
    for dataset, part in table.groupby("dataset", sort=True):
        body = part.drop(columns="dataset").rename(columns=LATEX_NAMES)
        body = body.map(_latex_text)
        latex = body.to_latex(index=False, escape=False, column_format="l" + "r" * (body.shape[1] - 1))
        chunks.append(f"% {dataset}: median [25th, 75th percentile]; failures count as R^2 = -inf\n{latex}")
    return "\n".join(chunks)


GOOD_R2 = 0.9  # the leaderboard's "solved" threshold: R^2 above it
LEADERBOARD_NOTE = ("Failures count as R^2 = -inf; in brackets each share's 95% interval, from resampling the "
                    "equations (`bench.report.share_interval`: the tasks of one equation rise and fall together).")
RESAMPLES = 2000  # bootstrap draws of the equations behind each share's interval
LEVEL = 0.95  # the interval's coverage


def leaderboard(rows: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per method (and per `by` column): tasks, failures, the share of tasks with R^2 > GOOD_R2 in
    interpolation and in extrapolation with a 95% interval (`share_interval`), the share whose law
    has the true law's form (`true_skeleton`, bench.scoring; over tasks with a known law; not scored
    where some of a group's rows were stored before the score existed: `bench score` adds it), the
    median R^2 of each and the median fit time, best first (extrapolation share, then
    interpolation share). Failures count as R^2 = -inf and as not of the true form; the
    extrapolation share and median count only tasks that have a true solution to extrapolate."""
    rows = with_failure_policy(rows)
    keys = [*by, "method"]
    grouped = rows.groupby(keys, dropna=False)
    table = pd.DataFrame({"tasks": grouped.size(), "failed": grouped["failed"].sum().astype(int)})
    for part in ("interp", "extrap"):
        column = rows[f"r2_{part}"]
        solved = (column > GOOD_R2).where(column.notna())
        share = f"{part}_r2_above_{GOOD_R2:g}"
        table[share] = solved.groupby([rows[k] for k in keys], dropna=False).mean()
        bounds = share_interval(rows.assign(solved=solved), keys)
        table[f"{share}_low"], table[f"{share}_high"] = bounds["low"], bounds["high"]
    found = rows["skeleton"] if "skeleton" in rows else pd.Series(np.nan, index=rows.index)
    by_keys = [rows[k] for k in keys]
    stale = found.isna() & (rows["truth_kind"] == "solution") & ~rows["failed"]  # scored before the score existed
    table["true_skeleton"] = found.groupby(by_keys, dropna=False).mean().where(~stale.groupby(by_keys, dropna=False).any())
    bounds = share_interval(rows.assign(solved=found), keys)
    table["true_skeleton_low"], table["true_skeleton_high"] = bounds["low"], bounds["high"]
    for part in ("interp", "extrap"):
        table[f"median_r2_{part}"] = grouped[f"r2_{part}"].median()
    table["median_fit_s"] = grouped["fit_time"].median()
    order = [*by, f"extrap_r2_above_{GOOD_R2:g}", f"interp_r2_above_{GOOD_R2:g}"]
    return table.reset_index().sort_values(order, ascending=[True] * len(by) + [False, False], ignore_index=True)


def share_interval(rows: pd.DataFrame, keys: list[str], seed: int = 0) -> pd.DataFrame:
    """A 95% interval (columns low, high; index `keys`) for each group's share of `solved` tasks
    (NaN: not scored), by the percentile bootstrap over equations: the tasks of one equation (its
    noise levels, sample sizes, starts, seeds; a file's records) rise and fall together, so the
    equations, not the tasks, are drawn with replacement; a group of one equation has no interval
    (NaN). One set of draws serves every group of a `keys` cell, so two methods' intervals come from
    the same equations; seeded, so a table is the same each time."""
    cluster = [k for k in ("dataset", "equation_id") if k not in keys]  # an equation within its cell
    cells = [k for k in keys if k != "method"]
    if not cluster:  # a cell per equation: nothing to resample
        return pd.DataFrame({"low": np.nan, "high": np.nan}, index=rows.groupby(keys, dropna=False).size().index)
    out = []
    for _, cell in (rows.groupby(cells, dropna=False) if cells else [((), rows)]):
        counts = cell.groupby([*keys, *cluster], dropna=False)["solved"].agg(["sum", "count"])
        solved = counts["sum"].unstack(cluster, fill_value=0)
        scored = counts["count"].unstack(cluster, fill_value=0)
        draws = np.random.default_rng(seed).integers(0, scored.shape[1], (RESAMPLES, scored.shape[1]))
        tally = np.stack([np.bincount(row, minlength=scored.shape[1]) for row in draws])  # times each equation is drawn
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = (solved.to_numpy(float) @ tally.T) / (scored.to_numpy(float) @ tally.T)
        tail, bounds = 100 * (1 - LEVEL) / 2, np.full((len(shares), 2), np.nan)
        some = (scored.to_numpy() > 0).sum(axis=1) >= 2  # one equation (a file's records) leaves nothing to resample
        if some.any():
            bounds[some] = np.nanpercentile(shares[some], [tail, 100 - tail], axis=1).T
        out.append(pd.DataFrame(bounds, columns=["low", "high"], index=scored.index))
    return pd.concat(out)


def format_leaderboard(table: pd.DataFrame, oracles=()) -> str:
    """The leaderboard as markdown, shares in percent with their 95% intervals (`share_interval`);
    the `oracles` (methods handed the true law: checks and ceilings, not competitors) marked so."""
    shown = table.copy()
    shown["method"] = [f"{m} (oracle)" if m in oracles else m for m in shown["method"]]
    for column in [c for c in shown.columns if c.endswith(f"_above_{GOOD_R2:g}") or c == "true_skeleton"]:
        shares = zip(*(pd.to_numeric(shown[column + end], errors="coerce") for end in ("", "_low", "_high")))
        shown[column] = [("not scored" if not np.isfinite(mid) else f"{100 * mid:.0f}%" if not np.isfinite(low)
                          else f"{100 * mid:.0f}% ({100 * low:.0f}-{100 * high:.0f})") for mid, low, high in shares]
        shown = shown.drop(columns=[column + "_low", column + "_high"])
    shown = shown.rename(columns=lambda c: c.replace("_r2_above_", " R^2 > ").replace("median_r2_", "median R^2 ")
                         .replace("median_fit_s", "median fit (s)").replace("true_skeleton", "true form"))
    return markdown_table(shown, floatfmt=".3g")


def failure_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Failed tasks per method (rows) and status (columns), with the total."""
    bad = failures(rows)
    if bad.empty:
        return pd.DataFrame(columns=["method", "total"])
    table = bad.pivot_table(index="method", columns="status", values="count", aggfunc="sum", fill_value=0)
    table["total"] = table.sum(axis=1)
    return table.reset_index()


NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


def format_failures_markdown(rows: pd.DataFrame) -> str:
    """The counts per method and status, then per kind of reason: the reasons with their numbers
    written # (LSODA stopped between t = # and #), so that one kind is one row; failures.csv keeps
    every reason in full."""
    counts, reasons = failure_counts(rows), failures(rows)
    if reasons.empty:
        return "No failed tasks.\n"
    kinds = (reasons.assign(reason=reasons["reason"].fillna("").map(lambda text: NUMBER.sub("#", text)))
             .groupby(["method", "status", "reason"], dropna=False)["count"].sum().reset_index())
    return ("Failed tasks per method and status:\n\n" + markdown_table(counts) +
            "\n\nPer kind of reason (numbers written #; failures.csv has each in full):\n\n" +
            markdown_table(kinds) + "\n")


def markdown_table(table: pd.DataFrame, **options) -> str:
    """`table` in markdown, its text cells kept to their cell: a '|' in a record's name or a failure's
    reason is escaped and a line break becomes a space, which would otherwise break the table."""
    text = table.copy()
    for column in [c for c in text.columns if not pd.api.types.is_numeric_dtype(text[c])]:
        text[column] = text[column].map(lambda cell: " ".join(cell.replace("|", "\\|").splitlines())
                                        if isinstance(cell, str) else cell)
    return text.to_markdown(index=False, **options)


def format_markdown(table: pd.DataFrame, columns=("tasks", "failed", "r2_interp", "r2_extrap",
                                                  "complexity", "fit_time")) -> str:
    shown = table[GROUP + list(columns)]
    return markdown_table(shown, floatfmt=".4g")


TASK = ["dataset", "equation_id", "record", "y0_index", "noise", "n", "seed"]
LAW_DIGITS = 4  # significant digits of each constant in the printed laws (laws.csv keeps them all)
SHOWN_LAWS = 40  # rows of the laws table printed after a sweep of user data
LAW_WIDTH = 80  # characters of a law in that table: a 15-term fit would widen every row past a screen


def laws(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task and method: the law it wrote (empty where it wrote none, with the status that
    says why) and its scores as stored (missing where it failed). A task's `record` column is kept
    where a CSV file held several records (`bench run --by`)."""
    task = [c for c in TASK if c in rows.columns and (c != "record" or rows[c].notna().any())]
    status = rows["status"].where(rows["status"] != "ok", rows["score_status"].fillna("ok"))
    law = rows["expression"].astype(object).fillna("") if "expression" in rows else ""  # all-missing reads as floats
    table = rows[task + ["method"]].assign(status=status, law=law)
    for col in ("r2_interp", "r2_extrap", "fit_time"):
        table[col] = pd.to_numeric(rows[col], errors="coerce")
    return table.sort_values(task + ["method"], kind="stable").reset_index(drop=True)


def _short(law: str) -> str:
    """A law with each constant written to LAW_DIGITS significant digits, for reading, cut at LAW_WIDTH."""
    try:
        law = rounded(parse(law), LAW_DIGITS)
    except ValueError:
        pass
    return law if len(law) <= LAW_WIDTH else law[:LAW_WIDTH - 4].rstrip() + " ..."


def format_laws(table: pd.DataFrame, limit: int = SHOWN_LAWS) -> str:
    """The laws table in markdown, constants to LAW_DIGITS digits and laws cut at LAW_WIDTH characters,
    at most `limit` rows."""
    shown = table.head(limit).drop(columns=["n", "seed", "fit_time"], errors="ignore")
    if "record" not in shown and (shown["y0_index"] == 0).all():
        shown = shown.drop(columns="y0_index")  # a file of one record: its place says nothing
    shown = shown.assign(law=shown["law"].map(lambda law: _short(law) if law else ""))
    shown = shown.dropna(axis=1, how="all")  # no extrapolation window in user data
    text = markdown_table(shown, floatfmt=".4g")
    if len(table) > limit:
        more = len(table) - limit
        text += f"\n\n... and {more} more row{'s' if more > 1 else ''}: laws.csv holds every one."
    return text


OBSERVATIONS_NOTE = ("Rows of user CSV trajectories are scored against the observations themselves, an "
                     "`expression` column or not (interpolation only; noise above 0 is added on top of them).")


def write(rows: pd.DataFrame, folder: Path, oracles=()) -> dict[str, Path]:
    """Write medians.csv, medians.md and failures.csv, plus medians_iqr.md, medians.tex,
    failures.md (medians with interquartile ranges, failure counts), laws.csv (each task's law
    and scores, one row per task and method) and the leaderboard (leaderboard.csv, pooled, and
    leaderboard_by_dataset.md, per dataset and noise level, `oracles` marked) into `folder`;
    returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    table = medians(rows)
    paths = {"csv": folder / "medians.csv", "markdown": folder / "medians.md", "failures": folder / "failures.csv"}
    table.to_csv(paths["csv"], index=False)
    notes = ""
    if (rows.get("truth_kind") == "observations").any():
        notes = "\n" + OBSERVATIONS_NOTE + "\n"
    paths["markdown"].write_text(format_markdown(table, columns=["tasks", "failed"] + METRICS) + "\n" + notes)
    failures(rows).to_csv(paths["failures"], index=False)
    paths.update(iqr_markdown=folder / "medians_iqr.md", latex=folder / "medians.tex",
                 failures_markdown=folder / "failures.md")
    paths["iqr_markdown"].write_text(format_iqr_markdown(rows) + "\n" + notes)
    paths["latex"].write_text(format_latex(rows))
    paths["failures_markdown"].write_text(format_failures_markdown(rows))
    paths["laws"] = folder / "laws.csv"
    laws(rows).to_csv(paths["laws"], index=False)
    paths.update(leaderboard=folder / "leaderboard.csv", leaderboard_by_dataset=folder / "leaderboard_by_dataset.md")
    leaderboard(rows).to_csv(paths["leaderboard"], index=False)
    by_dataset = format_leaderboard(leaderboard(rows, by=("dataset", "noise")), oracles)
    paths["leaderboard_by_dataset"].write_text(
        f"Shares of tasks with R^2 > {GOOD_R2:g} per dataset and noise level. {LEADERBOARD_NOTE}\n\n{by_dataset}\n")
    return paths

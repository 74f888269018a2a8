"""Two methods, task by task: is one really ahead, or is the gap a draw of the noise?

Shares of solved tasks differ by a task or two between methods on small cells; pairing the two
methods on the same tasks tells a real gap from chance. For each cell, the tasks both methods ran:
how many each solves (R^2 above `report.GOOD_R2`, failures unsolved), how many only one of them
solves (the tasks both or neither solve say nothing about which is better), and the exact
two-sided sign test on the laws: a law (a dataset's equation) counts once, for the method that
solves more of its discordant tasks. Its tasks at several noise levels, sample sizes and initial
values rise and fall together, so a test on the tasks, as if independent, read one law solved at
two noise levels as two pieces of evidence (10 vs 1 tasks, p 0.012, are 5 vs 0 laws, p 0.062).
"""
from __future__ import annotations

import pandas as pd
from scipy.stats import binomtest

from bench.report import GOOD_R2, markdown_table, with_failure_policy
from bench.rows import KEY

TASK = [k for k in KEY if k != "method"]
CELL_COLUMNS = (*TASK, "truth_expression", "truth_complexity", "truth_kind")  # what a task is, whoever ran it


def paired(rows: pd.DataFrame, first: str, second: str, by: tuple[str, ...] = ("dataset", "noise")) -> pd.DataFrame:
    """One row per cell of `by` and a last row "all": paired tasks, then per part (interp, extrap)
    the solved counts of each method, the tasks only one, both or neither solve, the laws on which
    each solves more of those only one solves, and the sign test's p-value on those laws; the
    median fit seconds of each. Extrapolation counts
    only tasks with a true solution."""
    wide = pair_tasks(rows, first, second, by)
    cells = [(dict(zip(by, key if isinstance(key, tuple) else (key,))), group)
             for key, group in wide.groupby(list(by), dropna=False)] if by else []
    cells.append(({column: "all" for column in by}, wide))
    return pd.DataFrame([{**labels, **counts(group)} for labels, group in cells])


def pair_tasks(rows: pd.DataFrame, first: str, second: str, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """The tasks both methods ran, one row each: the task's columns (and those of `by`), then each
    method's row columns suffixed _1 (`first`) and _2 (`second`), under the failure policy."""
    stored = set(rows["method"])
    for name in (first, second):
        if name not in stored:
            raise ValueError(f"no rows of method {name!r} (methods stored: {', '.join(sorted(stored))})")
    other = sorted(set(by) - set(CELL_COLUMNS))
    if other:
        raise ValueError(f"--by: {', '.join(other)} is not a column of the task; use some of {', '.join(CELL_COLUMNS)}")
    rows = with_failure_policy(rows)
    on = [*TASK, *(column for column in by if column not in TASK)]  # equal for both methods on one task
    wide = rows[rows["method"] == first].merge(rows[rows["method"] == second], on=on, suffixes=("_1", "_2"))
    if wide.empty:
        raise ValueError(f"{first} and {second} share no task")
    return wide


def counts(wide: pd.DataFrame) -> dict:
    """The numbers of one cell of paired tasks (`pair_tasks`): see `paired`."""
    out = {"tasks": len(wide)}
    for part in ("interp", "extrap"):
        scored = wide[wide[f"r2_{part}_1"].notna() & wide[f"r2_{part}_2"].notna()]
        one, two = scored[f"r2_{part}_1"] > GOOD_R2, scored[f"r2_{part}_2"] > GOOD_R2
        only_one, only_two = int((one & ~two).sum()), int((two & ~one).sum())
        ahead = ((one & ~two).astype(int) - (two & ~one).astype(int)).groupby(
            [scored["dataset"], scored["equation_id"]]).sum()  # per law: its tasks only 1 solves, less only 2's
        laws_one, laws_two = int((ahead > 0).sum()), int((ahead < 0).sum())
        out |= {f"{part} scored": len(scored), f"{part} solved 1": int(one.sum()), f"{part} solved 2": int(two.sum()),
                f"{part} only 1": only_one, f"{part} only 2": only_two, f"{part} both": int((one & two).sum()),
                f"{part} neither": int((~one & ~two).sum()), f"{part} laws 1": laws_one, f"{part} laws 2": laws_two,
                f"{part} p": binomtest(laws_one, laws_one + laws_two).pvalue if laws_one + laws_two else 1.0}
    out |= {"median fit 1 (s)": wide["fit_time_1"].median(), "median fit 2 (s)": wide["fit_time_2"].median()}
    return out


def format_markdown(table: pd.DataFrame, first: str, second: str) -> str:
    """Counts as `first / second (only first vs only second; laws ahead vs behind, p)` per part, for reading."""
    shown = table.drop(columns=[c for c in table.columns if c.startswith(("interp", "extrap", "median fit"))])
    records = table.to_dict("records")  # keeps the counts integers, unlike iterrows on an all-number table
    for part in ("interp", "extrap"):
        shown[f"{part}: solved"] = [
            f"{r[f'{part} solved 1']} / {r[f'{part} solved 2']} ({r[f'{part} only 1']} vs {r[f'{part} only 2']}; "
            f"laws {r[f'{part} laws 1']} vs {r[f'{part} laws 2']}, p {r[f'{part} p']:.2g})"
            if r[f"{part} scored"] else "not scored (no truth there)" for r in records]
    shown["median fit (s)"] = [f"{r['median fit 1 (s)']:.2g} / {r['median fit 2 (s)']:.2g}" for r in records]
    legend = (f"{first} / {second}: tasks with R^2 > {GOOD_R2:g} (failures unsolved); in brackets the tasks only "
              f"{first} solves vs only {second}; then the laws on which {first} solves more of those tasks vs fewer "
              "(a law counts once: its tasks rise and fall together), and the two-sided sign test's p on those laws")
    return legend + "\n\n" + markdown_table(shown)

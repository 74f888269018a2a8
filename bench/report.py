"""Tables of median scores from a result store.

Policy for failed rows (stated once, applied everywhere): a task whose prediction failed
(error, timeout, invalid expression, or an integration that diverged) counts with R^2 = -inf
and isclose = 0 in the medians; its L1, L-infinity and complexity are missing and left out.
So a method that fails on most tasks has a median R^2 of -inf, as in the paper's figures.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bench import protocol

GROUP = ["dataset", "method", "noise", "n"]
METRICS = ["r2_interp", "r2_extrap", "l1_interp", "l1_extrap", "linf_interp", "linf_extrap",
           "isclose_interp", "isclose_extrap", "complexity", "fit_time"]


def with_failure_policy(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.copy()
    for col in METRICS:
        rows[col] = pd.to_numeric(rows.get(col), errors="coerce")
    failed = (rows["status"] != "ok") | (rows["score_status"] != "ok")
    for part in ("interp", "extrap"):
        unknown = rows["truth_kind"] != "solution" if part == "extrap" else False
        rows.loc[failed & ~unknown, f"r2_{part}"] = protocol.R2_FLOOR
        rows.loc[failed & ~unknown, f"isclose_{part}"] = 0.0
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


def format_markdown(table: pd.DataFrame, columns=("tasks", "failed", "r2_interp", "r2_extrap",
                                                  "complexity", "fit_time")) -> str:
    shown = table[GROUP + list(columns)]
    return shown.to_markdown(index=False, floatfmt=".4g")


def write(rows: pd.DataFrame, folder: Path) -> dict[str, Path]:
    """Write medians.csv, medians.md and failures.csv into `folder`; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    table = medians(rows)
    paths = {"csv": folder / "medians.csv", "markdown": folder / "medians.md", "failures": folder / "failures.csv"}
    table.to_csv(paths["csv"], index=False)
    notes = ""
    if (rows.get("truth_kind") == "observations").any():
        notes = "\nRows of user trajectories without a model are scored against the observations themselves.\n"
    paths["markdown"].write_text(format_markdown(table, columns=["tasks", "failed"] + METRICS) + "\n" + notes)
    failures(rows).to_csv(paths["failures"], index=False)
    return paths

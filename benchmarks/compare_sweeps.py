"""Do two sweeps give the same rows? For checking that a refactor left results unchanged.

    python benchmarks/compare_sweeps.py BEFORE_FOLDER AFTER_FOLDER [--ignore metadata ...]

Rows are matched by task and method (bench.rows.KEY). Timings (also the `*_s` entries of a row's
metadata) and fields that exist in only one of the two folders (fields a change adds) are not
compared; numbers are compared exactly unless
--rtol is given. Prints, per method, how many rows match and the first differences; exits 1 when
any row differs or is missing on one side.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pandas as pd

from bench.rows import KEY
from bench.store import ResultStore
from odecore.arguments import existing_folder, nonnegative_number

TIMINGS = ("fit_time", "setup_time", "finished_at", "time_limit")


def without_timings(metadata):
    """A row's metadata (JSON) without its timings (keys ending in `_s`), for comparison."""
    try:
        values = json.loads(metadata)
    except (TypeError, ValueError):
        return metadata
    return json.dumps({k: v for k, v in values.items() if not k.endswith("_s")}, sort_keys=True) if isinstance(values, dict) else metadata


def differences(before: pd.DataFrame, after: pd.DataFrame, ignore, rtol: float) -> pd.DataFrame:
    """One row per (task, method, field) that differs; a missing row has field '(row)'."""
    key = list(KEY)
    both = before.merge(after, on=key, how="outer", suffixes=("_before", "_after"), indicator=True)
    out = [{**dict(zip(key, r[:len(key)])), "field": "(row)", "before": r[-1] != "right_only",
            "after": r[-1] != "left_only"} for r in both.loc[both["_merge"] != "both", key + ["_merge"]].itertuples(index=False)]
    both = both[both["_merge"] == "both"].copy()
    for side in ("before", "after"):
        if f"metadata_{side}" in both:
            both[f"metadata_{side}"] = both[f"metadata_{side}"].map(without_timings)
    fields = [c for c in before.columns if c in after.columns and c not in key and c not in TIMINGS and c not in ignore]
    for field in fields:
        a, b = both[f"{field}_before"], both[f"{field}_after"]
        if pd.api.types.is_float_dtype(a) and pd.api.types.is_float_dtype(b):
            same = np.isclose(a, b, rtol=rtol, atol=0.0, equal_nan=True) | (a == b)
        else:
            same = (a == b) | (a.isna() & b.isna())
        for _, r in both.loc[~same].iterrows():
            out.append({**{k: r[k] for k in key}, "field": field, "before": r[f"{field}_before"], "after": r[f"{field}_after"]})
    return pd.DataFrame(out, columns=[*key, "field", "before", "after"])


def summary(method: str, rows: pd.DataFrame, differing: pd.DataFrame) -> str:
    """One method's line: its rows before that are identical after, and those after only."""
    after_only = (differing["field"] == "(row)") & differing["before"].eq(False)  # a missing row's "before" is a bool
    changed = differing.loc[~after_only, list(KEY)].drop_duplicates()
    line = f"{method}: {len(rows) - len(changed)} of {len(rows)} rows identical"
    if after_only.any():
        line += f", {int(after_only.sum())} only after"
    return line + (f"; differing fields: {sorted(set(differing['field']))}" if len(differing) else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", type=existing_folder)
    p.add_argument("after", type=existing_folder)
    p.add_argument("--ignore", nargs="*", default=[], help="fields not to compare")
    p.add_argument("--rtol", type=nonnegative_number, default=0.0, help="relative tolerance for numbers (default: exact)")
    args = p.parse_args(argv)
    before, after = ResultStore(args.before).read(), ResultStore(args.after).read()
    empty = [str(folder) for folder, rows in ((args.before, before), (args.after, after)) if rows.empty]
    if empty:
        p.error(f"no stored rows in {', '.join(empty)} (a result folder of python -m bench run holds parts/)")
    diff = differences(before, after, set(args.ignore), args.rtol)
    only = sorted(set(after.columns) - set(before.columns)), sorted(set(before.columns) - set(after.columns))
    print(f"{len(before)} rows before, {len(after)} after; fields added: {only[0] or 'none'}, removed: {only[1] or 'none'}")
    for method in sorted(set(before["method"]) | set(after["method"])):
        print(summary(method, before[before["method"] == method], diff[diff["method"] == method]))
    if len(diff):
        print(diff.head(20).to_string(index=False))
    return 1 if len(diff) else 0


if __name__ == "__main__":
    sys.exit(main())

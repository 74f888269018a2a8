"""What a generated folder holds: counts, drop reasons, complexity histogram, operator frequencies.

`python -m nsode.data stats DIR` prints the tables and writes a plot; `expressions(folder)` feeds
the harness's dataset figures (bench/plots.py) with one (expression, complexity) per ODE.
Reads only the small columns of the shards, never the solutions.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterator

import pandas as pd

from nsode.data import generate
from odecore.files import figure_file
from nsode.data import shards as store
from nsode.data import tokens as tok

OPERATORS = (*tok.BINARY, *tok.UNARY)


def expressions(folder: Path) -> Iterator[tuple[str, int]]:
    """(infix expression, complexity) of each distinct ODE of a folder, in shard order."""
    seen = set()
    for path in store.shard_paths(folder):
        table = store.read_table(path, columns=["ode_id", "expression", "complexity"])
        for ode_id, expression, complexity in zip(*(table.column(c).to_pylist() for c in table.column_names)):
            if ode_id not in seen:
                seen.add(ode_id)
                yield expression, int(complexity)


def odes(folder: Path) -> pd.DataFrame:
    """One row per ODE: ode_id, skeleton, expression, complexity, tokens, solutions (its count)."""
    frames = [store.read_shard(p, ["ode_id", "skeleton", "expression", "complexity", "tokens"])
              for p in store.shard_paths(folder)]
    if not frames:
        return pd.DataFrame(columns=["ode_id", "skeleton", "expression", "complexity", "tokens", "solutions"])
    rows = pd.concat(frames, ignore_index=True)
    per_ode = rows.groupby("ode_id", sort=True).size().rename("solutions")
    return rows.drop_duplicates("ode_id").set_index("ode_id").join(per_ode).reset_index()


def token_frequencies(frame: pd.DataFrame) -> pd.DataFrame:
    """Operator and leaf counts over the ODEs' prefix tokens (a constant counts as one leaf)."""
    counts = Counter()
    for tokens in frame["tokens"]:
        for t in tokens:
            counts[t if t in OPERATORS or t == "y" else "constant"] += 1
    total = sum(counts.values()) or 1
    order = [*OPERATORS, "y", "constant"]
    return pd.DataFrame({"token": order, "count": [counts[k] for k in order],
                         "frequency": [counts[k] / total for k in order]})


def summary(folder: Path) -> dict:
    """Counts from the shard and skeleton-list metadata (cheap: no data is read)."""
    totals = generate.totals(folder)
    meta = store.read_schema(folder / store.SKELETON_FILE).metadata if (folder / store.SKELETON_FILE).exists() else {}
    search = json.loads(meta.get(b"search", b"{}")) if meta else {}
    return {**totals, "candidates": search.get("candidates", {})}


def report(folder: Path, plot: str | Path | None = None) -> Path:
    """Print the tables and write the plot (default DIR/stats.png); returns the plot's path."""
    folder = Path(folder)
    if not store.shard_paths(folder):
        from nsode.data.generate import GenerateError
        raise GenerateError(store.why_no_shards(folder))
    info = summary(folder)
    frame = odes(folder)
    counts = pd.DataFrame({"what": ["shards", "skeletons with solutions", "ODEs with solutions", "solutions",
                                    "solutions per ODE (mean)"],
                           "count": [info["shards"], info["skeletons"], info["odes"], info["solutions"],
                                     round(info["solutions"] / max(info["odes"], 1), 1)]})
    print("## Counts\n" + counts.to_markdown(index=False))
    drops = {**{f"candidate (searched blocks): {k}": v for k, v in info["candidates"].items()},
             **{f"solution: {k}": v for k, v in info["drops"].items()}}
    if drops:
        print("\n## Candidates and dropped solutions\n"
              + pd.DataFrame({"reason": list(drops), "count": list(drops.values())}).to_markdown(index=False))
    histogram = frame.groupby("complexity").size().rename("ODEs").reset_index()
    print("\n## Complexity (per ODE)\n" + histogram.to_markdown(index=False))
    tokens = token_frequencies(frame)
    print("\n## Operator and leaf frequencies (prefix tokens of all ODEs)\n"
          + tokens.to_markdown(index=False, floatfmt=".4f"))
    path = Path(plot) if plot else folder / "stats.png"
    path = path / "stats.png" if path.is_dir() else figure_file(path)
    _plot(frame, tokens, path)
    print(f"\nplot: {path}")
    return path


def _plot(frame: pd.DataFrame, tokens: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    sns.histplot(frame, x="complexity", discrete=True, ax=axes[0])
    axes[0].set_title(f"complexity of {len(frame)} ODEs")
    sns.barplot(tokens, x="frequency", y="token", orient="h", ax=axes[1], color="C0")
    axes[1].set_title("operator and leaf frequencies")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)

"""Learning curves of NSODE checkpoints against samples seen: the model card's table.

For each checkpoint (a training run's `snapshots/step-N` folders, plus any folder given), on the
same fixed sets every time:
- validation loss and token accuracy on the held-out skeletons of each data folder (one column
  per generator, e.g. the paper's and the science family), read as the checkpoint reads them
  (its own input scaling);
- skeleton recall: the true skeleton among the unique skeletons of a beam of 64, on held-out
  generated ODEs of each folder (one per validation skeleton);
- recovery: R^2 > 0.99 against the truth on [0, 4] of the searched NSODE (nsode/search/funnel.py) on the
  simple-ODE set of `nsode_quality.py --simple`, at sigma 0 and 0.01, and at sigma 0.01 with y in
  other units (x100 and x0.01: the failure mode scale invariance is for).

    python benchmarks/nsode_curves.py --runs ~/nsode-runs/runs/eps-scaled --extra nsode/checkpoints/nsode-eps \\
        --data ~/nsode-runs/data/cpu-s2031 ~/nsode-runs/data/science-s2041 --out curves.csv [--plot curves.png]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
from nsode_quality import heldout_examples, recall, recovery_r2, simple_cases  # noqa: E402

from odecore.arguments import existing_folder, whole_number  # noqa: E402
from nsode.model import load  # noqa: E402
from nsode.predict import Predictor  # noqa: E402
from nsode.search.settings import Settings  # noqa: E402
from nsode.train.stream import stream_examples  # noqa: E402
from nsode.train.loader import batches  # noqa: E402
from nsode.train.validation import mean_loss  # noqa: E402


def validation_loss(model, folder: str, limit: int, batch_size: int = 32) -> tuple[float, float]:
    """Mean two-hot loss and token accuracy on the first `limit` held-out solutions of a folder."""
    cfg = model.config
    examples = list(stream_examples(folder, split="val", limit=limit, max_rows=cfg.max_tokens))
    if not examples:
        raise SystemExit(f"error: {folder} holds no held-out skeletons (too few skeletons; generate more)")
    return mean_loss(model, batches(examples, "nsode-eps", batch_size, cfg.bos_token_id, cfg.pad_token_id,
                                    np.random.default_rng(0), keep_last=True,
                                    scaling=getattr(cfg, "input_scaling", "none")), "cpu")


def measure(folder: Path, data: list[str], args) -> dict:
    model = load(folder)
    state = json.loads((folder / "training_state.json").read_text())
    row = {"checkpoint": str(folder), "step": state.get("step"), "samples": state.get("samples"),
           "input_scaling": getattr(model.config, "input_scaling", "none")}
    for d in data:
        name = Path(d).name
        row[f"val_loss[{name}]"], row[f"val_acc[{name}]"] = validation_loss(model, d, args.val_limit)
    if args.losses_only:
        return row
    beam64 = Predictor(model, beam=64, search=Settings())
    for d in data:
        name = Path(d).name
        cases = heldout_examples(d, "nsode-eps", args.recall_limit)
        row[f"recall64[{name}]"] = float(np.mean([recall(beam64, t, y, f)[0] for t, y, f in cases]))
    searcher = Predictor(model, beam=args.search_beam, search=Settings())
    for sigma, scale in ((0.0, 1.0), (0.01, 1.0), (0.01, 100.0), (0.01, 0.01)):
        r2 = recovery_r2(lambda t, y: searcher.predict(t, y).expression, simple_cases(args.simple, sigma, scale=scale))
        row[f"recovered[sigma={sigma:g}" + (f", y x{scale:g}]" if scale != 1 else "]")] = float(np.mean(r2 > 0.99))
    return row


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", nargs="*", type=existing_folder, default=[], help="training run folders (their snapshots/step-N)")
    p.add_argument("--extra", nargs="*", type=existing_folder, default=[], help="more checkpoint folders (e.g. the shipped one)")
    p.add_argument("--data", nargs="+", type=existing_folder, required=True, help="data folders whose held-out skeletons are measured")
    p.add_argument("--val-limit", type=whole_number(1), default=512, help="held-out solutions for the loss, per folder")
    p.add_argument("--recall-limit", type=whole_number(1), default=60, help="held-out ODEs for recall, per folder")
    p.add_argument("--simple", type=whole_number(0), default=24, help="simple ODEs for recovery")
    p.add_argument("--search-beam", type=whole_number(1), default=256)
    p.add_argument("--losses-only", action="store_true",
                   help="measure only the validation losses (seconds a checkpoint: every snapshot of a run)")
    p.add_argument("--out", default="curves.csv", help="CSV of all rows (rows already there are kept)")
    p.add_argument("--threads", type=whole_number(1), default=1)
    p.add_argument("--plot", type=Path, default=None,
                   help="write a PNG of all rows of --out: validation losses and recovery against samples seen")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    folders = [Path(f) for f in args.extra]
    for run in args.runs:
        snapshots = sorted((Path(run) / "snapshots").glob("step-*"))
        if not snapshots:
            p.error(f"{run} has no snapshots/step-N folders to measure (train it with nsode.train --snapshot-every)")
        folders += snapshots
    if not folders:
        p.error("no checkpoints to measure: give --extra folders, or --runs whose snapshots/ hold step-N folders")
    out = Path(args.out)
    done = pd.read_csv(out) if out.is_file() else pd.DataFrame(columns=["checkpoint"])
    rows = done.to_dict("records")
    for folder in folders:
        if str(folder) in set(done["checkpoint"]):
            continue
        rows.append(measure(folder, args.data, args))
        pd.DataFrame(rows).to_csv(out, index=False)  # written as it goes: an interrupted run resumes
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    table = pd.DataFrame(rows).sort_values("samples")
    print(table.to_markdown(index=False, floatfmt=".3g"))
    if args.plot:
        plot_curves(table, args.plot)


def plot_curves(table: pd.DataFrame, out: Path) -> None:
    """Validation loss per generator and simple-ODE recovery against samples seen, one point per
    checkpoint (a checkpoint with another input path than most is drawn apart: its losses are on
    other targets; a checkpoint measured again later, with a newer search, is drawn at its last
    row)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = table.drop_duplicates(["samples", "input_scaling"], keep="last")
    groups = sorted(table.groupby("input_scaling"), key=lambda g: -len(g[1]))  # lines: the main path
    panels = [(prefix, factor, label) for prefix, factor, label in (
        ("val_loss[", 1.0, "validation loss (held-out skeletons)"),
        ("recovered[", 100.0, "simple ODEs recovered by the search (%)"))
        if any(c.startswith(prefix) for c in table.columns)]  # --losses-only measures no recoveries
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (prefix, factor, label) in zip(axes[0], panels):
        columns = [c for c in table.columns if c.startswith(prefix)]
        for colour, column in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], columns):
            for k, (scaling, rows) in enumerate(groups):
                ax.plot(rows["samples"], factor * rows[column], "o-" if k == 0 else "s", color=colour,
                        mfc=None if k == 0 else "none", label=f"{column[len(prefix):-1]} ({scaling} input)")
        ax.set(xlabel="samples seen", ylabel=label)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))  # 800000 written out crowds its neighbours
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot written to {out}")



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

"""Training runs compared at equal CPU time: validation loss against minutes of training.

Reads each run's `log.csv` (written by `python -m nsode.train`; the runs must share their data
folders and seed, so that their validation sets are the same) and prints the validation loss
of each run at the same elapsed minutes (linear interpolation between evaluations), with the
samples each had seen by then; `--plot` draws loss against minutes and against samples. This is
how the model size is chosen (model card, "Model size at equal CPU time"):

    python -m nsode.train --preset tiny --max-minutes 25 --out RUNS/size-tiny ...   # then mini
    python benchmarks/equal_time.py RUNS/size-tiny RUNS/size-mini --minutes 5 10 15 20 25
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from odecore.arguments import existing_folder, positive_number
from odecore.files import figure_target


def read_log(run: Path, offset_s: float = 0.0) -> pd.DataFrame:
    """Evaluation rows; minutes from the run's start (`offset_s`: training seconds it inherited)."""
    log = pd.read_csv(run / "log.csv").dropna(subset=["val_loss"])
    return log.assign(minutes=(log["elapsed_s"] - offset_s) / 60)


def at_minute(log: pd.DataFrame, minute: float) -> tuple[float, float]:
    """(validation loss, samples) at `minute`; nan outside the run's evaluations."""
    if not log["minutes"].iloc[0] - 1e-9 <= minute <= log["minutes"].iloc[-1] + 1e-9:
        return np.nan, np.nan
    return (float(np.interp(minute, log["minutes"], log["val_loss"])),
            float(np.interp(minute, log["minutes"], log["samples"])))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=existing_folder, help="run folders (each with log.csv)")
    p.add_argument("--minutes", nargs="+", type=positive_number, default=[5, 10, 15, 20, 25])
    p.add_argument("--offset-s", nargs="+", type=float, default=None, metavar="S",
                   help="one per run: training seconds a run inherited with --init (its elapsed_s at the start)")
    p.add_argument("--plot", type=Path, default=None,
                   help="write a PNG: validation (solid) and training (dashed) loss against minutes and samples")
    a = p.parse_args(argv)
    if a.plot:  # before the logs are read, not after the table is printed
        a.plot, why = figure_target(a.plot, "curves.png")
        if why:
            p.error(f"--plot {a.plot}: {why}")
    missing = [str(run) for run in a.runs if not (run / "log.csv").is_file()]
    if missing:
        p.error(f"no log.csv (written by python -m nsode.train) in {', '.join(missing)}")
    offsets = a.offset_s or [0.0] * len(a.runs)
    if len(offsets) != len(a.runs):
        p.error("--offset-s takes one value per run")
    logs = {run.name: read_log(run, off) for run, off in zip(a.runs, offsets)}
    empty = [name for name, log in logs.items() if log.empty]
    if empty:
        p.error(f"no validation rows in the log.csv of {', '.join(empty)} (too few held-out skeletons, or "
                "not evaluated yet)")
    rows = [[m, *(value for log in logs.values() for value in at_minute(log, m))] for m in a.minutes]
    headers = ["minutes"] + [f"{name} {what}" for name in logs for what in ("val loss", "samples")]
    print(tabulate(rows, headers=headers, floatfmt=("g",) + (".3f", ".0f") * len(logs)))
    for name, log in logs.items():
        rate = log["samples"].diff().sum() / (60 * log["minutes"].diff().sum())  # between evaluations
        print(f"{name}: {rate:.0f} samples/s over {log['minutes'].iloc[-1]:.1f} min, "
              f"best validation loss {log['val_loss'].min():.3f}")
    if a.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
        for name, log in logs.items():
            line, = axes[0].plot(log["minutes"], log["val_loss"], label=name)
            axes[0].plot(log["minutes"], log["loss"], "--", color=line.get_color())
            axes[1].plot(log["samples"], log["val_loss"], label=name)
            axes[1].plot(log["samples"], log["loss"], "--", color=line.get_color())
        axes[0].set(xlabel="minutes of training", ylabel="loss (solid: validation, dashed: training)")
        axes[1].set(xlabel="samples seen")
        axes[0].legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
        print(f"plot written to {a.plot}")


if __name__ == "__main__":
    main()

"""Train NSODE: python -m nsode.train --data DIR --preset small --variant nsode-eps --out DIR

Streams the generator's parquet shards (nsode.data; the batches: nsode.train.loader), holds out
whole skeletons for validation (nsode.train.validation), minimises the two-hot cross-entropy with AdamW
and a linear warm-up, and checkpoints as it goes (`OUT/last` for resuming, `OUT/best` by
validation loss; safetensors only: nsode.train.checkpoints). Logs loss and token
accuracy to OUT/log.csv with the validation R^2 of decoded expressions (beam 4, best of the
beam by R^2), and draws OUT/loss_curve.png. Ctrl-C (or SIGTERM) saves OUT/last before it stops.

Learning-rate schedule: the paper warms up linearly over 10,000 steps of batch 600 (6M samples,
about 1% of its 25 epochs) to a constant 1e-4. Small presets train on CPU for an hour, not days,
so the defaults keep the warm-up at a few percent of the run (2% of --steps, at least 100 steps)
and raise the peak rate for narrower models (tiny 5e-4, small 3e-4; the usual width scaling of
transformers of these sizes, and a batch of 32 instead of 600 keeps updates small).
`--schedule cosine` then anneals to 10% of the peak by --steps, which helps a short run; the
paper's `constant` is the default. `--schedule cosine-time` anneals over the wall-clock budget
--max-minutes instead: for a machine lent for a fixed time, when the steps it allows are unknown
(`scripts/gpu_session.sh`); a --resume continues that anneal, so --max-minutes is then the whole
anneal's budget, counting the minutes before the interruption. `--init FOLDER` continues from shipped weights (the optimizer
restarts with a fresh warm-up; step and sample counts continue).
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers.utils import logging as hf_logging

from odecore.arguments import Repeatable, output_path, positive_number, probability_below_one, share, whole_number
from odecore.processes import terminated_as_interrupt
from nsode import checkpoint_folder
from nsode import model as nsode_model
from nsode.train.batching import VARIANTS, two_hot_loss
from nsode.data.shards import CONFIG_FILE, read_config, shard_paths, why_no_shards
from nsode.train.checkpoints import load_optimizer, read_training_state, recover_checkpoint, save_checkpoint
from nsode.scaling import MODES as SCALING_MODES
from nsode.train.stream import folder_weights
from nsode.train.loader import training_stream
from nsode.train.validation import Validation

DEFAULT_LR = {"paper": 1e-4, "small": 3e-4, "mini": 4e-4, "tiny": 5e-4}
MAX_BATCH = 8192  # examples in one batch, built in memory at once: beyond it, --accum adds batches per update


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m nsode.train", description=__doc__, formatter_class=_Formatter)
    p.add_argument("--data", required=True, nargs="+", action=Repeatable, metavar="DIR",
                   help="data folder(s) written by `python -m nsode.data generate` (several: e.g. other seeds)")
    p.add_argument("--weights", nargs="+", action=Repeatable, type=int, metavar="W",
                   help="how many times each --data folder is read per pass (default 1 each): "
                        "up-weights a small supplement, e.g. of simple skeletons")
    p.add_argument("--out", required=True, type=output_path,
                   help="output folder (checkpoints, log.csv, loss_curve.png)")
    p.add_argument("--preset", default=None, choices=sorted(nsode_model.PRESETS),
                   help="model size of a run built from scratch (default small); loaded weights keep theirs")
    p.add_argument("--variant", default=None, choices=sorted(VARIANTS),
                   help="how examples are observed: nsode-eps (128 random points, 1%% noise) or nsode (256 clean "
                        "grid points); default: the resumed run's or the --init weights' (their training_state.json), "
                        "else nsode-eps")
    p.add_argument("--off-grid", type=share, default=None, metavar="FRACTION",
                   help="fraction of examples observed at uniform random times instead of grid points "
                        "(default: nsode-eps 0.5, nsode 0; the paper: 0)")
    p.add_argument("--input-scaling", choices=SCALING_MODES, default=None,
                   help="none: raw t and y (the paper); pow2: shift t to 0 and scale t and y by powers of two "
                        "(nsode.scaling), targets rewritten to match (default: the model's own, else none)")
    p.add_argument("--bf16", action="store_true",
                   help="bfloat16 autocast on CPU: faster only where the CPU runs bf16 natively (AVX-512 BF16 "
                        "or AMX; a warning says when not); CUDA always uses mixed precision")
    p.add_argument("--dropout", type=probability_below_one, default=None, metavar="P",
                   help="dropout of a model built from scratch (default 0, as shipped); a loaded model keeps its own")
    p.add_argument("--batch-size", type=whole_number(1, MAX_BATCH), default=32,
                   help=f"examples per batch (at most {MAX_BATCH}; larger batches: --accum)")
    p.add_argument("--accum", type=whole_number(1), default=1, help="gradient accumulation steps per update")
    p.add_argument("--lr", type=positive_number, default=None,
                   help="peak learning rate (default depends on preset; a --resume keeps the run's own)")
    p.add_argument("--warmup", type=whole_number(0), default=None,
                   help="linear warm-up steps (default: 2%% of the steps this run trains, from the step --init "
                        "loaded; at least 100; 0: none; a --resume keeps the run's own)")
    p.add_argument("--schedule", default=None, choices=["constant", "cosine", "cosine-time"],
                   help="after warm-up: constant (paper; the default), cosine decay to 10%% of the peak at --steps, "
                        "or at the end of --max-minutes (cosine-time); a --resume keeps the run's own")
    p.add_argument("--steps", type=whole_number(1), default=20_000,
                   help="the update count to stop at, counted from the first run's start: with --init or --resume "
                        "it must exceed the loaded step (the shipped nsode-eps is at 25,000; default 20,000)")
    p.add_argument("--max-minutes", type=positive_number, default=None,
                   help="stop (and checkpoint) after this wall time (cosine-time: the anneal's whole budget, "
                        "counting the minutes trained before a --resume)")
    p.add_argument("--eval-every", type=whole_number(1), default=200, help="updates between validation + checkpoint")
    p.add_argument("--snapshot-every", type=whole_number(0), default=0, metavar="STEPS",
                   help="also keep the weights every STEPS updates in OUT/snapshots/step-N (learning curves "
                        "of recall and recovery are computed from them afterwards; 0: none)")
    p.add_argument("--val-batches", type=whole_number(1), default=8, help="validation batches for the loss")
    p.add_argument("--val-decode", type=whole_number(0), default=32, help="validation trajectories decoded for R^2")
    p.add_argument("--val-percent", type=whole_number(1, 50), default=5,
                   help="percent of skeletons held out (OUT/best is chosen on them)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--threads", type=whole_number(1), default=1, help="CPU threads for torch")
    p.add_argument("--workers", type=whole_number(0), default=0,
                   help="data processes preparing batches, each from its own share of the shards (0: in the "
                        "training process; on a 2-core CPU that is fastest, a GPU needs several)")
    p.add_argument("--init", default=None, help="start from these weights: a checkpoint folder, or a shipped checkpoint's name (e.g. nsode-eps)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in OUT from OUT/last: its weights, optimizer, step, warm-up, schedule and "
                        "peak learning rate (a --schedule or --lr given changes them, and says so; the data stream is "
                        "reshuffled from the step reached, so the examples differ from an uninterrupted run's); "
                        "without it, an OUT that holds a run is refused")
    p.add_argument("--seed", type=whole_number(0), default=0, help="seed of the data stream and initial weights")
    return p.parse_args(argv)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The module docstring as written, and each option's default unless its help names it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


def lr_at(step: int, peak: float, warmup: int, *, start: int = 0, total: int = 0,
          schedule: str = "constant", time_frac: float = 0.0) -> float:
    """Linear warm-up from `start` over `warmup` steps, then constant or cosine down to 10% at
    `total` (cosine-time: at `time_frac` = 1, the share of the wall-clock budget spent)."""
    k = step - start
    if k < warmup:
        return peak * (k + 1) / max(1, warmup)
    if schedule == "cosine-time":
        frac = time_frac
    elif schedule == "constant" or total <= start + warmup:
        return peak
    else:
        frac = (k - warmup) / max(1, total - start - warmup)
    return peak * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, frac))))


def annealed_before(state: dict, schedule: str) -> float:
    """Wall seconds a resumed run already spent in its cosine-time anneal (0 when it starts one)."""
    return state.get("anneal_s", 0.0) if schedule == state.get("schedule") == "cosine-time" else 0.0


def plot_curve(log_path: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.read_csv(log_path)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    ax[0].plot(df["samples"], df["loss"], label="train")
    v = df.dropna(subset=["val_loss"])
    ax[0].plot(v["samples"], v["val_loss"], "o-", label="validation")
    ax[0].set(xlabel="training samples", ylabel="two-hot cross-entropy", yscale="log")
    ax[0].legend()
    ax[1].plot(df["samples"], df["acc"], label="train")
    ax[1].plot(v["samples"], v["val_acc"], "o-", label="validation")
    ax[1].set(xlabel="training samples", ylabel="token accuracy")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


class UsageError(ValueError):
    """A command line that cannot start a run; the message is the one-line error."""


def check_data(args) -> list[Path]:
    data = [Path(d) for d in args.data]
    for folder in data:  # each named folder counts: a mistyped supplement must not drop out unseen
        if not folder.is_dir():
            raise UsageError(f"--data {folder}: {'a file, not a folder' if folder.exists() else 'no such folder'} "
                             "(give a folder written by python -m nsode.data generate)")
        try:
            read_config(folder)
        except FileNotFoundError:
            raise UsageError(f"--data {folder}: no {CONFIG_FILE} (a folder written by python -m nsode.data "
                             "generate, copied whole)") from None
        except (ValueError, TypeError, AttributeError) as err:  # JSONDecodeError and ConfigError are ValueErrors
            raise UsageError(f"--data {folder}: its {CONFIG_FILE} cannot be read: {err}") from None
    resolved = [d.resolve() for d in data]
    twice = next((d for d, place in zip(data, resolved) if resolved.count(place) > 1), None)
    if twice:
        raise UsageError(f"--data {twice} is given twice (its data and its validation would count double); "
                         "weigh folders with --weights")
    if not any(shard_paths(d) for d in data):  # a folder without shards yet is fine: passes re-list them
        raise UsageError("; ".join(why_no_shards(d) for d in data))
    try:
        folder_weights(args.weights, len(data))
    except ValueError as err:
        raise UsageError(f"--weights: {err}") from None
    return data


def start(args, out: Path, device) -> tuple:
    """(model, state): resumed from OUT/last, initialised from --init (counts continue, the
    optimizer and its warm-up start afresh) or built fresh; the run's input path settled."""
    state = {"step": 0, "samples": 0, "best_val_loss": math.inf, "elapsed_s": 0.0, "warmup_start": 0,
             "preset": args.preset or "small"}
    resuming = args.resume
    if resuming and args.init:
        raise UsageError("--init and --resume: --resume continues OUT/last; give one of them")
    for name in ("last", "best"):
        recover_checkpoint(out / name)
    has_run = (out / "last" / "training_state.json").is_file()
    weights_only = not has_run and (out / "last").is_dir() and any((out / "last").glob("*.safetensors"))
    if weights_only:  # a state file lost or deleted: neither resumed nor trained over
        raise UsageError(f"{out / 'last'} holds weights but no training_state.json: continue from them in a new "
                         f"folder with --init {out / 'last'} --out NEW")
    if resuming and not has_run:
        raise UsageError(f"--resume: {out / 'last'} holds no run to continue; leave out --resume to start one")
    if has_run and not resuming:
        raise UsageError(f"{out} already holds a run ({out / 'last'}): add --resume to continue it, or give a new --out")
    if resuming:
        model = nsode_model.load(out / "last", device)
        state.update(read_training_state(out / "last"))
        for flag, given in (("variant", args.variant), ("off_grid", args.off_grid)):
            if given is not None and state.get(flag) is not None and given != state[flag]:
                raise UsageError(f"--{flag.replace('_', '-')} {given}: the run in {out} was trained with "
                                 f"{state[flag]}; give a new --out to train another way")
        args.variant = args.variant or state.get("variant")
        args.off_grid = state.get("off_grid") if args.off_grid is None else args.off_grid
        args.schedule, args.lr = resumed_schedule(args, state, out)
        spent = annealed_before(state, args.schedule)
        if args.max_minutes and spent >= 60 * args.max_minutes:
            raise UsageError(f"--max-minutes {args.max_minutes:g}: the cosine-time anneal of the run in {out} has "
                             f"already spent {spent / 60:.1f} minutes; give more to continue it")
        if not (out / "last" / "optimizer.safetensors").is_file():
            print(f"warning: {out / 'last'} has no optimizer.safetensors: the optimizer restarts from zero "
                  "moments at the current learning rate (consider --warmup)", file=sys.stderr)
    elif args.init:
        init = checkpoint_folder(args.init)  # a shipped checkpoint's name too: its counts continue as well
        model = nsode_model.load(init, device)
        if (init / "training_state.json").is_file():
            old = read_training_state(init)
            state.update(step=old.get("step", 0), samples=old.get("samples", 0),
                         elapsed_s=old.get("elapsed_s", 0.0), warmup_start=old.get("step", 0))
            if args.variant is None and old.get("variant") in VARIANTS:  # continue as the weights were trained
                args.variant = old["variant"]
                args.off_grid = old.get("off_grid") if args.off_grid is None else args.off_grid
    else:
        torch.manual_seed(args.seed)  # the initial weights, as --seed promises
        model = nsode_model.build(state["preset"], dropout=args.dropout or 0.0).to(device)
    if resuming or args.init:  # the weights know their size, whatever a copied state file says
        state["preset"] = getattr(model.config, "preset", None) or state["preset"]
    args.variant = args.variant or "nsode-eps"
    if args.off_grid is None:
        args.off_grid = VARIANTS[args.variant]["off_grid"]
    state.update(variant=args.variant, off_grid=args.off_grid)
    if args.preset and args.preset != state["preset"]:
        raise UsageError(f"--preset {args.preset}: the loaded weights are {state['preset']}; a loaded model keeps "
                         "its size (leave out --preset)")
    if state["step"] >= args.steps:
        raise UsageError(f"--steps {args.steps} is not beyond the loaded step {state['step']}: nothing to train "
                         f"(--steps counts from the first run's start; e.g. --steps {state['step'] + 10_000})")
    if args.dropout is not None and args.dropout != model.config.dropout:
        raise UsageError(f"--dropout {args.dropout} differs from the loaded model's {model.config.dropout}")
    args.preset = state["preset"]  # loaded weights keep their size, whatever --preset says
    scaling = getattr(model.config, "input_scaling", "none")
    if args.input_scaling is None:
        args.input_scaling = scaling
    elif args.input_scaling != scaling and resuming:
        raise UsageError(f"--input-scaling {args.input_scaling} differs from the run's {scaling}")
    model.config.input_scaling = args.input_scaling  # saved with every checkpoint; predict reads it
    state["input_scaling"] = args.input_scaling
    return model, state


class Logger:
    """OUT/log.csv (appended across resumed runs) and the console line of each evaluation. The file
    is opened at the first evaluation, so a run that fails before one leaves no header-only log."""

    FIELDS = ["step", "samples", "elapsed_s", "lr", "loss", "acc", "val_n", "val_loss", "val_acc",
              "val_r2_median", "val_r2_above_0.9"]

    def __init__(self, path: Path):
        self.path = path
        self.writer = None

    def __call__(self, row: dict) -> None:
        if self.writer is None:
            new = not self.path.exists() or self.path.stat().st_size == 0
            self.file = open(self.path, "a", newline="")
            self.writer = csv.DictWriter(self.file, fieldnames=self.FIELDS)
            if new:
                self.writer.writeheader()
        self.writer.writerow(row)
        self.file.flush()
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


def checkpoint(out: Path, model, opt, state: dict, metrics: dict, snapshot_every: int) -> None:
    """OUT/last (for resuming), OUT/best by validation loss, OUT/snapshots/step-N every N steps."""
    improved = metrics.get("val_loss", math.inf) < state["best_val_loss"]
    if improved:
        state["best_val_loss"] = metrics["val_loss"]
        state["best_metrics"] = metrics
    save_checkpoint(out / "last", model, opt, state)
    if improved:  # resuming uses `last`; `best` is for export and --init (weights only)
        save_checkpoint(out / "best", model, None, state)
    if snapshot_every and state["step"] % snapshot_every == 0:
        save_checkpoint(out / "snapshots" / f"step-{state['step']:07d}", model, None, state)
    try:
        plot_curve(out / "log.csv", out / "loss_curve.png")
    except Exception as err:  # a plot must never stop training
        print(f"warning: loss curve not drawn ({err})", flush=True)


def cpu_has_bf16() -> bool:
    """Whether oneDNN runs bf16 natively on this CPU (AVX-512 BF16 or AMX); emulated bf16 is slow."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without the query: assume it is
        return True


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()  # checkpoints are one small file each
    try:
        device = nsode_model.resolve_device(args.device)
    except ValueError as err:
        print(f"error: --{err}", file=sys.stderr)
        return 2
    if args.bf16 and device.type == "cpu" and not cpu_has_bf16():
        print("warning: this CPU has no native bf16 instructions; --bf16 makes training slower than fp32 "
              "here (measured: 9x for tiny)", file=sys.stderr)
    out = Path(args.out)
    try:
        data = check_data(args)
        model, state = start(args, out, device)  # a --resume settles the schedule: the run's own unless given
        args.schedule = args.schedule or "constant"  # the paper's, for a new run (and a run saved before it was recorded)
        if args.schedule == "cosine-time" and not args.max_minutes:
            raise UsageError("--schedule cosine-time anneals over --max-minutes; give it"
                             + (" (the run resumed was trained so)" if args.resume else ""))
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UsageError(f"--out {out}: cannot make the folder ({err.strerror})") from None
    except (UsageError, nsode_model.CheckpointError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with terminated_as_interrupt():  # a scheduler's preemption, `kill`: OUT/last is saved as on Ctrl-C
        try:
            train(args, data, out, device, model, state)
        except (UsageError, nsode_model.CheckpointError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            saved = (f"saved {out / 'last'}; run the same command with --resume to continue"
                     if (out / "last").is_dir() else "nothing saved yet")
            print(f"\ninterrupted at step {state['step']}: {saved}", file=sys.stderr)
            return 130
    why = "--steps" if state["step"] >= args.steps else "--max-minutes"
    best = f", the best by validation in {out / 'best'}" if (out / "best").is_dir() else ""
    print(f"stopped at step {state['step']} ({why}): weights in {out / 'last'}{best}", flush=True)
    return 0


def resumed_schedule(args, state: dict, out: Path) -> tuple[str | None, float | None]:
    """The schedule and peak learning rate a --resume continues with: the run's own where none is
    given (a run stopped by a scheduler is resumed by its plain command line), what is given
    otherwise, with a note where that changes the run's (None where neither says: runs saved before
    either was recorded take the defaults)."""
    schedule = args.schedule or state.get("schedule")
    lr = args.lr if args.lr is not None else state.get("lr")
    for flag, given, own in (("schedule", args.schedule, state.get("schedule")), ("lr", args.lr, state.get("lr"))):
        if given is not None and own is not None and given != own:
            print(f"note: --{flag} {given}: the run in {out} was trained with {own}; continuing with {given}",
                  file=sys.stderr)
    return schedule, lr


def default_warmup(total_steps: int, warmup_start: int) -> int:
    """2% of the steps since the warm-up began (0, or the step --init loaded), at least 100: a run
    continued from shipped weights warms up over its own steps, not over those the weights saw."""
    return max(100, (total_steps - warmup_start) // 50)


def train(args, data: list[Path], out: Path, device, model, state: dict) -> None:
    """The optimisation loop, evaluating and checkpointing every --eval-every steps."""
    torch.manual_seed(args.seed + state["step"])
    model.train()
    peak = args.lr if args.lr is not None else DEFAULT_LR[args.preset]
    state["lr"] = peak
    if args.warmup is not None:
        warmup = args.warmup
    elif args.resume and "warmup" in state:  # the run's own warm-up, whatever --steps now says
        warmup = state["warmup"]
    else:
        warmup = default_warmup(args.steps, state["warmup_start"])
    state["warmup"] = warmup
    if state["warmup_start"] + warmup >= args.steps > state["step"]:
        print(f"warning: the warm-up ({warmup} steps) lasts past --steps {args.steps}: the learning rate never "
              "reaches its peak (set --warmup)", file=sys.stderr)
    opt = torch.optim.AdamW(model.parameters(), lr=peak, weight_decay=0.01)
    if args.resume and (out / "last" / "optimizer.safetensors").is_file():
        load_optimizer(out / "last", opt)
    use_amp = device.type == "cuda" or args.bf16
    amp_dtype = torch.bfloat16 if args.bf16 or (use_amp and torch.cuda.is_bf16_supported()) else torch.float16
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and amp_dtype == torch.float16)
    cfg = model.config
    validate = Validation(data, args, cfg.bos_token_id, cfg.pad_token_id, cfg.max_tokens)
    stream = training_stream(data, args, cfg, state["step"], device)
    log = Logger(out / "log.csv")
    t_start, run_start = time.perf_counter() - state["elapsed_s"], time.perf_counter()
    budget_s = 60 * args.max_minutes if args.max_minutes else math.inf
    spent_before = annealed_before(state, args.schedule)  # a resumed cosine-time run continues its anneal
    state["schedule"] = args.schedule

    def spent_s() -> float:
        return spent_before + time.perf_counter() - run_start

    def keep_time() -> None:
        state["elapsed_s"] = time.perf_counter() - t_start
        state["anneal_s"] = spent_s() if args.schedule == "cosine-time" else 0.0
    print(f"NSODE {args.preset} ({nsode_model.count_parameters(model) / 1e6:.2f}M parameters), "
          f"variant {args.variant}, device {device}, lr {peak:g}, warm-up {warmup}, "
          f"batch {args.batch_size} x {args.accum}, {args.workers} data workers, input scaling {args.input_scaling}, "
          f"{validate.size} validation trajectories" + (f", from step {state['step']}" if state["step"] else ""),
          flush=True)
    if not validate.size:
        print("warning: no skeletons held out for validation yet (too few in --data): validation loss, and "
              "OUT/best, wait until the folders hold more", file=sys.stderr)
    run_loss, run_acc = [], []
    try:
        while state["step"] < args.steps:
            for g in opt.param_groups:
                g["lr"] = lr_at(state["step"], peak, warmup, start=state["warmup_start"], total=args.steps,
                                schedule=args.schedule, time_frac=spent_s() / budget_s)
            opt.zero_grad(set_to_none=True)
            for _ in range(args.accum):
                b = next(stream, None)
                if b is None:  # a pass over every shard gave no example to train on
                    raise UsageError("no training examples in --data: its shards were all skipped as unreadable "
                                     "(warnings above), or every skeleton is held out for validation (lower "
                                     "--val-percent) or left out as a Large test-set skeleton")
                b = b.to(device, non_blocking=True)
                with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
                    logits = model(b.bits, b.dec_ids, b.dec_w, b.mask)
                loss, acc = two_hot_loss(logits, b.tgt_ids, b.tgt_w)
                scaler.scale(loss / args.accum).backward()
                run_loss.append(loss.item())
                run_acc.append(acc.item())
                state["samples"] += len(b.bits)
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            state["step"] += 1
            out_of_time = spent_s() > budget_s
            if state["step"] % args.eval_every == 0 or state["step"] == args.steps or out_of_time:
                keep_time()
                metrics = validate(model, device)
                log({"step": state["step"], "samples": state["samples"], "elapsed_s": round(state["elapsed_s"], 1),
                     "lr": opt.param_groups[0]["lr"], "loss": np.mean(run_loss), "acc": np.mean(run_acc), **metrics})
                run_loss, run_acc = [], []
                checkpoint(out, model, opt, state, metrics, args.snapshot_every)
            if out_of_time:
                break
    except KeyboardInterrupt:  # the weights and the optimizer are those of the last finished update
        keep_time()
        save_checkpoint(out / "last", model, opt, state)
        raise
    finally:
        stream.close()  # data worker processes stop with the loop


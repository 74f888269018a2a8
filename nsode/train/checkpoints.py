"""A training run's checkpoints on disk: `OUT/last`, `OUT/best` and snapshots, each the weights
(safetensors), the optimizer's moments (safetensors, for resuming) and training_state.json (the
counters). Saved into a sibling folder and swapped in, so a kill mid-save leaves one complete
checkpoint (`recover_checkpoint` finishes an interrupted swap); read without unpickling.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from nsode.checkpoint_files import CheckpointError, share_weights


def save_checkpoint(folder: Path, model, opt, state: dict) -> None:
    """Weights via save_pretrained; optimizer moments (unless opt is None: a folder that is never
    resumed) flattened into safetensors; counters as JSON. Written to a sibling folder and then
    swapped in, so a kill mid-save never leaves weights and counters of different steps."""
    fresh, old = folder.with_name(folder.name + ".tmp"), folder.with_name(folder.name + ".old")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    model.save_pretrained(fresh)
    share_weights(fresh)
    if opt is not None:
        tensors = {}
        for i, (p, s) in enumerate(((p, opt.state[p]) for g in opt.param_groups for p in g["params"])):
            for k, v in s.items():
                tensors[f"{i}.{k}"] = torch.as_tensor(v).detach().cpu().contiguous()
        save_file(tensors, str(fresh / "optimizer.safetensors"))
    (fresh / "training_state.json").write_text(json.dumps(state, indent=1))
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    fresh.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def recover_checkpoint(folder: Path) -> None:
    """Finish a save_checkpoint that was killed between its two renames (SIGKILL, power loss): the
    new folder is complete once it holds training_state.json (written last), else the old one
    goes back."""
    fresh, old = folder.with_name(folder.name + ".tmp"), folder.with_name(folder.name + ".old")
    if folder.exists():
        return
    if (fresh / "training_state.json").is_file():
        fresh.rename(folder)
    elif old.is_dir():
        old.rename(folder)


def load_optimizer(folder: Path, opt) -> None:
    try:
        tensors = load_file(str(folder / "optimizer.safetensors"))
    except Exception as err:  # safetensors raises its own SafetensorError on a damaged file
        raise CheckpointError(
            f"{folder / 'optimizer.safetensors'} cannot be read ({str(err).splitlines()[0][:120]}): delete it to "
            "resume with a fresh optimizer") from None
    params = [p for g in opt.param_groups for p in g["params"]]
    for i, p in enumerate(params):
        # AdamW keeps its step counters on the CPU (not capturable or fused): on the GPU each update would sync per tensor
        state = {name: v if name == "step" else v.to(p.device) for name, v in
                 ((k.split(".", 1)[1], v) for k, v in tensors.items() if k.split(".", 1)[0] == str(i))}
        if state:
            opt.state[p] = state


def read_training_state(folder: Path) -> dict:
    """A checkpoint's training_state.json; CheckpointError naming it when it cannot be read."""
    try:
        state = json.loads((folder / "training_state.json").read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{folder / 'training_state.json'} cannot be read ({err})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{folder / 'training_state.json'} is not a training state (a JSON object)")
    for key, kinds, what in (("step", int, "a count"), ("samples", int, "a count"), ("warmup_start", int, "a count"), ("warmup", int, "a count"),
                             ("elapsed_s", (int, float), "seconds"), ("anneal_s", (int, float), "seconds"),
                             ("best_val_loss", (int, float), "a loss")):  # what the loop computes with
        value = state.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value <= math.inf:
            raise CheckpointError(f"{folder / 'training_state.json'}: {key} is {value!r}, not {what}")
    return state

"""Whether a folder holds a loadable NSODE checkpoint, told from its files alone (no torch): the
harness checks a user's checkpoint before a sweep, so a broken folder is one line, not a row of
errors per task. `nsode.model.load` runs the same check before it reads the weights."""
from __future__ import annotations

import json
import struct
from pathlib import Path

WEIGHTS_NAME = "model.safetensors"
INPUT_SCALINGS = ("none", "pow2")  # the input paths a model may read (nsode.scaling.MODES)
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt"}


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded safely; the message names the problem."""


def check(folder: str | Path) -> None:
    """CheckpointError naming what is wrong with `folder`: no folder or config.json, a config that
    is not a JSON object, pickle files (never loaded), or weights that are missing or not a whole
    safetensors file (a truncated copy)."""
    folder = Path(folder)
    if not folder.exists():
        raise CheckpointError(f"{folder}: no such checkpoint folder")
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is a file; a checkpoint is a folder holding config.json and {WEIGHTS_NAME}")
    if not (folder / "config.json").is_file():
        runs = [sub.name for sub in (folder / "best", folder / "last") if (sub / "config.json").is_file()]
        hint = (f"a training run? use {folder / runs[0]}" if runs else
                "train one with python -m nsode.train or point to nsode/checkpoints/<variant>")
        raise CheckpointError(f"{folder} is not an NSODE checkpoint (no config.json); {hint}")
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{folder / 'config.json'} cannot be read ({err})") from None
    if not isinstance(config, dict) or config.get("model_type") != "nsode":
        raise CheckpointError(f"{folder / 'config.json'} is not an NSODE model's configuration")
    if config.get("input_scaling", "none") not in INPUT_SCALINGS:  # anything else would read raw inputs silently
        raise CheckpointError(f"{folder / 'config.json'}: input_scaling {config['input_scaling']!r} is not one of "
                              f"{', '.join(INPUT_SCALINGS)}")
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise CheckpointError(f"{folder} contains pickle files ({', '.join(pickles)}); NSODE loads "
                              f"safetensors only - delete them or re-export the weights")
    weights = folder / WEIGHTS_NAME
    if not weights.is_file():
        raise CheckpointError(f"{folder} has no {WEIGHTS_NAME}")
    if not _whole_safetensors(weights):
        raise CheckpointError(f"{weights} is not a whole safetensors file (truncated or overwritten?)")


def _whole_safetensors(path: Path) -> bool:
    """The safetensors header (8-byte length, then JSON) parses and its tensors end at the file's end."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > size - 8:
                return False
            header = json.loads(handle.read(length))
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    except (OSError, ValueError, struct.error, AttributeError, KeyError, TypeError, IndexError):
        return False  # unreadable, or a header that is not a map of tensors with their offsets
    return 8 + length + max(ends, default=0) == size


def share_weights(folder: Path) -> None:
    """Give the weights config.json's permissions: safetensors writes them owner-only (0600), so a
    checkpoint on a shared filesystem could not be read by colleagues or a scheduler's user."""
    (folder / WEIGHTS_NAME).chmod((folder / "config.json").stat().st_mode & 0o777)

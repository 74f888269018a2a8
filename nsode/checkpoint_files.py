"""Whether a folder holds a loadable NSODE checkpoint, told from its files alone (no torch): the
harness checks a user's checkpoint before a sweep, so a broken folder is one line, not a row of
errors per task. `nsode.model.load` runs the same check before it reads the weights."""
from __future__ import annotations

import json
import struct
from pathlib import Path

from nsode import CHECKPOINTS, checkpoint_folder

WEIGHTS_NAME = "model.safetensors"
INPUT_SCALINGS = ("none", "pow2")  # the input paths a model may read (nsode.scaling.MODES)
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt"}


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded safely; the message names the problem."""


def check(folder: str | Path) -> None:
    """CheckpointError naming what is wrong with `folder`: no folder or config.json, a config that
    is not a JSON object, pickle files (never loaded), weights that are missing or not a whole
    safetensors file (a truncated copy), a vocabulary or constant grid in config.json that does
    not fit the weights (`_vocabulary_problem`), or lengths and dropout rates no model runs with."""
    folder = checkpoint_folder(folder)
    if not folder.exists():
        shipped = ", ".join(sorted(p.name for p in CHECKPOINTS.iterdir() if (p / "config.json").is_file()))
        raise CheckpointError(f"{folder}: no such checkpoint folder (shipped, by name: {shipped})")
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
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)
    if pickles:
        raise CheckpointError(f"{folder} contains pickle files ({', '.join(pickles)}); NSODE loads "
                              f"safetensors only - delete them or re-export the weights")
    weights = folder / WEIGHTS_NAME
    if not weights.is_file():
        raise CheckpointError(f"{folder} has no {WEIGHTS_NAME}")
    tensors = _whole_safetensors(weights)
    if tensors is None:
        raise CheckpointError(f"{weights} is not a whole safetensors file (truncated or overwritten?)")
    problem = _vocabulary_problem(config, tensors) or _shape_problem(config, tensors)
    if problem:
        raise CheckpointError(f"{folder / 'config.json'} does not match its weights: {problem}")
    problem = _range_problem(config)
    if problem:
        raise CheckpointError(f"{folder / 'config.json'}: {problem}")
    broken = _not_finite(weights, tensors)
    if broken:
        raise CheckpointError(f"{weights}: {broken} holds NaN or infinite values (saved from a run that diverged?)")


def _whole_safetensors(path: Path) -> dict | None:
    """The header's tensors {name: entry with shape} when the safetensors header (8-byte length,
    then JSON) parses and its tensors end at the file's end; else None."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > size - 8:
                return None
            header = json.loads(handle.read(length))
        tensors = {key: entry for key, entry in header.items() if key != "__metadata__"}
        ends = [entry["data_offsets"][1] for entry in tensors.values()]
    except (OSError, ValueError, struct.error, AttributeError, KeyError, TypeError, IndexError):
        return None  # unreadable, or a header that is not a map of tensors with their offsets
    return tensors if 8 + length + max(ends, default=0) == size else None


# (config.json's field, a tensor whose shape says it, the axis): read before the model is built, so
# that a config edited after training (d_model, 100,000 layers) is one line, not minutes of building
_SIZES = (("d_model", "lm_head.weight", 1), ("input_bits", "input_proj.weight", 1),
          ("encoder_ffn_dim", "encoder.layers.0.fc1.weight", 0), ("decoder_ffn_dim", "decoder.layers.0.fc1.weight", 0))


def _shape_problem(config: dict, tensors: dict) -> str | None:
    """Which of config.json's sizes contradicts the weights' shapes, in words, or None."""
    for key, name, axis in _SIZES:
        shape = tensors.get(name, {}).get("shape")
        if isinstance(shape, list) and len(shape) > axis and config.get(key) != shape[axis]:
            return f"{key} {config.get(key)!r}, but {name} has {shape[axis]}"
    for part in ("encoder", "decoder"):
        found = {name.split(".")[2] for name in tensors if name.startswith(f"{part}.layers.")}
        if found and config.get(f"{part}_layers") != len(found):
            return f"{part}_layers {config.get(f'{part}_layers')!r}, but the weights hold {len(found)}"
    return None


def _range_problem(config: dict) -> str | None:
    """Which of config.json's lengths or dropout rates no model can run with, in words, or None: the
    encoder reads max_points observations and the decoder writes max_tokens tokens, both within
    max_position_embeddings (0 tokens would decode y' = 0 for every record without a word)."""
    positions = config.get("max_position_embeddings")
    for key, least in (("max_position_embeddings", 1), ("max_points", 1), ("max_tokens", 2)):
        value = config.get(key)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= least):
            return f"{key} {value!r} is not a whole number of at least {least}"
        if key != "max_position_embeddings" and value > positions:
            return f"{key} {value} exceeds max_position_embeddings {positions}"
    for key in ("dropout", "attention_dropout", "activation_dropout"):
        value = config.get(key, 0.0)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1):
            return f"{key} {value!r} is not a rate in [0, 1)"
    return None


# safetensors dtypes read as numpy floats (bfloat16: the upper half of a float32)
_FLOATS = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "BF16": "<u2"}


def _not_finite(path: Path, tensors: dict) -> str | None:
    """The first tensor holding NaN or infinity, or None; a run that diverged saves weights that
    would decode `y' = 0` for every record (read with numpy, one tensor at a time)."""
    import numpy as np

    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        for name, entry in tensors.items():
            dtype = _FLOATS.get(entry.get("dtype"))
            if dtype is None:
                continue
            start, end = entry["data_offsets"]
            handle.seek(8 + length + start)
            values = np.frombuffer(handle.read(end - start), dtype=dtype)
            if dtype == "<u2":
                values = (values.astype(np.uint32) << 16).view(np.float32)
            if not np.isfinite(values).all():
                return name
    return None


def _vocabulary_problem(config: dict, tensors: dict) -> str | None:
    """What in config.json's vocabulary contradicts the weights or itself, in words, or None: the
    decoder indexes the token list by the rows of lm_head.weight and reads constants off the grid
    (constant_token_ids with their constant_values), so a mismatch would fail mid-decoding."""
    tokens = config.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(tok, str) for tok in tokens):
        return "tokens is not a list of token names"
    shape = tensors.get("lm_head.weight", {}).get("shape")
    if not isinstance(shape, list) or not shape:  # nsode.model.load names it among the missing keys
        return None
    rows = shape[0]
    if len(tokens) != rows or config.get("vocab_size") != rows:
        return (f"{len(tokens)} tokens and vocab_size {config.get('vocab_size')}, but lm_head.weight scores "
                f"{rows} (a vocabulary edited after training?)")
    for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if not _index(config.get(name), rows):
            return f"{name} {config.get(name)!r} is not a token of the {rows}"
    return _grid_problem(tokens, config.get("constant_token_ids"), config.get("constant_values"))


def _grid_problem(tokens: list[str], ids, values) -> str | None:
    """What is wrong with the constant grid, or None: at least two increasing values, each the
    number its token (by id) names."""
    if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
        return f"constant_token_ids and constant_values differ in length ({_length(ids)} and {_length(values)})"
    if len(ids) < 2 or not all(_index(i, len(tokens)) for i in ids):
        return f"constant_token_ids must name two or more of the {len(tokens)} tokens"
    for i, value in zip(ids, values):
        try:
            if float(tokens[i]) != value:
                return f"constant value {value!r} is not its token {tokens[i]!r} (id {i})"
        except (ValueError, TypeError):
            return f"constant token {tokens[i]!r} (id {i}) is not a number"
    if any(b <= a for a, b in zip(values, values[1:])):
        return "constant_values do not increase"
    return None


def _index(value, size: int) -> bool:
    """A whole number that indexes a list of `size` (not a flag)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size


def _length(value) -> str:
    return str(len(value)) if isinstance(value, list) else "not a list"


def share_weights(folder: Path) -> None:
    """Give the weights config.json's permissions: safetensors writes them owner-only (0600), so a
    checkpoint on a shared filesystem could not be read by colleagues or a scheduler's user."""
    (folder / WEIGHTS_NAME).chmod((folder / "config.json").stat().st_mode & 0o777)

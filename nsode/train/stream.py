"""Training examples streamed from the generator's shards, split into train/validation by skeleton.

Reads `DIR/shards/shard-*.parquet` through `nsode.data.shards` one shard at a time (only the
columns training needs) and shuffles through a buffer, so the data never has to fit in memory.
Each pass re-lists the shards, so training can start while `python -m nsode.data generate` is
still writing them. Skeletons of the Large benchmark (`nsode.data.generate.excluded_skeletons`)
are skipped even in folders generated before that list existed. The split hashes the skeleton: every ODE of a held-out skeleton (all constant
sets, all initial values) is unseen in training.
"""
from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow.parquet as pq

from nsode.data import shards
from nsode.data import tokens as vocab
from nsode.data.generate import excluded_skeletons

SHUFFLE_BUFFER = 4096
COLUMNS = ["skeleton", "skeleton_id", "expression", "tokens", "y"]


@dataclass
class Example:
    t: np.ndarray  # the solution's grid on [0, T]
    y: np.ndarray
    rows: list  # two-hot targets (id_a, id_b, w_a, w_b) ending with <eos>
    skeleton: str
    expression: str  # infix, as stored


def in_validation(skeleton_id: int, val_percent: int) -> bool:
    """Whether a skeleton is held out, from its stored stable hash (`skeleton_id`, blake2b of the
    skeleton text): the same on every machine and run, and for every ODE of the skeleton."""
    return int(skeleton_id) % 100 < val_percent


def read_examples(path: Path, t: np.ndarray, *, want_val: bool, val_percent: int, max_rows: int,
                  excluded: frozenset = frozenset()) -> list[Example]:
    """The examples of one shard that belong to the split; targets longer than `max_rows` and
    skeletons in `excluded` are skipped."""
    df = shards.read_shard(path, columns=COLUMNS)
    df = df[np.array([in_validation(i, val_percent) == want_val and s not in excluded  # an array: an empty
                      for i, s in zip(df["skeleton_id"], df["skeleton"])], dtype=bool)]  # list selects columns
    out, targets = [], {}
    for skel, expression, strings, y in zip(df["skeleton"], df["expression"], df["tokens"], df["y"]):
        if expression not in targets:
            targets[expression] = vocab.targets(vocab.from_strings(list(strings)), clip=True)
        rows = targets[expression]
        if len(rows) > max_rows:
            continue
        y = np.asarray(y, dtype=np.float64)
        out.append(Example(t[: len(y)], y, rows, skel, expression))
    return out


def held_out_copy(folder: str | Path, out: str | Path, val_percent: int = 5) -> int:
    """Copy a data folder keeping only its held-out skeletons' solutions (a validation set that
    travels light: 5% of the shards' rows); returns the rows kept."""
    folder, out = Path(folder), Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    for name in (shards.CONFIG_FILE, shards.SKELETON_FILE):
        if (folder / name).is_file():
            (out / name).write_bytes((folder / name).read_bytes())
    kept = 0
    for path in shards.shard_paths(folder):
        table = pq.read_table(path)
        table = table.filter([in_validation(i, val_percent) for i in table.column("skeleton_id").to_pylist()])
        pq.write_table(table, out / "shards" / path.name)
        kept += table.num_rows
    return kept


def folder_weights(weights, n_folders: int) -> list[int]:
    """The per-folder read counts (1 each by default); ValueError unless one whole number >= 1 per folder."""
    weights = [1] * n_folders if weights is None else list(weights)
    if len(weights) != n_folders or any(int(w) != w or w < 1 for w in weights):
        raise ValueError(f"need one whole-number weight >= 1 per data folder, got {weights} for {n_folders}")
    return [int(w) for w in weights]


def in_part(path: Path, part: tuple[int, int]) -> bool:
    """Whether a shard belongs to share k of n (`part` = (k, n)), by a stable hash of its path:
    a folder that grows while training reads it keeps every shard in the same share."""
    k, n = part
    return n == 1 or zlib.crc32(str(path).encode()) % n == k


def list_shards(folders, weights=None, part: tuple[int, int] = (0, 1)) -> list[tuple[Path, np.ndarray]]:
    """(shard, time grid) of one folder or several (e.g. generated with different seeds), in order.

    The grid is the folder's [0, T] grid from its config.json. `weights` (whole numbers, one per
    folder) lists a folder's shards that many times, so a small supplement can be seen more often.
    `part` = (k, n) keeps share k of n (`in_part`): one data worker's shards.
    """
    folders = [folders] if isinstance(folders, (str, Path)) else list(folders)
    out = []
    for folder, weight in zip(folders, folder_weights(weights, len(folders))):
        paths = [p for p in shards.shard_paths(folder) if in_part(p, part)]
        if paths:
            t = shards.read_config(folder)[0].t_train()
            out += [(p, t) for p in paths] * weight
    return out


_WARNED: set[Path] = set()  # shards this process has said it skips


def stream_examples(folders, *, split: str = "train", val_percent: int = 5, seed: int = 0,
                    limit: int | None = None, repeat: bool = False, max_rows: int = 63,
                    weights=None, part: tuple[int, int] = (0, 1)) -> Iterator[Example]:
    """Examples of one split from one data folder or a list of them. Train: shuffled (shard order
    and a buffer), `repeat` cycles forever, each folder's shards `weights` times per pass, only
    share `part` of the shards (`list_shards`). Validation: shard order, deterministic, each
    example once, at most `limit`."""
    rng = np.random.default_rng(seed)
    want_val = split == "val"
    excluded = excluded_skeletons()  # the Large test set's skeletons, also in folders generated before the list
    buffer: list[Example] = []
    produced = 0
    seen_any = False
    while True:
        paths = list_shards(folders, None if want_val else weights, part)  # re-listed each pass: new shards join in
        if not paths:
            return
        order = range(len(paths)) if want_val else rng.permutation(len(paths))
        for k in order:
            path, t = paths[k]
            try:
                examples = read_examples(path, t, want_val=want_val, val_percent=val_percent, max_rows=max_rows,
                                         excluded=excluded)
            except (OSError, ValueError) as err:  # a shard being replaced while we list: next pass
                if path not in _WARNED:  # said once, not once a pass or once by each of training and validation
                    print(f"warning: skipped {path} ({err})", file=sys.stderr)
                    _WARNED.add(path)
                continue
            if want_val:
                for ex in examples:
                    yield ex
                    produced += 1
                    if limit is not None and produced >= limit:
                        return
                continue
            buffer.extend(examples)
            while len(buffer) >= SHUFFLE_BUFFER:
                j = int(rng.integers(len(buffer)))
                buffer[j], buffer[-1] = buffer[-1], buffer[j]
                yield buffer.pop()
            seen_any = seen_any or bool(examples)
        if want_val:
            return
        if not repeat or not seen_any:  # one pass, or no training examples at all
            rng.shuffle(buffer)
            yield from buffer
            return

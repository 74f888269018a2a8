"""The training-data store: a folder of parquet shards, one row per solution.

Why parquet (not HDF5): a shard is a table whose columns have different types, and parquet
stores list columns (tokens, constants, the solution vector) natively; it is columnar, so a
reader can load only `skeleton` and `y` without touching the rest; pyarrow streams it shard by
shard (and row group by row group) into pandas or torch without holding the dataset in memory;
its files are self-describing and written in one call, which makes the write-then-rename of a
finished shard atomic; and the benchmark harness already stores its results as parquet.

Layout (the contract the training code reads):

    DIR/config.json                 the Config, plus generator_version, seed (and provenance)
    DIR/skeletons.parquet           the deduplicated skeleton list, in generation order
    DIR/shards/shard-00000.parquet  one row per solution on [0, T] (columns: SOLUTION_SCHEMA)
    DIR/extra/shard-00000.parquet   the same solutions on [T, T_extra] (EXTRA_SCHEMA); row
                                    `extra_row` of the extra shard with the same number
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nsode.data import config as cfg

SOLUTION_SCHEMA = pa.schema([
    ("ode_id", pa.int64()),            # unique in the folder: skeleton_index * n_const + constant set
    ("skeleton_index", pa.int64()),    # position in skeletons.parquet (generation order)
    ("skeleton", pa.string()),         # tokens.skeleton text, constants as c / -c
    ("skeleton_id", pa.int64()),       # stable 63-bit hash of `skeleton` (skeleton_id())
    ("expression", pa.string()),       # infix python syntax in y, tokens.parse_infix reads it
    ("tokens", pa.list_(pa.string())),  # tokens.to_strings(prefix)
    ("constants", pa.list_(pa.float64())),
    ("complexity", pa.int32()),
    ("y0_index", pa.int32()),          # which of the ODE's N_iv draws (gaps: dropped draws)
    ("y0", pa.float64()),
    ("y", pa.list_(pa.float64())),     # the solution on Config.t_train() (`grid` points)
    ("fd_residual", pa.float64()),     # max |FD derivative - f(y)| on [0, T_extra], <= fd_tolerance
    ("extra_row", pa.int64()),         # row of this solution in extra/shard-NNNNN.parquet
])
EXTRA_SCHEMA = pa.schema([
    ("ode_id", pa.int64()),
    ("y0_index", pa.int32()),
    ("y_extra", pa.list_(pa.float64())),  # the solution on Config.t_extrapolate()
])
SKELETON_SCHEMA = pa.schema([
    ("skeleton_index", pa.int64()),
    ("skeleton", pa.string()),
    ("skeleton_id", pa.int64()),
    ("expression", pa.string()),       # the simplified expression the skeleton came from
    ("complexity", pa.int32()),
    ("block", pa.int64()),             # the candidate block that found it (see generate.py)
])
CONFIG_FILE, SKELETON_FILE = "config.json", "skeletons.parquet"


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.parquet"


def shard_paths(folder: str | Path) -> list[Path]:
    """The finished solution shards of a folder, sorted (extra/ and temporary files excluded)."""
    return sorted((Path(folder) / "shards").glob("shard-*.parquet"))


def why_no_shards(folder: str | Path) -> str:
    """Why `folder` holds no solution shards, in words a user can act on."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder (give a folder written by python -m nsode.data generate)"
    if not folder.is_dir():
        return f"{folder}: no such folder"
    if (folder / SKELETON_FILE).is_file():
        return (f"{folder} holds a skeleton list only (generate --skeletons-only): run the same generate "
                "command without --skeletons-only to solve it")
    return f"{folder}: no shards (expected {folder}/shards/shard-*.parquet from python -m nsode.data generate)"


def extra_path(shard: str | Path) -> Path:
    """The [T, T_extra] shard that belongs to a solution shard."""
    shard = Path(shard)
    return shard.parent.parent / "extra" / shard.name


class ShardError(ValueError):
    """A shard or skeleton list that is not a whole parquet file (a copy cut short, a full disk);
    the message names it and how to make it again."""


def _readable(read, path, *args, **kwargs):
    try:
        return read(path, *args, **kwargs)
    except (pa.ArrowInvalid, OSError) as err:
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ShardError(f"{path}: not a readable parquet file ({why}); delete it and run the same "
                         "`python -m nsode.data generate` command to make it again") from None


def read_schema(path: str | Path) -> pa.Schema:
    """A shard's or skeleton list's schema with its metadata (no data is read); ShardError if unreadable."""
    return _readable(pq.read_schema, path)


def read_table(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """A shard or skeleton list as an arrow table; ShardError, naming it, if it is unreadable."""
    return _readable(pq.read_table, path, columns=columns)


def read_shard(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    return read_table(path, columns).to_pandas()


def iter_rows(folder: str | Path, columns: list[str] | None = None) -> Iterator[dict]:
    """Every solution of a folder as a dict, shard by shard (one shard in memory at a time)."""
    for path in shard_paths(folder):
        for batch in _readable(pq.ParquetFile, path).iter_batches(columns=columns):
            yield from batch.to_pylist()


def read_config(folder: str | Path) -> tuple[cfg.Config, dict]:
    """(Config, provenance) of a folder; provenance holds generator_version, seed and the rest."""
    data = json.loads((Path(folder) / CONFIG_FILE).read_text())
    if not isinstance(data, dict):
        raise cfg.ConfigError(f"not a generator's configuration (a JSON object), but a {type(data).__name__}")
    names = set(cfg.Config.__dataclass_fields__)
    return cfg.from_dict({k: v for k, v in data.items() if k in names}), \
        {k: v for k, v in data.items() if k not in names}


def write_table_atomic(table: pa.Table, path: Path) -> None:
    """Write then rename, so a file under its final name is always complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)

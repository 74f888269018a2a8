"""The result store of a sweep: a folder of parquet parts, written only by the driver.

Each part is written to a temporary name and renamed into place, so a part is either complete
or absent, whatever kills the driver. Reading takes the newest row per (task, method), so a
row that was written twice (a crash between writing and compacting) never counts twice.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from bench.rows import KEY as _KEY, cut_by_time, lost_with_its_workers, stored_types

KEY = list(_KEY)
SWEEP_FILE = "sweep.json"
_SHAPES = {"runs": list, "datasets": list, "data_digests": dict, "rescored": list}  # what readers rely on


class FolderBusy(ValueError):
    """Another process is writing to the result folder; the message names it."""


@contextmanager
def sole_writer(folder: Path):
    """Hold `folder`'s lock while rows are written: two `bench run` commands into one folder at once
    would each run every pair, and one start's record in sweep.json would be lost. The lock goes
    with the process, so a killed sweep leaves none behind; where the file system takes no locks
    (not POSIX, some network mounts) the command runs unguarded, as before."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if _locked(handle, folder):
            os.ftruncate(handle, 0)
            os.write(handle, f"pid {os.getpid()}".encode())
            for stale in (folder / "parts").glob(".*.tmp"):  # a part whose write a kill cut short: no writer now
                stale.unlink(missing_ok=True)
        yield
    finally:
        os.close(handle)


def _locked(handle: int, folder: Path) -> bool:
    """True once `handle` holds the lock, False where locks are not to be had; FolderBusy, naming
    the holder, when another process holds it."""
    try:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        holder = os.read(handle, 32).decode(errors="replace").strip()
        raise FolderBusy(f"{folder}: another process{f' ({holder})' if holder else ''} is writing results "
                         "here; wait for it to end, or write to another --out folder") from None
    except (ImportError, OSError):
        return False


class SweepFileError(ValueError):
    """A result folder's sweep.json that is missing, unreadable or not what `bench run` writes."""


def read_sweep_file(folder: str | Path) -> dict:
    """A result folder's sweep.json (the sweep's settings and starts); SweepFileError, naming the
    file, when it is missing, not JSON, or not shaped as `bench run` writes it (a hand edit)."""
    path = Path(folder) / SWEEP_FILE
    try:
        config = json.loads(path.read_text())
    except OSError as err:
        raise SweepFileError(f"{path}: {err.strerror or err}") from None
    except ValueError as err:
        raise SweepFileError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(config, dict):
        raise SweepFileError(f"{path}: not a sweep file (a JSON {type(config).__name__}, not an object)")
    wrong = [key for key, kind in _SHAPES.items() if key in config and not isinstance(config[key], kind)]
    if wrong or not all(isinstance(run, dict) for key in ("runs", "rescored") for run in config.get(key) or []):
        raise SweepFileError(f"{path}: not a sweep file as `bench run` writes it "
                             f"({', '.join(wrong) or 'runs'} of the wrong kind)")
    return config


READ_ATTEMPTS = 5  # listings of the parts a read tries while a writer replaces them under it


class ResultStore:
    """The rows of one sweep folder (`FOLDER/parts/*.parquet`): `read()` gives one row per (task,
    method), the newest, as a pandas table (empty where nothing is stored yet); the driver adds
    rows with `append` and writes them with `flush`."""

    def __init__(self, folder: str | Path, flush_rows: int = 25, flush_seconds: float = 1.0):
        self.folder = Path(folder)
        self.parts = self.folder / "parts"  # created by the first write: reading a mistyped path creates nothing
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        self._buffer: list[dict] = []
        self._last_flush = time.monotonic()

    def read(self) -> pd.DataFrame:
        """All stored rows, one per (task, method): the most recently finished one."""
        for attempt in range(READ_ATTEMPTS):
            files = sorted(self.parts.glob("*.parquet"))
            if not files:
                return pd.DataFrame()
            try:
                frames = [_part(f) for f in files]
                break
            except ForeignPart:
                if attempt + 1 == READ_ATTEMPTS or all(f.exists() for f in files):
                    raise
                # a part gone since the listing: `bench score` replaced the parts while they were read
        frame = pd.concat(frames, ignore_index=True)
        frame["equation_id"] = frame["equation_id"].astype(str)  # parts written before ids were text held integers
        frame = frame.sort_values("finished_at", kind="stable")
        return frame.drop_duplicates(KEY, keep="last").reset_index(drop=True)

    def finished(self, versions: dict[str, str], limits: dict[str, float] | None = None) -> set[tuple]:
        """Keys of rows already stored for the current version of each method; given each
        method's current time limit, a result cut short by a shorter limit does not count (it is
        redone): a timeout, or a run that stopped at its time limit (`bench.rows.cut_by_time`).
        Nor does a task lost with its Dask workers (`bench.rows.lost_with_its_workers`)."""
        frame = self.read()
        if frame.empty:
            return set()
        keep = frame["method_version"] == frame["method"].map(versions)
        if limits and "time_limit" in frame:
            shorter = frame["time_limit"] < frame["method"].map(limits).fillna(-float("inf"))
            metadata = frame["metadata"] if "metadata" in frame else [None] * len(frame)
            cut = [cut_by_time(status, meta) for status, meta in zip(frame["status"], metadata)]
            keep &= ~(pd.Series(cut, index=frame.index) & shorter)
        if "reason" in frame:
            keep &= ~pd.Series([lost_with_its_workers(status, reason) for status, reason
                                in zip(frame["status"], frame["reason"])], index=frame.index, dtype=bool)
        return set(frame.loc[keep, KEY].itertuples(index=False, name=None))

    def under_longer_limits(self, versions: dict[str, str], limits: dict[str, float],
                            frame: pd.DataFrame | None = None) -> int:
        """How many stored rows of the current method versions ran under a longer time limit than
        `limits` now gives: `finished` keeps them (a shorter limit does not redo a finished result),
        so a resume says how many it keeps. `frame`: the rows to count (default: the folder's; a
        resume passes its own grid's, as the folder may hold other sweeps' rows)."""
        frame = self.read() if frame is None else frame
        if frame.empty or "time_limit" not in frame:
            return 0
        current = frame["method_version"] == frame["method"].map(versions)
        return int((current & (frame["time_limit"] > frame["method"].map(limits))).sum())

    def append(self, row: dict) -> None:
        self._buffer.append({**row, "finished_at": time.time()})
        if len(self._buffer) >= self.flush_rows or time.monotonic() - self._last_flush > self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._write(pd.DataFrame(self._buffer))
            self._buffer = []
        self._last_flush = time.monotonic()

    def replace_all(self, frame: pd.DataFrame) -> None:
        """Write `frame` as one part and remove the parts it replaces (compaction, re-scoring)."""
        old = sorted(self.parts.glob("*.parquet"))
        self._write(frame)
        for file in old:
            file.unlink()

    def _write(self, frame: pd.DataFrame) -> None:
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}.parquet"
        self.parts.mkdir(parents=True, exist_ok=True)
        tmp = self.parts / f".{name}.tmp"
        stored_types(frame).to_parquet(tmp, index=False, compression="zstd")  # text columns: 40% smaller than snappy
        os.replace(tmp, self.parts / name)


class ForeignPart(ValueError):
    """A file in parts/ that is not a part this store wrote (unreadable, or without its columns)."""


def _part(file: Path) -> pd.DataFrame:
    """One stored part; a `ForeignPart` error naming the file when it is not one."""
    try:
        frame = pd.read_parquet(file)
    except (OSError, ValueError) as err:  # pyarrow raises both for a file that is not parquet
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ForeignPart(f"{file} is not a readable result part ({reason}): move it out of {file.parent}") from None
    missing = [column for column in (*KEY, "finished_at") if column not in frame]
    if missing:
        raise ForeignPart(f"{file} is not a result part (no column {', '.join(missing)}): "
                          f"move it out of {file.parent}")
    return frame


class DuplicateResults(ValueError):
    """Two result folders being combined hold a row for the same (task, method)."""


def combine(folders, methods: set[str] | None = None) -> pd.DataFrame:
    """The rows of several result folders as one table (only those of `methods`, when given). The
    same (task, method) in two folders is a `DuplicateResults` error naming it: which of the two
    counts is the user's call, not ours; a method left out is no one's call."""
    frames = []
    for folder in folders:
        rows = ResultStore(folder).read()
        if methods is not None and not rows.empty:
            rows = rows[rows["method"].isin(methods)]
        if not rows.empty:
            frames.append(rows.assign(_folder=str(folder)))
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    twice = frame[frame.duplicated(KEY, keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        where = twice.loc[(twice[KEY] == first[KEY]).all(axis=1), "_folder"].tolist()
        raise DuplicateResults(
            f"{where[0]} and {where[1]} both hold {first['method']} on {first['dataset']}/{first['equation_id']}/"
            f"{first['y0_index']} (sigma {first['noise']:g}, n {first['n']}, seed {first['seed']}); "
            f"combine folders of different tasks or methods")
    return frame.drop(columns="_folder")

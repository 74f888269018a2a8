"""The result store of a sweep: a folder of parquet parts, written only by the driver.

Each part is written to a temporary name and renamed into place, so a part is either complete
or absent, whatever kills the driver. Reading takes the newest row per (task, method), so a
row that was written twice (a crash between writing and compacting) never counts twice.
"""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pandas as pd

from bench.rows import KEY as _KEY

KEY = list(_KEY)


class ResultStore:
    def __init__(self, folder: str | Path, flush_rows: int = 25, flush_seconds: float = 1.0):
        self.folder = Path(folder)
        self.parts = self.folder / "parts"
        self.parts.mkdir(parents=True, exist_ok=True)
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        self._buffer: list[dict] = []
        self._last_flush = time.monotonic()

    def read(self) -> pd.DataFrame:
        """All stored rows, one per (task, method): the most recently finished one."""
        files = sorted(self.parts.glob("*.parquet"))
        if not files:
            return pd.DataFrame()
        frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        frame = frame.sort_values("finished_at", kind="stable")
        return frame.drop_duplicates(KEY, keep="last").reset_index(drop=True)

    def finished(self, versions: dict[str, str]) -> set[tuple]:
        """Keys of rows already stored for the current version of each method."""
        frame = self.read()
        if frame.empty:
            return set()
        current = frame["method_version"] == frame["method"].map(versions)
        return set(frame.loc[current, KEY].itertuples(index=False, name=None))

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
        tmp = self.parts / f".{name}.tmp"
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, self.parts / name)

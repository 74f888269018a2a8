"""The shard store's own contract (nsode.data.shards): a shard appears whole or not at all."""
from pathlib import Path

import pyarrow as pa
import pytest

from nsode.data import shards as store


def test_a_failed_write_leaves_no_file_under_the_final_name(tmp_path, monkeypatch):
    """write-then-rename: a write cut short (full disk, kill) never leaves a partial shard that a resumed
    generation would take for finished, and never damages the complete file already there."""
    path = tmp_path / "shards" / store.shard_name(0)
    table = pa.Table.from_pylist([{"ode_id": 1, "y0_index": 0, "y_extra": [1.0, 2.0]}], schema=store.EXTRA_SCHEMA)
    real = store.pq.write_table

    def cut_short(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 partial")
        raise OSError("No space left on device")

    monkeypatch.setattr(store.pq, "write_table", cut_short)
    with pytest.raises(OSError):
        store.write_table_atomic(table, path)
    assert not path.exists() and store.shard_paths(tmp_path) == []
    monkeypatch.setattr(store.pq, "write_table", real)
    store.write_table_atomic(table, path)
    monkeypatch.setattr(store.pq, "write_table", cut_short)
    with pytest.raises(OSError):
        store.write_table_atomic(table, path)
    assert store.read_table(path).equals(table)  # the finished shard is intact


def test_shards_are_listed_in_name_order_whatever_the_directory_order(tmp_path, monkeypatch):
    """Shard order is the data order (iter_rows, stats.expressions, the validation stream): never the file
    system's directory order."""
    (tmp_path / "shards").mkdir()
    for k in (2, 0, 10, 1):
        (tmp_path / "shards" / store.shard_name(k)).write_bytes(b"")
    (tmp_path / "shards" / ".shard-00003.parquet.77.tmp").write_bytes(b"")
    real = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(sorted(real(self, pattern), reverse=True)))
    assert [p.name for p in store.shard_paths(tmp_path)] == [store.shard_name(k) for k in (0, 1, 2, 10)]

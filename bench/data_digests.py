"""Which data a result folder's rows were computed on: a digest of each data file, keyed by what
the rows are keyed by, so that a resumed sweep or a re-scoring never joins other data to stored
rows under the same dataset name. Built-in datasets too: an edited or regenerated one is other
data (a folder written before they were recorded takes them as they are now). A CSV file's
entry also names the columns read as t and y: the same file read from other columns is other data."""
from __future__ import annotations

import hashlib
from pathlib import Path

from bench import datasets
from core.trajectories import TY, column_names


def digests(names, missing_ok: bool = False, columns: dict[str, tuple[str, str]] | None = None) -> dict[str, dict]:
    """{"dataset" for a JSON file or "dataset/file" for a CSV trajectory: its file, the file's
    SHA-256 and, for a CSV file, the columns read as t and y (`columns` per dataset argument,
    default t and y)}; with `missing_ok`, a dataset argument that no longer resolves is left out."""
    found = {}
    for name in names:
        try:
            files = datasets.data_files(name)
        except datasets.DatasetError:
            if missing_ok:
                continue
            raise
        for key, file in files.items():
            found[key] = {"file": str(file.resolve()), "sha256": hashlib.sha256(file.read_bytes()).hexdigest()[:16]}
            if "/" in key:  # a CSV trajectory (`datasets.data_files`)
                found[key]["columns"] = list(column_names((columns or {}).get(name, TY)))
    return found


def stored_columns(name: str, stored: dict) -> tuple[str, str]:
    """The columns a result folder's digests `stored` say dataset argument `name` was read from
    (t and y for a JSON dataset, or where none are recorded, as before columns could be chosen)."""
    try:
        keys = datasets.data_files(name)
    except datasets.DatasetError:
        return TY
    for key in keys:
        entry = stored.get(key)
        if isinstance(entry, dict) and "columns" in entry:
            return tuple(entry["columns"])
    return TY


def check_unchanged(now: dict[str, dict], before: dict, folder: Path, advice: str) -> None:
    """DatasetError, naming both files, when data in `now` differs from what `before` (a folder's
    stored digests) recorded under the same key, or when a name the folder holds as a JSON
    dataset comes back as CSV files or the other way round (their rows would share keys)."""
    for key, entry in now.items():
        within = _other_kind(key, now)
        if within:
            raise datasets.DatasetError(f"{entry['file']} and {within} are different data under one dataset name, "
                                        f"{key.split('/')[0]!r}: rename one")
        old = before.get(key) or before.get(entry["file"])  # folders written before session 44 keyed by path
        if old is None:
            clash = _other_kind(key, before)
            if clash:
                raise datasets.DatasetError(
                    f"{entry['file']} and {clash} are different data under one dataset name, "
                    f"{key.split('/')[0]!r}, whose results {folder} stores: rename one, or {advice}")
            continue
        old = old if isinstance(old, dict) else {"file": entry["file"], "sha256": old}
        if old["sha256"] == entry["sha256"]:
            then, read = tuple(old.get("columns", TY)), tuple(entry.get("columns", TY))
            if then != read:
                raise datasets.DatasetError(
                    f"{entry['file']} was read as t = {then[0]}, y = {then[1]} for the results {folder} stores, and "
                    f"as t = {read[0]}, y = {read[1]} now: --columns {then[0]} {then[1]} reads it as before, or {advice}")
            continue
        _read(Path(entry["file"]), tuple(entry.get("columns", TY)))  # a broken file says so, not that it changed
        if old["file"] == entry["file"]:
            raise datasets.DatasetError(f"{entry['file']} changed since {folder} stored results for it: {advice}")
        raise datasets.DatasetError(f"{entry['file']} and {old['file']} hold different data under one name, "
                                    f"{key!r}, whose results {folder} stores: rename one, or {advice}")


def _other_kind(key: str, before: dict) -> str | None:
    """The file of a stored entry of the same dataset name but the other kind (JSON vs CSV), if any."""
    name, csv = key.split("/")[0], "/" in key
    for other, entry in before.items():
        if isinstance(entry, dict) and other.split("/")[0] == name and ("/" in other) != csv:
            return entry["file"]
    return None


def _read(file: Path, columns: tuple[str, str] = TY) -> None:
    """Read one user data file as its dataset would be read; DatasetError if it cannot be used."""
    if file.suffix.lower() == ".csv":
        datasets.load_csv(file, columns)
    else:
        datasets.load_spec_trajectories(datasets.read_spec(file))

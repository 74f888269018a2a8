"""Which data a result folder's rows were computed on: a digest of each data file, keyed by what
the rows are keyed by, so that a resumed sweep or a re-scoring never joins other data to stored
rows under the same dataset name. Built-in datasets too: an edited or regenerated one is other
data (a folder written before they were recorded takes them as they are now)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from bench import datasets


def digests(names, missing_ok: bool = False) -> dict[str, dict[str, str]]:
    """{"dataset" for a JSON file or "dataset/file" for a CSV trajectory: its file and the file's
    SHA-256}; with `missing_ok`, a dataset argument that no longer resolves is left out."""
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
    return found


def check_unchanged(now: dict[str, dict[str, str]], before: dict, folder: Path, advice: str) -> None:
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
            continue
        _read(Path(entry["file"]))  # a broken file says what is wrong with it, not that it changed
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


def _read(file: Path) -> None:
    """Read one user data file as its dataset would be read; DatasetError if it cannot be used."""
    if file.suffix.lower() == ".csv":
        datasets.load_csv(file)
    else:
        datasets.load_spec_trajectories(datasets.read_spec(file))

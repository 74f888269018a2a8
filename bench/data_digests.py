"""Which data a result folder's rows were computed on: a digest of each data file, keyed by what
the rows are keyed by, so that a resumed sweep or a re-scoring never joins other data to stored
rows under the same dataset name. Built-in datasets too: an edited or regenerated one is other
data (a folder written before they were recorded takes them as they are now). A CSV file's
entry also says how it was read (`datasets.CsvReading`: the columns read as t and y, the column
that tells its records apart): the same file read another way is other data."""
from __future__ import annotations

import hashlib
from pathlib import Path

from bench import datasets


def digests(names, missing_ok: bool = False, readings: dict[str, datasets.CsvReading] | None = None) -> dict[str, dict]:
    """{"dataset" for a JSON file or "dataset/file" for a CSV file: its file, the file's SHA-256
    and, for a CSV file, how it is read (`readings` per dataset argument, default t and y, one
    record a file)}; with `missing_ok`, a dataset argument that no longer resolves is left out."""
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
            if "/" in key:  # a CSV file (`datasets.data_files`)
                found[key].update((readings or {}).get(name, datasets.CsvReading()).as_entry())
    return found


def stored_reading(name: str, stored: dict) -> datasets.CsvReading:
    """How a result folder's digests `stored` say dataset argument `name` was read (t and y, one
    record a file, for a JSON dataset or where nothing is recorded, as before it could be chosen)."""
    try:
        keys = datasets.data_files(name)
    except datasets.DatasetError:
        return datasets.CsvReading()
    for key in keys:
        entry = stored.get(key)
        if isinstance(entry, dict) and "columns" in entry:
            return datasets.CsvReading.of_entry(entry)
    return datasets.CsvReading()


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
            then, read = datasets.CsvReading.of_entry(old), datasets.CsvReading.of_entry(entry)
            if then != read:
                raise datasets.DatasetError(f"{entry['file']} was read {_shown(then)} for the results {folder} "
                                            f"stores, and {_shown(read)} now: {_options(then)} reads it as before, "
                                            f"or {advice}")
            continue
        _read(Path(entry["file"]), datasets.CsvReading.of_entry(entry))  # a broken file says so, not that it changed
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


def _shown(reading: datasets.CsvReading) -> str:
    """How a CSV file was read, in words."""
    records = f", records told apart by {reading.by}" if reading.by else ""
    return f"as t = {reading.columns[0]}, y = {reading.columns[1]}{records}"


def _options(reading: datasets.CsvReading) -> str:
    """The `bench run` options that read a CSV file as `reading` says."""
    return f"--columns {' '.join(reading.columns)}" + (f" --by {reading.by}" if reading.by else " without --by")


def _read(file: Path, reading: datasets.CsvReading = datasets.CsvReading()) -> None:
    """Read one user data file as its dataset would be read; DatasetError if it cannot be used."""
    if file.suffix.lower() == ".csv":
        datasets.load_csv(file, reading)
    else:
        datasets.load_spec_trajectories(datasets.read_spec(file))

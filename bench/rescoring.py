"""Recompute the scores of stored predictions without running any method again."""
from __future__ import annotations

import json
import time
from pathlib import Path

from joblib import Parallel, delayed

from bench import data_digests, datasets, provenance
from bench.scoring import score
from bench.store import SWEEP_FILE, ResultStore, SweepFileError, read_sweep_file, sole_writer
from odecore.files import write_text_atomic


def rescore(folder: Path, jobs: int = 1) -> int:
    """Re-score every ok prediction in a result folder; returns how many were scored."""
    with sole_writer(Path(folder)):
        return _rescore(Path(folder), jobs)


def _rescore(folder: Path, jobs: int) -> int:
    store = ResultStore(folder)
    rows = store.read()
    if rows.empty:
        return 0
    sweep = folder / SWEEP_FILE  # where the rows' datasets are named
    config = read_sweep_file(folder)
    if "datasets" not in config:
        raise SweepFileError(f"{sweep}: names no datasets; scoring needs the sweep file `bench run` writes")
    stored = config.get("data_digests", {})
    readings = {name: data_digests.stored_reading(name, stored) for name in config["datasets"]}  # as they were read
    data_digests.check_unchanged(data_digests.digests(config["datasets"], missing_ok=True, readings=readings),
                                 stored, folder,
                                 advice="restore the data the rows were computed on, or run the sweep into a new folder")
    trajectories = {}
    gone = {}
    for name in config["datasets"]:
        try:
            loaded = datasets.load(name, readings[name])
        except datasets.DatasetError as err:  # only an error if rows need it (below)
            gone[name] = str(err)
            continue
        for tr in loaded:
            trajectories[(tr.dataset, tr.equation_id, int(tr.y0_index))] = tr
    todo = rows.index[rows["status"] == "ok"]
    keys = [(rows.at[i, "dataset"], rows.at[i, "equation_id"], int(rows.at[i, "y0_index"])) for i in todo]
    missing = [k for k in keys if k not in trajectories]
    if missing:
        why = f" ({'; '.join(gone.values())})" if gone else ""
        raise datasets.DatasetError(f"ground truth for {'/'.join(map(str, missing[0]))} is no longer in its "
                                    f"dataset{why}")
    scores = Parallel(n_jobs=jobs)(
        delayed(score)(rows.at[i, "expression"], trajectories[k]) for i, k in zip(todo, keys))
    for i, result in zip(todo, scores):
        for column, value in result.as_row().items():
            rows.at[i, column] = value
    store.replace_all(rows)
    _record(sweep, config, len(todo))
    return len(todo)


def _record(sweep: Path, config: dict, scored: int) -> None:
    """Note the re-scoring in sweep.json (when, at which commit, how many scores), so that a report
    built from these rows says its scores are later than its fits."""
    entry = {"at": time.time(), "commit": provenance.git_commit(), "scored": scored}
    config["rescored"] = [*config.get("rescored", []), entry]
    write_text_atomic(json.dumps(config, indent=1) + "\n", sweep)

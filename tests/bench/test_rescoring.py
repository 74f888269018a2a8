"""`bench score` (bench.rescoring) on a two-task oracle sweep run in-process (about a second): only ok
rows are rescored, each rescoring is recorded, a trajectory gone from its dataset is named."""
import json

import numpy as np
import pandas as pd
import pytest

from bench import datasets, registry, rescoring, runner
from bench.store import ResultStore


@pytest.fixture
def swept(tmp_path):
    out = tmp_path / "s"
    runner.run(runner.Sweep(datasets=("textbook",), methods=(registry.discover()["truth"],), subset={"textbook": 2},
                            out=str(out)), progress=False)
    return out


def test_only_ok_rows_are_rescored_and_a_failed_row_keeps_its_record(swept):
    rows = ResultStore(swept).read()
    rows.loc[0, ["status", "reason", "score_status", "r2_interp"]] = ["error", "RuntimeError: boom", None, np.nan]
    ResultStore(swept).replace_all(rows)
    assert rescoring.rescore(swept) == 1
    again = ResultStore(swept).read().set_index("equation_id").loc[rows.loc[0, "equation_id"]]
    assert again["status"] == "error" and pd.isna(again["score_status"]) and np.isnan(again["r2_interp"])


def test_each_rescoring_is_kept_in_the_sweep_record(swept):
    rescoring.rescore(swept)
    rescoring.rescore(swept)
    assert [entry["scored"] for entry in json.loads((swept / "sweep.json").read_text())["rescored"]] == [2, 2]


def test_a_row_whose_trajectory_left_its_dataset_is_named_not_a_key_error(swept):
    rows = ResultStore(swept).read()
    rows.loc[0, "equation_id"] = "gone"
    ResultStore(swept).replace_all(rows)
    with pytest.raises(datasets.DatasetError, match="ground truth for textbook/gone/0 is no longer in its dataset"):
        rescoring.rescore(swept)

"""benchmarks/compare_sweeps.py: a refactor's rows against the rows before it, counted per method."""
import importlib.util
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_sweeps.py"


def _script():
    spec = importlib.util.spec_from_file_location("compare_sweeps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(method, noise, expressions):
    return pd.DataFrame([{"dataset": "d", "equation_id": f"e{k}", "y0_index": 0, "noise": noise, "n": 128, "seed": 0,
                          "method": method, "expression": e} for k, e in enumerate(expressions)])


def test_rows_on_one_side_only_are_counted_as_such_never_as_a_negative_count():
    script = _script()
    before = pd.concat([_rows("a", 0.0, ["y", "-y"]), _rows("b", 0.0, ["y"])])
    after = pd.concat([_rows("a", 0.0, ["y", "2*y"]), _rows("a", 0.01, ["y", "y", "y"]), _rows("b", 0.0, ["y"]),
                       _rows("c", 0.0, ["y"])])
    diff = script.differences(before, after, set(), 0.0)
    lines = [script.summary(m, before[before["method"] == m], diff[diff["method"] == m]) for m in ("a", "b", "c")]
    assert lines[0] == "a: 1 of 2 rows identical, 3 only after; differing fields: ['(row)', 'expression']"
    assert lines[1] == "b: 1 of 1 rows identical"
    assert lines[2] == "c: 0 of 0 rows identical, 1 only after; differing fields: ['(row)']"

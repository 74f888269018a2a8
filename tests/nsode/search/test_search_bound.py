"""benchmarks/search_ab.py: its `bound` table (the search against the true law refitted), and its
reading of cached beams."""
import math
import sys
from pathlib import Path

import sympy

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from search_ab import bound_table  # noqa: E402


def test_ceiling_only_laws_are_split_by_where_the_law_alone_lies():
    rows = [
        {"case": "simple x1 s0.01 #0", "search": True, "ceiling": True, "gap": 0.0},
        {"case": "simple x100 s0.01 #1", "search": False, "ceiling": True, "gap": 3.0},  # a tie it lost
        {"case": "simple x0.01 s0.01 #2", "search": False, "ceiling": True, "gap": 8.0},  # the data prefer others
        {"case": "simple x1 s0.02 #0", "search": False, "ceiling": True, "gap": math.inf},  # its fits all unsafe
        {"case": "cpu-s1 s0.01 law-3", "search": True, "ceiling": False, "gap": 6.0},
    ]
    table = bound_table(rows, window_units=5.0)
    simple = table.loc["simple s0.01"]
    assert (simple.trajectories, simple.search, simple.ceiling, simple.either) == (3, 1, 3, 3)
    assert simple["ceiling only, law within window"] == 1 and simple["ceiling only, law above window"] == 1
    assert table.loc["simple s0.02", "ceiling only, law above window"] == 1
    assert table.loc["cpu-s1 s0.01", "either"] == 1 and table.loc["cpu-s1 s0.01", "ceiling"] == 0
    assert table.loc["all"].trajectories == 5 and table.loc["all"].either == 5


def test_a_cached_beam_expression_no_parser_reads_is_left_out():
    # the scale-invariant reader's back-transform can write `inf`; the search drops such a term anyway
    from search_ab import _read

    read = _read(["y*(0.5 - 0.1*y)", "2*inf*y", "Abs(y)**0.5"])
    assert len(read) == 2 and all(expr.free_symbols and not expr.has(sympy.oo) for expr in read)

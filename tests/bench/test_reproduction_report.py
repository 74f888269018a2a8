"""The reproduction report pairs its two leading methods task by task, the oracle aside."""
import numpy as np
import pandas as pd

from bench import claims, reproduction
from bench.rows import COLUMNS


def rows(method, solved):
    out = []
    for i, ok in enumerate(solved):
        row = dict.fromkeys(COLUMNS, np.nan)
        row.update(dataset="classic", equation_id=f"e{i}", y0_index=0, noise=0.01, n=128, seed=0, method=method,
                   status="ok", score_status="ok", truth_kind="solution", r2_interp=0.99 if ok else 0.5,
                   r2_extrap=0.99 if ok else 0.5, complexity=5, truth_complexity=5, fit_time=1.0,
                   setup_time=0.0, time_limit=60, finished_at=1e9 + i)
        out.append(row)
    return out


def test_the_report_pairs_the_two_leading_methods_with_a_sign_test(tmp_path):
    frame = pd.DataFrame(rows("truth", [True] * 8) + rows("leader", [True] * 8) + rows("second", [True] * 2 + [False] * 6)
                         + rows("third", [False] * 8))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    section = text.split("## The two leading methods, task by task")[1].split("## Time per method")[0]
    assert "leader / second" in section and "8 / 2 (6 vs 0, p 0.031)" in section
    assert "truth" not in section and "third" not in section


def test_one_competitor_gets_no_pairing(tmp_path):
    frame = pd.DataFrame(rows("truth", [True] * 3) + rows("alone", [True] * 3))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    assert "task by task" not in text

"""The reproduction report pairs its two leading methods task by task, the oracle aside, and times
a resumed sweep by its starts."""
import json

import numpy as np
import pandas as pd
import pytest

from bench import claims, reproduction
from bench.rows import COLUMNS

MACHINE = {"cpu_count": 2, "processor": "x86_64", "machine": "x86_64", "platform": "Linux", "python": "3.11"}


def rows(method, solved):
    out = []
    for i, ok in enumerate(solved):
        row = dict.fromkeys(COLUMNS, np.nan)
        row.update(dataset="classic", equation_id=f"e{i}", y0_index=0, noise=0.01, n=128, n_observed=128, seed=0,
                   method=method, status="ok", score_status="ok", truth_kind="solution", r2_interp=0.99 if ok else 0.5,
                   r2_extrap=0.99 if ok else 0.5, complexity=5, truth_complexity=5, fit_time=1.0,
                   setup_time=0.0, time_limit=60, finished_at=1e9 + i)
        out.append(row)
    return out


def test_the_report_pairs_the_two_leading_methods_with_a_sign_test(tmp_path):
    frame = pd.DataFrame(rows("truth", [True] * 8) + rows("leader", [True] * 8) + rows("second", [True] * 2 + [False] * 6)
                         + rows("third", [False] * 8))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    section = text.split("## The two leading methods, task by task")[1].split("## Time per method")[0]
    assert "leader / second" in section and "8 / 2 (6 vs 0; laws 6 vs 0, p 0.031)" in section
    assert "truth" not in section and "third" not in section
    board = text.split("## Leaderboard")[1].split("## The two leading")[0]
    assert "| truth (oracle) " in board and "| leader " in board  # the oracle tops the board, marked as one
    assert f"]({reproduction.LEADERS_FIGURE})" in section and (tmp_path / reproduction.LEADERS_FIGURE).stat().st_size
    assert reproduction.LEADERS_FIGURE in reproduction.PUBLISHED
    from bench import paper

    index = paper.write_outputs(frame, tmp_path, claims_report=reproduction.REPORT).read_text()
    assert f"![leaders]({reproduction.LEADERS_FIGURE})" in index  # the figures' index shows it too


def test_one_competitor_gets_no_pairing_and_an_earlier_pairing_goes_everywhere(tmp_path):
    """A rebuild with one competitor left the previous run's leaders.png beside the new report, and
    in the folder it was published to."""
    paired = pd.DataFrame(rows("truth", [True] * 3) + rows("alone", [True] * 3) + rows("other", [False] * 3))
    reproduction.write(paired, tmp_path, tmp_path, "python -m bench paper", claims.Roles())
    reproduction.publish(tmp_path, tmp_path / "docs")
    assert (tmp_path / "docs" / reproduction.LEADERS_FIGURE).is_file()
    frame = pd.DataFrame(rows("truth", [True] * 3) + rows("alone", [True] * 3))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    assert "task by task" not in text and not (tmp_path / reproduction.LEADERS_FIGURE).exists()
    reproduction.publish(tmp_path, tmp_path / "docs")
    assert not (tmp_path / "docs" / reproduction.LEADERS_FIGURE).exists()


def test_a_resumed_sweep_counts_each_start_s_own_time_not_the_pause(tmp_path):
    first, resumed = rows("a", [True] * 4), rows("b", [True] * 2)
    for i, row in enumerate(first):
        row["finished_at"] = 1000.0 + 100 * (i + 1)  # the first start ran 400 s
    for i, row in enumerate(resumed):
        row["finished_at"] = 90_000.0 + 30 * (i + 1)  # a day later, 60 s more
    runs = [{"commit": "a" * 40, "started_at": 1000.0}, {"commit": "f" * 40, "started_at": 5000.0},
            {"commit": "b" * 40, "started_at": 90_000.0}]  # the middle start found nothing to do
    frame = pd.DataFrame(first + resumed)
    assert reproduction.starts(frame, runs) == [("a" * 40, 4, 400.0), ("b" * 40, 2, 60.0)]
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": [{**run, "machine": MACHINE} for run in runs]}))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    assert "0.13 h (460 s) over 2 starts (aaaaaaa: 0.11 h (400 s), 4 rows; bbbbbbb: 0.02 h (60 s), 2 rows)" in text


def test_rows_stored_before_the_first_start_are_counted_apart_from_its_wall_time(tmp_path):
    copied, ran = rows("a", [True] * 3), rows("b", [True] * 2)
    for i, row in enumerate(copied):
        row["finished_at"] = 500.0 + i  # from another store of the same grid, a day before
    for i, row in enumerate(ran):
        row["finished_at"] = 90_000.0 + 50 * (i + 1)
    runs = [{"commit": "b" * 40, "started_at": 90_000.0, "machine": MACHINE}]
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": runs}))
    frame = pd.DataFrame(copied + ran)
    assert reproduction.stored_before(frame, runs) == 3
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    assert ("0.03 h (100 s) over 1 start (bbbbbbb: 0.03 h (100 s), 2 rows); "
            "3 rows were stored before the first start") in text
    text = reproduction.write(pd.DataFrame(copied), tmp_path, tmp_path, "python -m bench paper",
                              claims.Roles()).read_text()
    assert "no start of this sweep ran a task; 3 rows were stored before the first start" in text


def test_method_times_count_the_tasks_a_time_limit_cut_short():
    gp, other = rows("gp", [True] * 3), rows("other", [True] * 2)
    gp[0]["metadata"] = json.dumps({"runs": 6, "runs_stopped_by_time": 2})
    gp[1]["metadata"] = json.dumps({"runs": 6, "runs_stopped_by_time": 0})
    other[0]["metadata"] = "not json"
    table = reproduction.method_times(pd.DataFrame(gp + other)).set_index("method")
    assert table.loc["gp", "time_cut_tasks"] == 1 and table.loc["other", "time_cut_tasks"] == 0


def test_a_rescored_sweep_says_when_and_at_which_commit_its_scores_were_recomputed(tmp_path):
    """Scores later than the fits (a scorer changed, `bench score` ran) are part of the report's provenance."""
    import subprocess
    import sys
    from pathlib import Path

    from bench import rescoring
    from bench.store import ResultStore

    out = tmp_path / "sweep"
    ran = subprocess.run([sys.executable, "-m", "bench", "run", "--methods", "truth", "--out", str(out), "--quiet"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    stored = ResultStore(out).read()
    from bench.rows import SCORE_FIELDS, TEXT_COLUMNS
    junk = stored.assign(**{c: ("junk" if c in TEXT_COLUMNS else -5.0) for c in SCORE_FIELDS})
    ResultStore(out).replace_all(junk)  # every score column wrong: rescoring must write each one
    assert rescoring.rescore(out) == 12
    again = ResultStore(out).read().set_index(["equation_id", "y0_index"]).sort_index()
    expected = stored.set_index(["equation_id", "y0_index"]).sort_index()
    pd.testing.assert_frame_equal(again[list(SCORE_FIELDS)], expected[list(SCORE_FIELDS)])
    entry, = json.loads((out / "sweep.json").read_text())["rescored"]
    assert entry["scored"] == 12 and entry["commit"]
    again = subprocess.run([sys.executable, "-m", "bench", "run", "--methods", "truth", "--out", str(out), "--quiet"],
                           cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0  # a resume keeps the record
    assert json.loads((out / "sweep.json").read_text())["rescored"] == [entry]
    (tmp_path / "report").mkdir()
    text = reproduction.write(ResultStore(out).read(), tmp_path / "report", out, "python -m bench paper",
                              claims.Roles()).read_text()
    assert f"- scores recomputed from the stored predictions (`bench score`) at commit `{entry['commit']}`" in text


def test_the_published_rows_rebuild_the_report_without_refitting(tmp_path):
    """The rows are published beside the report as a result folder: read back they are the sweep's
    rows, and a sweep resumed from them refits nothing and writes the same leaderboard."""
    import shutil

    from bench import paper
    from bench.store import ResultStore

    def run(out):
        config = tmp_path / f"{out}.yaml"
        config.write_text(f"name: t\nout: {tmp_path / out}\ndatasets: [textbook]\nsubset: {{textbook: 2}}\n"
                          "noise: [0]\nn: [128]\nmethods: [truth]\nseeds: [0]\n")
        paper.run_paper(str(config), quick=False, jobs=1, backend="joblib", scheduler=None, progress=False,
                        docs=str(tmp_path / f"docs-{out}"))
        return tmp_path / f"docs-{out}"

    docs = run("first")
    assert "![leaders]" not in (tmp_path / "first" / "figures" / "index.md").read_text()  # one method: no pairing
    published, swept = ResultStore(docs / reproduction.ROWS).read(), ResultStore(tmp_path / "first").read()
    assert len(published) == len(swept) == 2
    pd.testing.assert_frame_equal(published.sort_values("equation_id", ignore_index=True),
                                  swept.sort_values("equation_id", ignore_index=True), check_dtype=False)
    assert f"[{reproduction.ROWS}/]({reproduction.ROWS}/)" in (docs / reproduction.REPORT).read_text()
    shutil.copytree(docs / reproduction.ROWS, tmp_path / "second")
    again = run("second")
    assert len(json.loads((tmp_path / "second" / "sweep.json").read_text())["runs"]) == 1  # the first's start only
    assert (again / "leaderboard.csv").read_text() == (docs / "leaderboard.csv").read_text()
    parts = sorted((docs / reproduction.ROWS / "parts").iterdir())
    run("first")  # rebuilt with nothing refitted: the published part stays as it is, not renamed in the history
    assert sorted((docs / reproduction.ROWS / "parts").iterdir()) == parts


def test_stored_rows_tell_their_oracles_by_the_methods_found_here(tmp_path):
    """`bench report` reads rows alone: an oracle is told by its method's class, and a label whose
    method is gone (a moved plugin file) or cannot be a method argument is left unmarked."""
    labels = ["truth", "truth-refit", "sindy:fd_degrees=(3,)", "gone-plugin", "not a label:x"]
    assert reproduction.stored_oracles(labels, [tmp_path]) == ("truth", "truth-refit")


def test_the_wall_time_starts_at_the_first_task_s_start_not_its_finish():
    """A task started `fit_time + setup_time` before its row was stored: the span counts it."""
    frame = pd.DataFrame({"finished_at": [100.0, 110.0], "fit_time": [5.0, 3.0], "setup_time": [1.0, np.nan]})
    assert reproduction.wall_time(frame) == (16.0, 9.0)  # from 94 (100 - 6) to 110; 6 + 3 s of fitting


def test_method_times_give_the_largest_task_limit_and_core_hours():
    """A resume under a longer limit: time_limit_s is the longest; core_hours are fit seconds / 3600."""
    frame = pd.DataFrame(rows("a", [True] * 2))
    frame["time_limit"] = [60, 120]
    frame["fit_time"] = [1800.0, 5400.0]
    table = reproduction.method_times(frame).set_index("method")
    assert table.loc["a", "time_limit_s"] == 120 and table.loc["a", "core_hours"] == pytest.approx(2.0)
    assert table.loc["a", "median_fit_s"] == 3600.0 and table.loc["a", "max_fit_s"] == 5400.0


def test_the_report_names_the_commit_and_machine_of_the_latest_start(tmp_path):
    """A sweep resumed at another commit on another machine: the report names the latest, and
    lists every commit in order."""
    frame = pd.DataFrame(rows("truth", [True] * 2))
    runs = [{"commit": "a" * 40, "started_at": 1.0, "machine": MACHINE},
            {"commit": "b" * 40, "started_at": 2.0, "machine": {**MACHINE, "cpu_count": 64}}]
    (tmp_path / "sweep.json").write_text(json.dumps({"runs": runs}))
    text = reproduction.write(frame, tmp_path, tmp_path, "python -m bench paper", claims.Roles()).read_text()
    assert f"- git commit: `{'b' * 40}` (2 starts; commits in order: {'a' * 40}, {'b' * 40})" in text
    assert "- machine: 64 CPUs" in text


def test_publishing_rows_whose_sweep_record_changed_replaces_the_published_record(tmp_path):
    """Same rows, but a `bench score` noted in sweep.json since: the published copy must follow it."""
    frame = pd.DataFrame(rows("truth", [True] * 2))
    sweep, folder, docs = tmp_path / "sweep", tmp_path / "figures", tmp_path / "docs"
    sweep.mkdir()
    folder.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"runs": []}))
    reproduction.write_rows(frame, folder, sweep)
    reproduction.publish(folder, docs)
    assert reproduction.same_rows(folder / reproduction.ROWS, docs / reproduction.ROWS)
    record = json.dumps({"runs": [], "rescored": [{"at": 1.0, "commit": "c", "scored": 2}]})
    (sweep / "sweep.json").write_text(record)
    reproduction.write_rows(frame, folder, sweep)
    assert not reproduction.same_rows(folder / reproduction.ROWS, docs / reproduction.ROWS)
    reproduction.publish(folder, docs)
    assert (docs / reproduction.ROWS / "sweep.json").read_text() == record

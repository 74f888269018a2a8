"""User errors get one line naming the problem, never a traceback, and nothing stored is lost."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def refused(*args, cwd=ROOT):
    """`bench(*args)` in this process, for commands that stop with an error before doing any work:
    the same status and output at a fraction of the cost of a new interpreter (an exception that
    escapes `main` fails the test, as a traceback in a child's stderr would; warnings are written to
    its stderr as a fresh interpreter's default filters would show them)."""
    from bench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          warnings.catch_warnings(record=True) as shown):
        warnings.simplefilter("default")
        for hidden in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", hidden)
        try:
            code = main([*map(str, args)])
        except SystemExit as done:  # argparse's usage errors
            code = done.code
    for w in shown:
        err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
    return subprocess.CompletedProcess(["bench", *map(str, args)], code, out.getvalue(), err.getvalue())


def assert_one_line_error(result, *words):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 or lines[-1].startswith("python -m bench"), result.stderr
    for word in words:  # in the error line itself: the usage above it names every option
        assert word in lines[-1], result.stderr


@pytest.fixture
def trajectory():
    t = np.linspace(0, 2, 64)
    return t, 2.0 * np.exp(0.1 * t)


@pytest.mark.parametrize("command", [["bench", "list"], ["nsode", "predict", "decay.csv", "--top", "0"]])
def test_output_piped_into_a_reader_that_stops_early_ends_quietly(command, tmp_path, write_record):
    """`python -m bench list | head -1`: no traceback and no error line when the reader has gone."""
    t = np.linspace(0, 2, 32)
    write_record(tmp_path / "decay.csv", t, 3 * np.exp(-0.5 * t))
    child = subprocess.Popen([sys.executable, "-m", *command], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    child.stdout.close()  # before the child has imported anything, so its first write finds no reader
    assert child.wait(timeout=300) == 1 and child.stderr.read() == ""


@pytest.mark.parametrize("command", ["bench", "nsode", "nsode.data", "nsode.train"])
def test_the_entry_points_load_nothing_heavy_before_they_can_answer_ctrl_c(command):
    """What `python -m COMMAND` imports before `run_command` takes over: sympy, torch and pandas take seconds
    to load, and Ctrl-C in them printed Python's traceback."""
    probe = (f"import importlib, sys; importlib.import_module('{command}.__main__'); "
             "print(sorted({'numpy', 'scipy', 'sympy', 'torch', 'pandas'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_ctrl_c_while_a_command_loads_is_one_line(tmp_path):
    (tmp_path / "slow_to_load.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\ndef main():\n    return 0\n")
    # Python's own Ctrl-C handler, as at a terminal: a test run started in the background (nohup, some
    # CI runners) passes SIGINT on ignored, and the child would sleep through it
    run = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "from odecore.arguments import run_command; run_command('slow_to_load:main')")
    result = subprocess.run([sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert (result.returncode, result.stderr) == (130, "interrupted\n")


def test_the_installed_scripts_name_callables_that_exist():
    import importlib
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {"bench", "nsode"}
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


def test_unknown_method_and_dataset_are_named(tmp_path):
    assert_one_line_error(refused("run", "--methods", "nosuch", "--out", tmp_path), "nosuch")
    assert_one_line_error(refused("run", "--dataset", "nosuch", "--methods", "truth", "--out", tmp_path), "nosuch")
    assert_one_line_error(refused("run", "--dataset", tmp_path / "mine.json", "--methods", "truth", "--out", tmp_path),
                          "mine.json: no such file or folder")  # a path, not a misspelled name
    assert_one_line_error(refused("run", "--methods", "truth", "--out", ""), "--out: is empty")


def test_a_docs_folder_that_cannot_be_made_is_refused_before_the_sweep(tmp_path):
    """`bench paper --docs` copies its report there at the end: a file in its place was found only then."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "c.yaml").write_text(f"out: {tmp_path / 'out'}\ndatasets: [textbook]\nnoise: [0]\nn: [128]\n"
                                     "methods: [truth]\nseeds: [0]\n")
    for docs, problem in ((tmp_path / "afile", "exists and is not a folder"),
                          (tmp_path / "afile" / "report", f"{tmp_path / 'afile'} is not a folder")):
        assert_one_line_error(refused("paper", "--config", tmp_path / "c.yaml", "--docs", docs), f"--docs {docs}: {problem}")
    assert not (tmp_path / "out").exists()  # refused before the sweep


def test_bad_numbers_on_the_command_line_are_refused(tmp_path):
    assert_one_line_error(refused("run", "--noise", "-1", "--out", tmp_path), "--noise")
    assert_one_line_error(refused("run", "--noise", "2", "--out", tmp_path), "in [0, 1): a relative standard deviation")
    assert_one_line_error(refused("run", "--n", "zero", "--out", tmp_path), "--n")
    assert_one_line_error(refused("run", "--n", "5", "--out", tmp_path), "at least 10")
    assert_one_line_error(refused("run", "--time-limit", "-1", "--out", tmp_path), "--time-limit")


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not a readable JSON"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a", "expression": "__import__('os')", "y0": [1.0]}]}), "not allowed"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a", "expression": "y", "y0": []}]}), "y0"),
    (json.dumps({"name": "x"}), "format"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1", "equations": []}), "non-empty list"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": None,
                 "equations": [{"id": "a", "expression": "-y", "y0": [1.0]}]}), "'version' must be text or a number"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1", "equations": ["-y"]}), "needs an 'id'"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": ["a"], "expression": "-y", "y0": [1]}]}), "'id' must be"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a/b", "expression": "-y", "y0": [1]}]}), "without '/'"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a", "expression": 5, "y0": [1]}]}), "must be a string"),
    (json.dumps({"format": "bench-dataset/1", "name": "../x", "version": "1",
                 "equations": [{"id": "a", "expression": "-y", "y0": [1]}]}), "'name'"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a", "expression": "y**2", "y0": [1]}]}), "blows up"),
    (json.dumps({"format": "bench-dataset/1", "name": "textbook", "version": "1",
                 "equations": [{"id": "a", "expression": "-y", "y0": [1]}]}), "built-in"),
    (json.dumps({"format": "bench-dataset/1", "name": "x", "version": "1",
                 "equations": [{"id": "a", "expression": "10**10**10*y", "y0": [1]}]}), "beyond"),
])
def test_malformed_dataset_file_is_refused(tmp_path, content, problem):
    spec = tmp_path / "bad.json"
    spec.write_text(content)
    assert_one_line_error(refused("run", "--dataset", spec, "--methods", "truth", "--out", tmp_path / "o"), problem)


@pytest.mark.parametrize("mutate, problem", [
    (lambda t, y: (t, np.where(np.arange(len(y)) == 5, np.nan, y)), "NaN or infinite"),
    (lambda t, y: (t[::-1], y), "not sorted"),
    (lambda t, y: (np.r_[t[:1], t[:-1]], y), "duplicate time"),
    (lambda t, y: (t[:5], y[:5]), "at least 10"),
])
def test_bad_csv_trajectory_is_refused(tmp_path, trajectory, mutate, problem, write_record):
    file = write_record(tmp_path / "traj.csv", *mutate(*trajectory))
    assert_one_line_error(refused("run", "--dataset", file, "--methods", "truth", "--out", tmp_path / "o"), problem)


def test_a_csv_folder_names_all_its_unreadable_files_at_once(tmp_path, trajectory, write_record):
    """They were found one per attempt: each rerun named the next."""
    folder = tmp_path / "records"
    folder.mkdir()
    t, y = trajectory
    write_record(folder / "good.csv", t, y)
    write_record(folder / "huge.csv", t, 1e200 * y)
    write_record(folder / "short.csv", t[:5], y[:5])
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "truth", "--out", tmp_path / "o"),
                          "2 of 3 files cannot be read", "huge.csv", "short.csv")


def test_csv_rows_longer_than_the_header_are_refused(tmp_path):
    """pandas would take the extra first value as an index and read y's values as t."""
    (tmp_path / "x.csv").write_text("t,y\n" + "".join(f"{i},{i},{i}\n" for i in range(12)))
    assert_one_line_error(refused("run", "--dataset", tmp_path / "x.csv", "--out", tmp_path / "o"), "more values")


def test_csv_named_like_a_built_in_dataset_is_refused(tmp_path, trajectory, write_record):
    file = write_record(tmp_path / "textbook.csv", *trajectory)
    assert_one_line_error(refused("run", "--dataset", file, "--methods", "truth", "--out", tmp_path / "o"), "built-in")


def test_csv_without_columns_is_refused(tmp_path):
    (tmp_path / "x.csv").write_text("time,value\n0,1\n")
    assert_one_line_error(refused("run", "--dataset", tmp_path / "x.csv", "--out", tmp_path / "o"), "t and y")


def test_csv_columns_named_on_the_command_line_are_kept_with_the_rows(tmp_path, trajectory):
    folder = tmp_path / "plates"
    folder.mkdir()
    pd.DataFrame({"Hours": trajectory[0], "OD600": trajectory[1],
                  "expression": ["0.1*y"] * len(trajectory[0])}).to_csv(folder / "a1.csv", index=False)
    out = tmp_path / "o"
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "truth", "--out", out),
                          "naming columns t and y", "--columns TIME VALUE")
    result = bench("run", "--dataset", folder, "--columns", "hours", "od600", "--methods", "truth", "--out", out)
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(out / "medians.csv")["r2_interp"].iloc[0] > 0.9999
    again = bench("run", "--dataset", folder, "--columns", " HOURS", "od600", "--methods", "truth", "--out", out)
    assert again.returncode == 0 and "resuming" in again.stderr, again.stderr  # the same columns, named alike
    assert_one_line_error(refused("run", "--dataset", folder, "--columns", "od600", "hours", "--methods", "truth",
                                "--out", out), "was read as t = hours, y = od600", "--columns hours od600")
    rescored = bench("score", out)  # read from the columns the rows were computed on
    assert rescored.returncode == 0 and "re-scored 1 " in rescored.stdout, rescored.stderr
    assert_one_line_error(refused("run", "--columns", "hours", "od600", "--methods", "truth", "--out", tmp_path / "p"),
                          "tells how to read CSV datasets")


def test_csv_files_of_several_records_read_each_as_a_trajectory_of_the_file_s_law(tmp_path, trajectory):
    folder = tmp_path / "plates"
    folder.mkdir()
    t, y = trajectory
    long = lambda wells: pd.DataFrame({"well": np.repeat(wells, len(t)), "t": np.tile(t, len(wells)),  # noqa: E731
                                       "y": np.concatenate([y * (1 + k) for k in range(len(wells))])})
    long(["A1", "B1"]).to_csv(folder / "p1.csv", index=False)
    long(["C1"]).to_csv(folder / "p2.csv", index=False)  # one record is a trajectory too
    out = tmp_path / "o"
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "sindy", "--out", out),
                          "duplicate time", "--by COLUMN")
    assert_one_line_error(refused("run", "--dataset", folder, "--by", "plate", "--methods", "sindy", "--out", out),
                          "no column 'plate'")
    result = bench("run", "--dataset", folder, "--by", "Well", "--methods", "sindy", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "The laws found" in result.stdout and re.search(r"\| p1 +\| A1 +\| +0 \|", result.stdout)
    rows = pd.concat(pd.read_parquet(part) for part in (out / "parts").glob("*.parquet"))
    rows = rows.sort_values(["equation_id", "y0_index"])
    assert list(zip(rows.equation_id, rows.y0_index, rows.record)) == [("p1", 0, "A1"), ("p1", 1, "B1"), ("p2", 0, "C1")]
    assert list(rows.y0) == pytest.approx([y[0], 2 * y[0], y[0]])
    assert (rows.r2_interp > 0.99).all()
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "sindy", "--out", out),
                          "records told apart by well", "--by well")
    rescored = bench("score", out)
    assert rescored.returncode == 0 and "re-scored 3 " in rescored.stdout, rescored.stderr
    assert_one_line_error(refused("run", "--by", "well", "--methods", "truth", "--out", tmp_path / "p"),
                          "--by well: tells how to read CSV datasets")


def test_csv_folder_is_scored_against_its_own_data(tmp_path, trajectory, write_record):
    folder = tmp_path / "mine"
    folder.mkdir()
    write_record(folder / "growth.csv", *trajectory, expression=["0.1*y"] * len(trajectory[0]))
    result = bench("run", "--dataset", folder, "--methods", "truth", "--n", 32, 64, 128, "--out", tmp_path / "o")
    assert result.returncode == 0, result.stderr
    rows = pd.read_csv(tmp_path / "o" / "medians.csv")
    assert rows["r2_interp"].iloc[0] > 0.9999
    assert sorted(rows["n"]) == [32, 64]  # n is capped at the 64 points the file has: one task, not two
    assert "scored against the observations" in (tmp_path / "o" / "medians.md").read_text()
    assert "scored against the observations" in result.stdout
    drawn = bench("plot", tmp_path / "o")  # no extrapolation window: those figures are left out
    assert drawn.returncode == 0 and "wrote" in drawn.stdout, drawn.stderr
    assert "main figure: mine, n = 64 (the results hold no classic at n = 192)" in drawn.stdout  # the paper's cell


def test_an_oracle_skips_trajectories_without_a_law(tmp_path, trajectory, write_record):
    file = write_record(tmp_path / "growth.csv", *trajectory)  # no expression column
    result = bench("run", "--dataset", file, "--methods", "truth", "--out", tmp_path / "o")
    assert result.returncode == 1 and "no results: no method ran" in result.stderr  # a script stops here
    assert "1 task comes without one: it skips it" in result.stderr


def test_failed_run_keeps_what_was_stored(tmp_path):
    out = tmp_path / "o"
    ran = bench("run", "--methods", "truth", "--out", out)
    assert ran.returncode == 0 and "| truth (oracle) |      12 |        0 | 100% (100-100)" in ran.stdout  # the leaderboard
    assert "| truth (oracle) |" in (out / "leaderboard_by_dataset.md").read_text()  # and the one written per dataset
    before = sorted((out / "parts").iterdir())
    assert_one_line_error(refused("run", "--dataset", "nosuch", "--methods", "truth", "--out", out), "nosuch")
    assert sorted((out / "parts").iterdir()) == before


def test_list_shows_methods_and_report_and_compare_read_results(tmp_path):
    listing = bench("list")
    assert listing.returncode == 0 and "truth" in listing.stdout and "textbook" in listing.stdout
    out = tmp_path / "o"
    bench("run", "--methods", "truth", "--method", "truth-refit", "--noise", "0", "--out", out)  # repeats add up
    report = bench("report", out)
    assert report.returncode == 0 and "truth-refit" in report.stdout
    assert "| truth-refit (oracle) |      12 |        0 | 100% (100-100)" in report.stdout  # the stored rows' oracles marked
    assert "| truth-refit (oracle) |" in (out / "leaderboard_by_dataset.md").read_text()
    assert pd.read_csv(out / "leaderboard.csv")["extrap_r2_above_0.9_low"].tolist() == [1.0, 1.0]
    rescored = bench("score", out)
    assert rescored.returncode == 0 and "re-scored 24" in rescored.stdout
    paired = bench("compare", out, "--methods", "truth", "truth-refit")
    assert paired.returncode == 0 and "12 / 12" in paired.stdout  # both solve every clean task
    drawn = bench("compare", out, "--methods", "truth", "truth-refit", "--plot", tmp_path / "pair")
    assert drawn.returncode == 0 and f"figure: {tmp_path / 'pair.png'}" in drawn.stdout
    assert (tmp_path / "pair.png").stat().st_size > 0 and len(pd.read_csv(tmp_path / "pair.csv")) == 12
    assert_one_line_error(refused("compare", out, "--methods", "truth", "truth-refit", "--plot", tmp_path / "no" / "p.png"),
                          "does not exist")
    assert_one_line_error(refused("compare", out, "--methods", "truth", "truth-refit", "--plot", tmp_path), "a folder")
    assert_one_line_error(refused("compare", out, "--methods", "truth", "sindy"),
                          "no results of sindy (stored: truth, truth-refit)")
    assert_one_line_error(refused("compare", out, "--methods", "proged", "sindy"),
                          "no results of proged, sindy (stored: truth, truth-refit)")
    assert_one_line_error(refused("compare", out, "--methods", "truth", "truth"), "another method")
    assert_one_line_error(refused("compare", out, "--methods", "truth", "truth-refit", "sindy"), "two methods, not 3")


def test_method_with_a_broken_dependency_is_listed_unavailable(tmp_path):
    # a package that imports but whose submodule needs a missing module, as ffx.core needs six
    package = tmp_path / "halfbroken"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("import a_module_nobody_installed\n")
    plugin = tmp_path / "uses_halfbroken.py"
    plugin.write_text(
        "from bench import Method, Prediction\n\n"
        "class UsesHalfbroken(Method):\n"
        "    name = 'uses-halfbroken'\n"
        "    requires = ('halfbroken.core',)\n\n"
        "    def run(self, observations, budget):\n"
        "        return Prediction('y')\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    listing = subprocess.run([sys.executable, "-m", "bench", "list", "--method-file", plugin], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, env=env)
    line = next(line for line in listing.stdout.splitlines() if "uses-halfbroken" in line)
    assert "unavailable: cannot import halfbroken.core" in line and "a_module_nobody_installed" in line


def test_every_builtin_method_runs_here_except_the_ones_that_cannot():
    # PySR needs Julia and FEAT does not build on these machines; anything else unavailable is a
    # broken install (how a missing `six` once made every ffx task fail while `list` said available)
    from bench.registry import METHODS_DIR, declared_names

    listing = bench("list")
    assert listing.returncode == 0 and "broken:" not in listing.stdout, listing.stdout + listing.stderr
    states = {line.split()[0]: line for line in listing.stdout.splitlines() if "available" in line}
    unavailable = {name for name, line in states.items() if "unavailable:" in line}
    assert unavailable <= {"pysr", "feat"}, listing.stdout
    declared = set().union(*(declared_names(file) or set() for file in METHODS_DIR.glob("*.py")))
    assert {"ffx", "proged", "nsode-eps+refine", "sindy"} <= declared <= set(states)  # none missing from the list


def _entry_point_package(tmp_path, module_source: str, entry_points: str) -> dict:
    """An installed-looking package on PYTHONPATH that publishes `bench.methods` entry points."""
    (tmp_path / "myplugin.py").write_text(module_source)
    info = tmp_path / "myplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[bench.methods]\n" + entry_points)
    return {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}


PLUGIN = (
    "from bench import Method, Prediction\nfrom bench.method import Variant\n\n"
    "class Rate(Method):\n"
    "    name = 'rate'\n"
    "    variants = {'rate-half': Variant(params={'scale': 0.5})}\n\n"
    "    def __init__(self, scale=1.0):\n"
    "        self.scale = scale\n\n"
    "    def run(self, observations, budget):\n"
    "        return Prediction(f'{-self.scale!r}*y')\n\n"
    "class NeedsArgument(Method):\n"
    "    name = 'needs-k'\n\n"
    "    def __init__(self, k):\n"
    "        self.k = k\n\n"
    "    def run(self, observations, budget):\n"
    "        return Prediction(f'{self.k!r}*y')\n"
)


def test_entry_point_plugins_bring_their_variants_and_a_broken_one_is_listed(tmp_path):
    env = _entry_point_package(tmp_path, PLUGIN, "rate = myplugin:Rate\nbroken = notinstalled:Thing\n")
    listing = subprocess.run([sys.executable, "-m", "bench", "list"], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env=env)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    assert "rate-half" in listing.stdout
    assert "broken: notinstalled:Thing failed to load" in listing.stdout
    refused = subprocess.run([sys.executable, "-m", "bench", "run", "--methods", "broken", "--out", tmp_path / "x"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert_one_line_error(refused, "broken (entry point) is installed but broken: notinstalled:Thing failed to load")
    run = subprocess.run([sys.executable, "-m", "bench", "run", "--methods", "rate-half", "--quiet",
                          "--out", tmp_path / "o"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert set(pd.read_parquet(tmp_path / "o" / "parts").method) == {"rate-half"}


def test_a_constructor_argument_without_default_is_asked_for_in_one_line(tmp_path):
    plugin = tmp_path / "needs.py"
    plugin.write_text(PLUGIN)
    listing = bench("list", "--method-file", plugin)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert "needs k: run it as needs-k:k=VALUE" in listing.stdout
    assert_one_line_error(bench("run", "--method-file", plugin, "--methods", "needs-k", "--out", tmp_path / "o"),
                          "needs-k:k=VALUE")
    ran = bench("run", "--method-file", plugin, "--methods", "needs-k:k=-.5", "rate:scale=.5", "--quiet",
                "--out", tmp_path / "o")
    assert ran.returncode == 0, ran.stderr
    paired = bench("compare", tmp_path / "o", "--methods", "needs-k:k=-.5", "rate:scale=.5")  # spelled as typed
    assert paired.returncode == 0 and "needs-k:k=-0.5 / rate:scale=0.5" in paired.stdout, paired.stderr
    assert "(0 vs 0; laws 0 vs 0, p 1)" in paired.stdout  # the same law: solved on the same tasks


def test_constructors_that_hide_their_parameters_are_named_in_one_line(tmp_path):
    """The harness names and checks a run by its constructor's arguments (scikit-learn's rule)."""
    plugin = tmp_path / "hides.py"
    plugin.write_text("from bench import Method, Prediction\n\n"
                      "class Loose(Method):\n    name = 'loose'\n"
                      "    def __init__(self, **options):\n        self.options = options\n"
                      "    def run(self, observations, budget):\n        return Prediction('-y')\n\n"
                      "class Private(Method):\n    name = 'private'\n"
                      "    def __init__(self, order=1):\n        self._order = order\n"
                      "    def run(self, observations, budget):\n        return Prediction('-y')\n")
    listing = bench("list", "--method-file", plugin)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert "unavailable: Loose.__init__ must name its parameters" in listing.stdout
    assert "unavailable: Private.__init__ must store each argument under its own name (self.order = order)" in \
        listing.stdout
    for method, words in (("loose", "must name its parameters"), ("private", "self.order = order"),
                          ("private:order=2", "self.order = order")):
        assert_one_line_error(bench("run", "--method-file", plugin, "--methods", method, "--out", tmp_path / "o"),
                              words)


def test_two_csv_files_of_one_name_and_a_changed_file_are_refused(tmp_path, trajectory, write_record):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        write_record(tmp_path / folder / "traj.csv", *trajectory, expression=["0.1*y"] * len(trajectory[0]))
    out = tmp_path / "o"
    assert_one_line_error(refused("run", "--dataset", tmp_path / "a" / "traj.csv", tmp_path / "b" / "traj.csv",
                                "--methods", "truth", "--out", out), "rename one")
    assert bench("run", "--dataset", tmp_path / "a" / "traj.csv", "--methods", "truth", "--out", out).returncode == 0
    assert bench("run", "--methods", "truth", "--out", out).returncode == 0  # textbook into the same folder
    rescored = bench("score", out, cwd=tmp_path / "b")  # from elsewhere: the stored paths are absolute
    assert rescored.returncode == 0 and "re-scored 13" in rescored.stdout, rescored.stderr
    write_record(tmp_path / "a" / "traj.csv", trajectory[0], 1 + trajectory[0] ** 2)
    assert_one_line_error(refused("run", "--dataset", tmp_path / "a" / "traj.csv", "--methods", "truth",
                                "--out", out), "changed since")
    (tmp_path / "a" / "traj.csv").write_text("a,b\n1,2\n")  # broken, not merely changed: says what is wrong
    assert_one_line_error(refused("run", "--dataset", tmp_path / "a" / "traj.csv", "--methods", "truth",
                                "--out", out), "t and y")


@pytest.mark.parametrize("damage", ["missing", "torn"])
def test_rows_without_a_readable_sweep_json_are_not_resumed_on_unchecked_data(tmp_path, trajectory, damage,
                                                                              write_record):
    write_record(tmp_path / "traj.csv", *trajectory, expression=["0.1*y"] * len(trajectory[0]))
    out = tmp_path / "o"
    assert bench("run", "--dataset", tmp_path / "traj.csv", "--methods", "truth", "--out", out).returncode == 0
    if damage == "missing":
        (out / "sweep.json").unlink()
    else:
        (out / "sweep.json").write_text('{"datasets": [')
    write_record(tmp_path / "traj.csv", trajectory[0], 1 + trajectory[0] ** 2)  # other data, the same name
    assert_one_line_error(refused("run", "--dataset", tmp_path / "traj.csv", "--methods", "truth", "--out", out),
                          "no readable sweep.json")
    assert len(pd.read_parquet(out / "parts")) == 1  # the stored row is kept


def test_seeds_must_be_whole_numbers_from_zero_and_score_needs_a_result_folder(tmp_path):
    assert_one_line_error(refused("run", "--seeds", "-1", "--out", tmp_path), "--seeds")
    assert_one_line_error(refused("score", tmp_path / "nothing"), "not a result folder")
    assert not (tmp_path / "nothing").exists()


def test_an_out_folder_that_is_a_file_and_a_result_folder_without_its_sweep_file_get_one_line(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    assert_one_line_error(refused("run", "--dataset", "textbook", "--methods", "truth", "--n", "32", "--noise", "0",
                                "--out", tmp_path / "a-file"), "exists and is not a folder")
    ran = bench("run", "--dataset", "textbook", "--methods", "truth", "--n", "32", "--noise", "0", "--quiet",
                "--out", tmp_path / "o")
    assert ran.returncode == 0, ran.stderr
    assert_one_line_error(refused("report", tmp_path / "o", "--out", tmp_path / "a-file"), "exists and is not a folder")
    (tmp_path / "o" / "sweep.json").write_text("{bad")
    assert_one_line_error(refused("score", tmp_path / "o"), "sweep.json: not valid JSON")
    (tmp_path / "o" / "sweep.json").unlink()
    assert_one_line_error(refused("score", tmp_path / "o"), "sweep.json")


def _dataset_file(path, equations, name="mine"):
    path.write_text(json.dumps({"format": "bench-dataset/1", "name": name, "version": "1", "equations": equations}))
    return path


def test_integer_equation_ids_are_stored_as_text_and_1_and_one_are_one_id(tmp_path):
    spec = _dataset_file(tmp_path / "ints.json", [{"id": 1, "expression": "-0.5*y", "y0": [1.0]},
                                                  {"id": 2, "expression": "-2*y", "y0": [1.0]}])
    ran = bench("run", "--dataset", spec, "textbook", "--methods", "truth", "--quiet", "--out", tmp_path / "o")
    assert ran.returncode == 0, ran.stderr
    rows = pd.read_parquet(tmp_path / "o" / "parts")
    assert {"1", "2"} <= set(rows["equation_id"]) and (rows["status"] == "ok").all()
    assert bench("score", tmp_path / "o").returncode == 0
    twice = _dataset_file(tmp_path / "twice.json", [{"id": 1, "expression": "-y", "y0": [1.0]},
                                                   {"id": "1", "expression": "-2*y", "y0": [1.0]}])
    assert_one_line_error(refused("run", "--dataset", twice, "--methods", "truth", "--out", tmp_path / "p"),
                          "appears twice")


def test_other_data_under_a_name_a_folder_already_holds_is_refused(tmp_path, trajectory, write_record):
    first = _dataset_file(tmp_path / "laws.json", [{"id": "decay", "expression": "-0.3*y", "y0": [1.0]}])
    original = first.read_text()
    edited = _dataset_file(tmp_path / "laws-edited.json", [{"id": "decay", "expression": "-0.9*y", "y0": [1.0]}])
    out = tmp_path / "o"
    assert bench("run", "--dataset", first, "--methods", "truth", "--quiet", "--out", out).returncode == 0
    assert_one_line_error(refused("run", "--dataset", edited, "--methods", "truth", "--out", out), "different data")
    for folder, sign in (("a", 1), ("b", -1)):
        (tmp_path / folder).mkdir()
        write_record(tmp_path / folder / "data.csv", trajectory[0], sign * trajectory[1])
    assert bench("run", "--dataset", tmp_path / "a" / "data.csv", "--methods", "sindy", "--quiet",
                 "--out", out).returncode == 0
    assert_one_line_error(refused("run", "--dataset", tmp_path / "b" / "data.csv", "--methods", "sindy",
                                "--out", out), "different data")
    first.write_text(edited.read_text())  # edited after its rows were stored: re-scoring refuses too
    assert_one_line_error(refused("score", out), "changed since")
    first.write_text(original)
    assert bench("score", out).returncode == 0
    folder = tmp_path / "csv" / "mine"  # CSV files under the JSON dataset's name: their rows would share keys
    folder.mkdir(parents=True)
    write_record(folder / "decay.csv", *trajectory)
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "sindy", "--out", out), "different data")
    same = tmp_path / "copy.json"
    same.write_text(first.read_text())  # the same data at another path resumes
    again = bench("run", "--dataset", same, "--methods", "truth", "--out", out)
    assert again.returncode == 0 and "0 (task, method) pairs to run" in again.stderr, again.stderr
    first.write_text(edited.read_text())  # the file on record is still the first one: an edit of it is a change
    assert_one_line_error(refused("run", "--dataset", first, "--methods", "truth", "--out", out), "changed since")


def test_bad_method_values_and_absent_plot_cells_are_refused_up_front(tmp_path):
    out = tmp_path / "o"
    assert_one_line_error(refused("run", "--methods", "sindy-ic:criterion=bogus", "--out", out), "criterion")
    assert not (out / "parts").exists()
    assert bench("run", "--methods", "truth", "--quiet", "--out", out).returncode == 0
    assert_one_line_error(refused("plot", out, "--dataset", "nosuch"), "textbook")
    assert_one_line_error(refused("plot", out, "--n", 7), "n = 128")
    assert_one_line_error(refused("plot", out, "--n-datasets", 7), "--n-datasets 7: the results hold n = 128")
    assert_one_line_error(refused("plot", out, "--data-folder", out / "nosuch"), "no such folder")
    empty = tmp_path / "empty"
    (empty / "parts").mkdir(parents=True)
    assert_one_line_error(refused("score", empty), "no results")


def test_a_csv_folder_is_named_whole_and_reads_csv_files_of_any_case(tmp_path, trajectory, write_record):
    folder = tmp_path / "runs.v2"
    folder.mkdir()
    write_record(folder / "A.CSV", *trajectory, expression=["0.1*y"] * len(trajectory[0]))
    write_record(folder / "b.csv", *trajectory, expression=["0.1*y"] * len(trajectory[0]))
    ran = bench("run", "--dataset", folder, "--methods", "truth", "--quiet", "--out", tmp_path / "o")
    assert ran.returncode == 0, ran.stderr
    rows = pd.read_parquet(tmp_path / "o" / "parts")
    assert set(rows["dataset"]) == {"runs.v2"} and set(rows["equation_id"]) == {"A", "b"}
    write_record(folder / "b.CSV", *trajectory)  # rows are keyed by the name: one of the two would be lost
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "truth", "--out", tmp_path / "o2"),
                          "rename one")


def test_slips_get_a_suggestion_and_bad_scheduler_addresses_and_an_out_folder_of_data_are_refused(
        tmp_path, trajectory, write_record):
    assert_one_line_error(refused("run", "--methods", "sindi", "--out", tmp_path / "o"), "did you mean sindy?")
    assert_one_line_error(refused("run", "--dataset", "clasic", "--out", tmp_path / "o"), "did you mean classic?")
    for address in ("notaurl", "http://127.0.0.1:8786"):
        assert_one_line_error(refused("run", "--methods", "truth", "--backend", "dask", "--scheduler", address,
                                    "--out", tmp_path / "o"), "not a Dask scheduler address")
    folder = tmp_path / "records"
    folder.mkdir()
    write_record(folder / "a.csv", *trajectory)
    assert_one_line_error(refused("run", "--dataset", folder, "--methods", "truth", "--out", folder),
                          "is the dataset folder")
    assert not (tmp_path / "o").exists() and sorted(p.name for p in folder.iterdir()) == ["a.csv"]


def test_draw_y0_and_method_files_name_their_problems(tmp_path):
    assert_one_line_error(refused("draw-y0", tmp_path / "nosuch.json"), "not a readable JSON")
    spec = _dataset_file(tmp_path / "x.json", [{"id": "a", "expression": "-y"}])
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "y0_draw": {"count": 2, "low": 0.1, "high": 2}}))
    assert_one_line_error(refused("draw-y0", spec), "needs seed")
    for rule, problem in (({"count": 0}, "count must be a whole number >= 1"),  # would search for ever
                          ({"low": 5, "high": 1}, "low < high"), ({"low": "a"}, "low < high")):
        spec.write_text(json.dumps({**json.loads(spec.read_text()),
                                    "y0_draw": {"count": 2, "low": 0.1, "high": 2, "seed": 0, **rule}}))
        assert_one_line_error(refused("draw-y0", spec), problem)
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "y0_draw": 7}))
    assert_one_line_error(refused("draw-y0", spec), "must be an object")
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "equations": [{"id": "a", "expression": "y/0"}],
                                "y0_draw": {"count": 2, "low": 0.1, "high": 2, "seed": 0}}))
    assert_one_line_error(refused("draw-y0", spec), "equation 'a'")
    assert_one_line_error(refused("draw-y0", tmp_path / "x.csv"), "not a JSON file of laws")
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "decay.py").write_text(
            "from bench import Method, Prediction\n\nclass Decay(Method):\n    name = 'decay'\n\n"
            "    def run(self, observations, budget):\n        return Prediction('-y')\n")
    assert_one_line_error(bench("run", "--method-file", tmp_path / "one" / "decay.py", tmp_path / "two" / "decay.py",
                                "--methods", "decay", "--out", tmp_path / "o"), "both define 'decay'")


def test_the_stop_handler_is_the_callers_again_after_main_returns(tmp_path):
    import signal

    from bench.cli import main

    def callers_own(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, callers_own)
    try:
        assert main(["run", "--methods", "nosuch", "--out", str(tmp_path)]) == 2
        assert signal.getsignal(signal.SIGTERM) is callers_own
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_scheduler_without_the_dask_backend_is_refused(tmp_path):
    """Else the sweep runs on this machine and the cluster named is silently ignored."""
    assert_one_line_error(refused("run", "--methods", "truth", "--scheduler", "tcp://127.0.0.1:8786",
                                  "--out", tmp_path / "o"), "--scheduler needs --backend dask")
    assert not (tmp_path / "o").exists()


def test_the_memory_limit_is_given_in_gigabytes(tmp_path, monkeypatch):
    from bench import runner

    seen = []

    def stop(sweep, progress=True):
        seen.append(sweep)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", stop)
    refused("run", "--methods", "truth", "--memory-limit", "1.5", "--out", tmp_path / "o")
    assert seen[0].memory_limit == int(1.5 * 2**30)

"""A paper config can take an evenly spread subset of a dataset and a time limit per method."""
import numpy as np
import pandas as pd
import pytest

from bench import datasets, paper, registry, runner

CONFIG = """
out: {out}
datasets: [textbook, classic]
noise: [0]
n: [128]
methods: [truth, sindy]
seeds: [0]
subset: {{classic: 24}}
time_limits: {{sindy: 7}}
"""


def swept(tmp_path, text: str):
    """The sweep `bench paper` builds from the config `text`, written to tmp_path/config.yaml."""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return paper.sweep_from_config(paper.load_config(path), False, 1, "joblib", None)


@pytest.fixture
def sweep(tmp_path):
    return swept(tmp_path, CONFIG.format(out=tmp_path / "out"))


def test_subset_takes_evenly_spread_trajectories_and_leaves_other_datasets_whole(sweep):
    tasks = runner.build_tasks(sweep)
    classic = [t.trajectory for t in tasks if t.trajectory.dataset == "classic"]
    everything = datasets.load("classic")
    step = len(everything) / 24
    assert len(classic) == 24 and len([t for t in tasks if t.trajectory.dataset == "textbook"]) == 12
    assert [tr.key for tr in classic] == [everything[int(i * step)].key for i in range(24)]
    assert len({tr.equation_id for tr in classic}) > 20  # spread over equations, not the first few


def test_time_limits_apply_per_method_and_others_keep_their_own(sweep, tmp_path):
    from bench.store import ResultStore

    limits = {p.job.spec.label: p.job.time_limit for p in runner.pending_jobs(sweep, ResultStore(tmp_path / "s"))}
    truth = next(s for s in sweep.methods if s.name == "truth").load()
    assert limits == {"sindy": 7.0, "truth": truth.time_limit}


def test_a_time_limit_for_a_method_not_in_the_config_is_named(tmp_path, capsys):
    swept(tmp_path, CONFIG.format(out=tmp_path / "out").replace("{sindy: 7}", "{sindy: 7, sndy: 9}"))
    assert "ignoring time_limits for sndy: not among the config's methods" in capsys.readouterr().out


def test_a_malformed_subset_is_a_config_error(tmp_path):
    with pytest.raises(paper.ConfigError, match="subset"):
        swept(tmp_path, CONFIG.format(out=tmp_path / "out").replace("{classic: 24}", "[24]"))


@pytest.mark.parametrize("setting, problem", [
    ("noise: 0.01", "must be a list"), ("noise: [-0.5]", "a relative standard deviation"),
    ("noise: [2]", "0.01 for 1%"), ("seeds: [0.5]", "not a whole number"),
    ("n: [5]", "at least"), ("methods: truth", "list of names"), ("methods: [truth, 3]", "list of names"),
    ("datasets: textbook", "list of names"), ("time_limit: -1", "seconds above 0"),
    ("subset: {classic: 0}", "whole numbers of at least 1"), ("columns: hours", "time and value columns"),
    ("columns: [hours]", "time and value columns"), ("by: [well]", "tells a CSV file's records apart"),
])
def test_a_grid_the_command_line_would_refuse_is_a_config_error(tmp_path, setting, problem):
    path = tmp_path / "config.yaml"
    key = setting.split(":")[0]
    lines = CONFIG.format(out=tmp_path / "out").splitlines()
    lines = [setting if line.startswith(key + ":") else line for line in lines]
    path.write_text("\n".join(lines if setting in lines else lines + [setting]))
    with pytest.raises(paper.ConfigError, match=problem):
        paper.sweep_from_config(paper.load_config(path), False, 1, "joblib", None)


def test_sweep_json_records_the_commit_machine_and_grid_of_each_start_that_ran_tasks(tmp_path):
    import json
    from dataclasses import replace

    from bench import registry

    sweep = runner.Sweep(datasets=("textbook",), methods=(registry.discover()["truth"],), subset={"textbook": 2},
                         out=str(tmp_path / "s"))
    runner.run(sweep, progress=False)
    runner.run(sweep, progress=False)  # nothing left to do: no new entry
    runs = json.loads((tmp_path / "s" / "sweep.json").read_text())["runs"]
    assert len(runs) == 1 and runs[0]["machine"]["cpu_count"] >= 1 and runs[0]["commit"]
    runner.run(replace(sweep, noise=(0.01,)), progress=False)
    runs = json.loads((tmp_path / "s" / "sweep.json").read_text())["runs"]
    assert len(runs) == 2
    assert [run["grid"]["noise"] for run in runs] == [[0.0], [0.01]]  # each start's own grid
    assert runs[1]["grid"] == {"datasets": ["textbook"], "subset": {"textbook": 2}, "noise": [0.01], "n": [128],
                               "seeds": [0], "methods": ["truth"]}


def test_a_malformed_yaml_file_is_named_in_one_line(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: x\nout: [\n")
    with pytest.raises(paper.ConfigError, match="not a readable YAML config") as err:
        paper.load_config(tmp_path / "bad.yaml")
    assert "\n" not in str(err.value)


def test_how_csv_datasets_are_read_comes_from_the_config(tmp_path):
    sweep = swept(tmp_path, CONFIG.format(out=tmp_path / "out") + "columns: [Hours, OD600]\nby: well\n")
    assert (sweep.columns, sweep.by) == (("Hours", "OD600"), "well")
    sweep = swept(tmp_path, CONFIG.format(out=tmp_path / "out"))
    assert (sweep.columns, sweep.by) == (("t", "y"), None)


@pytest.mark.parametrize("edit, problem", [
    (lambda c: c.replace("seeds: [0]", "seeds: [0]\ntime_limt: 5"), "unknown setting(s) time_limt (did you mean time_limit?)"),
    (lambda c: c.replace("[textbook, classic]", "[textbook, clasic]"), "did you mean classic?"),
    (lambda c: c + "figures: {main: {dataset: science, n: 128}}\n", "'science' is not among the datasets"),
    (lambda c: c + "figures: {mian: {dataset: classic}}\n", "unknown figure(s) mian (did you mean main?)"),
    # a list once failed with a traceback after the whole sweep; n values the grid lacks fell back to 128
    (lambda c: c + "figures: {by_dataset: {n: [128]}}\n", "figures: by_dataset: n [128] is not one of the sweep's"),
    (lambda c: c + "figures: {main: {dataset: classic, n: 999}}\n", "figures: main: n 999 is not one of the sweep's "
                                                                     "sample sizes (128)"),
    (lambda c: c + "figures: {main: {n: abc}}\n", "figures: main: n 'abc'"),
    (lambda c: c + "quick: {seed: [0]}\n", "unknown setting(s) in quick: seed"),
    (lambda c: c.replace("{classic: 24}", "{clasic: 24}"), "'subset' names 'clasic', not among the datasets "
                                                           "(textbook, classic) (did you mean classic?)"),
    (lambda c: "out:\n" + c.split("\n", 2)[2], "'out' must be a folder"),  # out: (null) wrote to ./None
])
def test_a_misspelt_setting_or_dataset_is_refused_not_ignored(tmp_path, edit, problem):
    path = tmp_path / "config.yaml"
    path.write_text(edit(CONFIG.format(out=tmp_path / "out")))
    with pytest.raises(paper.ConfigError) as err:
        paper.sweep_from_config(paper.load_config(path), False, 1, "joblib", None)
    assert problem in str(err.value)


def test_quick_skips_a_method_it_does_not_know_and_says_so(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.format(out=tmp_path / "out").replace("[truth, sindy]", "[truth, sindyy]"))
    sweep = paper.sweep_from_config(paper.load_config(path), True, 1, "joblib", None)
    assert [spec.name for spec in sweep.methods] == ["truth"]
    assert "skipping method sindyy: no method of that name (did you mean sindy?)" in capsys.readouterr().out


def test_quick_runs_the_grid_of_the_quick_block_over_the_full_one(tmp_path):
    """`--quick` swaps in the quick: block: each setting it names replaces the full grid's."""
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.format(out=tmp_path / "out")
                    + f"quick: {{out: {tmp_path / 'quick'}, datasets: [textbook], noise: [0.01]}}\n")
    quick = paper.load_config(path, quick=True)
    assert (quick["out"], quick["datasets"], quick["noise"]) == (str(tmp_path / "quick"), ["textbook"], [0.01])
    assert quick["n"] == [128]  # a setting the block leaves out keeps the full grid's
    assert paper.load_config(path)["noise"] == [0]


def test_a_dataset_still_to_be_generated_is_skipped_with_a_message_not_an_error(tmp_path, capsys, monkeypatch):
    """`large` before `python -m nsode.data large` has written it: the sweep runs the rest."""
    monkeypatch.setattr(datasets, "GENERATED_LATER", ("notyet",))
    config = CONFIG.format(out=tmp_path / "out").replace("[textbook, classic]", "[textbook, classic, notyet]")
    sweep = swept(tmp_path, config.replace("{classic: 24}", "{classic: 24, notyet: 8}"))
    assert sweep.datasets == ("textbook", "classic") and sweep.subset == {"classic": 24}  # its subset goes with it
    assert "skipping dataset notyet" in capsys.readouterr().out


def test_outside_quick_an_unknown_method_is_an_error_not_skipped(tmp_path):
    """Only --quick runs what it can: the full sweep refuses a misspelt method before running anything."""
    with pytest.raises(registry.RegistryError, match="sindyy"):
        swept(tmp_path, CONFIG.format(out=tmp_path / "out").replace("[truth, sindy]", "[truth, sindyy]"))


def test_the_config_s_time_limit_applies_to_every_method_without_its_own(tmp_path):
    from bench.store import ResultStore

    sweep = swept(tmp_path, CONFIG.format(out=tmp_path / "out") + "time_limit: 30\n")
    assert sweep.time_limit == 30.0
    limits = {p.job.spec.label: p.job.time_limit for p in runner.pending_jobs(sweep, ResultStore(tmp_path / "s"))}
    assert limits == {"sindy": 7.0, "truth": 30.0}


def test_a_fractional_subset_is_a_config_error_not_rounded_down(tmp_path):
    with pytest.raises(paper.ConfigError, match="whole numbers of at least 1"):
        swept(tmp_path, CONFIG.format(out=tmp_path / "out").replace("{classic: 24}", "{classic: 2.5}"))


def test_write_outputs_draws_the_figures_the_config_names(tmp_path, monkeypatch):
    """figures: main: and by_dataset: reach the figures (a by_dataset n was once dropped for the default)."""
    from bench import plots, report

    seen = {}
    monkeypatch.setattr(plots, "draw_all", lambda rows, folder, **kw: seen.update(kw) or [])
    monkeypatch.setattr(report, "write", lambda *args: {})
    monkeypatch.setattr(report, "format_failures_markdown", lambda rows: "")
    rows = pd.DataFrame({"method": ["truth"], "dataset": ["textbook"]})
    paper.write_outputs(rows, tmp_path, {"main": {"dataset": "textbook", "n": 256}, "by_dataset": {"n": 192}})
    assert (seen["dataset"], seen["n_main"], seen["n_datasets"]) == ("textbook", 256, 192)


def test_the_paper_s_report_holds_only_the_config_s_grid(tmp_path, monkeypatch):
    """The result folder may hold rows of another sweep (here noise 0.01): the report and the
    figures are built from the config's grid alone."""
    from bench import reproduction
    from bench.rows import COLUMNS
    from bench.store import ResultStore

    out = tmp_path / "out"
    config = tmp_path / "c.yaml"
    config.write_text(f"out: {out}\ndatasets: [textbook]\nsubset: {{textbook: 2}}\nnoise: [0]\nn: [128]\n"
                      "methods: [truth]\nseeds: [0]\n")
    sweep = paper.sweep_from_config(paper.load_config(config), False, 1, "joblib", None)
    stored = []
    for task in runner.build_tasks(sweep):
        for noise in (0.0, 0.01):
            row = dict.fromkeys(COLUMNS, np.nan)
            row.update(dataset=task.trajectory.dataset, equation_id=task.trajectory.equation_id,
                       y0_index=task.trajectory.y0_index, noise=noise, n=128, n_observed=128, seed=0, method="truth",
                       status="ok")
            stored.append(row)
    ResultStore(out).replace_all(pd.DataFrame(stored))
    seen = []
    monkeypatch.setattr(runner, "run", lambda sweep, progress=True: None)
    monkeypatch.setattr(reproduction, "write", lambda rows, *args: seen.append(rows) or tmp_path / "r.md")
    monkeypatch.setattr(paper, "write_outputs", lambda rows, *args, **kw: seen.append(rows) or tmp_path / "i.md")
    paper.run_paper(str(config), quick=False, jobs=1, backend="joblib", scheduler=None, progress=False)
    assert [len(rows) for rows in seen] == [2, 2] and all(set(rows["noise"]) == {0.0} for rows in seen)


def test_an_empty_figure_entry_reads_as_the_defaults_after_the_sweep(tmp_path, monkeypatch):
    """`figures:` then `main:` with nothing after it (YAML null) passed the checks, and the report
    then failed on None after the whole sweep had run."""
    from bench import reproduction

    config = tmp_path / "c.yaml"
    config.write_text(f"out: {tmp_path / 'out'}\ndatasets: [textbook]\nsubset: {{textbook: 2}}\nnoise: [0]\nn: [128]\n"
                      "methods: [truth]\nseeds: [0]\nfigures:\n  main:\n  by_dataset: {n: 128}\n")
    seen = {}
    monkeypatch.setattr(runner, "run", lambda sweep, progress=True: None)
    monkeypatch.setattr(reproduction, "write", lambda *args, **kwargs: seen.setdefault("roles", args[4]))
    monkeypatch.setattr(paper, "write_outputs", lambda rows, folder, figures, *args, **kwargs: tmp_path / "index.md")
    assert paper.run_paper(str(config), quick=False, jobs=1, backend="joblib", scheduler=None,
                           progress=False) == tmp_path / "index.md"
    assert seen["roles"].main_dataset == "classic" and seen["roles"].extrap_n == 128
    assert paper.figure_settings({"main": None}, "main") == {} and paper.figure_settings(None, "by_dataset") == {}


def test_an_infinite_subset_is_a_config_error(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"out: {tmp_path / 'out'}\ndatasets: [textbook]\nsubset: {{textbook: .inf}}\nnoise: [0]\n"
                      "n: [128]\nmethods: [truth]\nseeds: [0]\n")
    with pytest.raises(paper.ConfigError, match="whole numbers of at least 1"):
        paper.sweep_from_config(paper.load_config(config), False, 1, "joblib", None)


def test_quick_keeps_a_method_given_with_parameters():
    """--quick skipped `sindy:fd_degrees=(3,)` as "no method of that name"; the full run kept it."""
    config = {"out": "x", "datasets": ["textbook"], "noise": [0], "n": [128], "methods": ["truth", "sindy:fd_degrees=(3,)"],
              "seeds": [0]}
    for quick in (False, True):
        labels = [m.label for m in paper.sweep_from_config(config, quick, 1, "joblib", None).methods]
        assert labels == ["truth", "sindy:fd_degrees=(3,)"], quick

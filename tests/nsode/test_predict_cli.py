import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from nsode import report
from nsode.cli import main


@pytest.mark.parametrize("content, message", [
    ("a,b\n1,2\n", "naming columns t and y, comma-separated (found 'a', 'b'); or name the file's own: --columns TIME"),
    ("t,y\n" + "".join(f"{i},x\n" for i in range(12)), "column y holds 'x' in row 1 below the header, not a number"),
    ("t,y\n0,1\n1,2\n", "only 2 points"),
    ("t,y\n" + "".join(f"{i % 11},{i}\n" for i in range(12)), "duplicate time"),
    ("t,y\n" + "".join(f"{i},{'nan' if i == 3 else i}\n" for i in range(12)), "NaN or infinite"),
])
def test_bad_files_get_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["predict", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_checkpoint_gets_a_one_line_error(tmp_path, capsys, write_record):
    t = np.linspace(0, 2, 20)
    path = write_record(tmp_path / "ok.csv", t, np.exp(-t))
    assert main(["predict", str(path), "--checkpoint", str(tmp_path / "none")]) == 2
    assert "none: no such checkpoint folder" in capsys.readouterr().err


def saved_model_and_its_trajectory(overfit, folder, write_record) -> tuple[str, str]:
    """The overfitted model saved as a checkpoint, and its first trajectory as a CSV file."""
    model, observations, _ = overfit
    model.save_pretrained(folder / "ckpt")
    return str(write_record(folder / "traj.csv", *observations[0])), str(folder / "ckpt")


def test_predict_prints_the_ode_and_writes_a_plot(tmp_path, capsys, overfit, write_record):
    import torch

    path, checkpoint = saved_model_and_its_trajectory(overfit, tmp_path, write_record)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert main(["predict", path, "--checkpoint", checkpoint, "--beam", "8",
                     "--plot", str(tmp_path / "p.png")]) == 0
        assert torch.get_num_threads() == 1  # the default: one thread reads as fast, and is not slowed by load
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    r2 = float(re.search(r"R\^2 on the data: (\S+)", out).group(1))  # 1.000000 for an exact fit
    assert out.startswith("y' = -0.5*y\n") and r2 >= 0.99 and (tmp_path / "p.png").is_file()  # its first law


def test_a_file_with_its_own_column_names_is_read_from_the_columns_named(tmp_path, capsys, overfit, write_record,
                                                                        monkeypatch):
    import matplotlib.figure

    path, checkpoint = saved_model_and_its_trajectory(overfit, tmp_path, write_record)
    lines = Path(path).read_text().splitlines()
    Path(path).write_text("\n".join(["Hours,OD600", *lines[1:]]) + "\n")
    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    assert main(["predict", path, "--columns", "hours", "od600", "--checkpoint", checkpoint, "--beam", "8",
                 "--top", "0", "--plot", str(tmp_path / "p.png")]) == 0
    assert capsys.readouterr().out.startswith("y' = ")
    ax = drawn[0].axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Hours (t)", "OD600 (y)")  # as the file spells them, not as typed


def test_a_record_without_variation_read_paper_style_is_named_as_such(tmp_path, capsys, overfit, write_record):
    _, checkpoint = saved_model_and_its_trajectory(overfit, tmp_path, write_record)
    flat = write_record(tmp_path / "flat.csv", np.arange(16) / 8, np.full(16, 2.5))
    assert main(["predict", str(flat), "--checkpoint", checkpoint, "--beam", "4", "--paper"]) == 1
    assert "matched a record without variation" in capsys.readouterr().err


def test_a_trajectory_longer_than_the_encoder_reads_is_subsampled_for_the_model(overfit):
    from nsode.predict import Predictor

    model, observations, _ = overfit
    t, y = observations[0]
    fine_t = np.linspace(t[0], t[-1], model.config.max_points + 300)  # 812 points: past the positions
    result = Predictor(model, beam=4).predict(fine_t, np.interp(fine_t, t, y))
    assert result.timings["n_candidates"] > 0 and result.expression


def test_the_model_reads_a_record_the_same_whenever_its_clock_starts(overfit):
    from nsode.predict import Predictor

    model, observations, _ = overfit
    t = np.arange(32) / 16  # exact in binary, so t + 1024 - 1024 is t again
    y = np.interp(t, *observations[0])
    predictor = Predictor(model, beam=4)
    expected = predictor.candidates(t, y)
    for clock in (1024.0, -8.0):
        assert predictor.candidates(t + clock, y) == expected


def test_a_negative_branch_count_is_refused_in_one_line(tmp_path, capsys, write_record):
    path = write_record(tmp_path / "decay.csv", [0, 1, 2], [1, 0.6, 0.37])
    with pytest.raises(SystemExit) as stop:
        main(["predict", str(path), "--branches", "-1"])
    assert stop.value.code == 2 and "--branches must be 0" in capsys.readouterr().err


@pytest.mark.parametrize("flags, named", [(["--by", "run"], "--by"), (["--joint", "OTHER"], "--joint")])
def test_a_joint_read_with_paper_is_refused_naming_the_flag_typed(tmp_path, capsys, write_record, flags, named):
    """`--by` turns on the joint read: its refusal beside --paper named --joint, which the user never typed."""
    path = write_record(tmp_path / "decay.csv", [0, 1, 2], [1, 0.6, 0.37])
    flags = [str(path) if flag == "OTHER" else flag for flag in flags]
    with pytest.raises(SystemExit) as stop:
        main(["predict", str(path), *flags, "--paper"])
    assert stop.value.code == 2 and f"{named} reads one law with the search" in capsys.readouterr().err


def test_the_model_view_has_exactly_the_count_asked_for():
    from nsode.predict import model_view

    t = np.sort(np.random.default_rng(0).uniform(0, 2, 16))
    y = 3 * np.exp(-0.5 * t)
    fine_t, fine_y = model_view(t, y, 128)  # few points: read off a spline through them
    assert len(fine_t) == 128 and fine_t[0] == t[0] and fine_t[-1] == t[-1]
    assert np.allclose(fine_y, 3 * np.exp(-0.5 * fine_t), rtol=1e-3)
    thin_t, thin_y = model_view(fine_t, fine_y, 32)  # many points: an even subsample of them
    assert len(thin_t) == 32 and set(thin_t) <= set(fine_t)
    assert model_view(t, y, 16)[0] is t


def test_bad_budgets_and_a_plot_into_a_missing_folder_are_refused_before_the_search(tmp_path, capsys, write_record):
    t = np.arange(20) / 10
    path = write_record(tmp_path / "decay.csv", t, np.exp(-t / 2))
    for flag, value in (("--beam", "-5"), ("--top-k", "0"), ("--top", "-1"), ("--threads", "0")):
        with pytest.raises(SystemExit) as stop:
            main(["predict", str(path), flag, value])
        assert stop.value.code == 2 and f"argument {flag}" in capsys.readouterr().err
    assert main(["predict", str(path), "--plot", str(tmp_path / "nowhere" / "p.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["predict", str(path), "--json", str(tmp_path / "nowhere" / "fit.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --json") and "does not exist" in err
    assert main(["predict", str(path), "--json", str(tmp_path)]) == 2
    assert "that is a folder" in capsys.readouterr().err
    assert main(["predict", str(path), "--plot", str(tmp_path / "fit.png"), "--json", str(tmp_path / "fit.png")]) == 2
    assert "--plot writes that file too" in capsys.readouterr().err
    if Path("/proc/self").is_dir():  # a folder that takes no new files, even from root
        assert main(["predict", str(path), "--plot", "/proc/nsode-fit.png"]) == 2
        assert "cannot write there" in capsys.readouterr().err
    bad = write_record(tmp_path / "bad.csv", [0], [1])
    assert main(["predict", str(bad), "--plot", str(tmp_path / "fine.png")]) == 2
    assert not (tmp_path / "fine.png").exists()  # the probe leaves no empty file behind


def test_options_the_run_would_ignore_or_cannot_use_are_refused(tmp_path, capsys, write_record):
    t = np.arange(20) / 10
    path = write_record(tmp_path / "decay.csv", t, np.exp(-t / 2))
    refused = [["--paper", "--top-k", "3"], ["--paper", "--forecast", "0"], ["--forecast", "-5"],
               ["--multiplicity", "-1"], ["--node-cost", "nan"], ["--refit", "40"], ["--paper", "--refine"],
               ["--agreement", "2"]]  # an R^2 threshold
    for flags in refused:
        with pytest.raises(SystemExit) as stop:
            main(["predict", str(path), *flags])
        assert stop.value.code == 2, flags
        assert "error:" in capsys.readouterr().err
    assert main(["predict", str(path), "--plot", str(tmp_path)]) == 2  # a folder, not a file name
    assert "that is a folder" in capsys.readouterr().err
    assert main(["predict", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_plot_name_without_an_ending_gets_png_and_says_so(tmp_path, capsys, overfit, write_record):
    path, checkpoint = saved_model_and_its_trajectory(overfit, tmp_path, write_record)
    assert main(["predict", path, "--checkpoint", checkpoint, "--beam", "4", "--top-k", "2",
                 "--plot", str(tmp_path / "fit")]) == 0
    assert (tmp_path / "fit.png").is_file() and f"plot written to {tmp_path / 'fit.png'}" in capsys.readouterr().out


def test_r2_far_off_reads_in_scientific_notation():
    from nsode.report import r2_text

    assert r2_text(0.9876543) == "0.987654" and r2_text(-1.6e270) == "-1.6e+270"


def test_a_law_that_follows_the_data_worse_than_their_mean_is_said_not_to_describe_them():
    """Growth over 130 decades: the noise level was misread as well as the law, so the misfit note
    stayed silent beside an R^2 of -0.016."""
    from types import SimpleNamespace

    from nsode.report import fit_notes

    t = np.linspace(0, 2, 64)
    result = SimpleNamespace(info={}, expression="60.0*y", r2=-0.016, candidates=[], rejected={})
    notes = fit_notes(result, t, 1e-130 * np.exp(149.67 * t), 1.0, str)
    assert any("less well than their mean does (R^2 below 0)" in note for note in notes)
    assert not fit_notes(SimpleNamespace(**{**vars(result), "r2": 0.99}), t, np.exp(-t), 1.0, str)


def test_candidates_outside_the_model_s_vocabulary_are_shown_too():
    from nsode.report import shown

    assert shown("-0.502251234*Abs(y)") == "-0.5023*abs(y)"  # abs comes from the search, not the model; read back


def test_times_are_written_to_a_fraction_of_the_span_however_late_the_clock_starts():
    from nsode.report import time_text

    unix = 1700003600 + np.linspace(0, 2592000, 80)  # a month of Unix seconds
    assert time_text(unix[0], unix) == "1.7000036e+09"  # 1.7e+09 would be an hour off
    assert time_text(4.0, np.linspace(0, 2, 64)) == "4" and time_text(0.0, np.linspace(0, 2, 64)) == "0"
    assert time_text(1950.5, np.linspace(1950, 2020, 71)) == "1950.5"


def test_when_every_fit_fails_the_stability_check_the_user_is_told(capsys):
    from types import SimpleNamespace

    from odecore.expressions import parse
    from nsode.predict import Predictor
    from nsode.report import beyond_the_data
    from nsode.search.settings import Settings

    t = np.linspace(0, 2, 40)
    y = np.sqrt(1e-4 + t) + 0.01 * np.random.default_rng(0).normal(size=t.size)  # y' = 0.5/y from 0.01
    # only laws in 1/y, which cannot start at rest, and rest lies within the noise of y0
    searcher = SimpleNamespace(search=Settings(variants=False, steady=False, drift=False))
    result = Predictor._searched(searcher, [parse("0.5/y"), parse("0.4/y")], t, y)
    assert result.info["all_rejected"] and result.expression in result.rejected
    beyond_the_data(result, t)
    out = capsys.readouterr().out
    assert "every fit failed the stability check" in out and "statistically as good" not in out


def test_the_user_is_told_when_the_choice_weighed_noise_that_grows_with_y(tmp_path, capsys, write_record):
    from odecore.expressions import compile_scalar, parse
    from odecore.solving import solve

    rng = np.random.default_rng(0)  # y' = -0.5 y**2 falling twentyfold under 1% relative noise
    t = np.sort(rng.uniform(0, 10, 128))
    y = solve(compile_scalar(parse("-0.5*y**2")), 4.0, t) * (1 + 0.01 * rng.normal(size=t.size))
    path = write_record(tmp_path / "decay.csv", t, y)
    assert main(["predict", str(path), "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "the choice weighed each point by its own noise level, and the errors allow for it" in out and "noise floor" not in out
    assert main(["predict", str(path), "--top", "0", "--no-noise-growth"]) == 0
    assert "its own noise level" not in capsys.readouterr().out


def test_a_noisy_flat_record_read_as_a_steady_state_says_why_its_r2_is_zero(tmp_path, capsys, write_record):
    rng = np.random.default_rng(1)  # a level of 2 under 1% relative noise: y' = 0, whose course is the mean
    t = np.linspace(0, 2, 64)
    y = 2 * (1 + 0.01 * rng.normal(size=t.size))
    path = write_record(tmp_path / "flat.csv", t, y)
    assert main(["predict", str(path), "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "y' = 0\n" in out and "R^2 on the data: 0.000000" in out
    assert "R^2 on the data is 0 by definition" in out


def test_a_beam_wider_than_the_bound_is_refused_before_the_model_loads(tmp_path, capsys, write_record):
    from nsode.predict import Predictor
    from nsode.search.funnel import MAX_BEAM

    path = write_record(tmp_path / "decay.csv", np.arange(20) / 10, np.exp(-np.arange(20) / 20))
    with pytest.raises(SystemExit) as stop:
        main(["predict", str(path), "--beam", "100000"])  # took 13.6 GB
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument --beam: 100000 must be at most {MAX_BEAM}" in err
    with pytest.raises(ValueError, match=f"beam=100000: must be at most {MAX_BEAM}"):
        Predictor(beam=100000)


def test_an_output_that_names_the_data_file_is_refused_and_the_data_kept(tmp_path, capsys, monkeypatch, write_record):
    t = np.arange(20) / 10
    path = write_record(tmp_path / "decay.csv", t, np.exp(-t / 2))
    before = path.read_bytes()
    monkeypatch.chdir(tmp_path)
    for args in (["--json", "./decay.csv"], ["--by", "run", "--json", str(path)]):
        assert main(["predict", str(path), *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --json") and "the data file read" in err
    assert path.read_bytes() == before


def test_json_and_plot_targets_that_are_no_regular_file_are_refused_unopened(tmp_path, capsys, write_record):
    import os

    path = write_record(tmp_path / "decay.csv", np.arange(20) / 10, np.exp(-np.arange(20) / 20))
    os.mkfifo(tmp_path / "pipe")
    reader = os.open(tmp_path / "pipe", os.O_RDONLY | os.O_NONBLOCK)  # a regression fails here, not hangs
    try:
        for flag in ("--json", "--plot"):
            assert main(["predict", str(path), flag, str(tmp_path / "pipe")]) == 2
            assert capsys.readouterr().err == f"error: {flag} {tmp_path / 'pipe'}: not a regular file\n"
    finally:
        os.close(reader)
    assert (tmp_path / "pipe").is_fifo() and not (tmp_path / "pipe.png").exists()
    if Path("/dev/full").is_char_device():
        assert main(["predict", str(path), "--json", "/dev/full"]) == 2
        assert "--json /dev/full: not a regular file" in capsys.readouterr().err
        assert Path("/dev/full").is_char_device()


def test_json_through_a_link_is_written_to_its_target(tmp_path, capsys, overfit, write_record):
    path, checkpoint = saved_model_and_its_trajectory(overfit, tmp_path, write_record)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "fit.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to(tmp_path / "out" / "fit.json")
    assert main(["predict", path, "--checkpoint", checkpoint, "--beam", "4", "--top", "0",
                 "--json", str(tmp_path / "link.json")]) == 0
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "out" / "fit.json").read_text())["law"] in capsys.readouterr().out


def test_a_rising_record_read_as_y_prime_zero_is_not_called_a_steady_state(tmp_path, capsys, write_record):
    rng = np.random.default_rng(0)  # y rising from 1 to 100 toward a blow-up, with one proposal fitted
    t = np.linspace(0, 2, 40)
    y = 1 / (1 - 0.99 * t / 2) + 0.01 * rng.normal(size=t.size)
    path = write_record(tmp_path / "blowup.csv", t, y)
    assert main(["predict", str(path), "--beam", "1", "--top-k", "1", "--combine", "0", "--per-capita", "0",
                 "--read-reciprocal", "0", "--prune", "0", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "y' = 0\n" in out and "times their noise" in out  # the pick misses the record, and says so
    assert "holds its level" not in out


def test_predict_reads_a_file_of_unsorted_times_sorted(tmp_path):
    from nsode.cli import read_trajectory as read

    t = np.arange(12.0)[::-1]
    pd.DataFrame({"t": t, "y": np.exp(-t)}).to_csv(tmp_path / "d.csv", index=False)
    data = read(tmp_path / "d.csv", ("t", "y"))
    assert np.array_equal(data.t, np.arange(12.0)) and np.allclose(data.y, np.exp(-np.arange(12.0)))


def test_predict_by_reads_the_records_from_the_columns_named(tmp_path, write_runs):
    from nsode.cli import read_records as read

    path = write_runs(tmp_path / "runs.csv", header="Hours,OD600,well")
    records = read(path, "well", ("hours", "od600"))
    assert list(records) == ["a", "b"] and records["b"].columns == ("Hours", "OD600")


def test_predict_by_names_each_record_by_its_label(tmp_path, monkeypatch, write_runs):
    import nsode.cli
    from nsode.predict import Predictor

    seen = []
    monkeypatch.setattr(Predictor, "searching", classmethod(lambda cls, *a, **k: None))  # no model: only the names
    monkeypatch.setattr(nsode.cli, "predict_jointly", lambda predictor, records, names, args: seen.append(names) or 0)
    path = write_runs(tmp_path / "runs.csv", labels=("B1", "A1"), header="Hours,OD600,Well")
    assert nsode.cli.main(["predict", str(path), "--by", "well", "--columns", "hours", "od600"]) == 0
    assert seen == [["well B1", "well A1"]]  # the file's order and labels, not places


def test_top_lists_exactly_that_many_candidates(capsys):
    from nsode.cli import predict_alone
    from nsode.predict import Prediction

    t = np.linspace(0, 2, 20)
    y = np.exp(-0.5 * t)
    result = Prediction("-0.5*y", 0.99, [("-0.5*y", 0.99), ("-0.4*y", 0.9), ("-0.6*y", 0.8)], y0=1.0)
    predictor = SimpleNamespace(predict=lambda t, y: result, search=None)
    for top, listed in ((2, 2), (1, 1), (0, 0)):
        args = SimpleNamespace(paper=True, top=top, checkpoint=None, plot=None, json=None, columns=("t", "y"))
        assert predict_alone(predictor, t, y, "decay.csv", args) == 0
        out = capsys.readouterr().out
        lines = [line for line in out.splitlines() if line.startswith("  ")]
        assert len(lines) == listed, out
        assert (f"top {listed} candidate" in out) == (listed > 0)


def test_json_writes_numbers_that_are_not_finite_as_null(tmp_path):
    """Any JSON reader takes the file: no -Infinity or NaN, numpy numbers as plain ones."""
    from nsode.cli import _write_json

    path = tmp_path / "r.json"
    _write_json(path, {"r2": -math.inf, "candidates": [{"r2": np.float64(math.nan)}], "points": np.int64(12),
                       "y0": np.float32(1.5)})
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text

    def refuse(name):
        raise ValueError(name)

    assert json.loads(text, parse_constant=refuse) == {"r2": None, "candidates": [{"r2": None}], "points": 12, "y0": 1.5}


def test_glitches_are_set_aside_only_where_the_protocol_s_minimum_remains(monkeypatch):
    """A record of 10 points keeps every point (9 would be under odecore.protocol.MIN_POINTS); 11 may lose one."""
    import nsode.predict
    from nsode.predict import Predictor
    from nsode.search.settings import Settings

    monkeypatch.setattr(nsode.predict, "isolated_glitches", lambda t, y: [3])
    searcher = SimpleNamespace(search=Settings())
    for n, aside in ((10, []), (11, [3])):
        t = np.linspace(0, 2, n)
        assert Predictor.glitches(searcher, t, np.exp(-t)) == aside, n
    assert Predictor.glitches(SimpleNamespace(search=Settings(glitches=False)), t, np.exp(-t)) == []
    assert Predictor.glitches(SimpleNamespace(search=None), t, np.exp(-t)) == []  # the paper's selection


T = np.linspace(0, 2, 64)
Y = 3 * np.exp(-0.5 * T)


def _result(**fields):
    return SimpleNamespace(**{"info": {}, "expression": "-0.5*y", "r2": 0.9, "candidates": [], "rejected": {}, **fields})


def test_a_better_fit_set_aside_is_named_only_if_it_leaves_a_quarter_of_the_misses():
    """A pick missing the data by 5 noise levels (R^2 0.9): a set-aside fit of R^2 0.97 leaves 30% of
    its misses, not named; one of 0.98 leaves 20%, named; a better fit that was not set aside is not."""
    def named(candidates, rejected):
        notes = report.fit_notes(_result(candidates=candidates, rejected=rejected), T, Y, 5.0, str)
        return [note for note in notes if "set aside as unstable" in note]

    assert named([("-0.6*y", 0.97)], {"-0.6*y": "blows up"}) == []
    assert named([("-0.6*y", 0.99)], {}) == []
    only, = named([("-0.6*y", 0.98), ("-0.7*y", 0.999)], {"-0.6*y": "blows up", "-0.7*y": "leaves its domain"})
    assert only.startswith("note: -0.6*y fits better (R^2 0.980000)") and only.endswith("blows up")  # the first listed


def test_a_steady_state_read_as_y_prime_zero_is_not_also_said_to_miss_its_data():
    notes = report.fit_notes(_result(expression="0", r2=-0.01), T, np.full(64, 2.0), 1.0, str)
    assert any("a steady state" in note for note in notes)
    assert not any("less well than their mean" in note for note in notes)


def test_beyond_the_data_names_the_rival_farthest_from_the_pick(monkeypatch, capsys):
    from nsode.search import fits

    grid = np.linspace(0, 4, 5)
    pick, near, far = grid + 1.0, grid + 1.01, 2 * grid + 1.0
    monkeypatch.setattr(fits, "extrapolations", lambda found, t: (grid, [pick, near, far]))
    result = SimpleNamespace(chosen="pick", rivals=["near", "far"], info={})
    report.beyond_the_data(result, T)
    out = capsys.readouterr().out
    assert "2 other fits are statistically as good" in out and "ends at y = 9 (this one: 5)" in out


def test_the_json_reading_says_whether_the_noise_grows_with_y():
    fitted = SimpleNamespace(y0_error=0.01, constants=[])
    pick = report.Pick("-0.5*y", 0.0, 0.01, 1.0, profile=None, chosen=SimpleNamespace(y0=3.0), fit=fitted)
    assert pick.as_dict()["noise"]["grows_with_y"] is False
    pick.profile = object()
    assert pick.as_dict()["noise"]["grows_with_y"] is True


def test_a_turn_is_noted_only_beyond_the_largest_of_n_noise_draws(monkeypatch):
    """REVERSAL_NOISES levels times sqrt(2 log n), the growth of the largest of n noise draws: on 64
    points 17.3 levels; a turn of 10 levels is noise."""
    import odecore.noise
    import odecore.trajectories

    monkeypatch.setattr(odecore.noise, "noise_level", lambda t, y: 1.0)
    for turn, noted in ((10.0, False), (18.0, True)):
        monkeypatch.setattr(odecore.trajectories, "largest_reversal", lambda y, turn=turn: turn)
        assert (report.turning_note(T, Y) is not None) == noted


def _alone(result, tmp_path=None, **flags):
    """predict_alone on a 20-point decay answered by `result`, read paper-style (no search), with
    `flags` over the defaults; returns the exit status."""
    from nsode.cli import predict_alone

    t = np.linspace(0, 2, 20)
    predictor = SimpleNamespace(predict=lambda t, y: result, search=None)
    args = SimpleNamespace(**{"paper": True, "top": 5, "checkpoint": None, "plot": None, "json": None,
                              "columns": ("t", "y"), **flags})
    return predict_alone(predictor, t, np.exp(-0.5 * t), "decay.csv", args)


def test_the_default_top_lists_five_candidates(tmp_path, monkeypatch, write_record):
    """`--top` defaults to 5, as its help says."""
    import nsode.cli
    from nsode.predict import Predictor

    seen = []
    monkeypatch.setattr(Predictor, "searching", classmethod(lambda cls, *a, **k: None))  # no model: only the flags
    monkeypatch.setattr(nsode.cli, "predict_alone", lambda predictor, t, y, name, args: seen.append(args.top) or 0)
    path = write_record(tmp_path / "decay.csv", np.arange(20) / 10, np.exp(-np.arange(20) / 20))
    assert main(["predict", str(path)]) == 0 and seen == [5]


def test_a_candidate_set_aside_as_unstable_is_marked_so_in_the_list_and_the_json(tmp_path, capsys):
    from nsode.predict import Prediction

    result = Prediction("-0.5*y", 0.99, [("-0.5*y", 0.99), ("y**2", 0.98)], y0=1.0, rejected={"y**2": "blows up"})
    assert _alone(result, json=tmp_path / "r.json") == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert lines[0].endswith("-0.5*y") and lines[1].endswith("y**2  [unstable beyond the data]")
    reading = json.loads((tmp_path / "r.json").read_text())
    assert [c["unstable"] for c in reading["candidates"]] == [False, True] and reading["method"] == "paper"


def test_points_set_aside_are_named_in_the_json_by_their_times(tmp_path, capsys):
    from nsode.predict import Prediction

    t = np.linspace(0, 2, 20)
    result = Prediction("-0.5*y", 0.99, [("-0.5*y", 0.99)], y0=1.0, info={"set_aside": [3]})
    assert _alone(result, json=tmp_path / "r.json") == 0
    out = capsys.readouterr().out
    assert "note: 1 point set aside" in out and "(without the 1 point set aside)" in out
    assert json.loads((tmp_path / "r.json").read_text())["set_aside_times"] == [t[3]]


def test_the_paper_s_model_outside_its_training_range_and_a_safety_net_are_noted(capsys):
    from nsode.predict import Prediction

    result = Prediction("-0.5*y", 0.99, [("-0.5*y", 0.99)], y0=1.0, timings={"outside_range": True},
                        info={"safety_net": True})
    assert _alone(result, top=0) == 0
    out = capsys.readouterr().out
    assert "note: the paper's model was trained on" in out and "a wall-clock safety net fired" in out
    assert _alone(result, top=0, checkpoint="mine") == 0  # the user's own checkpoint: no word on nsode-eps
    assert "the paper's model was trained on" not in capsys.readouterr().out


def test_an_output_that_cannot_be_written_exits_1(tmp_path, capsys, monkeypatch):
    """A full disk at the end of a run: the exit status says the file is missing (scripts read it)."""
    import nsode.cli
    from nsode.predict import Prediction

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    result = Prediction("-0.5*y", 0.99, [("-0.5*y", 0.99)], y0=1.0)
    monkeypatch.setattr(nsode.cli, "write_text_atomic", full)
    assert _alone(result, json=tmp_path / "r.json") == 1
    assert "error: --json" in capsys.readouterr().err
    monkeypatch.setattr(nsode.cli, "plot", full)
    assert _alone(result, plot=tmp_path / "p.png") == 1
    assert "error: --plot" in capsys.readouterr().err


def test_the_paper_s_selection_answers_no_law_when_no_candidate_integrates():
    """A beam whose only law blows up inside the data: no expression (the CLI's 'could be integrated'
    error), not the law with R^2 -inf; y0 is the first observation."""
    from odecore.expressions import parse
    from nsode.predict import Predictor

    t = np.linspace(0, 2, 20)
    y = np.exp(t)  # y' = y**2 from 1 blows up at t = 1
    reader = Predictor.__new__(Predictor)
    reader.search, reader.exact = None, 8
    reader.candidates = lambda t, y, timings=None: [(parse("y**2"), 0.0)]
    result = reader.predict(t, y)
    assert result.expression == "" and result.r2 == -math.inf
    reader.candidates = lambda t, y, timings=None: [(parse("y"), 0.0)]
    assert reader.predict(t, y).y0 == y[0]


def test_reads_shows_the_encoder_exactly_that_many_observations(monkeypatch):
    import nsode.predict
    from nsode.predict import Predictor

    class Shown(Exception):
        pass

    def encode(t, y):
        raise Shown(len(t))

    monkeypatch.setattr(nsode.predict, "encode_observations", encode)
    reader = Predictor.__new__(Predictor)
    reader.model = SimpleNamespace(config=SimpleNamespace(max_points=512, input_scaling="none"))
    reader.scaled = None
    t = np.linspace(0, 2, 40)
    for reads, count in ((None, 40), (128, 128), (16, 16)):
        reader.reads = reads
        with pytest.raises(Shown) as shown:
            reader.candidates(t, np.exp(-t))
        assert shown.value.args == (count,)


def test_a_temperature_of_zero_is_refused():
    from nsode.predict import Predictor

    with pytest.raises(ValueError, match="temperature=0: must be a number above 0"):
        Predictor(temperature=0)


def test_each_reading_keeps_only_its_first_laws():
    """read_log = 1: one law from the log reading, however many the beam of 1 decoded."""
    import sympy

    from odecore.expressions import Y
    from nsode.predict import Predictor
    from nsode.search.settings import Settings

    t = np.linspace(0, 2, 64)
    reader = SimpleNamespace(search=Settings(read_log=1, read_reciprocal=0),
                             candidates=lambda t, z, beam=None: [(-Y, 0.0), (sympy.exp(Y), -1.0), (Y**2, -2.0)])
    [(label, laws)] = Predictor.transformed_readings(reader, t, 3 * np.exp(-0.5 * t))
    assert label == "log-reading" and len(laws) == 1

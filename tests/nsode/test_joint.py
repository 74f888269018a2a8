"""One law for several records (nsode/joint.py and `nsode predict` with several files)."""
import json
import re

import numpy as np
import pytest
import sympy

from odecore.expressions import Y, compile_scalar
from odecore.solving import solve
from odecore.uncertainty import round_to_error
from nsode.data.tokens import parse_infix
from nsode.joint import joint_choice, predict_records
from nsode.predict import Predictor
from nsode.search.terms import skeleton_key
from types import SimpleNamespace

LOGISTIC = 1.3 * Y - 0.4 * Y**2  # K = 3.25
STARTS = (0.3, 1.0, 5.0)  # below, well below and above K: each record sees another stretch of y


def logistic_records(seed: int = 1, sigma: float = 0.01) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    records = []
    for y0 in STARTS:
        t = np.sort(rng.uniform(0, 2, 128))
        t[0] = 0.0
        y = solve(compile_scalar(LOGISTIC), y0, t)
        records.append((t, y * (1 + sigma * rng.standard_normal(len(t)))))
    return records


@pytest.fixture(scope="module")
def predictor():
    import torch

    torch.set_num_threads(1)
    return Predictor.searching()


@pytest.fixture(scope="module")
def logistic_read(predictor):
    """The logistic records and each one's own search."""
    records = logistic_records()
    return records, [predictor.predict(t, y) for t, y in records]


@pytest.fixture(scope="module")
def logistic_joint(predictor, logistic_read):
    """The joint read of the logistic records by `predict_records` with its defaults (a second look
    with powers of y every time), each record's own search served from `logistic_read` in order."""
    records, own = logistic_read
    searched = iter(own)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(predictor, "predict", lambda t, y, **_: next(searched))
        result = predict_records(predictor, records)
    assert next(searched, None) is None  # one search per record, as many as were made
    return result


def test_several_records_read_the_logistic_that_each_alone_may_miss(logistic_joint):
    result = logistic_joint
    law = parse_infix(result.expression)
    assert skeleton_key(law) == skeleton_key(LOGISTIC), result.expression
    assert float(law.coeff(Y)) == pytest.approx(1.3, rel=0.02)
    assert float(law.coeff(Y**2)) == pytest.approx(-0.4, rel=0.02)
    chosen = result.chosen
    assert chosen.fit.y0s == pytest.approx(STARTS, rel=0.01) and min(chosen.r2s) > 0.98
    assert len(result.own) == 3 and result.info["records"] == 3 and not result.info["all_rejected"]
    assert result.info["second_look"]  # powers of y were tried too, and the criterion kept the logistic


def test_the_second_look_adds_sums_of_powers_of_y_and_keeps_a_law_that_fits(predictor, logistic_read, logistic_joint):
    records, own = logistic_read
    first = joint_choice(own, records, predictor.search, powers=0)
    second = logistic_joint  # powers y..y**5
    gated = joint_choice(own, records, predictor.search, powers=5, second_look="missed")  # the pick fits: no look
    assert not first.info["second_look"] and second.info["second_look"] and not gated.info["second_look"]
    assert gated.info["skeletons"] == first.info["skeletons"]
    assert second.info["skeletons"] > first.info["skeletons"]
    added = {skeleton_key(f.expr) for f in second.fits} - {skeleton_key(f.expr) for f in first.fits}
    assert any(parse_infix(f.text).has(Y**5) or parse_infix(f.text).has(Y**4) for f in second.fits
               if skeleton_key(f.expr) in added)  # the new sums hold powers no record proposed
    assert skeleton_key(parse_infix(second.expression)) == skeleton_key(LOGISTIC) == skeleton_key(
        parse_infix(first.expression))


def test_the_shared_ranking_fits_more_new_sums_and_keeps_a_law_that_fits(predictor, logistic_read):
    records, own = logistic_read
    summed = joint_choice(own, records, predictor.search, powers=0, shared_ranking=False)
    both = joint_choice(own, records, predictor.search, powers=0)
    assert both.info["skeletons"] > summed.info["skeletons"]
    assert skeleton_key(parse_infix(both.expression)) == skeleton_key(LOGISTIC)


def test_pooled_noise_reads_every_record_at_its_own_level_and_keeps_the_law(predictor, logistic_read):
    """The study of short records (docs/search.md, "Session 83"): noise read from all records
    together, relative noise found to grow with y, and the logistic still read."""
    records, own = logistic_read
    pooled = joint_choice(own, records, predictor.search, powers=0, pooled_noise=True)
    assert pooled.info["pooled_noise"] and skeleton_key(parse_infix(pooled.expression)) == skeleton_key(LOGISTIC)
    for record in pooled.records:  # 1% of y: the level follows y, within a factor of 1.4 at the median
        ratio = np.asarray(record.noise) / (0.01 * np.abs(record.y))
        assert 1 / 1.4 < np.median(ratio) < 1.4
    levels = np.concatenate([r.noise for r in pooled.records])
    assert levels.max() > 3 * levels.min()  # y spans 0.3 to 5: the level grows with it


def test_the_joint_integral_fit_shares_coefficients_and_ranks_the_law_above_a_per_record_stand_in():
    from nsode.joint import _linear_joint, _record
    from nsode.search.proposals import propose
    from nsode.search.settings import Settings

    records = logistic_records()
    read = [_record(t, y, Settings()) for t, y in records]
    stand_in = Y * sympy.cos(Y) + Y  # fits each record's stretch of y with coefficients of its own
    stage1 = [propose([LOGISTIC, stand_in], r.t, r.y, r.sigma, variants=False) for r in read]
    ranked = {}
    for law in (LOGISTIC, stand_in):
        key = skeleton_key(law)
        ranked[key] = _linear_joint([found[key] for found in stage1], read)
    criterion, coefficients, y0s = ranked[skeleton_key(LOGISTIC)]
    assert sorted(coefficients) == pytest.approx([-0.4, 1.3], rel=0.03) and y0s == pytest.approx(STARTS, rel=0.02)
    assert criterion < ranked[skeleton_key(stand_in)][0] - 100


def test_a_joint_read_needs_two_records_and_names_a_bad_one(predictor):
    records = logistic_records()
    with pytest.raises(ValueError, match="two or more records"):
        predict_records(predictor, records[:1])
    t, y = records[1]
    with pytest.raises(ValueError, match="record 2: .*not sorted"):
        predict_records(predictor, [records[0], (t[::-1], y)])
    with pytest.raises(ValueError, match=re.escape("record 1 is not a (t, y) pair")):  # one record, not a list
        predict_records(predictor, records[0])
    with pytest.raises(ValueError, match="second_look must be one of always, missed, got 'never'"):
        predict_records(predictor, records, second_look="never")
    with pytest.raises(TypeError, match=re.escape("not a mapping (pass list(records.values()))")):  # keys read as records
        predict_records(predictor, {"A1": records[0], "B1": records[1]})
    with pytest.raises(ValueError, match="record 2: .*not sorted"):  # a generator is read, not refused by len()
        predict_records(predictor, (record for record in [records[0], (t[::-1], y)]))


@pytest.mark.parametrize("one_file", [False, True])
def test_predict_cli_reads_several_files_or_one_files_runs_as_one_law(tmp_path, capsys, one_file, write_record):
    from nsode.cli import main

    records = logistic_records()
    paths = [write_record(tmp_path / f"run{k}.csv", t, y) for k, (t, y) in enumerate(records)]
    write_record(tmp_path / "runs.csv", *map(np.concatenate, zip(*records)),
                 run=np.repeat(np.arange(len(records)), [len(t) for t, _ in records]))
    given = [str(tmp_path / "runs.csv"), "--by", "run"] if one_file else [*map(str, paths), "--joint"]
    assert main(["predict", *given, "--plot", str(tmp_path / "runs.png"), "--json", str(tmp_path / "runs.json")]) == 0
    out = capsys.readouterr().out
    assert "one law for 3 records" in out and (tmp_path / "runs.png").is_file()
    law = parse_infix(re.match(r"y' = (.*)\n", out).group(1))
    assert skeleton_key(law) == skeleton_key(LOGISTIC)
    assert out.count("R^2 0.99") == 3 and "each record alone" in out  # every record's own R^2, then its own read
    assert ("run 2  y(0) = 4.9" if one_file else "run2.csv  y(0) = 4.9") in out
    reading = json.loads((tmp_path / "runs.json").read_text())  # the same, for scripts
    assert reading["law"] == re.match(r"y' = (.*)\n", out).group(1) and len(reading["constants"]) == 2
    assert skeleton_key(parse_infix(reading["expression"])) == skeleton_key(law)  # at full precision
    names = ["run 0", "run 1", "run 2"] if one_file else [str(path) for path in paths]
    assert [record["name"] for record in reading["records"]] == names == reading["files"]
    assert all(record["r2"] > 0.99 and record["points"] == 128 and record["alone"] and record["noise"]["misfit"] < 3
               for record in reading["records"])
    assert abs(reading["records"][2]["initial_value"]["value"] - 4.9) < 0.1


def test_predict_cli_reads_several_files_only_when_asked_and_names_a_bad_file(tmp_path, capsys, write_record):
    from nsode.cli import main

    t = np.arange(20) / 10
    good, bad = write_record(tmp_path / "good.csv", t, np.exp(-t)), write_record(tmp_path / "bad.csv", [0, 1], [1, 2])
    for flags, message in ((["--joint", "--paper"], "--paper does not use"), ([], "add --joint")):
        with pytest.raises(SystemExit):
            main(["predict", str(good), str(good), *flags])
        assert message in capsys.readouterr().err
    for given, message in (([good, "--joint"], "two or more files"), ([good, good, "--by", "run"], "give one file")):
        with pytest.raises(SystemExit):
            main(["predict", *map(str, given)])
        assert message in capsys.readouterr().err
    i = np.arange(24)
    runs = write_record(tmp_path / "runs.csv", i % 12 / 10, np.exp(-i / 10), run=i // 12)
    assert main(["predict", str(runs)]) == 2
    assert "duplicate time 0; keep one point per time (several runs in one file? --by COLUMN" in capsys.readouterr().err
    assert main(["predict", str(good), str(bad), "--joint"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "only 2 points" in err and err.count("\n") == 1


def gompertz_joint_fit(y0s, t_end: float, points: int, seed: int, written: str):
    """Records of Gompertz growth 0.2 y log(1000/y) from `y0s` (noise 1%), and the joint fit of the
    law `written` to them: (records, template, fit, the fit as a JointFit)."""
    from odecore.fitting import Template, abstract, fit_records
    from nsode.joint import JointFit, Record

    rng = np.random.default_rng(seed)
    read = []
    for y0 in y0s:
        t = np.linspace(0, t_end, points)
        y = solve(compile_scalar(parse_infix("0.2*y*log(1000/y)")), y0, t) * (1 + 0.01 * rng.normal(size=t.size))
        read.append(Record(t, y, 0.01 * float(np.mean(np.abs(y))), 0.01 * np.abs(y)))
    params, start = [], []
    template = Template(abstract(parse_infix(written), params, start), tuple(params))
    fit = fit_records(template, [(r.t, r.y, r.noise) for r in read], start, list(y0s))
    return read, template, fit, JointFit(template.substitute(fit.values), template, fit, 0.0, (1.0,) * len(y0s), 0)


def test_a_joint_law_is_shown_with_constants_the_records_determine_one_by_one():
    # Gompertz written c0*y + c1*y*log(c2*y) on two records: shown as c0*y + c1*y*log(y), errors finite
    from nsode.joint import identifiable_joint

    read, _, fit, found = gompertz_joint_fit((10.0, 400.0), 30, 60, 2, "0.7*y - 0.2*y*log(0.036*y)")
    assert sum(map(np.isinf, fit.errors)) == 2  # c0 and c2 as written
    shown = identifiable_joint(found, read)
    assert len(shown.fit.values) == 2 and np.all(np.isfinite(shown.fit.errors))
    assert sum(shown.fit.chi2) == pytest.approx(sum(fit.chi2), rel=1e-6)  # the same law
    assert shown.fit.values[1] == pytest.approx(-0.2, abs=3 * shown.fit.errors[-1])


def test_a_joint_law_is_printed_with_the_fewest_digits_that_fit_every_record_within_one_noise_variance():
    # Gompertz far below its K = 1000: rate and K move together, so rounding each at its own error
    # misses the records by more than a noise variance, and one digit more each is needed
    from nsode.joint import _chi2, supported_values

    read, template, fit, found = gompertz_joint_fit((1.0, 3.0), 2, 64, 0, "0.2*y*log(1000/y)")
    values, y0s, extra = supported_values(found, read)
    assert extra == 1 and _chi2(template, values, y0s, read) <= sum(fit.chi2) + 1
    fewer = [round_to_error(v, e) for v, e in zip([*fit.values, *fit.y0s], [*fit.errors[2:], *fit.errors[:2]])]
    assert _chi2(template, fewer[:2], fewer[2:], read) > sum(fit.chi2) + 1
    assert values[1] == 921.0 and values[1] != fit.values[1]  # rounded still


def test_files_given_after_the_options_are_read_and_one_file_named_twice_is_refused(tmp_path, capsys, write_record,
                                                                                       monkeypatch):
    from nsode.cli import main

    t = np.arange(20) / 10
    good, bad = write_record(tmp_path / "good.csv", t, np.exp(-t)), write_record(tmp_path / "bad.csv", [0, 1], [1, 2])
    assert main(["predict", str(good), "--joint", str(bad)]) == 2  # read as a file, not an unknown argument
    assert "bad.csv" in capsys.readouterr().err
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    for again in (str(good), "../good.csv"):
        assert main(["predict", str(good), "--top", "0", "--joint", again]) == 2
        err = capsys.readouterr().err
        assert err == f"error: --joint: {good} and {again} are the same file; give each record once\n"


def test_a_joint_plot_tells_records_with_one_file_name_apart_by_their_folders(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import matplotlib.figure

    from odecore.fitting import Template
    from nsode.plots import plot_records, record_labels

    assert record_labels(["a/run.csv", "b/run.csv"]) == ["a/run.csv", "b/run.csv"]
    assert record_labels(["x/a/run.csv", "y/b.csv"]) == ["run.csv", "b.csv"]  # file names that differ suffice
    assert record_labels(["/p/q/a/run.csv", "/p/b/run.csv"]) == ["a/run.csv", "b/run.csv"]
    assert record_labels(["run 1", "run 2"]) == ["run 1", "run 2"]  # --by's names
    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    t = np.linspace(0, 2, 16)
    records = [SimpleNamespace(t=t, y=y0 * np.exp(-t)) for y0 in (1.0, 2.0)]
    c = sympy.Symbol("c0", real=True)
    plot_records(tmp_path / "p.png", records, ["a/run.csv", "b/run.csv"], "-y", Template(c * Y, (c,)), [-1.0],
                 [1.0, 2.0], columns=("hours", "OD600"))
    ax = drawn[0].axes[0]
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels[:2] == ["a/run.csv", "b/run.csv"] and labels[2].startswith("the joint law")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("hours (t)", "OD600 (y)")  # the file's columns, the law's letters
    assert ax.get_title() == r"$\dot{y} = - y$"
    twelve = [SimpleNamespace(t=t, y=y0 * np.exp(-t)) for y0 in np.linspace(1, 3, 12)]
    plot_records(tmp_path / "p.png", twelve, [f"run {k}" for k in range(12)], "-y", Template(c * Y, (c,)), [-1.0],
                 [r.y[0] for r in twelve])
    colours = [tuple(line.get_color()) for line in drawn[1].axes[0].get_lines() if line.get_marker() == "."]
    assert len(set(colours)) == 12  # none twice
    anchor = drawn[1].axes[0].get_legend().get_bbox_to_anchor().transformed(drawn[1].axes[0].transAxes.inverted())
    assert anchor.x0 > 1  # beside the axes: inside, twelve entries covered the courses beyond the data


def test_a_long_record_read_as_group_means_is_reported_as_the_file_holds_it(tmp_path, capsys, write_record):
    """Its y0 and point count were the means' (y(0.0027) = 0.3006, 1024 points, for a file of 3000 from t = 0)."""
    from nsode.cli import main

    long_t, short_t = np.linspace(0, 2, 200), np.linspace(0, 2, 20)
    paths = [write_record(tmp_path / "long.csv", long_t, 3 * np.exp(-0.5 * long_t)),
             write_record(tmp_path / "short.csv", short_t, 1.5 * np.exp(-0.5 * short_t))]
    assert main(["predict", *map(str, paths), "--joint", "--max-points", "32", "--json", str(tmp_path / "r.json")]) == 0
    assert re.search(r"long\.csv +y\(0\) = 3\.000\d* \+- \S+, R\^2 1\.000000 \(200 points, read as 32 group means\)",
                     capsys.readouterr().out)
    first = json.loads((tmp_path / "r.json").read_text())["records"][0]
    assert first["initial_value"]["t"] == 0.0 and first["points"] == 200 and first["r2"] > 0.999999
    assert abs(first["initial_value"]["value"] - 3.0) < 1e-3  # the means' own start read 2.95


def test_each_skeleton_is_listed_once_after_a_second_look(predictor):
    # two decays at different rates follow no one law: the second look proposed sums the first had
    # fitted (their keys were compared with the laws'), and the candidates listed them twice
    rng, t = np.random.default_rng(1), np.linspace(0, 6, 80)
    records = [(t, np.exp(-k * t) + 0.01 * rng.standard_normal(80)) for k in (0.5, 1.0)]
    result = predict_records(predictor, records)
    assert result.info["second_look"]
    keys = [skeleton_key(f.expr) for f in result.fits]
    assert len(keys) == len(set(keys))


def joint_fit(expr: sympy.Expr, score: float, records: int = 2):
    """A joint fit of `expr` from y0 = 1 on every record with criterion `score`, for the choice's rules."""
    from odecore.fitting import RecordsFit, Template, abstract
    from nsode.joint import JointFit

    params, start = [], []
    template = Template(abstract(expr, params, start), tuple(params))
    fit = RecordsFit(tuple(start), (1.0,) * records, (1.0,) * records)
    return JointFit(template.substitute(fit.values), template, fit, score, (1.0,) * records, 1)


def test_the_joint_choice_rejects_an_unsafe_fit_and_prefers_the_shorter_law_among_ties():
    """Both rules of `_choice`, each of which no other test failed without."""
    from nsode.joint import Record, _choice
    from nsode.search.settings import Settings

    t = np.linspace(0, 2, 64)
    read = [Record(t, np.exp(-0.5 * t), 0.01, 0.01), Record(t, np.exp(-0.5 * t), 0.01, 0.01)]
    blowing_up, decay = joint_fit(-0.5 * Y + 0.6 * Y**3, 100.0), joint_fit(-0.5 * Y, 102.0)
    chosen, checked = _choice([blowing_up, decay], read, Settings())
    assert chosen is decay and blowing_up.rejected and checked == 2
    curve_fit, law = joint_fit(-0.5 * Y + 0.01 * sympy.sin(2 * Y + 1), 100.0), joint_fit(-0.5 * Y, 103.0)
    assert _choice([curve_fit, law], read, Settings())[0] is law  # tied within the window: fewer nodes


def joint_fit_from(expr: sympy.Expr, score: float, y0s=(1.0, 1.0), chi2=None):
    """A joint fit of `expr` from `y0s` with criterion `score` and per-record `chi2`."""
    from odecore.fitting import RecordsFit, Template, abstract
    from nsode.joint import JointFit

    params, start = [], []
    template = Template(abstract(expr, params, start), tuple(params))
    fit = RecordsFit(tuple(start), tuple(y0s), tuple(chi2 or (1.0,) * len(y0s)))
    return JointFit(template.substitute(fit.values), template, fit, score, (1.0,) * len(y0s), 1)


def _decays(y0s, t=np.linspace(0, 2, 64)):
    from nsode.joint import Record

    return [Record(t, y0 * np.exp(-0.5 * t), 0.01, 0.01) for y0 in y0s]


def test_a_joint_fit_unsafe_from_any_record_s_start_is_rejected():
    """y' = -0.5 y + 0.6 y^3 decays from 0.5 but blows up from 1 (rest at 0.913): safe for the first
    record, not for the second, so it is rejected and the decay chosen."""
    from nsode.joint import _choice
    from nsode.search.settings import Settings

    read = _decays((0.5, 1.0))
    blowing_up = joint_fit_from(-0.5 * Y + 0.6 * Y**3, 100.0, y0s=(0.5, 1.0))
    decay = joint_fit_from(-0.5 * Y, 102.0, y0s=(0.5, 1.0))
    chosen, checked = _choice([blowing_up, decay], read, Settings())
    assert chosen is decay and blowing_up.rejected.startswith("record 2:") and checked == 2


def test_a_record_missed_is_the_worst_of_the_records_misses():
    """The second look's gate (`second_look="missed"`) and the CLI's misfit notes read the worst record."""
    from nsode.joint import _missed, record_misses

    read = _decays((1.0, 2.0))
    f = joint_fit_from(-0.5 * Y, 0.0, chi2=(64.0, 64.0 * 100))
    assert record_misses(f, read) == pytest.approx([1.0, 10.0]) and _missed(f, read) == pytest.approx(10.0)


def test_the_law_chosen_among_ties_comes_first_and_is_the_answer(monkeypatch):
    """`_choice` may prefer a shorter law to the best criterion: that law is the answer (its
    expression, fits[0], `chosen`), not the fit with the best criterion."""
    from types import SimpleNamespace

    import nsode.joint as joint
    from nsode.search.settings import Settings

    curve_fit = joint_fit_from(-0.5 * Y + 0.01 * sympy.sin(2 * Y + 1), 100.0)
    law = joint_fit_from(-0.5 * Y, 103.0)
    starts = {"curve": curve_fit, "law": law}
    monkeypatch.setattr(joint, "_proposals", lambda own, read, shortlist: ["curve", "law"])
    monkeypatch.setattr(joint, "_recombined", lambda *a, **k: [])
    monkeypatch.setattr(joint, "_keys", lambda starts: set())
    monkeypatch.setattr(joint, "_joint_fit", lambda start, read, settings: starts[start])
    t = np.linspace(0, 2, 64)
    noise = np.random.default_rng(0).normal(size=(2, 64))
    records = [(t, y0 * np.exp(-0.5 * t) * (1 + 0.01 * e)) for y0, e in zip((1.0, 2.0), noise)]
    own = [SimpleNamespace(info={"set_aside": []}) for _ in records]
    result = joint.joint_choice(own, records, Settings(), powers=0)
    assert result.chosen is law and result.fits[0] is law and result.expression == law.text
    assert curve_fit in result.fits


def test_each_proposal_starts_every_record_from_that_record_s_own_fit_of_it():
    """A skeleton proposed by several records starts from the record where it ranks best (the first
    on a tie), and each record from its own search's y0 for it; a record that did not fit it, from
    its first observation."""
    from types import SimpleNamespace

    from odecore.fitting import Template, abstract
    from nsode.joint import _proposals
    from nsode.search.fits import Found

    def found(expr, y0):
        params, start = [], []
        template = Template(abstract(expr, params, start), tuple(params))
        return Found(expr, y0, 0.99, 0.0, len(params), "model", template=template, values=tuple(start))

    decay, logistic = -0.5 * Y, 1.3 * Y - 0.4 * Y**2
    read = _decays((1.0, 2.0))
    own = [SimpleNamespace(fits=[found(decay, 1.05), found(logistic, 0.97)]),
           SimpleNamespace(fits=[found(-0.6 * Y, 2.1)])]
    starts = _proposals(own, read, shortlist=8)
    assert [s.proposed_by for s in starts] == [0, 0]  # the decay: rank 0 in both records, the first wins
    assert starts[0].y0s == [1.05, 2.1] and starts[0].values == (-0.5,)
    assert starts[1].y0s == [0.97, 2.0]  # record 2 never fitted the logistic: its first observation


def _joint_fit(expr, chi2, y0s=(1.0, 2.0), errors=(0.01, 0.01, 0.001), rejected=None):
    from odecore.fitting import RecordsFit, Template, abstract
    from nsode.joint import JointFit

    params, start = [], []
    template = Template(abstract(expr, params, start), tuple(params))
    fit = RecordsFit(tuple(start), tuple(y0s), tuple(chi2), errors)
    return JointFit(template.substitute(fit.values), template, fit, 0.0, (0.99,) * len(y0s), 0, rejected)


def _predict_jointly(monkeypatch, capsys, *, chi2=(64.0, 64.0), all_rejected=False, aside=(), top=5):
    """predict_jointly on two 64-point decays a.csv and b.csv, nsode.joint.predict_records answering
    -0.5*y (each record missing it by sqrt(chi2 / 64) noise levels) and two more candidates; its output."""
    import nsode.joint
    from nsode.cli import predict_jointly
    from nsode.joint import JointPrediction, Record
    from nsode.predict import Prediction

    t = np.linspace(0, 2, 64)
    records = [(t, y0 * np.exp(-0.5 * t)) for y0 in (1.0, 2.0)]
    read = [Record(t, y, 0.01, 0.01) for t, y in records]
    law = _joint_fit(-0.5 * Y, chi2, rejected="record 1: blows up" if all_rejected else None)
    fits = [law, _joint_fit(-0.4 * Y, (900.0, 900.0)), _joint_fit(-0.6 * Y, (900.0, 900.0))]
    own = [Prediction("-0.5*y", 0.99, [], info={"set_aside": list(aside)}), Prediction("-0.5*y", 0.99, [], info={})]
    result = JointPrediction(law.text, fits, own, read, {"all_rejected": all_rejected})
    monkeypatch.setattr(nsode.joint, "predict_records", lambda predictor, records: result)
    args = SimpleNamespace(top=top, plot=None, json=None, columns=("t", "y"))
    assert predict_jointly(None, records, ["a.csv", "b.csv"], args) == 0
    return capsys.readouterr().out


def test_the_joint_cli_names_a_record_the_law_misses_by_more_than_three_noise_levels(monkeypatch, capsys):
    out = _predict_jointly(monkeypatch, capsys, chi2=(64.0, 64.0 * 25))  # record b.csv missed by 5 levels
    assert "note: the law misses b.csv by 5 times its noise" in out and "misses a.csv" not in out
    assert "note: the law misses" not in _predict_jointly(monkeypatch, capsys, chi2=(64.0, 64.0 * 4))  # by 2


def test_the_joint_cli_lists_top_candidates_and_says_when_every_fit_failed_the_stability_check(monkeypatch, capsys):
    out = _predict_jointly(monkeypatch, capsys, top=1, all_rejected=True)
    assert "top 1 candidate (" in out and "-0.4*y" not in out
    assert "note: every joint fit failed the stability check, this one record 1: blows up" in out
    out = _predict_jointly(monkeypatch, capsys, top=0)
    assert "candidate" not in out and "stability check" not in out


def test_the_joint_cli_names_the_points_a_record_s_own_search_set_aside(monkeypatch, capsys):
    out = _predict_jointly(monkeypatch, capsys, aside=(3,))
    assert "note: a.csv: 1 point set aside as glitches" in out and "b.csv: 1 point" not in out


def test_a_shorter_law_beyond_the_rival_window_does_not_displace_the_joint_pick():
    """`_choice` weighs node counts only among fits within RIVAL_WINDOW of the best safe one: a
    shorter law 0.5 beyond it is no tie, and the best criterion stays the answer."""
    import sympy

    from nsode.joint import Record, _choice
    from nsode.search.choice import RIVAL_WINDOW
    from nsode.search.settings import Settings

    t = np.linspace(0, 2, 64)
    read = [Record(t, np.exp(-0.5 * t), 0.01, 0.01), Record(t, np.exp(-0.5 * t), 0.01, 0.01)]
    curve_fit = joint_fit(-0.5 * Y + 0.01 * sympy.sin(2 * Y + 1), 100.0)
    law = joint_fit(-0.5 * Y, 100.0 + RIVAL_WINDOW + 0.5)
    chosen, checked = _choice([curve_fit, law], read, Settings())
    assert chosen is curve_fit and checked == 1


def test_a_rewritten_joint_law_that_fits_worse_is_not_shown(monkeypatch):
    """identifiable_joint keeps the law as fitted when the refit of its rewritten form misses the
    records by more than one noise variance more (it is the same law: its fit can only agree)."""
    from odecore.fitting import RecordsFit
    import nsode.joint
    from nsode.joint import identifiable_joint

    read, _, fit, found = gompertz_joint_fit((10.0, 400.0), 30, 60, 2, "0.7*y - 0.2*y*log(0.036*y)")
    worse = RecordsFit((0.7, -0.2), fit.y0s, tuple(c + 10.0 for c in fit.chi2), (0.1,) * 4)
    monkeypatch.setattr(nsode.joint, "fit_records", lambda *args, **kwargs: worse)
    assert identifiable_joint(found, read) is found


def test_a_record_s_fit_that_cannot_be_integrated_is_neither_proposed_nor_counted_in_its_shortlist():
    """_listed: the first `shortlist` fits that integrate over the record; one of R^2 -inf (its
    trajectory failed) is skipped, and the next fit takes its place."""
    import math
    from types import SimpleNamespace

    from odecore.fitting import Template, abstract
    from nsode.joint import _proposals
    from nsode.search.fits import Found

    def found(expr, y0, r2):
        params, start = [], []
        template = Template(abstract(expr, params, start), tuple(params))
        return Found(expr, y0, r2, 0.0, len(params), "model", template=template, values=tuple(start))

    read = _decays((1.0, 2.0))
    own = [SimpleNamespace(fits=[found(0.5 * Y**3, 1.0, -math.inf), found(-0.5 * Y, 1.0, 0.99)]),
           SimpleNamespace(fits=[found(-0.6 * Y, 2.0, 0.99)])]
    starts = _proposals(own, read, shortlist=1)
    assert [s.values for s in starts] == [(-0.5,)]  # the decay, not the blow-up's y**3


def test_a_joint_fit_s_criterion_carries_its_skeleton_s_prior_charge():
    """_joint_fit: the score is the joint criterion plus the prior charge the proposing record's search
    gave the skeleton (nesting, functions), so that a charged curve fit ranks below a plain law."""
    import sympy

    from odecore.fitting import Template
    from nsode.joint import Start, _joint_fit
    from nsode.search.settings import Settings

    c = sympy.Symbol("c0", real=True)
    template = Template(c * Y, (c,))
    read = _decays((1.0, 2.0))
    plain, charged = (_joint_fit(Start(template, (-0.4,), prior, 0, [1.0, 2.0]), read, Settings())
                      for prior in (0.0, 7.0))
    assert charged.score - plain.score == pytest.approx(7.0)

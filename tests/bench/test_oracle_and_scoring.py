import math
import re

import numpy as np
import pytest

from bench import datasets
from bench.scoring import score
from bench.tasks import Trajectory
from odecore import protocol
from odecore.metrics import compare, r2


@pytest.mark.parametrize("name", ["textbook", "classic", "science"])
def test_oracle_scores_r2_of_one_on_every_task(name):
    trajectories = datasets.load(name)
    assert len(trajectories) == {"textbook": 12, "classic": 130, "science": 40}[name]
    for tr in trajectories:
        result = score(tr.expression, tr)
        assert result.status == "ok", (tr.key, result.reason)
        assert result.interpolation["r2"] > 0.9999, tr.key
        assert result.extrapolation["r2"] > 0.9999, tr.key
        assert result.skeleton == 1.0, tr.key  # the true law has the true law's form


def test_wrong_expression_scores_below_one_and_blowup_is_recorded():
    tr = next(t for t in datasets.load("textbook") if t.equation_id == "compound-interest")
    assert score("0.05*y", tr).interpolation["r2"] < 0.9
    assert score("0.05*y", tr).skeleton == 1.0 and score("0.05*y + 0.001", tr).skeleton == 0.0  # form, not numbers
    blown = score("50*y**2", tr)
    assert blown.status == "diverged" and blown.reason and blown.interpolation is None
    assert blown.skeleton == 0.0 and blown.as_row()["skeleton"] == 0.0  # a law that diverges keeps its form's score
    later = score(f"{1 / (3 * tr.y0)!r}*y**2", tr)  # blows up at t = 3: [0, T] is still scored, as in the paper
    assert later.status == "diverged-extrap" and re.search(r"t = (2\.999|3) ", later.reason)  # where it stopped
    assert np.isfinite(later.interpolation["r2"]) and later.extrapolation is None
    with pytest.raises(TypeError, match="needs a bench.tasks.Trajectory"):  # not an AttributeError on t_extra
        score("0.05*y", (tr.t, tr.y))


def test_metrics_follow_their_definitions():
    truth = np.array([1.0, 2.0, 3.0, 4.0])
    pred = np.array([1.0, 2.0, 3.0, 5.0])
    m = compare(pred, truth)
    assert m["r2"] == pytest.approx(1 - 1 / 5)
    assert m["l1"] == pytest.approx(0.25) and m["linf"] == pytest.approx(1.0)
    assert m["isclose"] == pytest.approx(0.75)
    assert r2(np.ones(3), np.ones(3)) == 1.0 and r2([1.0, 2.0], [1.0, 2.0]) == 1.0
    with pytest.raises(ValueError, match="one shape"):  # numpy would broadcast these into a number
        r2(truth[:, None], truth)
    with pytest.raises(ValueError, match="one shape"):
        compare(truth[:1], truth)
    with pytest.raises(ValueError, match="non-empty"):
        r2(np.array([]), np.array([]))


def test_a_truth_constant_up_to_rounding_is_scored_as_constant():
    """A flat truth whose float mean is one rounding step off (ss_tot 1e-28), or which moves by
    solver error alone, has no variance to explain: a prediction within the isclose tolerances
    scores 1, not -2e13, and one outside them -inf."""
    flat = np.full(1024, 3.1622776601683795)
    assert np.sum((flat - flat.mean()) ** 2) > 0  # the float artifact itself
    assert r2(flat * (1 + 1e-9), flat) == 1.0 and r2(flat * 1.5, flat) == -np.inf
    drifting = 2.0 + 1e-12 * np.linspace(0, 1, 1024)  # below the solver's tolerance (protocol.RTOL)
    assert r2(np.full(1024, 2.0), drifting) == 1.0
    slow = 2.0 + 1e-6 * np.linspace(0, 1, 1024)  # above it: a real, if small, variance
    assert r2(slow, slow) == 1.0 and r2(np.full(1024, 2.0), slow) < 0


@pytest.mark.parametrize("size", [1e-8, 1e-12])
def test_data_in_tiny_units_score_as_in_unit_ones(size):
    """The solver's absolute tolerance follows the size of y below 1, so units do not change scores."""
    t = protocol.interpolation_grid()
    unit, tiny = (Trajectory("csv", "decay", 0, None, 3.0 * s, t, 3.0 * s * np.exp(-0.5 * t), np.empty(0),
                             np.empty(0)) for s in (1.0, size))
    assert score("-0.5*y", tiny).interpolation["r2"] == pytest.approx(1.0, abs=1e-9)
    wrong = [score("-0.45*y", trajectory).interpolation["r2"] for trajectory in (unit, tiny)]
    assert wrong[1] == pytest.approx(wrong[0], rel=1e-6)


def test_a_prediction_too_costly_to_integrate_after_t_keeps_its_interpolation_score(monkeypatch):
    """The scorer's budget is a count of evaluations of f (a wall-clock limit made one stored row
    score R^2 0.998 on an idle machine and fail on a busy one)."""
    tr = next(t for t in datasets.load("large") if t.equation_id == "large-060")
    monkeypatch.setattr(protocol, "SOLVE_MAX_RHS_CALLS", 200_000)
    result = score("y - sin(0.7996826178265464*y**3)", tr)  # 4.4 million evaluations on [0, 4]
    assert result.status == "diverged-extrap" and "budget of 200,000" in result.reason
    assert result.interpolation["r2"] > 0.99


def test_a_tank_that_empties_is_a_task_and_a_law_that_empties_it_is_scored(tmp_path, monkeypatch):
    """Torricelli from 1 empties at t = 2.5 and stays empty: its truth is that course (it was refused
    with the whole dataset), and a prediction reaching the empty tank is scored where it had read as
    diverged after T."""
    monkeypatch.setattr(datasets, "CACHE_DIR", tmp_path / "cache")
    file = tmp_path / "tank.json"
    file.write_text('{"format": "bench-dataset/1", "name": "tank", "version": "1", "equations": '
                    '[{"id": "torricelli", "expression": "-0.8*sqrt(y)", "y0": [1.0]}]}')
    [tank] = datasets.load(str(file))
    np.testing.assert_allclose(tank.y_extra, np.maximum(1 - 0.4 * tank.t_extra, 0) ** 2, atol=1e-9)
    assert tank.y_extra[-1] == 0
    exact = score(tank.expression, tank)
    assert exact.status == "ok" and exact.extrapolation["r2"] == pytest.approx(1, abs=1e-9)
    faster = score("-0.82*sqrt(y)", tank)  # empties at t = 2.44
    assert faster.status == "ok" and 0.9 < faster.extrapolation["r2"] < 1
    assert score("-sqrt(y) - 0.1", tank).status == "diverged"  # leaves its domain at speed, at t = 1.52


def test_a_negative_constant_truth_is_scored_as_constant():
    """The constant-truth test must use |truth| (an equilibrium at y = -3.16 scored -2e13)."""
    flat = np.full(1024, -3.1622776601683795)
    assert np.sum((flat - flat.mean()) ** 2) > 0  # the float artifact
    assert r2(flat * (1 + 1e-9), flat) == 1.0 and r2(flat * 1.5, flat) == -np.inf


def test_a_prediction_holding_nan_scores_minus_infinity_not_nan():
    """A NaN residual must read -inf (a NaN R^2 sorts arbitrarily in selection and reports)."""
    truth = np.array([1.0, 2.0, 3.0, 4.0])
    assert r2(np.array([1.0, np.nan, 3.0, 4.0]), truth) == -np.inf
    assert compare(np.array([1.0, np.nan, 3.0, 4.0]), truth)["r2"] == -np.inf


def test_isclose_is_relative_for_small_values():
    """Atol 1e-10 and rtol 0.05, not the other way round (0.05 absolute on y near 0.01 counts all close)."""
    truth = np.array([0.01, 0.02, 0.03, 0.04])
    assert compare(truth + 0.04, truth)["isclose"] == 0.0
    assert compare(truth * 1.04, truth)["isclose"] == 1.0


def test_a_record_without_a_true_law_has_no_skeleton_score():
    """User data with no known law must score skeleton nan (not 0, which the leaderboard would count)."""
    t = protocol.interpolation_grid()
    tr = Trajectory("csv", "decay", 0, None, 3.0, t, 3.0 * np.exp(-0.5 * t), np.empty(0), np.empty(0))
    result = score("-0.5*y", tr)
    assert result.status == "ok" and math.isnan(result.skeleton) and math.isnan(result.as_row()["skeleton"])


def _record(y0, y):
    """A record without extrapolation window or true law, on the protocol's interpolation grid."""
    t = protocol.interpolation_grid()
    return Trajectory("csv", "drain", 0, None, y0, t, y(t), np.empty(0), np.empty(0))


def test_a_record_without_an_extrapolation_window_gets_no_extrapolation_scores():
    """Observed data end at T: [T, T_extra] is not scored (nan), never a copy of [0, T]'s scores."""
    result = score("-0.45*y", _record(3.0, lambda t: 3.0 * np.exp(-0.5 * t)))
    assert result.status == "ok" and result.extrapolation is None
    row = result.as_row()
    assert math.isnan(row["r2_extrap"]) and 0.9 < row["r2_interp"] < 1


def test_tiny_negative_data_whose_largest_value_is_zero_keep_their_digits():
    """The absolute tolerance follows the largest |y|: a record falling from 0 to -2e-8 is integrated
    as its copy in units of 1 (its largest y, 0, would leave the tolerance at 1e-9, 5% of the data)."""
    unit, tiny = (_record(0.0, lambda t, k=k: -2 * k * (1 - np.exp(-0.5 * t))) for k in (1.0, 1e-8))
    wrong = [score(f"{-k!r} - 0.45*y", trajectory).interpolation["r2"] for k, trajectory in ((1.0, unit), (1e-8, tiny))]
    assert wrong[1] == pytest.approx(wrong[0], rel=1e-6)


def test_a_truth_that_varies_by_more_than_the_solver_s_tolerance_is_not_constant():
    """A variation of 5 RTOL is signal, not rounding: R^2 is computed (a flat prediction scores
    badly), not the constant-truth rule (which would give it 1 for being within isclose)."""
    truth = 1.0 + 5 * protocol.RTOL * np.linspace(0.0, 1.0, 1024)
    assert r2(np.full(1024, 1.0), truth) < 0
    assert r2(truth, truth) == 1.0
    assert r2(np.full(1024, 1.0), 1.0 + 0.5 * protocol.RTOL * np.linspace(0.0, 1.0, 1024)) == 1.0  # within: constant

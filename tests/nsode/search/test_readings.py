"""Transformed readings (nsode/search/readings.py): laws the model writes for log|y| or 1/y, back in y."""
from dataclasses import replace

import numpy as np
import pytest
import sympy

from odecore.expressions import Y, compile_scalar, evaluate
from odecore.solving import solve
from nsode.predict import Predictor
from nsode.search.readings import RECIPROCAL_RANGE, transformed, written_back
from nsode.search.terms import skeleton_key


def test_a_relaxation_of_log_y_is_gompertz_growth_and_of_1_over_y_logistic_growth():
    assert sympy.expand(written_back(2.5 - 0.8 * Y, "log", 1) - (2.5 * Y - 0.8 * Y * sympy.log(Y))) == 0
    assert written_back(1.2 - 0.5 * sympy.exp(Y), "log", 1) == sympy.expand(1.2 * Y - 0.5 * Y**2)
    # a power, as the beam writes it
    assert written_back(sympy.exp(sympy.Float(2.5) * Y), "log", 1) == Y ** sympy.Float(3.5)
    assert written_back(0.2 - 1.3 * Y, "reciprocal", 1) == sympy.expand(1.3 * Y - 0.2 * Y**2)
    # below 0, z = log(-y): z' = -z is y' = -y*log(-y)
    assert written_back(-Y, "log", -1) == -Y * sympy.log(-Y)


@pytest.mark.parametrize("law, y0, kind, g", [
    (0.8 * Y * sympy.log(12 / Y), 1.5, "log", 0.8 * sympy.log(12) - 0.8 * Y),  # Gompertz: log y relaxes
    (0.4 * Y**2, -2.0, "log", -0.4 * sympy.exp(Y)),  # below 0: z = log(-y)
    (1.3 * Y * (1 - Y / 7), 0.5, "reciprocal", 1.3 / 7 - 1.3 * Y),  # logistic: 1/y relaxes
    (1.3 * Y * (1 + Y / 7), -0.5, "reciprocal", -1.3 / 7 - 1.3 * Y),  # the same below 0: z = 1/y, not 1/|y|
])
def test_the_law_of_the_transformed_record_is_written_back_as_the_law(law, y0, kind, g):
    t = np.linspace(0, 2, 401)
    y = solve(compile_scalar(law), y0, t)
    z = transformed(y, kind)
    assert np.allclose(np.gradient(z, t)[1:-1], evaluate(g, z)[1:-1], rtol=1e-3, atol=1e-3)  # z' = g(z) indeed
    back = written_back(g, kind, int(np.sign(y0)))
    assert np.allclose(evaluate(back, y), evaluate(law, y))


def test_a_reading_applies_only_to_a_record_that_keeps_one_sign():
    assert transformed(np.array([1.0, -0.5, 2.0]), "log") is None
    assert transformed(np.array([-1.0, -0.5, -2.0]), "log") is not None
    assert transformed(np.array([1e-4, 1.0]), "reciprocal") is None  # 1/y of a record that nears 0 is noise
    with pytest.raises(ValueError, match="kind='sqrt'"):
        transformed(np.ones(3), "sqrt")


def test_the_logistic_the_model_writes_only_for_1_over_y_is_found_through_that_reading(monkeypatch):
    law = 1.3 * Y * (1 - Y / 7)
    t = np.linspace(0, 2, 128)
    y = solve(compile_scalar(law), 0.5, t) * (1 + 0.01 * np.random.default_rng(3).normal(size=t.size))
    predictor = Predictor.searching()

    def proposals(t, y_read, timings=None, beam=None):  # the relaxation for 1/y, curve fits for y itself
        if np.allclose(y_read, 1 / y):
            return [(0.19 - 1.3 * Y, 0.0)]
        return [(sympy.sin(Y) + 2.57, 0.0), (sympy.sqrt(Y + 7.46), -1.0)]

    monkeypatch.setattr(predictor, "candidates", proposals)
    target = skeleton_key(sympy.expand(law))
    predictor.search = replace(predictor.search, read_reciprocal=0, read_log=0)
    plain = predictor.predict(t, y)
    assert skeleton_key(plain.chosen.expr) != target and "readings_s" not in plain.timings
    predictor.search = replace(predictor.search, read_reciprocal=8, read_log=8)
    read = predictor.predict(t, y)
    assert skeleton_key(read.chosen.expr) == target and read.chosen.source == "reciprocal-reading"
    assert float(read.chosen.expr.coeff(Y)) == pytest.approx(1.3, rel=0.03)
    assert read.timings["readings_s"] > 0


def test_the_log_reading_of_a_record_below_zero_writes_its_law_back_with_the_record_s_sign(monkeypatch):
    # y' = 0.4 y^2 from -2: z = log(-y) obeys z' = -0.4 exp(z), which is 0.4 y^2 back in y, not -0.4 y^2
    t = np.linspace(0, 2, 64)
    y = solve(compile_scalar(0.4 * Y**2), -2.0, t)
    predictor = Predictor.searching()
    predictor.search = replace(predictor.search, read_reciprocal=0, read_log=1)
    monkeypatch.setattr(predictor, "candidates", lambda t, z, timings=None, beam=None: [(-0.4 * sympy.exp(Y), 0.0)])
    [(label, [law])] = predictor.transformed_readings(t, y)
    assert label == "log-reading" and np.allclose(evaluate(law, y), 0.4 * y**2)


def test_1_over_y_is_read_where_the_record_spans_up_to_a_thousandfold():
    """transformed: the reciprocal reading applies up to RECIPROCAL_RANGE (1e3), a 500-fold record included."""
    assert RECIPROCAL_RANGE == 1e3
    assert np.allclose(transformed(np.array([0.002, 0.1, 1.0]), "reciprocal"), [500.0, 10.0, 1.0])
    assert transformed(np.array([0.0009, 1.0]), "reciprocal") is None


def test_1_over_y_is_read_where_the_record_spans_exactly_a_thousandfold():
    """transformed: RECIPROCAL_RANGE is inclusive: a record spanning exactly 1e3 is still read as 1/y."""
    assert 1e3 * 0.001 == 1.0  # the span below is exactly the range
    assert np.allclose(transformed(np.array([0.001, 1.0]), "reciprocal"), [1000.0, 1.0])

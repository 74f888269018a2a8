"""Scale-invariant inputs (nsode.scaling): copies of a trajectory scaled by powers of two give the
model identical inputs, other scales land near the reference, and the expression transforms are exact."""
import numpy as np
import pytest
import sympy

from nsode.train.batching import model_view, scaled_targets
from odecore.expressions import Y
from nsode.data.tokens import decode, encode, parse_infix, targets
from nsode.encoding import encode_observations
from nsode.scaling import Scale, in_raw_range

LAWS = ["-0.5*y", "y**2 - 3", "2.5*y*(1 - y/7.3)", "exp(-y)/sqrt(y)", "log(y + 2)", "sin(3*y) + 0.1"]


def _evaluate(expr, y):
    return sympy.lambdify(Y, expr, "numpy")(y)


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("time_exp,value_exp", [(0, 3), (5, -6), (-2, 1)])
def test_back_transform_is_exact(law, time_exp, value_exp):
    f = parse_infix(law)
    scale = Scale(1.5, time_exp, value_exp)
    g = scale.to_model(f)
    a, s = 2.0 ** time_exp, 2.0 ** value_exp
    y = np.linspace(0.3, 2.7, 9) * s
    # g(u) = (a / s) f(s u) and f(y) = (s / a) g(y / s)
    assert np.allclose(_evaluate(g, y / s), a / s * _evaluate(f, y), rtol=1e-13)
    assert np.allclose(_evaluate(scale.to_original(g), y), _evaluate(f, y), rtol=1e-13)
    # decoding a beam's tokens straight into the user's units (what Predictor.candidates does)
    one_pass = scale.from_model_variable(decode(encode(g), scale.model_variable()))
    assert np.allclose(_evaluate(one_pass, y), _evaluate(f, y), rtol=1e-13)


def test_power_of_two_copies_give_identical_model_inputs():
    t = np.sort(np.random.default_rng(0).uniform(0, 2, 64))
    y = 3 * np.exp(-0.5 * t)
    reference = encode_observations(*Scale.of(t, y).apply(t, y))
    for a, s in [(16.0, 128.0), (0.25, 2.0 ** -7), (32.0, 1.0)]:
        # the same ODE in other units: y_s(t_s) = s y(t_s / a)
        ts, ys = a * t, s * y
        assert np.array_equal(encode_observations(*Scale.of(ts, ys).apply(ts, ys)), reference)
        # observed from time 10 on: the same up to the rounding of 10 + a t
        tau, u = Scale.of(10 + ts, ys).apply(10 + ts, ys)
        assert np.allclose(tau, Scale.of(t, y).apply(t, y)[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("span,level", [(50.0, 300.0), (2.0, 0.01), (0.1, 1e4)])
def test_any_scale_lands_near_the_training_range(span, level):
    t = np.linspace(0, span, 32)
    y = level * (1 + 0.5 * np.sin(t / span))
    tau, u = Scale.of(t, y).apply(t, y)
    assert tau[0] == 0 and 2 / np.sqrt(2) <= tau[-1] < 2 * np.sqrt(2)
    assert 4 / np.sqrt(2) <= np.max(np.abs(u)) < 4 * np.sqrt(2)


def test_training_targets_follow_the_scaled_observations():
    t = np.linspace(0, 2, 128)
    law = "-0.5*y**2"
    y = 300 / (1 + 150 * t)  # y' = -0.5 y^2 from 300
    rows = targets(encode(parse_infix(law)))
    tau, u, target = model_view(t, y, law, rows, "pow2")
    scale = Scale.of(t, y)
    assert scale.value_exp == 6 and target == scaled_targets(law, 0, 6)
    assert target != rows  # the model's target is the law in its own units: -0.5 * 64 u^2 -> clipped to -10
    assert model_view(t, y, law, rows, "none")[2] == rows


def test_only_trajectories_like_the_raw_training_data_are_in_its_range():
    t = np.linspace(0, 2, 64)
    y = 3 * np.exp(-0.5 * t)
    assert in_raw_range(t, y) and in_raw_range(t, 0.2 * y) and in_raw_range(0.1 + 0.9 * t, 8 * y)
    assert not in_raw_range(t + 1990, y) and not in_raw_range(t - 1, y)  # another time origin
    assert not in_raw_range(25 * t, y)  # another time unit
    assert not in_raw_range(t, 100 * y) and not in_raw_range(t, 0.01 * y)  # other units of y


def test_a_unit_factor_is_dropped_and_a_record_of_zeros_is_left_unscaled():
    assert str(Scale(0.0, 1, 1).to_model(parse_infix("-0.5*y"))) == "-y"  # not -1.0*y
    assert Scale.of(np.linspace(0, 2, 8), np.zeros(8)) == Scale(0.0, 0, 0)


def test_only_factors_within_rounding_of_one_are_dropped():
    """_snap_units drops 1.0 left by rounding (1e-12), never a constant the law holds (1.0004)."""
    assert str(Scale(0.0, 1, 1).to_model(parse_infix("-0.5*y"))) == "-y"
    kept = Scale(0.0, 0, 0).to_model(parse_infix("1.0004*y"))
    assert abs(float(kept.coeff(parse_infix("y"))) - 1.0004) < 1e-12


def test_a_record_below_zero_is_scaled_by_its_largest_magnitude():
    t = np.linspace(0, 50, 32)
    y = 300 * np.exp(-t / 50)
    assert Scale.of(t, -y) == Scale.of(t, y) and Scale.of(t, y).value_exp == 6
    short = np.linspace(0, 2, 32)
    assert in_raw_range(short, -3 * np.exp(-0.5 * short))  # as its mirror image is
    assert not in_raw_range(short, -300 * np.exp(-0.5 * short))  # far below: the scaled model reads it

"""Standard errors of fitted numbers, the digits they support, and predictive error."""
import math

import numpy as np
import pytest
import sympy

from odecore.expressions import Y, compile_scalar
from odecore.fitting import Template, fit_trajectory, trajectory
from odecore.noise import noise_level, noise_profile
from odecore.solving import solve
from odecore.uncertainty import predictive_error, round_to_error, sensitivities, standard_errors, written_to_error

A, B = sympy.symbols("a b", real=True)
LOGISTIC = Template(A * Y + B * Y**2, (A, B))


@pytest.mark.parametrize("seed", [0, 3])
def test_errors_over_six_decades_of_relative_noise_cover_the_rate_when_the_profile_is_reweighted(seed):
    # y' = 1.4 y from 1e3 on 40 points over [0, 10], 3% relative noise: fitted unweighted, the
    # profile's floor a is the largest values' own noise, so the small values count for nothing and
    # the rate reads 1.419 +- 0.0028 on seed 0; reweighted, the floor falls and the printed error
    # covers the truth
    t = np.linspace(0, 10, 40)
    y = 1e3 * np.exp(1.4 * t) * (1 + 0.03 * np.random.default_rng(seed).normal(size=t.size))
    law = Template(A * Y, (A,))

    def z(reweight):
        profile = noise_profile(t, y, clip=math.inf, reweight=reweight)
        level = noise_level(t, y, curvature=True, profile=profile)
        fit = fit_trajectory(law, t, y, [1.3], y[0], weights=profile, max_nfev=100)
        return (fit.values[0] - 1.4) / standard_errors(law, fit.values, fit.y0, t, level, profile=profile)[1]

    assert abs(z(3)) < 2
    assert seed != 0 or abs(z(0)) > 3


def test_standard_errors_match_linear_regression_for_a_constant_rate():
    # y' = c gives y = y0 + c (t - t_0): the errors of y0 and c are those of a straight-line fit
    t = np.sort(np.random.default_rng(1).uniform(0, 2, 50))
    errors = standard_errors(Template(A + 0 * Y, (A,)), [0.7], 1.5, t, 0.01)
    spread = np.sum((t - t.mean()) ** 2)
    assert errors[1] == pytest.approx(0.01 / math.sqrt(spread), rel=1e-4)
    assert errors[0] == pytest.approx(0.01 * math.sqrt(1 / len(t) + (t[0] - t.mean()) ** 2 / spread), rel=1e-4)


@pytest.mark.parametrize("weighted", [False, True])
def test_errors_under_noise_that_grows_with_y_are_those_of_the_fit_as_made(weighted):
    # y' = -0.5 y from 3 over [0, 10], 1% relative noise: an unweighted fit's rate spreads 4.5 times
    # wider than a weighted one's; its errors were the weighted formula's (the true rate 5 errors off)
    t = np.linspace(0, 10, 200)
    truth = 3 * np.exp(-0.5 * t)
    profile = truth / np.sqrt(np.mean(truth**2))
    law, rng = Template(A * Y, (A,)), np.random.default_rng(0)
    rates = [fit_trajectory(law, t, truth * (1 + 0.01 * rng.normal(size=t.size)), [-0.4], 3.0,
                            weights=profile if weighted else None).values[0] for _ in range(150)]
    error = standard_errors(law, [-0.5], 3.0, t, 0.01 * np.sqrt(np.mean(truth**2)), profile=profile,
                            weighted=weighted)[1]
    assert np.std(rates) == pytest.approx(error, rel=0.2)


def test_a_number_fitted_to_round_off_still_has_its_standard_error():
    # a straight line fitted as y' = a + b*y gives b near 1e-16; its error is that of any small b
    t = np.linspace(0, 2, 50)
    tiny, small = (standard_errors(Template(A + B * Y, (A, B)), [0.5, b], 1.0, t, 0.01) for b in (-2.4e-16, 1e-6))
    assert np.all(np.isfinite(tiny)) and tiny == pytest.approx(small, rel=1e-3)


def test_a_constant_the_data_cannot_determine_has_an_infinite_error_and_the_others_keep_theirs():
    t = np.linspace(0, 2, 32)  # y' = a + b: only the sum is determined, and the start as for y' = a
    y0_error, a_error, b_error = standard_errors(Template(A + B + 0 * Y, (A, B)), [0.3, 0.4], 1.0, t, 0.01)
    assert math.isinf(a_error) and math.isinf(b_error)
    assert y0_error == pytest.approx(standard_errors(Template(A + 0 * Y, (A,)), [0.7], 1.0, t, 0.01)[0], rel=1e-4)


def test_a_rate_beside_a_redundant_scale_keeps_its_error():
    # y' = a*y + b*y*log(c*y): a + b*log(c) and b are fixed, a and c alone are not
    t = np.linspace(0, 3, 40)
    law = Template(A * Y + B * Y * sympy.log(sympy.Symbol("c") * Y), (A, B, sympy.Symbol("c")))
    errors = standard_errors(law, [0.7, -0.2, 0.04], 10.0, t, 0.01)
    assert np.isfinite(errors[0]) and np.isfinite(errors[2])
    assert math.isinf(errors[1]) and math.isinf(errors[3])


def test_predictive_error_is_minus_twice_the_log_predictive_density():
    # the Woodbury form against the dense one: r' (I + A)^-1 r + log det(I + A), in noise variances
    t, sigma, cut = np.linspace(0, 2, 40), 0.01, 28
    truth = solve(compile_scalar(0.8 * Y - 0.2 * Y**2), 0.5, t)
    y = truth * (1 + sigma * np.random.default_rng(3).normal(size=t.size))
    values, y0 = (0.83, -0.21), 0.49
    jac = sensitivities(LOGISTIC, values, y0, t)[0]
    a = jac[cut:] @ np.linalg.inv(jac[:cut].T @ jac[:cut]) @ jac[cut:].T
    r = (trajectory(LOGISTIC, values, y0, t) - y)[cut:] / sigma
    dense = r @ np.linalg.solve(np.eye(len(r)) + a, r) + np.linalg.slogdet(np.eye(len(r)) + a)[1]
    assert predictive_error(LOGISTIC, values, y0, t, y, cut, sigma) == pytest.approx(dense, rel=1e-8)


def test_predictive_error_forgives_a_level_the_first_part_cannot_pin_down():
    # logistic growth far below its carrying capacity: a first-part fit with the capacity twice
    # too high forecasts the rest badly by squared error, but within what the first part leaves open
    t, sigma, cut = np.linspace(0, 2, 128), 0.01, 89
    law = Template(A * Y * (1 - Y / B), (A, B))
    y = solve(compile_scalar(1.5 * Y * (1 - Y / 10)), 0.2, t)
    drifted = (1.5, 20.0)
    squared = float(np.sum((trajectory(law, drifted, 0.2, t) - y)[cut:] ** 2)) / sigma**2
    predictive = predictive_error(law, drifted, 0.2, t, y, cut, sigma)
    assert predictive < squared / 3
    exact = predictive_error(law, (1.5, 10.0), 0.2, t, y, cut, sigma)  # the law itself: no residual, log det only
    assert 0 < exact < predictive


@pytest.mark.parametrize("value, error, shown", [
    (-0.49873, 0.0021, -0.499), (1.3771603107452393, 1e-12, 1.37716), (0.0312, 0.5, 0.03),
    (123.456, 2.5, 123.0), (0.2, math.inf, 0.2), (368.0314, math.inf, 368.0), (0.0, 0.1, 0.0)])
def test_numbers_are_rounded_at_their_standard_error(value, error, shown):
    assert round_to_error(value, error) == shown


@pytest.mark.parametrize("value, error, written", [
    (4.0003, 0.012, "4.00"), (2000123.0, 1600.0, "2.000e+06"), (-0.49873, 0.0021, "-0.499"),
    (3.0, math.inf, "3"), (368.0314, math.inf, "368"), (0.0, 0.1, "0"), (1.23456, 0.5, "1.2")])
def test_numbers_are_written_with_the_digits_they_keep(value, error, written):
    assert written_to_error(value, error) == written


def test_a_kept_digit_is_written_without_binary_round_off():
    # -9.931 is -9.930999999999999... in binary; the extra digit must not print the round-off
    assert written_to_error(-9.930999999999999, 0.088, extra=1) == "-9.931"
    assert written_to_error(0.1 + 0.2, 0.0001) == "0.3000"


def test_a_number_the_data_cannot_tell_from_zero_keeps_one_digit():
    """An error a thousand times the value asks for a negative count of digits: one is kept."""
    assert round_to_error(0.0312, 50.0) == 0.03 and written_to_error(0.0312, 50.0) == "0.03"


def test_a_zero_standard_error_keeps_max_digits():
    """Noise-free data give error 0: the number keeps max_digits (log10(0) raised ValueError)."""
    assert round_to_error(0.123456789, 0.0) == 0.123457
    assert written_to_error(0.123456789, 0.0) == "0.123457"


def test_an_extra_digit_is_added_to_the_one_kept_digit():
    """A number the data cannot tell from zero keeps one digit, plus `extra` (the CLI's extra=1)."""
    assert round_to_error(0.0312, 50.0, extra=1) == 0.031
    assert written_to_error(0.0312, 50.0, extra=1) == "0.031"


def test_a_weakly_determined_level_keeps_its_own_uncertainty_in_the_predictive_error():
    """Singular values are floored at CONDITION_LIMIT (1e-7) of the largest, no higher: a capacity
    1000 seen from y = 0.2 (ratio 9e-6) keeps the dense formula's value."""
    a, b = sympy.symbols("a b", real=True)
    law, values, y0, cut, sigma = Template(a * Y * (1 - Y / b), (a, b)), (1.5, 1000.0), 0.2, 40, 0.01
    t = np.linspace(0, 2, 128)
    y = solve(compile_scalar(1.5 * Y * (1 - Y / 1000)), y0, t)
    jac = sensitivities(law, values, y0, t)[0]
    dense_a = jac[cut:] @ np.linalg.inv(jac[:cut].T @ jac[:cut]) @ jac[cut:].T
    r = (trajectory(law, values, y0, t) - y)[cut:] / sigma
    eye = np.eye(len(r))
    dense = r @ np.linalg.solve(eye + dense_a, r) + np.linalg.slogdet(eye + dense_a)[1]
    assert predictive_error(law, values, y0, t, y, cut, sigma) == pytest.approx(dense, rel=1e-6)


def test_a_law_whose_trajectory_cannot_be_integrated_has_infinite_errors_not_zero_ones():
    """y' = y**2 from 1 blows up at t = 1, inside [0, 2]: no number is determined (zero errors
    would print every digit as certain)."""
    errors = standard_errors(Template(A * Y**2, (A,)), [1.0], 1.0, np.linspace(0, 2, 32), 0.01)
    assert errors.shape == (2,) and np.all(np.isinf(errors))


def test_predictive_error_of_a_redundant_pair_is_that_of_their_sum():
    """y' = a + b: the first part fixes only a + b; the direction it misses (a - b) moves nothing
    later either, so it must add nothing (the singular values are floored, not divided by round-off)."""
    t = np.linspace(0, 2, 40)
    y = 1.0 + 0.7 * t + 0.01 * np.random.default_rng(0).normal(size=t.size)
    pair = predictive_error(Template(A + B + 0 * Y, (A, B)), [0.3, 0.4], 1.0, t, y, 28, 0.01)
    alone = predictive_error(Template(A + 0 * Y, (A,)), [0.7], 1.0, t, y, 28, 0.01)
    assert math.isfinite(pair) and pair == pytest.approx(alone, rel=1e-6)


def test_a_number_is_never_written_with_more_digits_than_a_double_holds():
    """17 significant digits at most, whatever max_digits and extra ask: further ones are binary round-off."""
    assert written_to_error(0.1, 0.0, extra=15) == "0.10000000000000001"
    assert written_to_error(0.1, 0.0, max_digits=25) == "0.10000000000000001"

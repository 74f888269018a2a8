"""The shared constant fitter: integral form, trajectory least squares, several records, group means."""
import math

import numpy as np
import pytest
import sympy

from scipy.optimize import least_squares

from odecore.fitting import (Template, abstract, better_start, bin_means, fit_integral, fit_records, fit_trajectory,
                          information_criterion, levenberg_marquardt, refit_numbers, trajectory)
from odecore.noise import estimate_noise, noise_profile
from odecore.uncertainty import standard_errors
from odecore.expressions import Y, compile_scalar, compile_vector, parse
from odecore.solving import solve

A, B = sympy.symbols("a b", real=True)
LOGISTIC = Template(A * Y + B * Y**2, (A, B))


@pytest.fixture(scope="module")
def logistic():
    t = np.sort(np.random.default_rng(0).uniform(0, 2, 128))
    return t, solve(compile_scalar(0.8 * Y - 0.2 * Y**2), 0.5, t)


def test_integral_form_fits_linear_constants_and_the_initial_value_in_one_step(logistic):
    t, y = logistic
    fit = fit_integral(LOGISTIC, t, y, [1.0, 1.0])
    assert fit.nfev == 1 and LOGISTIC.linear
    assert fit.values == pytest.approx((0.8, -0.2), rel=2e-3) and fit.y0 == pytest.approx(0.5, rel=1e-3)


def test_trajectory_fit_recovers_the_constants_and_initial_value_of_a_logistic(logistic):
    t, y = logistic
    fit = fit_trajectory(LOGISTIC, t, y, [0.6, -0.1], y0=0.45)
    assert fit.values == pytest.approx((0.8, -0.2), rel=1e-4) and fit.y0 == pytest.approx(0.5, rel=1e-5)
    assert fit.rss < 1e-10 and not fit.safety_net


def test_records_share_the_constants_and_keep_their_own_initial_values():
    """Two records of one logistic (one growing, one falling to K = 4), at different noise: one fit
    gives both initial values and the shared constants, with errors that cover the truth."""
    rng = np.random.default_rng(3)
    records = []
    for y0, sigma in ((0.5, 0.01), (6.0, 0.05)):
        t = np.sort(rng.uniform(0, 2, 64))
        y = solve(compile_scalar(0.8 * Y - 0.2 * Y**2), y0, t)
        records.append((t, y + sigma * rng.standard_normal(len(t)), sigma))
    fit = fit_records(LOGISTIC, records, [1.0, -0.1], [records[0][1][0], records[1][1][0]])
    assert fit.ok and len(fit.chi2) == 2 and sum(fit.chi2) < 2 * 128  # about one noise variance per point
    truth = np.array([0.5, 6.0, 0.8, -0.2])
    found = np.array([*fit.y0s, *fit.values])
    assert np.all(np.abs(found - truth) < 4 * np.array(fit.errors)) and max(fit.errors) < 0.1


def test_records_leave_a_number_they_cannot_determine_undetermined():
    # y' = a + b on two straight records: the starts and a + b are fixed, a and b alone are not
    t = np.linspace(0, 2, 20)
    records = [(t, 1.0 + 0.7 * t, 0.01), (t, 3.0 + 0.7 * t, 0.01)]
    fit = fit_records(Template(A + B + 0 * Y, (A, B)), records, [0.3, 0.3], [1.0, 3.0])
    assert fit.ok and all(0 < e < 0.01 for e in fit.errors[:2]) and all(map(math.isinf, fit.errors[2:]))


def test_records_a_law_cannot_integrate_are_a_failed_fit():
    t = np.linspace(0, 2, 20)
    records = [(t, 1.0 + t, 0.01), (t, -1.0 - t, 0.01)]  # sqrt(y) is not real on the second
    fit = fit_records(Template(A * sympy.sqrt(Y), (A,)), records, [1.0], [1.0, -1.0], max_nfev=10)
    assert not fit.ok and math.isinf(fit.chi2[1])


def test_a_long_record_is_read_through_group_means_that_keep_what_it_says():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 2, 20000))
    y = solve(compile_scalar(0.8 * Y - 0.2 * Y**2), 0.5, t) + 0.01 * rng.standard_normal(t.size)
    tb, yb = bin_means(t, y, 400)
    assert len(tb) == 400 and np.all(np.diff(tb) > 0) and tb[0] == pytest.approx(np.mean(t[:50]))
    assert estimate_noise(tb, yb) == pytest.approx(0.01 / math.sqrt(50), rel=0.15)
    everything, means = (fit_trajectory(LOGISTIC, *data, [0.6, -0.1], y0=0.45) for data in ((t, y), (tb, yb)))
    errors = standard_errors(LOGISTIC, everything.values, everything.y0, t, 0.01)[1:]
    # as good as all 20,000 (an evenly thinned subsample of 400 misses by up to 14 errors)
    assert np.all(np.abs(np.subtract(means.values, everything.values)) < 0.1 * errors)
    short = t[:400], y[:400]
    assert all(a is b for a, b in zip(bin_means(*short, 400), short))


def test_skipped_observations_are_passed_through_but_not_fitted(logistic):
    # the first 40 observations are corrupted; skipping them, the fit still starts at t[0]
    t, y = logistic
    bad = y.copy()
    bad[:40] += 0.3
    assert fit_trajectory(LOGISTIC, t, bad, [0.6, -0.1], y0=0.45).values[0] != pytest.approx(0.8, rel=1e-3)
    fit = fit_trajectory(LOGISTIC, t, bad, [0.6, -0.1], y0=0.45, skip=40)
    assert fit.values == pytest.approx((0.8, -0.2), rel=1e-3) and fit.y0 == pytest.approx(0.5, rel=1e-3)


def test_nonlinear_constants_are_fitted_on_the_integral_form():
    t = np.linspace(0, 2, 64)
    y = solve(compile_scalar(2 - sympy.exp(0.7 * Y)), 0.2, t)
    fit = fit_integral(Template(A - sympy.exp(B * Y), (A, B)), t, y, [1.5, 0.5])
    assert not Template(A - sympy.exp(B * Y), (A, B)).linear
    assert fit.values == pytest.approx((2, 0.7), rel=1e-2)


def test_a_free_power_is_fitted_on_a_record_that_starts_from_exactly_zero():
    # y**c at y = 0: the chain rule's 0 * log(0) is nan, while y**c is 0 for every c near its value
    t = np.linspace(0, 2, 64)
    y = solve(compile_scalar(9.81 - 0.3 * Y**1.4), 0.0, t)
    C = sympy.Symbol("c", real=True)
    template = Template(A + B * Y**C, (A, B, C))
    assert y[0] == 0 and np.all(np.isfinite(template.values_and_gradients(y, [9.0, -0.2, 1.5])[1]))
    fit = fit_integral(template, t, y, [9.0, -0.2, 1.5])
    assert fit.ok and fit.values == pytest.approx((9.81, -0.3, 1.4), rel=2e-2)


def test_a_course_rests_at_the_edge_of_its_domain_where_the_law_comes_to_rest():
    # -a sqrt(y) empties at t = 2 sqrt(y0) / a; past that sqrt is not real, and the course stays at 0
    t = np.linspace(0, 4, 81)
    course = trajectory(Template(-A * sympy.sqrt(Y), (A,)), [0.8], 1.0, t)
    np.testing.assert_allclose(course, np.maximum(1 - 0.4 * t, 0) ** 2, atol=1e-9)
    fit = fit_trajectory(Template(-A * sympy.sqrt(Y), (A,)), t, course, [0.7], max_nfev=20)
    assert fit.ok and fit.values[0] == pytest.approx(0.8, rel=1e-6)  # fitted through the empty tank too


def test_fractional_power_of_a_negative_number_is_a_failed_fit_not_a_complex_number():
    t = np.linspace(0, 2, 32)
    y = -1 - t  # y < 0 everywhere: y**1.5 has no real value
    template = Template(A * Y**sympy.Float(1.5), (A,))
    assert not fit_integral(template, t, y, [1.0]).ok
    assert not fit_trajectory(template, t, y, [1.0], max_nfev=5).ok


@pytest.mark.parametrize("as_given", [list, np.array])
def test_a_negative_constant_under_a_fractional_power_is_nan_however_the_constants_come(as_given):
    # Python floats raise (-8.0)**(1/3) to a complex number whose real part is 1; numpy's give nan
    template = Template(A ** sympy.Rational(1, 3) * Y + B, (A, B))
    y = np.linspace(1, 2, 3)
    values, gradients = template.values_and_gradients(y, as_given([-8.0, 1.0]))
    assert np.isnan(values).all() and np.isnan(gradients[0]).all()
    values, _ = template.values_and_gradients(y, as_given([8.0, 1.0]))
    np.testing.assert_allclose(values, 2 * y + 1)
    assert np.isnan(compile_vector(template.substitute([-8.0, 1.0]))(y)).all()  # sympy keeps (-1)**(1/3)
    np.testing.assert_allclose(compile_vector(template.substitute([8.0, 1.0]))(y), 2 * y + 1)


def test_the_trajectory_fit_starts_where_its_course_misses_least():
    # the integral form's y0 for a growth by e^30 lies near -3e8 (the largest values' quadrature
    # error); from there the trajectory fit runs to a decay, from the first observation to the law
    # (to the rate the largest values fix, which carry the most noise)
    t = np.sort(np.random.default_rng(0).uniform(0, 2, 32))
    y = 0.5 * np.exp(15 * t) * (1 + 0.01 * np.random.default_rng(1).normal(size=t.size))
    law = Template(A * Y, (A,))
    cheap = fit_integral(law, t, y, [14.0])
    assert abs(cheap.y0) > 1e6
    start = better_start(law, cheap.values, (cheap.y0, y[0]), t, y)
    assert start == y[0]
    assert fit_trajectory(law, t, y, cheap.values, start).values[0] == pytest.approx(15.0, rel=0.05)
    assert fit_trajectory(law, t, y, cheap.values, cheap.y0).values[0] < 0  # the wrong minimum


def test_a_fit_weighted_by_relative_noise_is_usable_and_reads_the_rate():
    # a profile proportional to |y| makes y / profile flat: the fit's scale must not come from it
    t = np.linspace(0, 2, 64)
    y = 0.01 * np.exp(6 * t) * (1 + 0.01 * np.random.default_rng(0).normal(size=t.size))
    profile = noise_profile(t, y, clip=math.inf)
    assert profile.max() / profile.min() > 1e4  # unclipped
    fit = fit_trajectory(Template(A * Y, (A,)), t, y, [5.0], y[0], weights=profile)
    assert fit.ok and fit.values[0] == pytest.approx(6.0, rel=2e-3)


def test_criterion_charges_log_n_per_constant():
    assert information_criterion(1.0, 100, 2, 1.0) == pytest.approx(1 + 2 * math.log(100))
    assert information_criterion(math.inf, 100, 1, 1.0) == math.inf


def test_a_blow_up_is_placed_where_it_happens_after_earlier_solves():
    # odeint's tcur keeps values from earlier calls past the point where a call fails
    from odecore.solving import SolveError

    t = np.linspace(0, 4, 9)
    solve(lambda v: -0.3 * v, 1.0, t)
    solve(lambda v: -0.3 * v, 2.5, t)
    with pytest.raises(SolveError, match=r"near t = 1 "):  # not at t = 4, where the earlier solves got to
        solve(lambda v: v * v, 1.0, t)  # y' = y**2 from 1 blows up at t = 1


def test_an_ill_conditioned_fit_gives_one_answer_whatever_the_process_allocated_before():
    """An integral-form fit whose Jacobian columns nearly coincide (sin(y) and sin(c3 + y) with c3
    near 2 pi, constants near 1e3): where scipy 1.17's MINPACK recomputes a column norm."""
    c = sympy.symbols("c0:5", real=True)
    template = Template(c[0] * sympy.sin(Y) + c[1] * sympy.cos(Y) / Y + c[2] * sympy.sin(c[3] + Y) + c[4], c)
    assert not template.linear  # so the fit takes Levenberg-Marquardt steps
    t = np.linspace(0, 2, 128)
    y = (1 + 2 * np.exp(-t)) * (1 + 0.01 * np.random.default_rng(0).standard_normal(128))
    rng = np.random.default_rng(1)
    answers = set()
    for _ in range(40):
        for n in rng.integers(100, 2000, 8):  # leave other numbers where the fit's arrays will lie
            junk = np.empty(n)
            junk[:] = rng.standard_normal(n)
            del junk
        fit = fit_integral(template, t, y, [-1137.5, -2334.4, 1017.2, 5.778, 246.4])
        answers.add((fit.values, fit.y0, fit.nfev))
    assert len(answers) == 1  # scipy's least_squares(method="lm") gave two answers here (13 of 40 the other)


def test_levenberg_marquardt_is_scipys_fit_where_scipys_is_well_defined():
    t = np.linspace(0, 2, 50)
    y = 3 * np.exp(-0.7 * t) + 0.5

    def residual(x):
        return x[0] * np.exp(-x[1] * t) + x[2] - y

    def jac(x):
        e = np.exp(-x[1] * t)
        return np.column_stack([e, -x[0] * t * e, np.ones_like(t)])

    for derivative in (jac, None):  # analytic and finite differences
        x, nfev = levenberg_marquardt(residual, np.array([1.0, 1.0, 0.0]), jac=derivative, max_nfev=200)
        reference = least_squares(residual, np.array([1.0, 1.0, 0.0]), jac=derivative or "2-point", method="lm")
        assert np.allclose(x, [3.0, 0.7, 0.5], atol=1e-6) and np.allclose(x, reference.x, atol=1e-8)
        assert 0 < nfev <= 200


def test_the_criterion_counts_the_residual_in_noise_variances():
    from odecore.fitting import information_criterion

    assert information_criterion(1.0, 100, 2, 0.5) == pytest.approx(1.0 / 0.5**2 + 2 * math.log(100))


def test_the_truths_refit_answers_its_fitted_initial_value_not_the_first_observation():
    """`refit_numbers` (the truth-refit reference) fits y0 with the numbers: a first observation
    0.2 off the course does not become the answer's start."""
    t = np.linspace(0, 2, 64)
    y = solve(compile_scalar(-0.7 * Y), 2.0, t)
    y[0] += 0.2
    law, y0 = refit_numbers(parse("-0.5*y"), t, y)
    assert y0 == pytest.approx(2.0, abs=0.05) and float(law.coeff(Y)) == pytest.approx(-0.7, abs=0.02)  # not 2.2


def test_sqrt_and_its_reciprocal_stay_structure_when_numbers_become_constants():
    """`abstract` makes every number a constant but integer exponents and those of sqrt(y) and
    1/sqrt(y): a free 1.5 exponent is a constant, a square root is not."""
    params, start = [], []
    expr = abstract(parse("-0.8*sqrt(y) + 2/sqrt(y) + 0.3*y**1.5"), params, start)
    assert sorted(start) == [-0.8, 0.3, 1.5, 2.0] and len(params) == 4
    assert expr.has(sympy.sqrt(Y)) and expr.has(1 / sympy.sqrt(Y))


def test_a_fit_without_constants_whose_course_fails_is_a_failed_fit():
    """With nothing to fit and y0 fixed, a law that cannot be integrated along the record (sqrt of
    a negative y) has no residual: rss inf, not the penalty's finite sum."""
    t = np.linspace(0, 2, 32)
    y = -1 - t
    fit = fit_trajectory(Template(sympy.sqrt(Y), ()), t, y, [], y0=-1.0, fit_y0=False)
    assert not fit.ok and fit.rss == np.inf
    fine = fit_trajectory(Template(1 + 0 * Y, ()), t, -1 + t, [], y0=-1.0, fit_y0=False)
    assert fine.ok and fine.rss < 1e-12

"""Whether a fit is safe to extrapolate: poles, domain edges, starts within the noise, pauses."""
import numpy as np
import pytest
import sympy

from odecore.expressions import Y, compile_scalar
from odecore.fitting import Template, trajectory
from odecore.solving import solve
from odecore.stability import hidden_pause, record_growth, unstable_reason

A, B = sympy.symbols("a b", real=True)


def test_a_pole_just_beside_the_data_is_unstable():
    # y' = 1 / (c - y) with y rising towards c: fine on the data, a pole soon after
    t = np.linspace(0, 2, 64)
    template = Template(1 / (A - Y), (A,))
    y = solve(compile_scalar(1 / (3.2 - Y)), 1.0, t)  # reaches about 2.9 at t = 2, the pole at 3.2
    assert unstable_reason(template, [3.2], 1.0, t, 0.01) is not None
    assert unstable_reason(Template(A * Y, (A,)), [-0.5], 1.0, t, 0.01) is None
    assert np.all(np.isfinite(y))


def test_a_growth_whose_start_is_perturbed_by_many_times_itself_passes_when_the_bound_scales():
    # y' = 4 y from 0.5 grows 3,000-fold on [0, 2] and as much again on [2, 4]; a noise level of 5
    # (read where the values are large) moves the start to 10.5, 21 times y0, so the course from
    # there leaves the bound of 1e4 times the observations' size that the law's own course keeps
    t = np.linspace(0, 2, 128)
    y = 0.5 * np.exp(4 * t)
    law = Template(A * Y, (A,))
    assert "|y| reaches" in unstable_reason(law, [4.0], 0.5, t, 5.0, y=y)
    assert unstable_reason(law, [4.0], 0.5, t, 5.0, y=y, start_scaled=True) is None
    # a course that blows up faster than the start's scale still fails: y' = y**2 from 2 on [0, 0.45]
    blowup = Template(A * Y**2, (A,))
    short = np.linspace(0, 0.45, 64)
    assert unstable_reason(blowup, [1.0], 2.0, short, 0.01, y=2 / (1 - 2 * short), start_scaled=True) is not None


def test_a_growth_over_many_decades_passes_when_the_bound_follows_the_records_growth():
    # y' = 8 y from 0.5 grows 9e6-fold on [0, 2] and as much again on [2, 4]: past the bound of
    # 1e4 times the observations' size, which refuses any exponential law that grew so much
    t = np.linspace(0, 2, 64)
    y = 0.5 * np.exp(8 * t)
    law = Template(A * Y, (A,))
    assert record_growth(y) == pytest.approx(np.exp(16) / np.median(np.exp(8 * t[:3])))
    assert "|y| reaches" in unstable_reason(law, [8.0], 0.5, t, 0.01, y=y)
    assert unstable_reason(law, [8.0], 0.5, t, 0.01, y=y, grown=True) is None
    # a course that blows up still fails, however much the record grew
    assert unstable_reason(Template(A * Y**2, (A,)), [8.0], 0.5, t, 0.01, y=y, grown=True) is not None
    # a record that starts at rest grew from nothing: no growth is read from it
    assert record_growth(np.r_[0.0, 0.0, 0.0, np.ones(61)]) == 1.0
    # one that grew 1e160-fold (its bound, squared, is past a float): checked, not an OverflowError
    rate = np.log(1e160) / 2
    verdict = unstable_reason(law, [rate], 1e-160, t, 1e-162, y=1e-160 * np.exp(rate * t), grown=True)
    assert verdict is None or verdict.startswith("from y0")


def test_a_fit_that_starts_across_an_unstable_equilibrium_from_the_data_is_unstable():
    # y' = 2 y (y - c), c = 1: below c the solution decays to 0, above it blows up before t = 2.
    # A fit started at 0.99 is fine on its own, but the data start at 1.01, across the equilibrium.
    t = np.linspace(0, 2, 128)
    template = Template(2 * Y * (Y - A), (A,))
    assert unstable_reason(template, [1.0], 0.99, t, 0.001) is None
    assert "from y0" in unstable_reason(template, [1.0], 0.99, t, 0.001, y=np.full(t.size, 1.01))
    assert unstable_reason(template, [1.0], 0.99, t, 0.001, y=np.full(t.size, 0.985)) is None


def test_a_course_that_turns_back_from_a_start_within_the_noise_is_unstable_when_asked():
    # y' = y (y - 1)(2 - y): from below 1 the course decays to 0, from above it rises to 2. Both
    # stay bounded, so only the turn-back check sees that a start within the noise reverses it
    t = np.linspace(0, 2, 128)
    law = Template(Y * (Y - A) * (2 - Y), (A,))
    assert unstable_reason(law, [1.0], 0.99, t, 0.01) is None
    assert "turns back" in unstable_reason(law, [1.0], 0.99, t, 0.01, turn_back=True)
    assert unstable_reason(law, [1.0], 0.9, t, 0.01, turn_back=True) is None  # the equilibrium lies beyond the noise
    assert unstable_reason(law, [1.0], 1.98, t, 0.02, turn_back=True) is None  # a stable one within it


def test_a_record_that_starts_just_after_zero_is_checked_from_where_it_was_at_zero():
    # the record falls by 1 per time unit from 1.03 at t = 0 but is first seen at t = 0.04, at 0.99;
    # a law fitted there with an unstable equilibrium at 1 (where it moves slowly) turns back from
    # where the record was at 0. A record first seen at t = 0.5 need not have started at 0.
    law = Template(Y * (Y - A) * (2 - Y), (A,))
    for first, flagged in ((0.04, True), (0.5, False)):
        t = np.linspace(first, 2, 128)
        y = 1.03 - t + (first - 0.04)
        reason = unstable_reason(law, [1.0], 0.99, t, 0.001, y=y, turn_back=True, origin=True)
        assert (reason is not None) == flagged
        assert unstable_reason(law, [1.0], 0.99, t, 0.001, y=y, turn_back=True) is None


def test_the_start_at_time_zero_is_uncertain_by_the_noise_and_the_lead_together():
    # the fit starts at 0.99, 0.01 below an unstable equilibrium at 1; the start's noise (2 sigma =
    # 0.006) and the record's motion over its lead of 0.04 (about 0.007) each stay short of it, but
    # where the record was at t = 0 is uncertain by both at once, which reaches past it
    law = Template(Y * (Y - A) * (2 - Y), (A,))
    t = np.linspace(0.04, 2, 128)
    y = 0.99 - 0.15 * (t - 0.04)
    check = dict(y=y, turn_back=True, origin=True)
    assert unstable_reason(law, [1.0], 0.99, t, 0.003, **check) is None
    assert "turns back" in unstable_reason(law, [1.0], 0.99, t, 0.003, lead_added=True, **check)
    check["y"] = y - 0.01  # the same record 0.02 below the equilibrium: beyond both together
    assert unstable_reason(law, [1.0], 0.98, t, 0.003, lead_added=True, **check) is None


def test_a_law_that_cannot_start_from_zero_is_unstable_when_the_data_start_beside_zero():
    # y' = a + b sin(y)/y fits a charging curve that starts at rest, but sin(0)/0 is not a number:
    # from 0 (within the noise of the fitted start) it cannot be integrated; y' = a - b y can.
    t = np.linspace(0, 2, 128)
    sinc = Template(A + B * sympy.sin(Y) / Y, (A, B))
    assert unstable_reason(sinc, [-1.0, 20.0], 0.004, t, 0.03) is not None
    assert unstable_reason(sinc, [-1.0, 20.0], 0.004, t, 0.03, rest_in_noise=True) is not None  # within the noise
    assert unstable_reason(sinc, [-1.0, 20.0], 0.5, t, 0.03) is None  # 0 is not a plausible start
    assert unstable_reason(Template(A - B * Y, (A, B)), [24.0, 8.0], 0.004, t, 0.03) is None


def test_a_sparse_record_keeps_its_sign_only_when_asked():
    # a logistic from 5 towards 100, 10 observations over 20 time units: the law moves y by more
    # than y0 in one interval, so the lower start lies below 0, where the logistic blows up
    t = np.linspace(0, 20, 10)
    logistic = Template(A * Y - B * Y**2, (A, B))
    y = solve(compile_scalar(0.5 * Y - 0.005 * Y**2), 5.0, t)
    assert "from y0 = -" in unstable_reason(logistic, [0.5, 0.005], 5.0, t, 0.01, y=y)
    assert unstable_reason(logistic, [0.5, 0.005], 5.0, t, 0.01, y=y, keep_sign=True) is None
    # the start at rest is still checked: Gompertz's y log(y) is not a number at 0
    gompertz = Template(-A * Y * sympy.log(B * Y), (A, B))
    assert "from y0 = 0" in unstable_reason(gompertz, [0.3, 0.01], 5.0, t, 0.01, y=y, keep_sign=True)
    # ... unless only the law's motion over one interval brings 0 within reach of y0
    assert unstable_reason(gompertz, [0.3, 0.01], 5.0, t, 0.01, y=y, keep_sign=True, rest_in_noise=True) is None


def test_a_law_that_tends_to_rest_at_zero_passes_the_start_at_rest_only_when_asked():
    # Gompertz growth from 5 towards 100 over 10 sparse observations: 0 lies within the law's
    # motion over one interval, and y log(y) is not a number at 0 but tends to 0 there
    t = np.linspace(0, 20, 10)
    y = solve(compile_scalar(0.3 * Y * sympy.log(100 / Y)), 5.0, t)
    gompertz = Template(-A * Y * sympy.log(B * Y), (A, B))
    assert "from y0 = 0" in unstable_reason(gompertz, [0.3, 0.01], 5.0, t, 0.01, y=y, keep_sign=True)
    assert unstable_reason(gompertz, [0.3, 0.01], 5.0, t, 0.01, y=y, keep_sign=True, rest_limit=True) is None
    # a log stand-in runs to -inf at 0, and sin(y)/y to a finite rate that moves y off rest
    stand_in = Template(A * sympy.log(B * Y), (A, B))
    assert "from y0 = 0" in unstable_reason(stand_in, [30.0, 1.0], 5.0, t, 0.01, y=y, keep_sign=True, rest_limit=True)
    sinc = Template(A + B * sympy.sin(Y) / Y, (A, B))
    t2 = np.linspace(0, 2, 128)
    assert unstable_reason(sinc, [-1.0, 20.0], 0.004, t2, 0.03, y=np.full(t2.size, 0.5), rest_limit=True) is not None


def test_a_law_that_nearly_stops_between_two_observations_pauses_unseen():
    # Michaelis-Menten over 600 s, 60 even samples; beside the law, a narrow bump that cancels
    # 90% of f midway between two samples (session 57 picked such a near-pole term): the course
    # lingers there for part of one interval, which shifts everything after it, unseen
    t = np.linspace(0, 600, 60)
    law = -0.05 * Y / (0.4 + Y)
    course = trajectory(Template(law, ()), (), 10.0, t)
    middle, width = (course[10] + course[11]) / 2, (course[10] - course[11]) / 20
    rate = 0.05 * middle / (0.4 + middle)
    bump = Template(law + A / ((Y - middle) ** 2 + B), (A, B))
    assert "pause" in hidden_pause(bump, (0.9 * rate * width**2, width**2), 10.0, t)
    assert hidden_pause(Template(law, ()), (), 10.0, t) is None
    # steep and sparse laws pass: -y**3 from 5 (y falls 5 -> 3.6 in the first step), a logistic
    # from 5 to 100 in 10 samples (|f| peaks between two of them), and a course at rest
    assert hidden_pause(Template(-Y**3, ()), (), 5.0, np.linspace(0, 2, 128)) is None
    assert hidden_pause(Template(0.5 * Y - 0.005 * Y**2, ()), (), 5.0, np.linspace(0, 20, 10)) is None
    assert hidden_pause(Template(1 - Y, ()), (), 1.0, t) is None


def test_a_start_within_the_noise_that_falls_only_to_a_stable_rest_inside_it_does_not_turn_back():
    """From 1.005 with noise 0.005, the start 0.995 falls by 0.005 to the stable rest 0.99: less than
    twice the noise, so no turn back, though its course moves the other way."""
    t = np.linspace(0, 2, 128)
    law = Template(200 * (Y - A) * (Y - 0.99) * (3 - Y), (A,))
    assert unstable_reason(law, [1.0], 1.005, t, 0.005, turn_back=True) is None


def test_a_short_records_early_size_is_the_median_of_at_least_three_values():
    """40 observations: 5% is 2, but three are read, so one reading near 0 at the start does not
    double the growth."""
    y = np.r_[1e-3, 1.0, 1.0, np.linspace(1.0, 100.0, 37)]
    assert record_growth(y) == pytest.approx(100.0)

"""The one solver's counted budget: a slow solve fails or succeeds by its count of evaluations of
f, not by the clock, so a score does not depend on how busy the machine is."""
import numpy as np
import pytest

from core import protocol
from core.expressions import compile_scalar, parse
from core.solving import SolveError, is_valid_initial_value, solve

FAST_TURNS = "y - sin(0.8*y**3)"  # from y0 = -3 it turns ever faster: 52,760 evaluations on [0, 2]


def test_a_solve_over_its_count_of_evaluations_fails_with_that_reason_whatever_the_clock():
    f = compile_scalar(parse(FAST_TURNS))
    t = np.linspace(0.0, 2.0, 128)
    calls = []

    def counted(v):
        calls.append(v)
        return f(v)

    with pytest.raises(SolveError, match="budget of 10,000 right-hand-side evaluations"):
        solve(counted, -3.0, t, time_limit=None, max_rhs_calls=10_000)
    assert len(calls) == 10_000  # the evaluation past the budget is refused before f is called
    calls.clear()
    y = solve(counted, -3.0, t, time_limit=None, max_rhs_calls=100_000)
    assert np.all(np.isfinite(y)) and len(calls) < 100_000
    np.testing.assert_array_equal(y, solve(f, -3.0, t, time_limit=None))  # the count changes nothing else


def test_a_drawn_initial_value_is_judged_by_the_count_of_its_check(monkeypatch):
    assert is_valid_initial_value("-y", 1.0)
    monkeypatch.setattr(protocol, "Y0_CHECK_MAX_RHS_CALLS", 50)  # the decay to t = 4 needs more
    assert not is_valid_initial_value("-y", 1.0)


def test_the_solver_never_steps_past_the_last_time_into_where_f_is_undefined():
    # y' = -0.5 sqrt(y) from 5 is (sqrt(5) - t/4)^2: a quadratic, so LSODA's error estimate is ~0
    # and, left to overshoot the last time, one step reached y = -4.2 (sqrt undefined) well
    # before the solution's own zero at t = 8.9.
    f = compile_scalar(parse("-0.5*sqrt(y)"))
    t = np.linspace(0.0, 4.0, 128)
    asked = []

    def logged(v):
        asked.append(v)
        return f(v)

    y = solve(logged, 5.0, t)
    assert min(asked) > 1.5
    np.testing.assert_allclose(y, (np.sqrt(5.0) - t / 4) ** 2, rtol=1e-7)


def test_a_law_that_leaves_its_domain_says_where():
    with pytest.raises(SolveError, match=r"not real-valued on the path, at y = -[\d.]+, t = [23]\.\d+ \("):
        solve(compile_scalar(parse("-sqrt(y)")), 1.0, np.linspace(0, 4, 64))  # y reaches 0 at t = 2

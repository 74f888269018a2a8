"""The one solver: its counted budget (a slow solve fails or succeeds by its count of evaluations
of f, not by the clock, so a score does not depend on how busy the machine is), where it stops,
and what it does at the edge of a law's domain."""
import numpy as np
import pytest

from odecore import protocol
from odecore.expressions import compile_scalar, parse
from odecore.solving import SolveError, is_valid_initial_value, solve, relative_atol

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


@pytest.mark.parametrize("t, problem", [([0.0], "at least two times"), ([0.0, 2.0, 1.0], "times in order"),
                                        ([0.0, np.nan, 1.0], "finite times")])
def test_times_the_solver_cannot_be_asked_for_are_named_as_such(t, problem):
    with pytest.raises(SolveError, match=problem):
        solve(lambda v: -v, 1.0, np.array(t))


def test_a_start_in_large_units_passes_the_residual_check_judged_in_units_of_y():
    # the solver's relative error makes the FD residual of y' = -y from 1e8 about 7, above the absolute 1
    assert not is_valid_initial_value("-y", 1e8) and is_valid_initial_value("-y", 1e8, relative=True)
    assert is_valid_initial_value("-y", 1e-6, relative=True)  # and small units are solved to digits of their own
    # a decay too fast for the grid fails at y0 = 1 either way; in units of y it fails at 1e-6 too
    assert is_valid_initial_value("-1e4*y", 1e-6) and not is_valid_initial_value("-1e4*y", 1e-6, relative=True)


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


@pytest.mark.parametrize("law, exact", [
    ("-0.8*sqrt(y)", lambda t: np.maximum(1 - 0.4 * t, 0) ** 2),  # a tank that empties at t = 2.5
    ("-0.9*y**(2/3)", lambda t: np.maximum(1 - 0.3 * t, 0) ** 3),  # a dissolving grain, gone at t = 3.33
    ("-0.5*sqrt(y - 1.5)", lambda t: 1.5 + np.maximum(np.sqrt(0.5) - 0.25 * t, 0) ** 2),  # an edge at 1.5
])
def test_a_course_that_reaches_its_domains_edge_at_rest_stays_there(law, exact):
    """The harness's truths and scores (`rest_at_edge`): past the arrival f is not real, and the
    one continuation inside its domain is rest at the edge. Without the option it fails, as before."""
    f, t = compile_scalar(parse(law)), protocol.truth_grid()
    y0 = float(exact(0.0))
    with pytest.raises(SolveError, match="not real-valued"):
        solve(f, y0, t)
    np.testing.assert_allclose(solve(f, y0, t, rest_at_edge=True), exact(t), rtol=0, atol=1e-6 * y0)
    assert is_valid_initial_value(law, y0)  # so such a start may be drawn, and its truth is a task


@pytest.mark.parametrize("law, y0, problem", [
    ("-sqrt(y) - 0.1", 1.0, "not real-valued on the path, at y = -"),  # reaches the edge at speed: leaves
    ("log(y)", -1.0, "not real-valued on the path, at y = -1, t = 0 "),  # not real where it starts
    ("y**2", 1.0, "LSODA stopped between t = 1 and"),  # blows up at t = 1
])
def test_a_course_that_leaves_its_domain_or_blows_up_still_fails_with_rest_at_the_edge(law, y0, problem):
    with pytest.raises(SolveError, match=problem):
        solve(compile_scalar(parse(law)), y0, protocol.truth_grid(), rest_at_edge=True)


def test_rest_at_the_edge_changes_no_solve_that_succeeds_without_it():
    f, t = compile_scalar(parse("-0.5*sqrt(y)")), protocol.truth_grid()  # from 5 it empties at t = 8.9
    np.testing.assert_array_equal(solve(f, 5.0, t), solve(f, 5.0, t, rest_at_edge=True))


def test_the_absolute_tolerance_shrinks_with_the_size_of_y_below_one_only():
    """A trajectory in tiny units is integrated to digits of its own; from |y| = 1 up the protocol's
    tolerance stands, so solutions in ordinary and large units are as before; 0 keeps it too."""
    assert relative_atol(1e-9, 1e-3) == 1e-9 * 1e-3 and relative_atol(1e-9, -0.25) == 1e-9 * 0.25
    for size in (1.0, 7.5, -3e4, 1e8, 0.0):
        assert relative_atol(1e-9, size) == 1e-9, size

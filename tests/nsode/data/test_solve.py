"""The batched solver (screen, eviction, work bound) and the finite-difference quality check."""
import numpy as np
import sympy

from nsode.data import config as cfg
from nsode.data import generate
from odecore.expressions import Y, compile_parametrised, compile_scalar, compile_vector
from odecore.solving import solve
from nsode.data.solve import screen, solve_batch

T = np.concatenate([np.linspace(0, 2, 1024), np.linspace(2, 4, 1024)[1:]])


def _batch(expr, y0):
    f = compile_vector(expr)
    y0 = np.asarray(y0, float)
    return solve_batch(f, y0, T)


def test_batch_agrees_with_one_lsoda_solve_per_solution():
    c0 = sympy.Symbol("c0", real=True)
    f = compile_parametrised(c0 * sympy.sin(Y) - Y / 3, [c0])
    c = np.array([[0.5, 2.0, -3.0, 7.0]])
    y0 = np.array([1.0, -2.0, 4.5, 0.1])
    y, ok = solve_batch(f, y0, T, params=c)
    assert ok.all()
    for i in range(4):
        alone = solve(compile_scalar(c[0, i] * sympy.sin(Y) - Y / 3), y0[i], T, time_limit=None)
        assert np.max(np.abs(y[:, i] - alone)) < 1e-6


def test_blow_ups_and_domain_exits_are_dropped_and_the_others_kept():
    # y' = y**2 blows up at t = 1/y0 for y0 > 0; decays for y0 < 0
    y, ok = _batch(Y**2, [2.0, 0.5, -1.0, -3.0])
    assert ok.tolist() == [False, False, True, True]
    assert np.allclose(y[:, 2], -1 / (1 + T), atol=1e-7)
    # y' = -sqrt(y) reaches 0 at t = 2 sqrt(y0) and then leaves the domain
    _, ok = _batch(-sympy.sqrt(Y), [0.25, 16.0])
    assert ok.tolist() == [False, True]


def test_screen_fails_only_what_cannot_be_solved():
    f = compile_vector(Y**3)
    failed = screen(lambda y, idx: f(y), np.array([2.0, 0.01, -0.01, np.nan]), 4.0)
    assert failed.tolist() == [True, False, False, True]


def test_a_hard_solution_does_not_take_the_batch_down():
    # the first solution oscillates ever faster (sin of an exponential), the second is plain decay
    y, ok = _batch(5 - sympy.sin(sympy.Float(3.6) ** Y), [-4.0, -4.0])  # same ODE twice: both hard
    assert not ok.any()
    c0 = sympy.Symbol("c0", real=True)
    f = compile_parametrised(c0 - sympy.sin(sympy.Float(3.6) ** Y), [c0])
    y, ok = solve_batch(f, np.array([-4.0, -4.0]), T, params=np.array([[5.0, -0.1]]), max_rhs_calls=6000)
    assert ok.tolist() == [False, True]


def test_a_deliberately_bad_solution_is_dropped_by_the_fd_check():
    config = cfg.default()
    f = compile_vector(-Y / 2)
    y, ok = _batch(-Y / 2, [3.0, 3.0, 3.0])
    y[1000, 1] += 1e-3  # a tiny kink: the derivative is off by about 1e-3 * 0.8 / h = 0.4 ...
    y[1000, 2] += 1e-2  # ... and 4: dropped
    residual, good = generate.quality_check(lambda v, p: f(v), np.zeros((0, 3)), T, y, ok, config.fd_tolerance,
                                            1024)
    assert residual[0] < 1e-6
    assert good.tolist() == [True, True, False]


def test_lsoda_batch_evicts_the_component_that_stalls_it_and_finishes_the_others():
    # no screen here: y' = y**2 from 2 blows up at t = 0.5 inside LSODA's own batch
    for steps in (20, 200):
        y, ok = solve_batch(lambda v: v**2, np.array([2.0, -1.0, -0.5]), T, screened=False, steps_per_point=steps)
        assert ok.tolist() == [False, True, True]
        assert np.allclose(y[:, 1], -1 / (1 + T), atol=1e-7) and np.allclose(y[:, 2], -1 / (2 + T), atol=1e-7)
        assert np.isnan(y[:, 0]).all()


T = np.concatenate([np.linspace(0, 2, 1024), np.linspace(2, 4, 1024)[1:]])


def test_screen_fails_a_blow_up_late_in_the_interval_and_keeps_one_just_after_it():
    """y' = y**2 from y0 blows up at t = 1/y0: before t_end = 4 for y0 = 0.3 and 0.26 (t = 3.85), after it
    for 0.24 (t = 4.17) and 0.2; the screen decides over the whole interval, to its end."""
    failed = screen(lambda y, idx: y**2, np.array([0.3, 0.26, 0.24, 0.2, -3.0]), 4.0)
    assert failed.tolist() == [True, True, False, False, False]


def test_an_early_stopped_run_evicts_every_component_that_stalls_it_not_only_the_worst():
    """Five hard solutions (sin of an exponential, ever faster) with different constants and one plain decay:
    evicting all the components near the largest curvature at once keeps the easy one within the work bound;
    evicting one per run spends the bound on the hard ones and loses it."""
    c0 = sympy.Symbol("c0", real=True)
    f = compile_parametrised(c0 - sympy.sin(sympy.Float(3.6) ** Y), [c0])
    params = np.array([[5.0, 4.6, 4.2, 3.8, 3.4, -0.1]])
    y, ok = solve_batch(f, np.full(6, -4.0), T, params=params, max_rhs_calls=8000)
    assert ok.tolist() == [False] * 5 + [True]
    assert np.isnan(y[:, :5]).all() and np.isfinite(y[:, 5]).all()


def test_screen_leaves_a_stiff_solution_to_lsoda():
    """y' = -1e8 y is stiff for the explicit screen: its step settles near 2.5e-8, far above the collapse
    threshold (1e-10 t_end). Still running after max_iterations, it is not failed: LSODA decides."""
    failed = screen(lambda y, idx: -1e8 * y, np.array([1.0, -2.0]), 4.0)
    assert failed.tolist() == [False, False]
    y, ok = solve_batch(lambda v: -1e8 * v, np.array([1.0, -2.0]), T)
    assert ok.all() and np.abs(y[-1]).max() < 1e-6


def test_a_solution_beyond_blowup_in_magnitude_is_not_ok_even_with_a_moderate_derivative():
    """The BLOWUP rule covers |y| as well as |f(y)|: y' = 5e8 passes 1e9 at t = 2 and is frozen and not ok
    (LSODA's relative error there is an FD residual of order 1); y' = 1 beside it is kept."""
    y, ok = solve_batch(lambda v, p: p[0] + 0 * v, np.array([0.0, 0.0]), T, params=np.array([[5e8, 1.0]]),
                        screened=False)
    assert ok.tolist() == [False, True]
    assert np.isnan(y[:, 0]).all() and np.allclose(y[:, 1], T)

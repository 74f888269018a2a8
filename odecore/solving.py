"""Solve y' = f(y) with LSODA under a step limit, a count of right-hand-side evaluations and a
wall-clock safety net, and check a solution
by its finite-difference residual. The one solver of the project: ground truth, scoring of
predictions, initial-value checks, NSODE's selection and the data generator all call it.

`scipy.integrate.odeint` is LSODA behind a compiled loop: about 3x faster here than
`solve_ivp(method="LSODA")` per scalar solution. Limits are enforced inside the right-hand
side (odeint propagates its exceptions), so a blowing-up solve stops on time without signals
or threads. Default settings are the protocol's (`odecore.protocol`).
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Callable

import numpy as np
from scipy.integrate import ODEintWarning, odeint

from odecore import protocol
from odecore.expressions import compile_scalar, compile_vector, parse

RTOL, ATOL, MXSTEP = protocol.RTOL, protocol.ATOL, protocol.MXSTEP




class SolveError(RuntimeError):
    """The ODE has no usable solution on the requested grid; the message says why."""


class _Deadline(Exception):
    pass


class _OverBudget(Exception):
    pass


def solve(
    rhs: Callable[[float], float],
    y0: float,
    t: np.ndarray,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    mxstep: int = MXSTEP,
    time_limit: float | None = 5.0,
    max_rhs_calls: int | None = None,
    rest_at_edge: bool = False,
) -> np.ndarray:
    """Values of the solution at the times `t` (t[0] is the initial time); raises SolveError.

    `max_rhs_calls` is a counted budget, so a slow solve fails or succeeds alike on any machine
    under any load; `time_limit` (seconds of wall clock) is the safety net beside it.

    LSODA is told not to step past t[-1]. Left to itself it overshoots the last time and
    interpolates back, and where its error estimate is near 0 (y' = -c*sqrt(y) has a quadratic
    solution) one step may be longer than the whole span: it then evaluates f where the solution
    has already left f's domain, and a law that is fine up to t[-1] would fail.

    With `rest_at_edge` (the harness's truths and scores, and the shared fitter's courses in
    odecore.fitting), a course that reaches the edge of f's domain where f comes to rest there stays
    at the edge, the one continuation inside the domain: y' = -k*sqrt(y) empties a tank in finite
    time and it stays empty. Without it, or where f is not at rest at the edge (|f| there above
    `protocol.REST_AT_EDGE` of the largest |f| met on the way), leaving the domain fails. A solve
    that succeeds either way gives the same values either way.
    The rest is a second LSODA run after the first has failed, under the same limits (each run
    counts its own evaluations of f).
    """
    settings = dict(rtol=rtol, atol=atol, mxstep=mxstep, time_limit=time_limit, max_rhs_calls=max_rhs_calls)
    try:
        return _solve(rhs, y0, t, rest_at_edge, settings)
    except SolveError:
        _check_times(t)  # a failure the times caused is named as such, at no cost to a solve that succeeds
        raise


def _solve(rhs, y0, t, rest_at_edge, settings) -> np.ndarray:
    """`solve`, with its limits in `settings`."""
    try:
        return _integrate(rhs, y0, t, **settings)
    except _LeftDomain as left:
        edge = _resting_edge(rhs, left) if rest_at_edge else None
        if edge is None:
            raise SolveError(str(left)) from None  # the plain error: it may cross to another process
    side = 1.0 if y0 >= edge else -1.0  # the domain's side of the edge, where the course comes from

    def resting(v):
        return rhs(v) if (v - edge) * side > 0 else 0.0

    try:
        y = _integrate(resting, y0, t, **settings)
    except _LeftDomain as left:
        raise SolveError(str(left)) from None
    return np.where((y - edge) * side < 0, edge, y)  # a step just past the edge is at the edge


def _check_times(t) -> None:
    """The times LSODA can be asked for, refused as such (LSODA reports one time as a failed step and
    times out of order as a domain error); a SolveError, as before, so every caller's handling holds."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 2:
        raise SolveError(f"solve needs a 1-D array of at least two times (got shape {t.shape})")
    steps = np.diff(t)
    if not (np.all(steps >= 0) or np.all(steps <= 0)) or not np.all(np.isfinite(t)):
        raise SolveError("solve needs finite times in order (increasing or decreasing; repeats allowed)")


class _LeftDomain(SolveError):
    """f stopped being real-valued on the path: `inside` is the last value where it was (the
    largest |f| met on the way `largest`), `outside` the one where it was not."""

    def __init__(self, message: str, inside: float | None, outside: float, largest: float):
        super().__init__(message)
        self.inside, self.outside, self.largest = inside, outside, largest


def _integrate(rhs, y0, t, *, rtol, atol, mxstep, time_limit, max_rhs_calls) -> np.ndarray:
    """`solve` without rest at the edge: one odeint run under the limits."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    budget = math.inf if max_rhs_calls is None else max_rhs_calls
    calls, inside, largest = 0, None, 0.0

    def f(y, t_now):
        nonlocal calls, inside, largest
        calls += 1
        if calls > budget:
            raise _OverBudget
        if deadline is not None and calls % 128 == 0 and time.perf_counter() > deadline:
            raise _Deadline
        try:
            value = rhs(y[0])
        except (ArithmeticError, ValueError, TypeError) as err:  # named where it happened, at no cost otherwise
            raise _LeftDomain(f"right-hand side not real-valued on the path, at y = {y[0]:.4g}, t = {t_now:.4g} "
                              f"({err})", inside, float(y[0]), largest) from None
        if math.isfinite(value):
            inside, largest = float(y[0]), max(largest, abs(value))
        return value

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", ODEintWarning)  # a failure is reported as SolveError
            times = np.asarray(t, float)
            out, info = odeint(f, float(y0), times, rtol=rtol, atol=atol, mxstep=mxstep, full_output=True,
                               tcrit=times[-1:])  # never step past the last time (see the docstring)
    except _Deadline:
        raise SolveError(f"solver exceeded its {time_limit:g} s time limit") from None
    except _OverBudget:
        raise SolveError(f"solver exceeded its budget of {max_rhs_calls:,} right-hand-side evaluations") from None
    except (ArithmeticError, ValueError, TypeError) as err:
        raise SolveError(f"right-hand side not real-valued on the path ({err})") from None
    if info["message"] != "Integration successful.":
        where = _stopped(np.asarray(info.get("tcur", ()), float), np.asarray(t, float))
        raise SolveError(f"LSODA stopped {where} (the solution blows up or leaves the "
                         f"right-hand side's domain there): {info['message'].strip()}")
    out = out[:, 0]
    if not np.all(np.isfinite(out)):
        raise SolveError("solution is not finite")
    return out


def _resting_edge(rhs, left: _LeftDomain) -> float | None:
    """The edge of f's domain between the last value where f was real and the first where it was
    not, found by bisection, when f is at rest there (see `solve`); None otherwise."""
    if left.inside is None or not left.largest > 0:
        return None  # not real at the start, or never moving
    inside, outside = left.inside, left.outside
    for _ in range(1100):  # enough halvings to reach the resolution of doubles, even across 0
        middle = 0.5 * (inside + outside)
        if middle in (inside, outside):
            break
        if _real_at(rhs, middle) is None:
            outside = middle
        else:
            inside = middle
    value = _real_at(rhs, inside)
    at_rest = value is not None and abs(value) <= protocol.REST_AT_EDGE * left.largest
    return inside + 0.0 if at_rest else None  # + 0.0: an edge at -0.0 is written 0


def _real_at(rhs, v: float) -> float | None:
    try:
        value = rhs(v)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) else None


def _stopped(tcur: np.ndarray, t: np.ndarray) -> str:
    """Where a failed odeint call stopped, as text. tcur[i] is the time reached for output
    t[i + 1]; it is valid up to the first entry short of its output (the entries after it are left
    over from earlier calls), so the failure lies between that entry and its output time."""
    short = np.flatnonzero(tcur < t[1: len(tcur) + 1])
    if not len(short):
        return f"near t = {(tcur[-1] if len(tcur) else t[0]):.4g}"
    low, high = f"{tcur[short[0]]:.4g}", f"{t[short[0] + 1]:.4g}"
    return f"near t = {high}" if low == high else f"between t = {low} and {high}"


# central 9-point stencil (accuracy order 8, the closest even order to 9th-order differences;
# 9 points each side would be order 18): applied where it fits, all but 4 points at each end
_STENCIL = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])


def fd_residuals(rhs_values: Callable[[np.ndarray], np.ndarray], t: np.ndarray, y: np.ndarray, *,
                 grid: int | None = None) -> np.ndarray:
    """Max |dy/dt - f(y)| of each column of y [len(t), n]; inf where anything is not finite.

    dy/dt by central finite differences on an equidistant grid. With `grid`, t is two
    equidistant intervals of `grid` points each sharing their middle point ([0, T] and
    [T, T_extra]); each is differenced on its own step and the max over both is returned.
    `rhs_values(v)` must return f at the values v, column by column.
    """
    if grid is not None:
        return np.maximum(fd_residuals(rhs_values, t[:grid], y[:grid]),
                          fd_residuals(rhs_values, t[grid - 1:], y[grid - 1:]))
    h = t[1] - t[0]
    n = len(t)
    dy = sum(_STENCIL[k] * y[k: n - 8 + k] for k in range(9) if _STENCIL[k] != 0) / h
    with np.errstate(all="ignore"):
        res = np.abs(dy - rhs_values(y[4:-4]))
    res = np.where(np.isfinite(res), res, np.inf)
    return res.max(axis=0)


def fd_residual(rhs_vector: Callable[[np.ndarray], np.ndarray], t: np.ndarray, y: np.ndarray, *,
                grid: int | None = None) -> float:
    """`fd_residuals` of one solution y [len(t)]."""
    return float(fd_residuals(rhs_vector, t, np.asarray(y, dtype=float)[:, None], grid=grid)[0])


def valid_initial_value(expr, y0: float, t: np.ndarray, grid: int, *, rtol: float, atol: float,
                        fd_tolerance: float, time_limit: float | None, max_rhs_calls: int | None = None,
                        rest_at_edge: bool = False, relative: bool = False) -> bool:
    """Whether y' = expr has a usable solution from y0 on t ([0, T] and [T, T_extra], `grid`
    points each, solved in one LSODA run; `rest_at_edge` as in `solve`) whose FD residual is at
    most `fd_tolerance` on both; with `relative`, `fd_tolerance` in units of the largest |y| on the
    path (the solver's relative error makes the residual grow with y, so a law in large units,
    y0 = 1e8, fails an absolute check on its rounding alone)."""
    try:
        y = solve(compile_scalar(expr), y0, t, rtol=rtol, atol=atol, time_limit=time_limit,
                  max_rhs_calls=max_rhs_calls, rest_at_edge=rest_at_edge)
    except SolveError:
        return False
    scale = float(np.max(np.abs(y))) if relative else 1.0
    return fd_residual(compile_vector(expr), t, y, grid=grid) <= fd_tolerance * scale


def relative_atol(atol: float, size: float) -> float:
    """`atol` times |size| (y0, or the largest |y| when known) when it is below 1: an absolute
    tolerance fit for y near 1 is as large as the solution itself at y near 1e-7, so a trajectory
    in tiny units would be integrated to no digits at all (0 keeps `atol`; sizes above 1 keep it
    too, so solutions there are as before)."""
    scale = min(1.0, abs(float(size)))
    return atol * scale if scale > 0 and math.isfinite(scale) else atol


def solve_truth(expression: str, y0: float, time_limit: float = protocol.SOLVE_TIME_LIMIT):
    """Noise-free solution on the interpolation and extrapolation grids (one LSODA run over
    `protocol.truth_grid()`, absolute tolerance relative to |y0| below 1, at rest where it reaches
    the edge of the law's domain at rest): (y on [0, T], y on [T, T_extra]); raises SolveError."""
    y_all = solve(compile_scalar(parse(expression)), y0, protocol.truth_grid(), rtol=protocol.RTOL,
                  atol=relative_atol(protocol.ATOL, y0), mxstep=protocol.MXSTEP, time_limit=time_limit,
                  max_rhs_calls=protocol.SOLVE_MAX_RHS_CALLS, rest_at_edge=True)
    return y_all[: protocol.GRID], y_all[protocol.GRID - 1:]


def is_valid_initial_value(expression: str, y0: float, time_limit: float = 20.0, *, relative: bool = False) -> bool:
    """True when y' = expression has a solution from y0 on [0, T_extra] (at rest where it reaches
    its domain's edge at rest, as the truth) that passes the FD residual check (the protocol's
    grids, tolerances and FD_TOLERANCE) within
    `protocol.Y0_CHECK_MAX_RHS_CALLS` evaluations of f, so a drawn y0 does not depend on how busy
    the machine is; `time_limit` is the wall-clock safety net. With `relative` the residual is
    judged in units of y (`valid_initial_value`), and solved with the truth's absolute tolerance
    relative to |y0| below 1."""
    atol = relative_atol(protocol.ATOL, y0) if relative else protocol.ATOL
    return valid_initial_value(parse(expression), y0, protocol.truth_grid(), protocol.GRID, rtol=protocol.RTOL,
                               atol=atol, fd_tolerance=protocol.FD_TOLERANCE, time_limit=time_limit,
                               max_rhs_calls=protocol.Y0_CHECK_MAX_RHS_CALLS, rest_at_edge=True, relative=relative)

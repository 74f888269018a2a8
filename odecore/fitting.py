"""Fit the constants (and the initial value) of a parametrised scalar ODE y' = f(y; c) to one
observed trajectory, or to several records of one law, and compare fits by an information
criterion. One fitter for every method that fits skeletons (the NSODE search in nsode/search/funnel.py,
the ProGED-style grammar baseline in odebaselines/grammar.py, the `truth-refit` reference).

Two fits, cheap then exact:
- `fit_integral`: the integral form y(t_i) = y0 + integral_{t_0}^{t_i} f(y(s); c) ds with the
  integral taken by the trapezoid rule on the observed y (no solver). Linear in y0, and linear
  in c whenever c enters f linearly, so one Gauss-Newton step solves those exactly; a few
  Levenberg-Marquardt steps with the analytic Jacobian (sympy) otherwise.
- `fit_trajectory`: least squares (scipy `least_squares`) on the LSODA trajectory itself.

Beside it in `odecore/`: `noise` reads the noise level from the data, `stability` says whether a fit
is safe to extrapolate, `uncertainty` how many digits of a fit the data support.

Evaluation is real-valued everywhere: numpy with nan out of the domain for arrays, and the
project's real scalar printer (a fractional power of a negative base raises, never a complex
number) inside the solver. Budgets are counted (`max_nfev`, LSODA's `mxstep`); the per-solve
wall-clock limit is a safety net whose firing is reported in `Fit.safety_net`. A course that
reaches the edge of its law's domain where the law comes to rest stays there, as the harness's
truths and scores do (`trajectory`): the fits and the safety check see the course that is scored.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares

from odecore.expressions import Y, compile_scalar, real_values
from odecore.solving import SolveError, relative_atol, solve

RTOL = ATOL = 1e-7  # LSODA tolerances while fitting (scoring uses the protocol's 1e-9)
MXSTEP = 5000  # LSODA steps between two output points: the counted bound of one solve
SOLVE_SAFETY_S = 5.0  # wall-clock safety net per solve; never reached on an ordinary fit
PENALTY = 1e3  # scaled residual of a parameter set whose trajectory fails
CONDITION_LIMIT = 1e-7  # directions of J (unit columns) weaker than this share of the strongest are degenerate
UNDETERMINED_SHARE = 1e-3  # a number moving more than this along a degenerate direction is undetermined
STRUCTURAL_EXPONENTS = (sympy.S.Half, -sympy.S.Half, sympy.S.NegativeOne)  # kept by `abstract`: sqrt, 1/y
# what integrating a candidate can raise (a failed solve, or a right-hand side out of its domain)
SOLVE_FAILURES = (SolveError, OverflowError, ZeroDivisionError, ValueError, TypeError)


@dataclass(frozen=True)
class Template:
    """A right-hand side `expr` in y and the symbols `params`, compiled once on first use."""
    expr: sympy.Expr
    params: tuple[sympy.Symbol, ...]

    @cached_property
    def _vector(self):
        grads = [sympy.diff(self.expr, p) for p in self.params]
        return sympy.lambdify([Y, *self.params], [self.expr, *grads], modules="numpy")

    @cached_property
    def linear(self) -> bool:
        """Whether every constant enters f linearly (one Gauss-Newton step is then exact)."""
        return all(not (sympy.diff(self.expr, p).free_symbols & set(self.params)) for p in self.params)

    @cached_property
    def scalar(self):
        """f(y, *c) for one float y, for the solver; raises on a domain error."""
        return compile_scalar(self.expr, self.params)

    def values_and_gradients(self, y: np.ndarray, c) -> tuple[np.ndarray, np.ndarray]:
        """f(y; c) [n] and df/dc [k, n] on an array y; nan out of the domain. Where f is finite
        but the chain rule reads 0 * inf or 0 / 0 (y**c or sqrt(c*y) at y = 0, where f is 0 for
        every c near its value), df/dc is 0: a record that starts from exactly 0 is fitted."""
        with np.errstate(all="ignore"):
            out = self._vector(y, *c)
        arrays = [np.broadcast_to(real_values(o), y.shape) for o in out]
        gradients = np.array(arrays[1:]).reshape(len(self.params), len(y))
        gradients[np.isnan(gradients) & np.isfinite(arrays[0])] = 0.0
        return arrays[0], gradients

    def substitute(self, values) -> sympy.Expr:
        return self.expr.xreplace({p: sympy.Float(float(v)) for p, v in zip(self.params, values)})

    def __getstate__(self):
        """The expression and its symbols, not the compiled functions (which do not pickle, and
        are compiled again on first use): results can be pickled, cached by joblib, or returned
        from another process."""
        return {"expr": self.expr, "params": self.params}


@dataclass(frozen=True)
class Fit:
    values: tuple[float, ...]  # constants, in the template's parameter order
    y0: float  # initial value at t[0]
    rss: float  # sum of squared residuals on the observations (inf when the fit failed)
    nfev: int = 0  # residual evaluations spent
    safety_net: bool = False  # a wall-clock safety net fired during the fit
    info: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return math.isfinite(self.rss)


def abstract(expr: sympy.Expr, params: list[sympy.Symbol], start: list[float], *, numbered: bool = True) -> sympy.Expr:
    """`expr` with every number (but integer and structural exponents) replaced by a new symbol
    appended to `params`, its value to `start`; each occurrence gets its own symbol c0, c1, ...
    (with `numbered` False all are called c: the skeleton as a key)."""
    def again(e):
        return abstract(e, params, start, numbered=numbered)

    if expr.is_Number:
        params.append(sympy.Symbol(f"c{len(params)}" if numbered else "c", real=True))
        start.append(float(expr))
        return params[-1]
    if expr.is_Pow:
        base, exponent = expr.args
        keep = exponent.is_Integer or exponent in STRUCTURAL_EXPONENTS
        return sympy.Pow(again(base), exponent if keep else again(exponent))
    if not expr.args:
        return expr
    return expr.func(*(again(a) for a in expr.args))


def refit_numbers(expr: sympy.Expr, t: np.ndarray, y: np.ndarray, *,
                  max_nfev: int = 200) -> tuple[sympy.Expr, float] | None:
    """`expr` with every number (`abstract`) and the initial value fitted by least squares on the
    trajectory, starting from the numbers as written; None when the fit fails. Given the true law,
    what a method that always finds the right skeleton gets: skeleton search's reference."""
    params: list[sympy.Symbol] = []
    start: list[float] = []
    template = Template(abstract(sympy.expand(expr), params, start), tuple(params))
    fit = fit_trajectory(template, t, y, start, float(y[0]), max_nfev=max_nfev)
    return (template.substitute(fit.values), fit.y0) if fit.ok else None


def levenberg_marquardt(fun, x0: np.ndarray, *, jac=None, max_nfev: int) -> tuple[np.ndarray, int]:
    """scipy's `least_squares(method="lm")` made repeatable: (x, nfev).

    scipy 1.17's MINPACK reads one number past the Jacobian when it recomputes the norm of the
    column in the last pivot place after cancellation (fixed in scipy 1.18, scipy PR #24323, which
    needs Python 3.12), so an ill-conditioned fit depended on what the process had allocated
    before it (docs/search.md, "Version 34"). An extra parameter that the residual ignores adds an
    all-zero column, which pivoting keeps in the last place and never recomputes.
    """
    def padded(x):
        return fun(x[:-1])

    def padded_jac(x):
        j = np.asarray(jac(x[:-1]), dtype=float)
        return np.column_stack([j, np.zeros(len(j))])

    fit = least_squares(padded, np.append(np.asarray(x0, dtype=float), 0.0),
                        jac="2-point" if jac is None else padded_jac, method="lm", max_nfev=max_nfev)
    return fit.x[:-1], int(fit.nfev)


def fit_integral(template: Template, t: np.ndarray, y: np.ndarray, start, *, max_nfev: int = 30) -> Fit:
    """Constants and y0 minimising the integral-form residual (cheap: no solver, see module doc)."""
    k = len(template.params)

    def parts(x):
        f, grad = template.values_and_gradients(y, x[1:])
        residual = x[0] + cumulative_trapezoid(f, t, initial=0.0) - y
        jac = np.column_stack([np.ones_like(y), *(cumulative_trapezoid(g, t, initial=0.0) for g in grad)])
        return residual, jac

    x0 = np.array([y[0], *start], dtype=float)
    try:
        residual, jac = parts(x0)
        if not (np.all(np.isfinite(residual)) and np.all(np.isfinite(jac))):
            return Fit(tuple(map(float, start)), float(y[0]), math.inf)
        if template.linear:  # one Gauss-Newton step is the exact linear least-squares solution
            x = x0 - np.linalg.lstsq(jac, residual, rcond=None)[0]
            nfev = 1
        else:
            x, nfev = levenberg_marquardt(lambda x: parts(x)[0], x0, jac=lambda x: parts(x)[1],
                                          max_nfev=max_nfev * (k + 1))
        residual = parts(x)[0]
    except (ValueError, np.linalg.LinAlgError, OverflowError, ZeroDivisionError, TypeError):
        return Fit(tuple(map(float, start)), float(y[0]), math.inf)
    rss = float(residual @ residual)
    return Fit(tuple(float(v) for v in x[1:]), float(x[0]), rss if math.isfinite(rss) else math.inf, nfev)


class _Budget:
    """Counts solves and records whether the wall-clock safety net fired."""

    def __init__(self, deadline: float):
        self.deadline, self.fired = deadline, False


def trajectory(template: Template, values, y0: float, t: np.ndarray, *, rtol: float = RTOL, atol: float = ATOL,
               mxstep: int = MXSTEP, budget: _Budget | None = None) -> np.ndarray:
    """The LSODA solution of y' = f(y; values) from y0 at the times t, at rest where it reaches
    the edge of f's domain at rest (odecore.solving.solve, `rest_at_edge`: a tank that empties stays
    empty, as the harness scores it; search version 36); raises SolveError."""
    fn, c = template.scalar, tuple(float(v) for v in values)
    try:
        return solve(lambda v: fn(v, *c), y0, t, rtol=rtol, atol=relative_atol(atol, y0), mxstep=mxstep,
                     time_limit=SOLVE_SAFETY_S, rest_at_edge=True)
    except SolveError as err:
        if budget is not None and "time limit" in str(err):
            budget.fired = True
        raise


def trajectory_rss(expr: sympy.Expr, t: np.ndarray, y: np.ndarray, *, mxstep: int = MXSTEP) -> float:
    """Sum of squared differences between the observations and y' = expr integrated from the
    first observation with the fitter's LSODA settings; inf when the solve fails, blows up or
    needs more than `mxstep` steps between two observations (the wall-clock safety net aside)."""
    return trajectory_miss(Template(expr, ()), (), float(y[0]), t, y, mxstep=mxstep)


def fit_trajectory(template: Template, t: np.ndarray, y: np.ndarray, start, y0: float | None = None, *,
                   fit_y0: bool = True, max_nfev: int = 40, deadline: float = math.inf, skip: int = 0,
                   weights: np.ndarray | None = None) -> Fit:
    """Least squares on the integrated trajectory, from the constants `start` and `y0` (default:
    the first observation). With `fit_y0` False the trajectory starts at `y0` exactly. The first
    `skip` observations are passed through (the trajectory starts at t[0]) but not fitted.
    `max_nfev` counts trajectory evaluations (the budget); `deadline` (perf_counter seconds) is
    a safety net: past it every residual is the penalty and the fit reports `safety_net`. With
    `weights` (a `noise_profile`) each residual counts in its own point's noise, and the returned
    rss is the weighted one."""
    y0 = float(y[0]) if y0 is None else float(y0)
    spread = 1.0 if weights is None else np.asarray(weights, float)
    scale = float(np.std(y)) or 1.0  # (not of y / spread: a profile's mean square is 1, y / spread may be flat)
    budget = _Budget(deadline)
    penalty = np.full(len(y) - skip, PENALTY)

    def residuals(x):
        c, start_value = (x[1:], x[0]) if fit_y0 else (x, y0)
        if time.perf_counter() > deadline:
            budget.fired = True
            return penalty
        try:
            return ((trajectory(template, c, start_value, t, budget=budget) - y) / spread)[skip:] / scale
        except SOLVE_FAILURES:
            return penalty

    x0 = np.array(([y0] if fit_y0 else []) + [float(v) for v in start])
    if not len(x0):
        return Fit((), y0, _rss(residuals(x0), scale), 1, budget.fired)
    try:
        fit = least_squares(residuals, x0, method="trf", x_scale="jac", max_nfev=max_nfev)
        x, cost, nfev = fit.x, 2 * fit.cost, int(fit.nfev)
    except (ValueError, np.linalg.LinAlgError):  # the iterate ran off to inf/nan
        return Fit(tuple(float(v) for v in start), y0, math.inf, max_nfev, budget.fired)
    values, y0_fit = (x[1:], x[0]) if fit_y0 else (x, y0)
    usable = np.all(np.isfinite(x)) and math.isfinite(cost) and cost < 0.999 * len(penalty) * PENALTY**2
    rss = scale**2 * cost if usable else math.inf
    return Fit(tuple(float(v) for v in values), float(y0_fit), rss, nfev, budget.fired)


@dataclass(frozen=True)
class RecordsFit:
    """One law fitted to several records at once: shared constants, one initial value per record."""
    values: tuple[float, ...]  # constants, in the template's parameter order
    y0s: tuple[float, ...]  # each record's initial value at its first time
    chi2: tuple[float, ...]  # each record's sum of squared residuals in its own noise (inf when the fit failed)
    errors: tuple[float, ...] = ()  # standard errors of the y0s, then of the constants (the residuals' Jacobian)
    nfev: int = 0  # evaluations of all records' trajectories spent

    @property
    def ok(self) -> bool:
        return all(math.isfinite(c) for c in self.chi2)


def standard_errors_from(jac: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
    """sqrt(diag((J^T J)^-1)) for residuals in noise units with Jacobian J (one column per number),
    with the columns scaled to unit length first, so that units do not matter. A number that
    moves along a direction J cannot tell from 0 (a singular value below CONDITION_LIMIT of the
    largest) is undetermined, inf: c0 and c2 in c0*y + c1*y*log(c2*y), where the data fix c1 and
    c0 + c1*log(c2) but neither alone. The other numbers keep their errors, a weak direction
    counting at that limit; all are inf where J is not finite. With `noise`, each residual's own
    noise in those units, for a fit that did not weigh its residuals by it: the errors of that
    unweighted fit, sqrt(diag(A N^2 A^T)) with A = (J^T J)^-1 J^T (the sandwich)."""
    jac = np.asarray(jac, float)
    if not np.all(np.isfinite(jac)):
        return np.full(jac.shape[1], math.inf)
    norms = np.linalg.norm(jac, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    unit = np.vstack([jac / scale, np.zeros((max(jac.shape[1] - jac.shape[0], 0), jac.shape[1]))])  # square at least
    u, s, vt = np.linalg.svd(unit, full_matrices=False)
    if s[0] == 0:
        return np.full(jac.shape[1], math.inf)
    floor = CONDITION_LIMIT * s[0]
    inverse = vt.T / np.maximum(s, floor)  # V S^-1: (J^T J)^-1 = inverse inverse^T
    if noise is not None:
        inverse = inverse @ (u[: len(jac)] * np.asarray(noise, float)[:, None]).T  # A N
    errors = np.sqrt(np.sum(inverse ** 2, axis=1)) / scale
    moved = np.max(np.abs(vt[s < floor]), axis=0, initial=0.0)  # each number's share of the degenerate directions
    return np.where((moved > UNDETERMINED_SHARE) | (norms == 0), math.inf, errors)


def fit_records(template: Template, records, start, y0s, *, max_nfev: int = 80) -> RecordsFit:
    """Least squares on the integrated trajectories of several records of one law: the constants
    (from `start`) are shared and each record (t, y, noise) has its own initial value (from `y0s`).
    `noise` is the record's noise level, a number or one per observation: each residual counts in
    it, so that records of different sizes weigh by what they tell. Standard errors follow from
    the Jacobian at the solution (the residuals are already in noise units)."""
    records = [(np.asarray(t, float), np.asarray(y, float), np.asarray(noise, float)) for t, y, noise in records]
    r = len(records)
    penalty = [np.full(len(y), PENALTY) for _, y, _ in records]

    def parts(x):
        out = []
        for i, (t, y, noise) in enumerate(records):
            try:
                out.append((trajectory(template, x[r:], x[i], t) - y) / noise)
            except SOLVE_FAILURES:
                out.append(penalty[i])
        return out

    x0 = np.array([*map(float, y0s), *map(float, start)])
    try:
        fit = least_squares(lambda x: np.concatenate(parts(x)), x0, method="trf", x_scale="jac", max_nfev=max_nfev)
        x, nfev = fit.x, int(fit.nfev)
    except (ValueError, np.linalg.LinAlgError):  # the iterate ran off to inf/nan
        return RecordsFit(tuple(map(float, start)), tuple(map(float, y0s)), (math.inf,) * r, nfev=max_nfev)
    chi2 = []
    for residual, failed in zip(parts(x), penalty):
        value = float(residual @ residual)
        chi2.append(value if np.all(np.isfinite(x)) and value < 0.999 * len(failed) * PENALTY**2 else math.inf)
    try:
        errors = standard_errors_from(fit.jac)
    except np.linalg.LinAlgError:
        errors = np.full(len(x), math.inf)
    return RecordsFit(tuple(map(float, x[r:])), tuple(map(float, x[:r])), tuple(chi2), tuple(map(float, errors)), nfev)


def better_start(template: Template, values, starts, t: np.ndarray, y: np.ndarray) -> float:
    """The initial value among `starts` whose trajectory with the constants `values` misses the
    observations least (the first where none can be integrated). The integral form's y0 is a
    least-squares intercept: on a record whose values span many decades the largest values'
    quadrature error moves it far off (exponential growth by e^30 from 0.5 puts it at -3e8), and
    a trajectory fit started there runs to a wrong minimum where the first observation would not."""
    misses = [trajectory_miss(template, values, start, t, y) for start in starts]
    return float(starts[int(np.argmin(misses))])


def trajectory_miss(template: Template, values, y0: float, t: np.ndarray, y: np.ndarray, *,
                    mxstep: int = MXSTEP) -> float:
    """Sum of squared residuals of the trajectory from y0 on the observations (inf when it fails)."""
    try:
        path = trajectory(template, values, y0, np.asarray(t, dtype=float), mxstep=mxstep)
        rss = float(np.sum((path - np.asarray(y, dtype=float)) ** 2))
    except SOLVE_FAILURES:
        return math.inf
    return rss if math.isfinite(rss) else math.inf


def _rss(scaled_residual: np.ndarray, scale: float) -> float:
    rss = float(scaled_residual @ scaled_residual)
    return scale**2 * rss if rss < 0.999 * len(scaled_residual) * PENALTY**2 else math.inf


def bin_means(t: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """(t, y) cut to at most `max_points` observations: the mean time and mean value of consecutive
    groups of nearly equal count. Every stage of a fit costs time and memory in proportion to the
    number of observations; means, unlike a thinned subsample, keep what each observation says
    (their noise falls with the square root of the group's count, so a fit to them is nearly the
    fit to all), and a smooth course barely bends within 1/max_points of the record. A fit's
    initial value then belongs to the first group's mean time, not to t[0]."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(t) <= max_points:
        return t, y
    starts = np.round(np.linspace(0, len(t), max_points + 1)).astype(int)
    counts = np.diff(starts)
    return np.add.reduceat(t, starts[:-1]) / counts, np.add.reduceat(y, starts[:-1]) / counts


def information_criterion(rss: float, n: int, k: int, sigma: float) -> float:
    """BIC with a known noise level: rss / sigma^2 + k log n (lower is better). A constant more
    must buy a fall of the residual by log n noise variances, so a simpler fit that is as good
    statistically wins; unlike n log(rss / n) it does not reward fitting below the noise."""
    return rss / sigma**2 + k * math.log(n) if math.isfinite(rss) else math.inf



"""Fit the constants (and the initial value) of a parametrised scalar ODE y' = f(y; c) to one
observed trajectory, check that the fit is safe to integrate, and compare fits by an
information criterion. One fitter for every method that fits skeletons (the NSODE search in
nsode/search.py and the ProGED-style grammar baseline in baselines/grammar.py).

Two fits, cheap then exact:
- `fit_integral`: the integral form y(t_i) = y0 + integral_{t_0}^{t_i} f(y(s); c) ds with the
  integral taken by the trapezoid rule on the observed y (no solver). Linear in y0, and linear
  in c whenever c enters f linearly, so one Gauss-Newton step solves those exactly; a few
  Levenberg-Marquardt steps with the analytic Jacobian (sympy) otherwise.
- `fit_trajectory`: least squares (scipy `least_squares`) on the LSODA trajectory itself.

`standard_errors` and `round_to_error` say how many digits of a fit the data support.

Evaluation is real-valued everywhere: numpy with nan out of the domain for arrays, and the
project's real scalar printer (a fractional power of a negative base raises, never a complex
number) inside the solver. Budgets are counted (`max_nfev`, LSODA's `mxstep`); the per-solve
wall-clock limit is a safety net whose firing is reported in `Fit.safety_net`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares, nnls

from core.expressions import Y, compile_scalar
from core.solving import SolveError, relative_atol, solve

RTOL = ATOL = 1e-7  # LSODA tolerances while fitting (scoring uses the protocol's 1e-9)
MXSTEP = 5000  # LSODA steps between two output points: the counted bound of one solve
SOLVE_SAFETY_S = 5.0  # wall-clock safety net per solve; never reached on an ordinary fit
PENALTY = 1e3  # scaled residual of a parameter set whose trajectory fails
CONDITION_LIMIT = 1e-7  # relative sensitivities less independent than this are taken as degenerate
RESOLVED = 1e-6  # a difference step must move the trajectory this much, relative to it (solver rtol 1e-10)
NOISE_FLOOR = 1e-4  # relative to the data's scale: the smallest noise level the criterion assumes
UNDETERMINED_DIGITS = 4  # significant digits shown of a number with an infinite standard error
CURVATURE_RATIO = 2.0  # a line-fit noise estimate this many times the cubic's is mostly curvature
NOISE_GROWTH = 2.0  # noise_profile: the level at the largest |y| this many times that at the smallest
PROFILE_CLIP = 4.0  # noise_profile: relative levels are kept within [1/4, 4]
PROFILE_MIN_POINTS = 16  # noise_profile: fewer observations give no profile
GLITCH_NOISES = 8.0  # isolated_glitches: a point this many robust noise levels off its neighbours' course
MANY_DECADES = 100.0  # record_growth above this: a record spanning many decades (nsode.search)
PAUSE_SHARE = 0.25  # hidden_pause: |f| between two observations below this share of |f| at both is a pause
PAUSE_POINTS = 64  # hidden_pause: values of y looked at between two consecutive observations
ORIGIN_SHARE = 0.1  # unstable_reason(origin=True): a record whose first time lies this share of its span after 0
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
        """f(y; c) [n] and df/dc [k, n] on an array y; nan out of the domain."""
        with np.errstate(all="ignore"):
            out = self._vector(y, *c)
        arrays = [np.broadcast_to(np.asarray(o, dtype=float), y.shape) for o in out]
        return arrays[0], np.array(arrays[1:]).reshape(len(self.params), len(y))

    def substitute(self, values) -> sympy.Expr:
        return self.expr.xreplace({p: sympy.Float(float(v)) for p, v in zip(self.params, values)})


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
            fit = least_squares(lambda x: parts(x)[0], x0, jac=lambda x: parts(x)[1], method="lm",
                                max_nfev=max_nfev * (k + 1))
            x, nfev = fit.x, int(fit.nfev)
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
    """The LSODA solution of y' = f(y; values) from y0 at the times t; raises SolveError."""
    fn, c = template.scalar, tuple(float(v) for v in values)
    try:
        return solve(lambda v: fn(v, *c), y0, t, rtol=rtol, atol=relative_atol(atol, y0), mxstep=mxstep,
                     time_limit=SOLVE_SAFETY_S)
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
    with np.errstate(all="ignore"):
        try:
            errors = np.sqrt(np.diag(np.linalg.pinv(fit.jac.T @ fit.jac)))
        except np.linalg.LinAlgError:
            errors = np.full(len(x), math.inf)
    return RecordsFit(tuple(map(float, x[r:])), tuple(map(float, x[:r])), tuple(chi2),
                      tuple(float(e) if math.isfinite(e) else math.inf for e in errors), nfev)


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


def estimate_noise(t: np.ndarray, y: np.ndarray, *, curvature: bool = False) -> float:
    """Standard deviation of the observation noise (root mean square over the trajectory), from
    each point's miss of the straight line through its two neighbours; irregular times allowed.
    The curvature of a smooth trajectory adds O(h^2 y'') to that miss: negligible at the usual
    64-256 points, but on a dozen clean points it reads the curve as noise. The search keeps
    that estimate (its integral-form stages need the slack: docs/search.md, "Session 41"). With
    `curvature`, the miss of the cubic through the four nearest neighbours, O(h^4), is read too
    and taken instead when the line's estimate exceeds it by more than pure noise explains
    (`CURVATURE_RATIO`): the noise alone, for standard errors. The mean square, not a median: a
    median's estimate from 64 points is so noisy that the criterion's penalty of log n per
    constant drowns in it."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < 5:
        return 0.0
    w = (t[2:] - t[1:-1]) / (t[2:] - t[:-2])  # weight of the left neighbour
    residual = y[1:-1] - (w * y[:-2] + (1 - w) * y[2:])
    spread = np.sqrt(1 + w**2 + (1 - w) ** 2)  # the residual's noise is sigma times this
    line = _root_mean_square(residual / spread)
    if not curvature or len(y) < 10:  # fewer than 6 cubic misses: too loose to overrule the line
        return line
    cubic_misses = _interpolation_misses(t, y, 2)
    cubic = _root_mean_square(cubic_misses)
    limit = max(CURVATURE_RATIO, 1 + 4 / math.sqrt(len(cubic_misses)))
    return cubic if line > limit * cubic else line


def noise_profile(t: np.ndarray, y: np.ndarray, clip: float = PROFILE_CLIP, reweight: int = 0) -> np.ndarray | None:
    """Each observation's noise level relative to the record's root mean square, where the noise
    evidently grows with |y|; else None. Measured noise is often relative (1% of the reading):
    on a record whose values fall twentyfold its first points carry most of the noise, and
    an unweighted comparison of fits rewards a flexible law for following it there. The levels
    come from sigma_i^2 = a + b y_i^2 fitted by non-negative least squares to the squared misses
    of the cubic through each point's four nearest neighbours (a line's miss grows with the
    curvature, which is largest where a decay is fastest: at its largest values). "Evidently":
    the fitted level at the largest |y| is at least NOISE_GROWTH times that at the smallest. The
    profile is clipped to [1 / clip, clip]. Unweighted, the fit of a and b is set by the largest
    values, and over many decades a comes out as large as their own noise (a floor that hides the
    small values' quiet); `reweight` rounds refit it with each squared miss in its own fitted level
    (iteratively reweighted least squares)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < PROFILE_MIN_POINTS:
        return None
    design = np.column_stack([np.ones(len(y) - 4), y[2:-2] ** 2])
    squared = _interpolation_misses(t, y, 2) ** 2
    (a, b), _ = nnls(design, squared)
    for _ in range(reweight):
        inner = a + b * y[2:-2] ** 2
        if not np.all(inner > 0):
            break
        (a, b), _ = nnls(design / inner[:, None], squared / inner)
    level = a + b * y**2
    if not np.all(level > 0) or level.max() < NOISE_GROWTH**2 * level.min():
        return None
    profile = np.sqrt(level / level.mean())
    return np.clip(profile, 1 / clip, clip)


def _interpolation_misses(t: np.ndarray, y: np.ndarray, width: int) -> np.ndarray:
    """Each point's miss of the polynomial through its `width` neighbours on either side (the
    point itself left out), divided by the miss's spread under unit noise, sqrt(1 + sum w^2)."""
    inner = np.arange(width, len(y) - width)
    around = inner[:, None] + np.r_[-width:0, 1:width + 1]
    ti, tn = t[inner][:, None], t[around]
    weights = np.ones_like(tn)  # Lagrange weights of the neighbours at t_i
    for j in range(around.shape[1]):
        for k in range(around.shape[1]):
            if j != k:
                weights[:, j] *= (ti[:, 0] - tn[:, k]) / (tn[:, j] - tn[:, k])
    return (y[inner] - np.sum(weights * y[around], axis=1)) / np.sqrt(1 + np.sum(weights**2, axis=1))


def _root_mean_square(values: np.ndarray) -> float:
    return float(np.sqrt(np.mean(values**2)))


def noise_level(t: np.ndarray, y: np.ndarray, *, curvature: bool = False,
                profile: np.ndarray | None = None) -> float:
    """`estimate_noise`, but never below NOISE_FLOOR of the data's scale (clean data, solver error).
    With a noise `profile`, the root mean square of the cubic misses each divided by its point's
    profile instead: the level the profile is relative to, read from every point alike. Plain, a
    record whose noise grows with |y| is read from its few largest values (a growth over six
    decades from 40 points: from about three)."""
    if profile is None:
        level = estimate_noise(t, y, curvature=curvature)
    else:
        level = _root_mean_square(_interpolation_misses(t, y, 2) / np.asarray(profile, float)[2:-2])
    return max(level, noise_floor(y))


def noise_floor(y: np.ndarray) -> float:
    """NOISE_FLOOR of the data's scale (its spread plus a thousandth of its largest |y|, 1 for all
    zeros): the smallest noise level any reading of the data assumes."""
    y = np.asarray(y, float)
    return NOISE_FLOOR * ((float(np.std(y)) + 1e-3 * float(np.max(np.abs(y)))) or 1.0)


def isolated_glitches(t: np.ndarray, y: np.ndarray, threshold: float = GLITCH_NOISES) -> list[int]:
    """Indices of single points that stand apart from their neighbours' course: a glitch (a
    mistyped reading, a spike) bends a least-squares fit and inflates the noise level read from
    the data. Each point's miss of the cubic through its four nearest neighbours is compared with
    robust levels (medians of all misses) under both noise models, additive and relative to |y|;
    a glitch is beyond `threshold` under both, pushes its two neighbours' misses the other way,
    and leaves them ordinary (below half the threshold) once it is taken out. Curvature fails the
    last two tests: a sharp turn sampled by few points misses one way and stays. Measured on the
    built-in datasets' records (n 32-256, sigma 0-0.05; `benchmarks/glitches.py`, docs/search.md,
    "Version 33"): 3 of 8,256 glitch-free records flagged; a reading 1.5 times too large found in
    83-97% of the records at sigma 0.01, 44-74% at 0.02."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < 7 or not np.any(y):
        return []
    misses, inner = _interpolation_misses(t, y, 2), y[2:-2]
    nonzero = inner != 0
    additive = max(1.4826 * float(np.median(np.abs(misses))), noise_floor(y))
    relative = 1.4826 * float(np.median(np.abs(misses[nonzero] / inner[nonzero]))) if nonzero.any() else 0.0

    def size(miss, value):  # in noise levels: the smaller reading of the two noise models
        scale = relative * np.abs(value)
        by_value = np.divide(np.abs(miss), scale, out=np.full(np.shape(miss), np.inf), where=scale > 0)
        return np.minimum(np.abs(miss) / additive, by_value)

    sign = np.sign(misses)
    pushed = (sign[:-2] == sign[2:]) & (sign[:-2] == -sign[1:-1])  # both neighbours' misses the other way
    glitches = []
    for i in np.flatnonzero((size(misses, inner)[1:-1] > threshold) & pushed) + 1:
        k = i + 2  # the point's index in y; its neighbours' misses without it, from their own neighbours
        around = np.r_[k - 3:k, k + 1:k + 4]
        if np.all(size(_interpolation_misses(t[around], y[around], 2), y[[k - 1, k + 1]]) < threshold / 2):
            glitches.append(int(k))
    return glitches


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


def unstable_reason(template: Template, values, y0: float, t: np.ndarray, sigma: float, *,
                    y: np.ndarray | None = None, span: float = 2.0, points: int = 128,
                    bound: float = 1e4, keep_sign: bool = False, rest_in_noise: bool = False,
                    rest_limit: bool = False, start_scaled: bool = False, grown: bool = False,
                    turn_back: bool = False, origin: bool = False, lead_added: bool = False) -> str | None:
    """Why the fitted ODE is unsafe to extrapolate, or None: from y0 and y0 +- delta its solution
    must exist on `span` times the observed interval (no pole, no domain edge, finite) and stay
    within `bound` times the size of the observations `y` (default |y0|). delta is the largest
    of 2 sigma, 1e-3 of that size, twice the fit's miss of the first observation, and how far
    the fitted law moves y in one median sampling interval: where the data start is known no
    better than that, and a curve fit that starts just beside an unstable equilibrium or a pole
    (steep, so that it can follow the data's slope right up to it) fails from where the data
    start. When 0 lies within delta of y0 the solution must also exist from exactly 0: many
    experiments start there (at rest, empty, uncharged), and a law with a removable singularity
    at 0 (sin(y)/y) fits the data beside it but cannot be integrated from it. With `keep_sign`,
    a perturbed start that crosses 0 where the observations `y` never do is left out (0 itself,
    the start at rest, is then checked instead): a population or a concentration recorded
    sparsely moves more than its own size in one interval, and no law need hold below 0. With
    `rest_in_noise`, 0 is checked only when y0 lies within the noise part of delta (not within
    the law's motion alone): a record that moves more than y0 per interval did not start at rest.
    With `rest_limit`, a law that is not a number at 0 but tends to 0 there from the observations'
    side (Gompertz's y log y) passes the start at rest: rest is its equilibrium in the limit, and
    what starts empty stays empty; a finite nonzero limit (sin(y)/y) or a pole still fails. With
    `start_scaled`, a course from a start c = |y0 +- delta| / |y0| > 1 times y0 may reach c times the
    bound, as the course of a law linear in y does: delta, read from noise that grows with the
    record, can be many times the first value of a growth, and the law itself then fails. With
    `grown`, a record that itself grew G-fold (`record_growth`) may go G^2 times its size where
    that exceeds the bound: exponential growth by G > 100 continues by G again over the next
    span, and the bound alone refuses the law itself from G = 1e4 (four decades) on. With
    `turn_back`, the course from y0 +- delta must not move against the course from y0 by more
    than 2 delta: an unstable equilibrium within the start's uncertainty sends the law's course
    the other way from where the data may have started, while a stable one moves it by delta at
    most. With `origin`, a record whose first time lies after 0 by at most ORIGIN_SHARE of its
    span most likely began at t = 0 (times counted from the experiment's start): delta covers
    the motion over that lead too, the law's and the record's over as long just after its first
    observation (a law that hides an equilibrium there moves slowly beside it). With `lead_added`,
    that motion adds to the start's own uncertainty (noise, the fit's miss) instead of replacing
    the smaller: where the record was at 0 is uncertain by both at once."""
    t = np.asarray(t, float)
    grid = np.linspace(t[0], t[0] + span * (t[-1] - t[0]), points)
    size = max(abs(y0) if y is None else float(np.max(np.abs(y))), 1e-12)
    miss = 0.0 if y is None else abs(float(y[0]) - y0)
    try:
        slope = abs(float(template.scalar(y0, *(float(v) for v in values))))
    except (ArithmeticError, ValueError, TypeError):
        return f"not real-valued at y0 = {y0:.4g}"
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    early = 0.0  # how far the record may have moved between t = 0 and its first observation
    if origin and y is not None and 0 < t[0] <= ORIGIN_SHARE * (t[-1] - t[0]):
        step = max(step, float(t[0]))  # the law's motion over the lead, below
        early = abs(float(y[min(np.searchsorted(t, 2 * t[0]), len(t) - 1)] - y[0]))  # the record's, just after it
    noise = max(2 * sigma, 1e-3 * size, 2 * miss)
    delta = max(noise + early if lead_added else noise, early, slope * step if math.isfinite(slope) else 0.0)
    starts = (y0, y0 - delta, y0 + delta) + ((0.0,) if abs(y0) <= (noise if rest_in_noise else delta) else ())
    if keep_sign and y is not None and (np.all(y > 0) or np.all(y < 0)):
        starts = tuple(start for start in starts if start == 0 or np.sign(start) == np.sign(y[0]))
    reach = max(bound, record_growth(y) ** 2 if grown and y is not None else 0.0) * max(size, sigma)
    motion = 0.0  # of the course from y0 (the first start) over the grid
    for start in starts:
        at_rest = start == 0 and rest_limit and y is not None
        if at_rest and _rest_in_the_limit(template, values, y, noise / (grid[-1] - grid[0])):
            continue  # what starts empty stays empty
        try:
            path = trajectory(template, values, start, grid)
        except SOLVE_FAILURES as err:
            return f"from y0 = {start:.4g}: {err}"
        limit = reach
        if start_scaled and start != 0 and y0 != 0:
            limit *= max(1.0, abs(start / y0))
        if np.max(np.abs(path)) > limit:
            return f"from y0 = {start:.4g}: |y| reaches {np.max(np.abs(path)):.3g}"
        if start == y0:
            motion = float(path[-1] - path[0])
        elif turn_back and start != 0 and abs(motion) > delta and (path[-1] - path[0]) * np.sign(motion) < -2 * delta:
            return f"from y0 = {start:.4g}: the course turns back (an unstable equilibrium beside y0)"
    return None


def record_growth(y: np.ndarray) -> float:
    """How many times its early size a record grew: max |y| over the median |y| of its first 5%
    of observations (at least 3; a median, so that one noisy value near 0 does not read as a
    start from nothing). 1 where those are all 0."""
    y = np.abs(np.asarray(y, float))
    early = float(np.median(y[: max(3, len(y) // 20)]))
    return float(np.max(y)) / early if early > 0 else 1.0


def hidden_pause(template: Template, values, y0: float, t: np.ndarray, *, share: float = PAUSE_SHARE,
                 points: int = PAUSE_POINTS) -> str | None:
    """Where the fitted law nearly stops, or is not real-valued, between two consecutive
    observations of its own course, or None. A scalar ODE's course is monotone, so between
    y(t_i) and y(t_i+1) it passes every value; where |f| there falls below `share` of |f| at
    both ends, the course lingers between two samples (a denominator that almost vanishes, a
    near-zero the data never show). Such a pause only shifts the later course in time, so it
    buys a fit of the noise, and a law does not hide one between samples that see it on both
    sides. Steps that move the course by less than 1e-3 of its range are skipped (rest)."""
    try:
        course = trajectory(template, values, y0, np.asarray(t, float))
    except SOLVE_FAILURES:
        return None  # unstable_reason says why
    start, end = course[:-1], course[1:]
    moved = np.abs(end - start) > 1e-3 * (np.max(course) - np.min(course))
    if not np.any(moved):
        return None
    start, end = start[moved], end[moved]
    between = start[:, None] + (end - start)[:, None] * np.linspace(0, 1, points + 2)[None, 1:-1]
    c = [float(v) for v in values]
    ends = np.minimum(*(np.abs(template.values_and_gradients(v, c)[0]) for v in (start, end)))
    inside = np.abs(template.values_and_gradients(between.ravel(), c)[0]).reshape(between.shape)
    with np.errstate(invalid="ignore"):
        paused = (~np.isfinite(inside) | (inside < share * ends[:, None])) & np.isfinite(ends)[:, None]
    if not paused.any():
        return None
    i, j = np.argwhere(paused)[0]  # the first interval, and the first value in it
    what = f"falls to {inside[i, j]:.3g}" if np.isfinite(inside[i, j]) else "is not real-valued"
    return (f"f {what} at y = {between[i, j]:.4g}, between observations where |f| is at least {ends[i]:.3g}: "
            "a pause the samples cannot see")


def _rest_in_the_limit(template: Template, values, y: np.ndarray, tolerance: float) -> bool:
    """Whether f is not a number at 0 but tends to 0 from the observations' side: |f| within
    `tolerance` (a rate that moves y less than the noise over the check's span) at 1e-9 and 1e-12
    of the observations' size, and shrinking between them."""
    values = tuple(float(v) for v in values)
    peak = float(y[np.argmax(np.abs(y))])  # its sign is the observations' side, its size their scale
    try:
        at_zero = float(template.scalar(0.0, *values))
    except (ArithmeticError, ValueError, TypeError):
        at_zero = math.nan
    if math.isfinite(at_zero):
        return False  # a number at 0: integrated from there as any start
    try:
        near, nearer = (abs(float(template.scalar(scale * peak, *values))) for scale in (1e-9, 1e-12))
    except (ArithmeticError, ValueError, TypeError):
        return False
    return math.isfinite(near) and nearer <= near <= tolerance


def sensitivities(template: Template, values, y0: float, t: np.ndarray, *,
                  rel_step: float = 1e-5) -> tuple[np.ndarray, np.ndarray] | None:
    """(J, size): J[i, j] the trajectory's sensitivity at t_i to number j of (y0, *values) times
    that number's size (central differences of tightly integrated solutions, steps relative to
    each number, so units do not matter); None where a perturbed trajectory cannot be integrated
    or J is not finite. A number whose own step moves the trajectory less than the solver's error
    can resolve (a slope fitted to 1e-16 on a straight line) is stepped tenfold larger, up to the
    largest number's step."""
    x = np.array([y0, *values], dtype=float)
    t = np.asarray(t, float)
    size = np.where(x != 0, np.abs(x), 1.0)
    largest = float(np.max(size))
    jac = np.empty((len(t), len(x)))
    for i in range(len(x)):
        while True:
            h = rel_step * size[i]
            up, down = x.copy(), x.copy()
            up[i] += h
            down[i] -= h
            try:
                paths = [trajectory(template, p[1:], p[0], t, rtol=1e-10, atol=1e-12) for p in (up, down)]
            except SOLVE_FAILURES:
                return None
            moved = np.max(np.abs(paths[0] - paths[1]), initial=0.0)
            if moved > RESOLVED * np.max(np.abs(paths[0]), initial=0.0) or size[i] >= largest:
                break
            size[i] = min(10 * size[i], largest)
        jac[:, i] = (paths[0] - paths[1]) / (2 * h)
    if not np.all(np.isfinite(jac)):
        return None
    return jac * size, size


def standard_errors(template: Template, values, y0: float, t: np.ndarray, sigma: float, *,
                    rel_step: float = 1e-5, profile: np.ndarray | None = None) -> np.ndarray:
    """Standard errors of (y0, *values) for observations at `t` with noise `sigma`: the square
    roots of the diagonal of sigma^2 (J^T J)^-1, J the trajectory's sensitivity to them
    (`sensitivities`). inf where the data cannot determine a number (J singular to the
    differences' accuracy) or its trajectory cannot be integrated. With a noise `profile`, point
    i's noise is sigma times profile[i] (each row of J divided by it): where the noise grows with
    |y|, the quiet small values fix a growth's rate far better than equal noise would say."""
    found = sensitivities(template, values, y0, t, rel_step=rel_step)
    if found is None:
        return np.full(len(values) + 1, math.inf)
    jac, size = found
    if profile is not None:
        jac = jac / np.asarray(profile, float)[:, None]
    _, s, vt = np.linalg.svd(jac, full_matrices=False)
    if s[0] == 0 or s[-1] < CONDITION_LIMIT * s[0]:
        return np.full(len(values) + 1, math.inf)
    return sigma * size * np.sqrt(np.sum((vt.T / s) ** 2, axis=1))


def predictive_error(template: Template, values, y0: float, t: np.ndarray, y: np.ndarray, cut: int,
                     sigma: float) -> float:
    """How well the fit to the first `cut` observations (its numbers `values`, `y0`) predicts the
    rest, in noise variances: minus twice the log predictive density of y[cut:] up to a constant,
    r' S^-1 r + log det S with S = I + J_rest (J_first' J_first)^-1 J_rest' (noise plus the
    first part's uncertainty about the numbers, carried to the rest; J = `sensitivities`).
    Unlike the squared forecast error, a number the first part cannot pin down (a saturation
    level seen only later) costs the log of its uncertainty, not the square of its drift.
    inf where the trajectory or its sensitivities cannot be computed."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    try:
        r = (trajectory(template, values, y0, t) - y)[cut:] / sigma
    except SOLVE_FAILURES:
        return math.inf
    found = sensitivities(template, values, y0, t)
    if found is None or not np.all(np.isfinite(r)):
        return math.inf
    jac = found[0]  # S does not depend on the sensitivities' units
    _, s, vt = np.linalg.svd(jac[:cut], full_matrices=False)
    if s[0] == 0:
        return math.inf
    s = np.maximum(s, CONDITION_LIMIT * s[0])  # a direction the first part misses: very uncertain, not infinitely
    b = jac[cut:] @ vt.T / s  # S = I + b b'
    m = np.eye(len(s)) + b.T @ b
    rb = b.T @ r
    return float(r @ r - rb @ np.linalg.solve(m, rb) + np.linalg.slogdet(m)[1])


def round_to_error(value: float, error: float, max_digits: int = 6, extra: int = 0) -> float:
    """`value` rounded at the decimal place of the first significant digit of its standard
    error (the digits the data support), to at least one and at most `max_digits` significant
    digits, plus `extra`: 0.49873 +- 0.0021 reads 0.499; a number the data cannot tell from zero
    keeps one digit. An infinite error (the number trades off exactly against others, so the
    data fix none of its digits alone) keeps UNDETERMINED_DIGITS, as the candidate list does."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{_supported_digits(value, error, max_digits, extra)}g}")


def written_to_error(value: float, error: float, max_digits: int = 6, extra: int = 0) -> str:
    """`value` as `round_to_error` rounds it, written with every digit it keeps, trailing zeros
    included (4.00 +- 0.012, not 4); a value already rounded further keeps its own digits."""
    rounded = round_to_error(value, error, max_digits, extra)
    if rounded == 0 or not math.isfinite(rounded) or not math.isfinite(error):
        return f"{rounded:g}"  # no padding zeros: they would claim digits the data do not fix
    own = len(repr(abs(rounded)).split("e")[0].replace(".", "").strip("0"))  # shortest round-trip digits
    digits = max(_supported_digits(rounded, error, max_digits, extra), own)
    mantissa, _, exponent = f"{rounded:#.{digits}g}".partition("e")
    return mantissa.rstrip(".") + (f"e{exponent}" if exponent else "")


def _supported_digits(value: float, error: float, max_digits: int, extra: int) -> int:
    magnitude = math.floor(math.log10(abs(value)))
    if math.isfinite(error) and error > 0:
        digits = magnitude - math.floor(math.log10(error)) + 1
    else:
        digits = UNDETERMINED_DIGITS if not math.isfinite(error) else max_digits
    return min(min(max(digits, 1), max_digits) + extra, 17)

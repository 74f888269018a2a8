"""Choose among beam candidates by R^2 of the integrated trajectory against the observations.

The paper integrates every candidate from the first observation with LSODA and keeps the best
R^2; with a wide beam that dominates inference time. The fast path ranks all candidates in one
cheap pass with the integral form of the ODE,

    y(t_i) - y(t_0) = integral_{t_0}^{t_i} f(y(s)) ds,

evaluated on the observed y with the trapezoid rule (one vectorised evaluation of f per
candidate, no solver and no derivative estimates), then integrates only the `exact` best of that
ranking with LSODA. `refine` optionally re-fits the numeric constants of the best few by least
squares on the integrated trajectory (scipy), which the paper did not do.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares

from core.expressions import Y, compile_scalar, compile_vector
from core.metrics import r2
from core.solving import solve

EXACT_TOP = 8  # candidates integrated with LSODA after the fast ranking
SOLVE_TIME_LIMIT = 1.0  # seconds per candidate solve at selection time


@dataclass
class Scored:
    expr: sympy.Expr
    r2: float  # R^2 of the LSODA trajectory on the observations (-inf if it failed)
    proxy: float = -math.inf  # R^2 of the integral-form residual (fast ranking)
    refined: bool = False
    info: dict = field(default_factory=dict)


_NUMPY = {sympy.sin: np.sin, sympy.cos: np.cos, sympy.exp: np.exp, sympy.log: np.log}


def evaluate(expr: sympy.Expr, y: np.ndarray) -> np.ndarray:
    """f(y) on an array by walking the sympy tree with numpy ufuncs.

    About 100x cheaper than `sympy.lambdify` for one evaluation (no code generation), which is
    what the ranking pass needs; real semantics as in core.expressions (log or a
    fractional power of a negative number gives nan). Falls back to lambdify for other nodes.
    """
    if expr.is_Symbol:
        return y
    if expr.is_Number:
        return np.full_like(y, float(expr))
    if expr.is_Add or expr.is_Mul:
        parts = [evaluate(a, y) for a in expr.args]
        out = parts[0]
        for p in parts[1:]:
            out = out + p if expr.is_Add else out * p
        return out
    if expr.is_Pow:
        return np.power(evaluate(expr.args[0], y), evaluate(expr.args[1], y))
    if expr.func in _NUMPY:
        return _NUMPY[expr.func](evaluate(expr.args[0], y))
    return compile_vector(expr)(y)


def proxy_r2(expr: sympy.Expr, t: np.ndarray, y: np.ndarray) -> float:
    """R^2 of y_0 + cumulative integral of f(y_obs) against y: the fast ranking score."""
    try:
        with np.errstate(all="ignore"):
            f = np.broadcast_to(evaluate(expr, y), y.shape)
    except Exception:
        return -math.inf
    if not np.all(np.isfinite(f)):
        return -math.inf
    y_hat = y[0] + cumulative_trapezoid(f, t, initial=0.0)
    return r2(y_hat, y)


def exact_r2(expr: sympy.Expr, t: np.ndarray, y: np.ndarray, time_limit: float = SOLVE_TIME_LIMIT) -> float:
    """R^2 of the LSODA solution from (t_0, y_0) on the observed times; -inf when it fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # odeint warns on blow-ups that we report as -inf
            y_hat = solve(compile_scalar(expr), y[0], t, time_limit=time_limit)
    except Exception:  # SolveError, or a candidate that does not compile or evaluate
        return -math.inf
    return r2(y_hat, y)


def select(exprs: list[sympy.Expr], t: np.ndarray, y: np.ndarray, *, exact: int | None = EXACT_TOP,
           refine: int = 0, time_limit: float = SOLVE_TIME_LIMIT) -> list[Scored]:
    """Candidates sorted best first. `exact=None` is the naive path (LSODA for every candidate).

    Candidates integrated with LSODA come first, by R^2; the others follow by proxy score with
    r2 = -inf. With `refine` > 0 the best `refine` are re-fitted and replaced when that helps.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    scored = [Scored(e, -math.inf, proxy_r2(e, t, y)) for e in exprs]
    order = sorted(range(len(scored)), key=lambda i: scored[i].proxy, reverse=True)
    n_exact = len(order) if exact is None else min(exact, len(order))
    for i in order[:n_exact]:
        scored[i].r2 = exact_r2(scored[i].expr, t, y, time_limit)
    scored.sort(key=lambda s: (s.r2, s.proxy), reverse=True)
    for k in range(min(refine, len(scored))):
        if math.isfinite(scored[k].r2):
            better = refine_constants(scored[k].expr, t, y, time_limit=time_limit)
            if better is not None and better.r2 > scored[k].r2:
                scored[k] = better
    scored.sort(key=lambda s: (s.r2, s.proxy), reverse=True)
    return scored


def refine_constants(expr: sympy.Expr, t: np.ndarray, y: np.ndarray, *, max_nfev: int = 40,
                     time_limit: float = SOLVE_TIME_LIMIT) -> Scored | None:
    """Least-squares fit of the float constants of `expr` on the integrated trajectory from y_0.

    Integer constants (exponents, small coefficients) are kept: they are structure, not values.
    Returns None when the expression has no float constants or the fit fails.
    """
    floats = sorted({a for a in expr.atoms(sympy.Float)}, key=float)
    if not floats:
        return None
    params = sympy.symbols(f"c0:{len(floats)}", real=True)
    template = expr.xreplace(dict(zip(floats, params)))
    fn = sympy.lambdify([Y, *params], template, modules="math")
    deadline = time.perf_counter() + 5 * time_limit

    def residual(c):
        if time.perf_counter() > deadline:
            raise TimeoutError
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y_hat = solve(lambda v: fn(v, *c), y[0], t, time_limit=time_limit)
        except Exception:
            return np.full_like(y, 1e6)
        return y_hat - y

    try:
        fit = least_squares(residual, np.array([float(f) for f in floats]), max_nfev=max_nfev,
                            x_scale="jac", method="trf")
    except TimeoutError:
        return None
    new = expr.xreplace({f: sympy.Float(float(v), 6) for f, v in zip(floats, fit.x)})
    return Scored(new, exact_r2(new, t, y, time_limit), proxy_r2(new, t, y), refined=True,
                  info={"nfev": int(fit.nfev)})

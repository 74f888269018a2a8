"""Choose among beam candidates by R^2 of the integrated trajectory against the observations.

The paper integrates every candidate from the first observation with LSODA and keeps the best
R^2; with a wide beam that dominates inference time. The fast path ranks all candidates in one
cheap pass with the integral form of the ODE,

    y(t_i) - y(t_0) = integral_{t_0}^{t_i} f(y(s)) ds,

evaluated on the observed y with the trapezoid rule (one vectorised evaluation of f per
candidate, no solver and no derivative estimates), then integrates only the `exact` best of that
ranking with LSODA. This is the paper's selection but for that shortlist (the paper integrates
every candidate; a candidate the proxy ranks below `exact` is never integrated); refitting constants and choosing with
parsimony (not in the paper) is nsode/search/funnel.py, on the shared fitter odecore/fitting.py.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid

from odecore.expressions import compile_scalar, evaluate
from odecore.metrics import r2
from odecore.solving import solve

EXACT_TOP = 8  # candidates integrated with LSODA after the fast ranking
MAX_RHS_CALLS = 500_000  # evaluations of f per candidate solve at selection time (about 1 s on 2 cores)
SOLVE_TIME_LIMIT = 10.0  # seconds of wall clock per candidate solve: a safety net beside the count


@dataclass
class Scored:
    expr: sympy.Expr
    r2: float  # R^2 of the LSODA trajectory on the observations (-inf if it failed)
    proxy: float = -math.inf  # R^2 of the integral-form residual (fast ranking)


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
            y_hat = solve(compile_scalar(expr), y[0], t, time_limit=time_limit, max_rhs_calls=MAX_RHS_CALLS)
    except Exception:  # SolveError, or a candidate that does not compile or evaluate
        return -math.inf
    return r2(y_hat, y)


def select(exprs: list[sympy.Expr], t: np.ndarray, y: np.ndarray, *, exact: int | None = EXACT_TOP,
           time_limit: float = SOLVE_TIME_LIMIT) -> list[Scored]:
    """Candidates sorted best first. `exact=None` is the naive path (LSODA for every candidate).

    Candidates integrated with LSODA come first, by R^2; the others follow by proxy score with
    r2 = -inf.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    scored = [Scored(e, -math.inf, proxy_r2(e, t, y)) for e in exprs]
    order = sorted(range(len(scored)), key=lambda i: scored[i].proxy, reverse=True)
    n_exact = len(order) if exact is None else min(exact, len(order))
    for i in order[:n_exact]:
        scored[i].r2 = exact_r2(scored[i].expr, t, y, time_limit)
    scored.sort(key=lambda s: (s.r2, s.proxy), reverse=True)
    return scored


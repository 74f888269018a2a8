"""A beam expression read with its polynomial denominator fitted to the data (`Settings.denominators`;
measured and not kept: docs/search.md). The beam writes `y/(y - 8.6)` with its pole on the far
side of the data, and no fit started there crosses the pole; this fit does not start there.
"""
from __future__ import annotations

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid

from odecore.expressions import Y, evaluate
from odecore.fitting import levenberg_marquardt
from nsode.search.integral_fits import column_norms, least_squares_unit
from nsode.search.terms import split

DENOMINATOR_NFEV = 20  # Levenberg-Marquardt steps of a fitted denominator (each len(d) + 1 evaluations)


def with_denominators(readings, t, y, limit: int):
    """Each (expression, label), preceded by its copy with the denominator fitted (`denominator_fitted`),
    for the first `limit` sets of numerators."""
    fitted: dict = {}
    for expr, label in readings:
        other = denominator_fitted(expr, t, y, fitted, limit)
        if other is not None and other != expr:
            yield other, label
        yield expr, label


def denominator_fitted(expr: sympy.Expr, t: np.ndarray, y: np.ndarray, cache: dict | None = None,
                       limit: int = 0) -> sympy.Expr | None:
    """`expr` with the numbers of its one polynomial denominator D(y) fitted to the data (None where
    it has no such denominator, or two). The beam writes `y/(y - 8.6)` with its pole on the far side
    of the data, and no fit started there crosses the pole; this fit does not start there at all.
    Multiplied through by D = sum_j d_j y**j, the law y' = sum_k c_k u_k/D + sum_k b_k g_k becomes
    an integral identity linear in everything, sum_j d_j y**(j+1)/(j+1) = const + sum_k c_k
    integral(u_k) + sum_k,j b_k d_j integral(g_k y**j) (each product a coefficient of its own, the
    leading d_j fixed), which gives a start; from there D alone is fitted on the integral form with
    the coefficients solved exactly at each step (`_denominator_polished`). The fit does not depend
    on the numbers D was written with, so `cache` keeps one per set of numerators, and with a
    `limit` no more than that many are fitted (later sets return None)."""
    found = _denominator(expr)
    if found is None:
        return None
    base, coefficients = found
    lead = max(coefficients)
    lower = sorted(j for j in coefficients if j != lead)
    inverse = sympy.Pow(base, -1)
    over, plain = [], []  # the numerators of the terms that hold 1/D; the other terms
    terms = split(expr)
    for _, rest in terms:
        factors = sympy.Mul.make_args(rest)
        if inverse in factors:
            rest = sympy.Mul(*(f for f in factors if f != inverse))
            over.append(rest)
        else:
            plain.append(rest)
        if rest.has(base):
            return None
    key = (tuple(over), tuple(plain), lead, tuple(lower))
    cache = {} if cache is None else cache
    if key not in cache:
        if limit and len(cache) >= limit:
            return None
        cache[key] = _denominator_polished(over, plain, lead, lower, t, y)
    monic = cache[key]
    if monic is None:
        return None
    scale = coefficients[lead]
    kept = [arg for arg in base.args if _power(arg) == lead]  # the leading term as written
    fitted = {base: sympy.Add(*kept, *(sympy.Float(scale * v) * Y**j for j, v in zip(lower, monic)))}
    return sympy.Add(*(c * rest.xreplace(fitted) for c, rest in terms))  # expanded already: split reads it cheaply


def _denominator(expr: sympy.Expr) -> tuple[sympy.Expr, dict[int, float]] | None:
    """The one polynomial in y with numbers for coefficients that `expr` divides by, with its
    coefficient per power of y, or None."""
    bases = {node.base for node in sympy.preorder_traversal(expr)
             if node.is_Pow and node.exp == -1 and node.base.is_Add and node.base.has(Y)}
    if len(bases) != 1:
        return None
    base = bases.pop()
    coefficients = {}
    for arg in base.args:
        number, _ = arg.as_coeff_Mul()
        power = _power(arg)
        if power is None or power in coefficients:
            return None
        coefficients[power] = float(number)
    return base, coefficients


def _power(term: sympy.Expr) -> int | None:
    """k where `term` is a number times y**k (k >= 0 whole), else None."""
    rest = term.as_coeff_Mul()[1]
    if rest == 1:
        return 0
    if rest == Y:
        return 1
    if rest.is_Pow and rest.base == Y and rest.exp.is_Integer and rest.exp > 0:
        return int(rest.exp)
    return None


def _denominator_polished(over, plain, lead: int, lower: list[int], t, y) -> np.ndarray | None:
    """The `lower` coefficients of the monic denominator (`denominator_fitted`), or None."""
    powers = [*lower, lead]
    with np.errstate(all="ignore"):
        numerators = [evaluate(rest, y) for rest in over]
        others = [evaluate(rest, y) for rest in plain]
        columns = [*numerators, *(g * y**j for g in others for j in powers)]
        design = np.column_stack([*cumulative_trapezoid(np.array(columns), t, initial=0.0), np.ones_like(y),
                                  *(-(y ** (j + 1)) / (j + 1) for j in lower)])
        if not np.all(np.isfinite(design)):
            return None
        norms = column_norms(design)[0]
        start = (least_squares_unit(design[None] / norms, y ** (lead + 1) / (lead + 1))[0] / norms)[-len(lower):]
        fixed = [np.ones_like(y), *(cumulative_trapezoid(np.array(others), t, initial=0.0) if others else [])]

        def residual(d):
            denominator = y**lead + sum(v * y**j for v, j in zip(d, lower))
            free = cumulative_trapezoid(np.array(numerators) / denominator, t, initial=0.0)
            columns = np.column_stack([*fixed, *free])
            if not np.all(np.isfinite(columns)):
                return np.full_like(y, 1e100)
            coefficients = np.linalg.lstsq(columns, y, rcond=None)[0]
            return columns @ coefficients - y

        if not np.all(np.isfinite(start)):
            return None
        try:
            x, _ = levenberg_marquardt(residual, np.asarray(start, dtype=float),
                                       max_nfev=DENOMINATOR_NFEV * (len(start) + 1))
        except (ValueError, np.linalg.LinAlgError):
            x = start
        x = x if np.all(np.isfinite(x)) else start
        return None if _pole_within(x, lead, lower, y) else x


def _pole_within(lower_coefficients, lead: int, lower: list[int], y) -> bool:
    """Whether the monic denominator meets 0 within the observed values of y: on noisy records the
    fit can put its pole among the data (where no observation lies exactly on it), and such a copy
    is no law of the record, only a candidate the later stages must reject."""
    grid = np.linspace(np.min(y), np.max(y), 257)
    with np.errstate(all="ignore"):
        denominator = grid**lead + sum(v * grid**j for v, j in zip(lower_coefficients, lower))
    signs = np.sign(denominator)
    return bool(np.any(signs == 0) or np.any(signs[1:] != signs[:-1]))

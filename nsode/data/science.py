"""The science family: right-hand sides as they appear in textbooks, with constants in physical roles.

Why a second family: the paper's uniform random trees make the laws of textbooks (y' = -a*y,
logistic growth, Michaelis-Menten, Hill, Gompertz) a handful of skeletons among thousands, and
their U(-10, 10) constants make slow rates and scales other than 1 rare. The one-off supplements
that patched this (max_ops 1-2, constants in [-3, 3]) are settings of this family now.

`sample_expression` (the candidate stage) writes f as a sum of 1-3 terms of the configured kinds
(`TERMS`) with generic constants; the generator then simplifies, filters and deduplicates it by
skeleton exactly as for the paper's trees. `draw_sets` (the solution stage) gives each skeleton
new constants by their role, found by dimensional analysis of the canonical expression (`roles`):
y carries a scale S (log-uniform per ODE, `science_scale_range`), f carries S per unit time, so
every constant has a dimension S**p / time**q. A rate (q != 0) is drawn log-uniform in
`science_rate_range` (so the dynamics show on [0, T]), a scale constant as S**p times a factor
in `science_shape_range`; signs are kept (the skeleton holds them). y0 is S times a factor in
`science_y0_range`, of either sign unless the law needs y > 0 (log, fractional power, a pole in
y). A law whose dimensions do not match (sin(y), y*(1 - y): the unit of y is fixed by the law)
gets S = 1.
"""
from __future__ import annotations

import math

import numpy as np
import sympy

from nsode.data import simplify
from nsode.data.config import Config
from odecore.expressions import Y

CANDIDATE_MAGNITUDE = (1.1, 1.6)  # generic constants of candidates: not 1, and Hill's b**4 stays on the grid


# ---------------------------------------------------------------- candidate stage: terms as prefix lists

def _constant(rng: np.random.Generator, sign: int = 0) -> float:
    value = float(rng.uniform(*CANDIDATE_MAGNITUDE))
    return -value if sign < 0 or (sign == 0 and rng.random() < 0.5) else value


def _power(k: int) -> list:
    return ["y"] if k == 1 else ["pow", "y", k]


def _poly(rng, config):  # c*y**k, k = 1..max_degree
    return ["mul", _constant(rng), *_power(int(rng.integers(1, config.science_max_degree + 1)))]


def _constant_term(rng, config):  # a constant inflow or harvest (alone it is rejected as constant)
    return [_constant(rng)]


def _hill(rng, config):  # a*y**k/(b**k + y**k), k = 1..4 (k = 1: Michaelis-Menten)
    k = int(rng.integers(1, 5))
    b = _constant(rng, +1) ** k
    return ["mul", _constant(rng), "div", *_power(k), "add", b, *_power(k)]


def _saturation(rng, config):  # a/(b + y), or a*y/(b + y)
    numerator = [_constant(rng)] if rng.random() < 0.5 else ["mul", _constant(rng), "y"]
    return ["div", *numerator, "add", _constant(rng, +1), "y"]


def _exp(rng, config):  # c*exp(d*y)
    return ["mul", _constant(rng), "exp", "mul", _constant(rng), "y"]


def _log(rng, config):  # c*log(y), or Gompertz c*y*log(y/K)
    if rng.random() < 0.5:
        return ["mul", _constant(rng), "log", "y"]
    return ["mul", _constant(rng), "mul", "y", "log", "div", "y", _constant(rng, +1)]


def _trig(rng, config):  # c*sin(y), c*sin(d*y), c*cos(d*y)
    kind = int(rng.integers(3))
    arg = ["y"] if kind == 0 else ["mul", _constant(rng), "y"]
    return ["mul", _constant(rng), "sin" if kind < 2 else "cos", *arg]


def _logistic(rng, config):  # r*y*(1 - y/K)
    return ["mul", _constant(rng), "mul", "y", "sub", 1, "div", "y", _constant(rng, +1)]


TERMS = {"poly": _poly, "constant": _constant_term, "hill": _hill, "saturation": _saturation, "exp": _exp,
         "log": _log, "trig": _trig, "logistic": _logistic}


def sample_term(kind: str, rng: np.random.Generator, config: Config) -> list:
    """One term of the given kind as a prefix list (constants generic, within the token grid)."""
    return TERMS[kind](rng, config)


def sample_expression(rng: np.random.Generator, config: Config) -> list:
    """A sum of 1-3 terms (`science_n_terms` weights) of kinds drawn by `science_terms` weights."""
    kinds, weights = list(config.science_terms), _probabilities(config.science_terms.values())
    n = 1 + int(rng.choice(3, p=_probabilities(config.science_n_terms)))
    terms = [sample_term(kinds[int(rng.choice(len(kinds), p=weights))], rng, config) for _ in range(n)]
    return ["add"] * (n - 1) + [t for term in terms for t in term]


def _probabilities(weights) -> np.ndarray:
    """Weights as given in the config (kept unnormalised there, so that they survive round trips)."""
    weights = np.array(list(weights), dtype=float)
    return weights / weights.sum()


# ---------------------------------------------------------------- solution stage: constants by role

Dim = tuple  # (p, q): the constant scales as S**p * rate**q


def _fixed(node):
    """The dimension of `node` when its constants cannot change it, else None."""
    if node == Y:
        return (1.0, 0.0)
    if node.is_Symbol or node.is_Number:
        return None
    if isinstance(node, sympy.Pow):
        base = _fixed(node.base)
        return None if base is None or not node.exp.is_Number else (base[0] * float(node.exp), base[1] * float(node.exp))
    if isinstance(node, sympy.Mul):
        dims = [_fixed(a) for a in node.args]
        return None if None in dims else (sum(d[0] for d in dims), sum(d[1] for d in dims))
    if isinstance(node, sympy.Add):
        return next((d for d in map(_fixed, node.args) if d is not None), None)
    return (0.0, 0.0)  # exp, log, sin, cos


def _assign(node, need, dims: dict, conflicts: list) -> None:
    """Give each constant symbol of `node` the dimension that makes `node` have dimension `need`."""
    if node.is_Symbol and node != Y:
        dims[node] = need if need is not None else (0.0, 0.0)
    elif node == Y or node.is_Number:
        if node == Y and need is not None and need != (1.0, 0.0):
            conflicts.append(node)
    elif isinstance(node, sympy.Add):
        need = need if need is not None else _fixed(node)
        for a in node.args:
            _assign(a, need, dims, conflicts)
    elif isinstance(node, sympy.Mul):
        fixed = [_fixed(a) for a in node.args]
        free = [a for a, d in zip(node.args, fixed) if d is None]
        for a, d in zip(node.args, fixed):
            if d is not None:
                _assign(a, d, dims, conflicts)
        if need is None:
            for a in free:
                _assign(a, None, dims, conflicts)
            return
        rest = (need[0] - sum(d[0] for d in fixed if d), need[1] - sum(d[1] for d in fixed if d))
        if not free:
            if not np.allclose(rest, 0.0):
                conflicts.append(node)
            return
        free.sort(key=lambda a: not a.is_Symbol)  # a bare coefficient takes the remainder
        _assign(free[0], rest, dims, conflicts)
        for a in free[1:]:
            _assign(a, None, dims, conflicts)
    elif isinstance(node, sympy.Pow):
        if node.exp.is_Number:
            k = float(node.exp)
            _assign(node.base, None if need is None else (need[0] / k, need[1] / k), dims, conflicts)
        else:
            _assign(node.base, (0.0, 0.0), dims, conflicts)
            _assign(node.exp, (0.0, 0.0), dims, conflicts)
    else:  # exp, sin, cos: dimensionless argument; log(y/K) is fine at any scale of y
        if need is not None and need != (0.0, 0.0):
            conflicts.append(node)
        for a in node.args:
            _assign(a, None if isinstance(node, sympy.log) else (0.0, 0.0), dims, conflicts)


def roles(expr: sympy.Expr) -> tuple[list[Dim], bool]:
    """(dimension of each non-exponent constant in `constant_slots` order, whether they are consistent).

    y has dimension (1, 0) and f (1, 1); functions want dimensionless arguments.
    """
    slots = simplify.constant_slots(expr)
    symbols = [sympy.Symbol(f"c{i}", real=True) for i, (_, role) in enumerate(slots) if role != simplify.EXPONENT]
    it = iter(symbols)
    param = simplify.substitute(expr, [v if role == simplify.EXPONENT else next(it) for v, role in slots])
    dims, conflicts = {}, []
    _assign(param, (1.0, 1.0), dims, conflicts)
    return [dims.get(s, (0.0, 0.0)) for s in symbols], not conflicts


def fixes_unit(expr: sympy.Expr) -> bool:
    """Whether `expr` fixes the unit of y whatever its numbers (each counted as a free constant):
    a function of y with no number inside to carry a scale, as in sin(y), exp(y) or y**y. Laws
    written in a quantity's own units rarely do; log(y) passes (log(y/K) differs by a constant)."""
    conflicts: list = []
    _assign(expr, None, {}, conflicts)
    return bool(conflicts)


def needs_positive_y(expr: sympy.Expr) -> bool:
    """Whether the law is meant for y > 0: a log of y, a fractional power of y, or a pole in y."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.log) and node.has(Y):
            return True
        if isinstance(node, sympy.Pow) and node.base.has(Y):
            if not node.exp.is_Integer or (node.exp.is_negative and isinstance(node.base, sympy.Add)):
                return True
    return False


def _log_uniform(rng, bounds) -> float:
    return float(10 ** rng.uniform(math.log10(bounds[0]), math.log10(bounds[1])))


def _exponents(slots, rng, config) -> list[float]:
    """New integer exponents: each distinct original value maps to one new value of its sign, so
    Hill's y**k/(b**k + y**k) keeps one k."""
    mapping = {}
    for v, role in slots:
        if role == simplify.EXPONENT and v not in mapping:
            mapping[v] = v if not float(v).is_integer() else \
                math.copysign(int(rng.integers(2, config.science_max_degree + 1)), v)
    return [mapping[v] for v, role in slots if role == simplify.EXPONENT]


def draw_constants(expr: sympy.Expr, rng: np.random.Generator, config: Config):
    """(the skeleton with its new exponents, its new constants in that expression's
    `constant_slots` order, the scale S of y) for one ODE of expr's skeleton; None for the
    constants when the new exponents change the number of constant slots (sympy folds
    y**2 * y**k, or an exponent -1 becomes a division), so the draw must be redone."""
    slots = simplify.constant_slots(expr)
    exponents = iter(_exponents(slots, rng, config))
    with_exponents = simplify.substitute(
        expr, [next(exponents) if role == simplify.EXPONENT else v for v, role in slots])
    if len(simplify.constant_slots(with_exponents)) != len(slots):
        return with_exponents, None, 1.0
    dims, consistent = roles(with_exponents)
    scale = _log_uniform(rng, config.science_scale_range) if consistent else 1.0
    dims, out = iter(dims), []
    for v, role in simplify.constant_slots(with_exponents):
        if role == simplify.EXPONENT:
            out.append(float(v))
            continue
        p, q = next(dims)
        factor = _log_uniform(rng, config.science_rate_range) ** q if q else _log_uniform(rng, config.science_shape_range)
        out.append(math.copysign(scale ** p * factor, v))
    return with_exponents, out, scale


def draw_sets(expr: sympy.Expr, skeleton: str, rng: np.random.Generator, config: Config,
              max_tries: int = 20) -> tuple[list[tuple[sympy.Expr, list[float]]], np.ndarray]:
    """Up to N_const (expression, constants) pairs with the skeleton of `expr`, and y0 [len(sets), N_iv].

    The same contract as `simplify.resample_constants` (a set that changes the skeleton is
    redrawn), plus initial values on each set's scale.
    """
    slots = simplify.constant_slots(expr)
    positive = needs_positive_y(expr)

    def draw():
        base, values, scale = draw_constants(expr, rng, config)
        return (simplify.substitute(base, values) if slots and values is not None else expr), values, scale

    drawn = simplify.distinct_sets(draw, skeleton, config.n_const, max_tries * config.n_const if slots else 1)
    sets, scales = [(new, values) for new, values, _ in drawn], [scale for *_, scale in drawn]
    size = (len(sets), config.n_iv)
    y0 = np.array(scales)[:, None] * rng.uniform(*config.science_y0_range, size=size)
    if not positive:
        y0 *= rng.choice([-1.0, 1.0], size=size)
    return sets, y0

"""ProGED-style equation discovery (Brence et al. 2021): sample expression skeletons of y with
placeholder constants C from a probabilistic context-free grammar (PCFG), fit the constants of
each skeleton by integrating y' = f(y; C) from the first observation and minimising the
trajectory error, and keep the skeleton whose fitted trajectory is closest to the data.

Our own code because ProGED is not on the package index; the parts that are not the method's
point are libraries: sympy for canonical skeletons, and the project's one constant fitter
(odecore/fitting.py: scipy `least_squares` on the LSODA trajectory) for the fits. Differences from
the original are listed in methods/proged.py.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import sympy

from odecore.expressions import to_string
from odecore.fitting import Template, fit_trajectory
from odecore.expressions import Y

# The grammar: a sum of weighted terms, each a product of factors, a factor being y or a
# function of y or of a nested sum (ProGED's polynomial grammar extended with its operator
# rules). Right-hand sides are sequences of nonterminals and terminals; probabilities per
# left-hand side sum to 1. 'C' is a placeholder constant.
GRAMMAR: dict[str, list[tuple[tuple[str, ...], float]]] = {
    "E": [(("E", "+", "T"), 0.4), (("T",), 0.6)],
    "T": [(("C",), 0.2), (("C", "*", "M"), 0.8)],
    "M": [(("M", "*", "A"), 0.3), (("A",), 0.7)],
    "A": [(("y",), 0.75), (("F", "(", "y", ")"), 0.15), (("F", "(", "E", ")"), 0.1)],
    "F": [((name,), 0.2) for name in ("sin", "cos", "exp", "sqrt", "log")],
}
FUNCTIONS = {"sin": sympy.sin, "cos": sympy.cos, "exp": sympy.exp, "sqrt": sympy.sqrt, "log": sympy.log}
MAX_DEPTH = 10  # derivations deeper than this are rejected and drawn again
MAX_CONSTANTS = 5  # skeletons with more free constants are rejected (they rarely fit in time)


class _TooDeep(Exception):
    pass


@dataclass(frozen=True)
class Skeleton:
    expr: sympy.Expr  # in Y and the constants
    constants: tuple[sympy.Symbol, ...]

    @property
    def key(self) -> str:
        return sympy.srepr(self.expr)


@dataclass(frozen=True)
class Fit:
    skeleton: Skeleton
    values: tuple[float, ...]
    rmse: float  # root mean squared trajectory error at the observations

    @property
    def expression(self) -> str:
        return to_string(self.skeleton.expr.xreplace(dict(zip(self.skeleton.constants, map(sympy.Float, self.values)))))


def sample_tokens(rng: np.random.Generator, symbol: str = "E", depth: int = 0) -> list[str]:
    """One derivation of the grammar from `symbol`, as a list of terminal tokens."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    if symbol not in GRAMMAR:
        return [symbol]
    options = GRAMMAR[symbol]
    choice = options[rng.choice(len(options), p=[p for _, p in options])][0]
    return [token for part in choice for token in sample_tokens(rng, part, depth + 1)]


def to_sympy(tokens: list[str]) -> sympy.Expr:
    """The expression of a token list (a small recursive-descent reader for this grammar)."""
    counter = iter(range(10_000))
    position = 0

    def peek():
        return tokens[position] if position < len(tokens) else None

    def take():
        nonlocal position
        position += 1
        return tokens[position - 1]

    def expression():
        value = product()
        while peek() == "+":
            take()
            value = value + product()
        return value

    def product():
        value = atom()
        while peek() == "*":
            take()
            value = value * atom()
        return value

    def atom():
        token = take()
        if token == "y":
            return Y
        if token == "C":
            return sympy.Symbol(f"c{next(counter)}", real=True)
        if token in FUNCTIONS:
            take()  # "("
            inner = expression()
            take()  # ")"
            return FUNCTIONS[token](inner)
        raise ValueError(f"unexpected token {token!r}")

    return expression()


def canonical(expr: sympy.Expr) -> Skeleton:
    """Merge constants that are not separately identifiable (C1*C2 -> C, C1 + C2 -> C, f(C) -> C)
    and number them in order of appearance, so that equal skeletons get equal keys."""
    fresh = iter(sympy.Symbol(f"k{i}", real=True) for i in range(10_000))

    def merge(e):
        if e.is_Number:  # exponents such as the 2 of y*y -> y**2 are structure, not constants
            return e
        if not e.has(Y):
            return next(fresh)
        if isinstance(e, sympy.Add):  # C1*g(y) + C2*g(y) -> C*g(y); constant terms -> one C
            groups: dict[sympy.Expr, int] = {}
            for arg in e.args:
                dependent = merge(arg).as_independent(Y, as_Add=False)[1]
                groups[dependent] = groups.get(dependent, 0) + 1
            return sympy.Add(*(next(fresh) * g if g != 1 else next(fresh) for g in groups))
        if isinstance(e, sympy.Mul):
            args = [merge(a) for a in e.args]
            constant = [a for a in args if not a.has(Y)]
            if len(constant) > 1:
                args = [a for a in args if a.has(Y)] + [next(fresh)]
            return e.func(*args)
        if e.args:
            return e.func(*[merge(a) for a in e.args])
        return e

    merged = merge(expr)
    order = []
    for node in sympy.preorder_traversal(merged):
        if isinstance(node, sympy.Symbol) and node != Y and node not in order:
            order.append(node)
    constants = tuple(sympy.Symbol(f"C{i}", real=True) for i in range(len(order)))
    return Skeleton(merged.xreplace(dict(zip(order, constants))), constants)


def sample_skeletons(count: int, rng: np.random.Generator, max_draws: int = 20_000) -> list[Skeleton]:
    """`count` distinct skeletons by Monte Carlo sampling (fewer if `max_draws` runs out)."""
    found: dict[str, Skeleton] = {}
    for _ in range(max_draws):
        if len(found) >= count:
            break
        try:
            skeleton = canonical(to_sympy(sample_tokens(rng)))
        except _TooDeep:
            continue
        if skeleton.expr.has(Y) and 0 < len(skeleton.constants) <= MAX_CONSTANTS:
            found.setdefault(skeleton.key, skeleton)
    return list(found.values())


def fit_skeleton(skeleton: Skeleton, t: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                 restarts: int = 4, deadline: float = math.inf) -> Fit:
    """Constants minimising the trajectory error of y' = f(y; C) solved from (t[0], y[0])
    (odecore.fitting.fit_trajectory with y0 fixed): from C = 1 and from `restarts - 1` random
    starts in [-5, 5], best kept."""
    template = Template(skeleton.expr, skeleton.constants)
    k = len(skeleton.constants)
    best_values, best_rss = np.ones(k), math.inf
    starts = [np.ones(k)] + [rng.uniform(-5, 5, k) for _ in range(restarts - 1)]
    for start in starts:
        if time.perf_counter() > deadline:
            break
        fit = fit_trajectory(template, t, y, start, fit_y0=False, max_nfev=100 * (k + 1), deadline=deadline)
        if fit.ok and fit.rss < best_rss:
            best_values, best_rss = np.array(fit.values), fit.rss
        if best_rss < 2e-16 * len(y) * float(np.var(y)):  # exact fit: no restart can do better
            break
    rmse = math.sqrt(best_rss / len(y)) if math.isfinite(best_rss) else math.inf
    return Fit(skeleton, tuple(float(v) for v in best_values), rmse)


def search(t: np.ndarray, y: np.ndarray, sample_size: int = 64, restarts: int = 4, seed: int = 0,
           time_limit: float = math.inf) -> list[Fit]:
    """Fits of `sample_size` distinct sampled skeletons, best trajectory error first."""
    rng = np.random.default_rng(seed)
    deadline = time.perf_counter() + time_limit
    fits = []
    for skeleton in sample_skeletons(sample_size, rng):
        if time.perf_counter() > deadline:
            break
        fits.append(fit_skeleton(skeleton, t, y, rng, restarts, deadline))
    return rank(fits, scale=float(np.std(y)) or 1.0)


def rank(fits: list[Fit], scale: float, relative: float = 0.1, absolute: float = 1e-6) -> list[Fit]:
    """Best first: by trajectory error, except that among the fits within `relative` of the best
    error (plus `absolute` x scale, the fitting tolerance's order) the one with the fewest constants
    comes first, so that C*y + C*y**2 beats an extra, near-zero cubic term on clean data."""
    fits = sorted(fits, key=lambda f: (f.rmse, len(f.skeleton.constants)))
    if not fits or not math.isfinite(fits[0].rmse):
        return fits
    cutoff = fits[0].rmse * (1 + relative) + absolute * scale
    near = [f for f in fits if f.rmse <= cutoff]
    first = min(near, key=lambda f: (len(f.skeleton.constants), f.rmse))
    return [first] + [f for f in fits if f is not first]

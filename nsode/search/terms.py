"""How the search reads an expression: a sum of terms, each a free coefficient times a rest whose
numbers become free constants (integer and structural exponents such as y**2, 1/y, sqrt(y) stay
structure), and the skeleton, the sorted keys of its terms. `Term` carries its integral along the
observations, `Skeleton` a sum of terms with its cheap integral-form score (nsode.search.proposals).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid

from odecore.expressions import Y, complexity, evaluate
from odecore.fitting import abstract
from nsode.data.science import fixes_unit
from nsode.search.settings import Settings

MAX_CONSTANTS = 7  # skeletons with more free constants are dropped


@dataclass
class Term:
    key: str  # the term's skeleton (numbers abstracted)
    rest: sympy.Expr  # the term without its coefficient, inner numbers at the model's values
    integral: np.ndarray  # cumulative trapezoid integral of rest along the observations
    inner: int  # numbers inside rest that become free constants

    @functools.cached_property
    def size(self) -> int:
        """Nodes of coefficient * rest (the paper's complexity), 1 for a constant term; only the
        size front needs it, so it is counted on demand."""
        return 1 if self.rest == 1 else complexity(self.rest) + 2

    @functools.cached_property
    def fixes_unit(self) -> bool:
        """Whether the term fixes the unit of y (sin(y), exp(y)); counted on demand."""
        return self.rest != 1 and fixes_unit(self.rest)


@dataclass
class Skeleton:
    key: tuple[str, ...]
    terms: list[Term]
    coefficients: np.ndarray  # of the terms, from the linear integral-form fit
    y0: float
    cheap_ic: float
    source: str

    @property
    def size(self) -> int:
        """Nodes of the sum (the paper's complexity, numbers counted as constants)."""
        return sum(term.size for term in self.terms) + len(self.terms) - 1

    @property
    def constants(self) -> int:
        return free_constants(self.terms)

    def unit_charge(self, settings: Settings) -> float:
        """`settings.unit_cost` when a term fixes the unit of y, else 0."""
        if not settings.unit_cost:
            return 0.0
        fixes = any(term.fixes_unit for term in self.terms) or (settings.unit_logs and not logs_have_scale(self.terms))
        return settings.unit_cost if fixes else 0.0


def logs_have_scale(terms: list[Term]) -> bool:
    """Whether every log of y in the sum has a scale: a number inside its argument (log(y/K)), or,
    for a term h(y)*log(y), the term h(y) beside it (a constant term for log(y) alone), since
    log(lambda*y) = log(y) + log(lambda) turns a change of the unit of y into that term. A log
    without either fixes the unit: c*log(y), c*log(y)/y, sin(log(y))."""
    keys = {term.key for term in terms}
    for term in terms:
        for factor in sympy.Mul.make_args(term.rest):
            if isinstance(factor, sympy.log) and _scaleless(factor):
                companion = term.rest / factor
                if term_key(companion) not in keys:
                    return False
            elif any(isinstance(node, sympy.log) and _scaleless(node) for node in sympy.preorder_traversal(factor)):
                return False  # log(y)**2, 1/log(y), sin(log(y)): no term absorbs log(lambda) there
    return True


def _scaleless(log: sympy.log) -> bool:
    """A log of y whose argument holds no number of its own to carry the unit (log(y), log(y**2))."""
    numbers: list[float] = []
    abstract(log.args[0], [], numbers)
    return log.has(Y) and not numbers


def free_constants(terms: list[Term]) -> int:
    """Free constants of a sum of terms: a coefficient per term and the numbers inside them."""
    return len(terms) + sum(term.inner for term in terms)


@functools.lru_cache(maxsize=4096)
def split(expr: sympy.Expr) -> tuple[tuple[float, sympy.Expr], ...]:
    """(coefficient, rest) of each term of the expanded sum; a constant term has rest 1. Cached:
    stage 1 splits each beam expression more than once, and sympy's expand is its dearest step."""
    if any(isinstance(n, sympy.Mul) and any(isinstance(a, sympy.Add) for a in n.args)
           for n in sympy.preorder_traversal(expr)):
        expr = sympy.expand(expr, power_base=False, power_exp=False, log=False)
    out = []
    for term in sympy.Add.make_args(expr):
        coefficient, rest = term.as_coeff_Mul()
        out.append((float(coefficient), rest))
    return tuple(out)


def term_key(rest: sympy.Expr) -> str:
    """A term's skeleton: srepr with every abstracted number printed as the same symbol c."""
    return sympy.srepr(abstract(rest, [], [], numbered=False))


def skeleton_key(expr: sympy.Expr) -> tuple[str, ...]:
    """The skeleton of an expression as the search sees it: the sorted keys of its terms."""
    return tuple(sorted(term_key(rest) for _, rest in split(expr)))


def term_of(rest: sympy.Expr, t: np.ndarray, y: np.ndarray, cache: dict) -> Term | None:
    """The term `rest` with its integral along the observations (None where f is not finite)."""
    if rest not in cache:
        with np.errstate(all="ignore"):
            column = np.ones_like(y) if rest == 1 else np.broadcast_to(evaluate(rest, y), y.shape)
        start: list[float] = []
        key = sympy.srepr(abstract(rest, [], start, numbered=False))  # term_key, and the inner numbers
        cache[rest] = (Term(key, rest, cumulative_trapezoid(column, t, initial=0.0),
                             0 if rest == 1 else len(start)) if np.all(np.isfinite(column)) else None)
    return cache[rest]

"""Stage 1 of the search (nsode.search): the beam's expressions read as skeletons, every one
scored at once (by linear least squares on the integral form: nsode.search.integral_fits).

Each expression is expanded into a sum of terms (nsode.search.terms), every term
gets a free coefficient and every other number inside it becomes a free constant (integer and
structural exponents such as y**2, 1/y, sqrt(y) stay structure). Sub-sums (one term dropped)
and sums with a constant term added are proposed as well, because the model often writes the
right law plus a spurious term (`-y + 1.13/sqrt(y)` for y' = -0.5 y) or misses an offset.
Each expression is also read with its exponents near an integer or +-1/2 snapped to it (`snap`:
the beam reads `y**2.03`, the law has `y**2`), and so is each fitted candidate (`snap_fitted`:
the fit moves the beam's `y**2.6` to `y**2.98`, refitted as `y**3`) before the choice; the beam
that feeds the search branches into one constant interval per hypothesis
(nsode.search.funnel.SEARCH_BRANCHES), so its width goes to distinct skeletons.
The first `per_capita` beam expressions g are also read as y' = y*g: growth laws are written per
capita (logistic y*(a - b*y), Gompertz y*log(K/y)), and the model often writes the bracket alone
(`4.46 - log(y)`), which as a sum of terms no recombination turns into y*log(y).
A steady state, y' = 0, needs no term of the beam and is always a candidate (y' = c, zero-order
kinetics, is one on request: `drift`). The beam's terms are also recombined: the model often
writes every term of the law, but in different candidates (`y` in one, `y**2.3` in another), so
sums of up to `combine_size` of the `combine` terms it proposes first (each at the model's inner
constants and at inner constants fitted to the data term by term), and on request of the powers
y, ..., y^basis, are proposed too, all scored at once by linear least squares.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import sympy

from odecore.expressions import Y
from odecore.fitting import Template, abstract, fit_integral
from nsode.search.denominators import with_denominators
from nsode.search.integral_fits import linear_fits
from nsode.search.settings import Settings
from nsode.search.terms import Skeleton, Term, split, term_of

MAX_TERMS = 6  # sums with more terms are not split into sub-sums
SNAP = 0.1  # with `snap`, a beam exponent this close to an integer or to +-1/2 is also read as that exponent
ADAPT_NFEV = 8  # evaluations per constant when a beam term's inner constants are fitted alone (a start only)


def _subsets(terms: list[Term], variants: bool, const: Term) -> list[tuple[list[Term], bool]]:
    """The full sum, and with `variants` each sum with one term dropped, each also with a constant
    term added when it has none; (terms, is_variant) pairs, only those that still involve y."""
    out = [(terms, False)]
    if variants:
        drops = [terms[:i] + terms[i + 1:] for i in range(len(terms))] if 2 <= len(terms) <= MAX_TERMS else []
        for subset in [terms] + drops:
            out.append((subset, subset is not terms))
            if all(term.rest != 1 for term in subset):
                out.append((subset + [const], True))
    return [(s, v) for s, v in out if any(term.rest != 1 for term in s)]


def snapped(expr: sympy.Expr) -> sympy.Expr:
    """`expr` with every exponent within SNAP of an integer or of +-1/2 set to it: the beam reads
    an exponent to a grid interval (`y**2.03`), and the search keeps only integer and structural
    exponents as structure, so `y**2` would otherwise not be the skeleton proposed."""
    def snap(power):
        value = float(power.exp)
        nearest = min([sympy.Integer(round(value)), sympy.S.Half, -sympy.S.Half], key=lambda k: abs(value - k))
        return sympy.Pow(power.base, nearest) if abs(value - float(nearest)) <= SNAP else power

    return expr.replace(lambda e: e.is_Pow and e.exp.is_Float, snap)


def bracketed(expr: sympy.Expr) -> list[sympy.Expr]:
    """`expr` with one free exponent of a power of y at a time set to the integer below it, the
    integer above it and the nearest half-integer (three expressions per exponent, none where
    the exponent is already one of those)."""
    powers = sorted((p for p in expr.atoms(sympy.Pow) if p.exp.is_Float and p.base.has(Y)), key=sympy.srepr)
    out = []
    for power in powers:
        value = float(power.exp)
        below = math.floor(value)
        for fixed in (sympy.Integer(below), sympy.Rational(2 * below + 1, 2), sympy.Integer(below + 1)):
            if abs(value - float(fixed)) > 1e-9:
                out.append(expr.xreplace({power: sympy.Pow(power.base, fixed)}))
    return out


def _with_snapped(readings):
    """Each (expression, label), followed by its snapped copy where that differs."""
    for expr, label in readings:
        yield expr, label
        other = snapped(expr)
        if other != expr:
            yield other, label


def propose(exprs, t: np.ndarray, y: np.ndarray, sigma: float, *, variants: bool = True, combine: int = 0,
            combine_size: int = 3, basis: int = 0, steady: bool = False, drift: bool = False,
            snap: bool = False, per_capita: int = 0, denominators: int = 0,
            source: str = "model") -> dict[tuple, Skeleton]:
    """Stage 1: the unique skeletons of `exprs` (and variants, and recombinations of their first
    `combine` distinct terms), each with its term coefficients and y0 fitted linearly on the
    integral form; per skeleton the best-scoring instance is kept."""
    cache: dict = {}
    const = term_of(sympy.S.One, t, y, cache)
    sums: list[tuple[list[Term], str]] = []
    first: dict[str, Term] = {}  # each term skeleton at its first (best-ranked) instance
    exprs = list(exprs)
    readings = [(expr, source) for expr in exprs] + [(Y * expr, "per-capita") for expr in exprs[:per_capita]]
    if denominators:
        readings = list(with_denominators(readings, t, y, denominators))
    for expr, label in (_with_snapped(readings) if snap else readings):
        try:
            terms = [term_of(rest, t, y, cache) for _, rest in split(expr)]
        except (TypeError, ValueError, AttributeError):
            continue
        if any(term is None for term in terms):
            continue
        for term in terms:
            if term.rest != 1:
                first.setdefault(term.key, term)
        sums += [(subset, "variant" if is_variant else label) for subset, is_variant in _subsets(terms, variants, const)]
    if steady:  # laws that need no term of the beam
        sums.append(([], "trivial"))
    if drift:
        sums.append(([const], "trivial"))
    if combine:
        pool = _adapted(list(first.values())[:combine], t, y, cache)
        keys = {term.key for term in pool}
        powers = [term_of(Y**k, t, y, cache) for k in range(1, basis + 1)]
        pool += [term for term in powers if term is not None and term.key not in keys]
        sums += [(subset, "combination") for subset in _combinations(pool, const, combine_size)]
    found: dict[tuple, Skeleton] = {}
    for (subset, label), (x, ic) in zip(sums, linear_fits([s for s, _ in sums], y, sigma)):
        key = tuple(sorted(term.key for term in subset))
        if math.isfinite(ic) and (key not in found or ic < found[key].cheap_ic):
            found[key] = Skeleton(key, subset, x[1:], float(x[0]), ic, label)
    return found


def propose_with(exprs, t: np.ndarray, y: np.ndarray, sigma: float, settings: Settings) -> dict[tuple, Skeleton]:
    """`propose` with the candidates `settings` asks for (variants, recombinations, powers, y' = 0
    and y' = c): stage 1 of `search`, and of any study that replays it."""
    return propose(exprs, t, y, sigma, variants=settings.variants, combine=settings.combine,
                   combine_size=settings.combine_size, basis=settings.basis, steady=settings.steady,
                   drift=settings.drift, snap=settings.snap, per_capita=settings.per_capita,
                   denominators=settings.denominators)


def _adapted(terms: list[Term], t, y, cache: dict) -> list[Term]:
    """`terms`, and for each with inner constants a copy whose inner constants are fitted to the
    data (a + b * term on the integral form): the model's `y**4.6` may be the data's `y**2`."""
    out = list(terms)
    for term in terms:
        if not term.inner:
            continue
        params = [sympy.Symbol("a", real=True), sympy.Symbol("b", real=True)]
        start = [0.0, 1.0]
        rest = abstract(term.rest, params, start)
        fit = fit_integral(Template(params[0] + params[1] * rest, tuple(params)), t, y, start, max_nfev=ADAPT_NFEV)
        if fit.ok:
            fitted = term_of(rest.xreplace({p: sympy.Float(v) for p, v in zip(params[2:], fit.values[2:])}), t, y, cache)
            if fitted is not None and fitted.rest != term.rest:
                out.append(fitted)
    return out


def _combinations(pool: list[Term], const: Term, size: int) -> list[list[Term]]:
    """Sums of 1 to `size` terms of `pool` with distinct skeletons, each with and without `const`."""
    out = []
    for k in range(1, size + 1):
        for subset in itertools.combinations(pool, k):
            if len({term.key for term in subset}) == k:
                out += [list(subset), [*subset, const]]
    return out



"""Stage 1 of the search (nsode.search): the beam's expressions read as skeletons, every one
scored at once.

Each expression is expanded into a sum of terms, every term
gets a free coefficient and every other number inside it becomes a free constant (integer and
structural exponents such as y**2, 1/y, sqrt(y) stay structure). Sub-sums (one term dropped)
and sums with a constant term added are proposed as well, because the model often writes the
right law plus a spurious term (`-y + 1.13/sqrt(y)` for y' = -0.5 y) or misses an offset.
Each expression is also read with its exponents near an integer or +-1/2 snapped to it (`snap`:
the beam reads `y**2.03`, the law has `y**2`), and so is each fitted candidate (`snap_fitted`:
the fit moves the beam's `y**2.6` to `y**2.98`, refitted as `y**3`) before the choice; the beam
that feeds the search branches into one constant interval per hypothesis
(nsode.search.SEARCH_BRANCHES), so its width goes to distinct skeletons.
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

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares

from core.expressions import Y, complexity, evaluate
from core.fitting import Template, abstract, fit_integral, information_criterion
from nsode.data.science import fixes_unit
from nsode.settings import Settings

MAX_TERMS = 6  # sums with more terms are not split into sub-sums
MAX_CONSTANTS = 7  # skeletons with more free constants are dropped
SNAP = 0.1  # with `snap`, a beam exponent this close to an integer or to +-1/2 is also read as that exponent
RIDGE = 1e-12  # of the integral form's normal equations (unit-norm columns), for collinear terms
LSQ_RCOND = 1e-10  # where that would bend a fit, least squares drops directions this much weaker than the strongest
DENOMINATOR_NFEV = 20  # Levenberg-Marquardt steps of a fitted denominator (each len(d) + 1 evaluations)
ADAPT_NFEV = 8  # evaluations per constant when a beam term's inner constants are fitted alone (a start only)


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


def _term(rest: sympy.Expr, t: np.ndarray, y: np.ndarray, cache: dict) -> Term | None:
    """The term `rest` with its integral along the observations (None where f is not finite)."""
    if rest not in cache:
        with np.errstate(all="ignore"):
            column = np.ones_like(y) if rest == 1 else np.broadcast_to(evaluate(rest, y), y.shape)
        start: list[float] = []
        key = sympy.srepr(abstract(rest, [], start, numbered=False))  # term_key, and the inner numbers
        cache[rest] = (Term(key, rest, cumulative_trapezoid(column, t, initial=0.0),
                             0 if rest == 1 else len(start)) if np.all(np.isfinite(column)) else None)
    return cache[rest]


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


def _with_denominators(readings, t, y, limit: int):
    """Each (expression, label), preceded by its copy with the denominator fitted (`denominator_fitted`),
    for the first `limit` sets of numerators."""
    fitted: dict = {}
    for expr, label in readings:
        other = denominator_fitted(expr, t, y, fitted, limit)
        if other is not None and other != expr:
            yield other, label
        yield expr, label


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
    const = _term(sympy.S.One, t, y, cache)
    sums: list[tuple[list[Term], str]] = []
    first: dict[str, Term] = {}  # each term skeleton at its first (best-ranked) instance
    exprs = list(exprs)
    readings = [(expr, source) for expr in exprs] + [(Y * expr, "per-capita") for expr in exprs[:per_capita]]
    if denominators:
        readings = list(_with_denominators(readings, t, y, denominators))
    for expr, label in (_with_snapped(readings) if snap else readings):
        try:
            terms = [_term(rest, t, y, cache) for _, rest in split(expr)]
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
        powers = [_term(Y**k, t, y, cache) for k in range(1, basis + 1)]
        pool += [term for term in powers if term is not None and term.key not in keys]
        sums += [(subset, "combination") for subset in _combinations(pool, const, combine_size)]
    found: dict[tuple, Skeleton] = {}
    for (subset, label), (x, ic) in zip(sums, _linear_fits([s for s, _ in sums], y, sigma)):
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


def _linear_fits(sums: list[list[Term]], y: np.ndarray, sigma: float) -> list[tuple[np.ndarray, float]]:
    """(y0 and term coefficients, information criterion) of each sum by linear least squares on
    the integral form, batched by size (normal equations on unit-norm columns, a tiny ridge for
    collinear terms; solved exactly where that ridge would bend the fit, as on a record with a
    large offset); a sum with more than MAX_CONSTANTS constants scores inf."""
    out: list = [(np.zeros(len(s) + 1), math.inf) for s in sums]
    constants = [free_constants(subset) for subset in sums]
    by_size: dict[int, list[int]] = {}
    for i, subset in enumerate(sums):
        if constants[i] <= MAX_CONSTANTS:
            by_size.setdefault(len(subset), []).append(i)
    columns: dict[int, int] = {}  # id of a term -> its row in `integrals` (row 0: the y0 column)
    rows = [np.ones_like(y)]
    for subset in sums:
        for term in subset:
            if id(term) not in columns:
                columns[id(term)] = len(rows)
                rows.append(term.integral)
    integrals = np.array(rows)
    for size, index in by_size.items():
        picks = np.array([[0, *(columns[id(term)] for term in sums[i])] for i in index])
        design = integrals[picks].transpose(0, 2, 1)  # [sums, n, 1 + size]
        norm = _norms(design)
        unit = design / norm
        gram = np.einsum("snk,snj->skj", unit, unit)
        x = np.linalg.solve(gram + RIDGE * np.eye(size + 1), np.einsum("snk,n->sk", unit, y)[..., None])[..., 0]
        finite = np.isfinite(gram).all(axis=(1, 2))
        weak = np.zeros(len(gram), bool)  # where the ridge would bend the fit: solved exactly
        weak[finite] = np.linalg.eigvalsh(gram[finite])[:, 0] < 1e4 * RIDGE
        if np.any(weak):
            try:
                x[weak] = _least_squares(unit[weak], y)
            except np.linalg.LinAlgError:  # an SVD that does not converge keeps the ridge's fit
                pass
        x = x / norm[:, 0, :]
        rss = np.sum((np.einsum("snk,sk->sn", design, x) - y) ** 2, axis=1)
        for j, i in enumerate(index):
            out[i] = (x[j], information_criterion(float(rss[j]), len(y), constants[i] + 1, sigma))
    return out


def _least_squares(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of each design [sums, n, k] (unit-norm columns) against y, by QR and
    the SVD of its small factor: exact where columns are nearly collinear (on a record with a large
    offset the integrals of 1 and of y are nearly parallel, and normal equations square that), the
    minimum-norm solution where they are collinear (directions below LSQ_RCOND of the strongest dropped)."""
    q, r = np.linalg.qr(design)
    u, s, vt = np.linalg.svd(r, full_matrices=False)  # fewer points than columns too
    keep = s > LSQ_RCOND * s[..., :1]
    inverse = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    projected = np.einsum("skj,sk->sj", u, np.einsum("snk,n->sk", q, y)) * inverse
    return np.einsum("sjk,sj->sk", vt, projected)


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
            fitted = _term(rest.xreplace({p: sympy.Float(v) for p, v in zip(params[2:], fit.values[2:])}), t, y, cache)
            if fitted is not None and fitted.rest != term.rest:
                out.append(fitted)
    return out


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
        norms = _norms(design)[0]
        start = (_least_squares(design[None] / norms, y ** (lead + 1) / (lead + 1))[0] / norms)[-len(lower):]
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
            fit = least_squares(residual, start, method="lm", max_nfev=DENOMINATOR_NFEV * (len(start) + 1))
        except (ValueError, np.linalg.LinAlgError):
            return start
        return fit.x if np.all(np.isfinite(fit.x)) else start


def _norms(design: np.ndarray) -> np.ndarray:
    """Column norms of a design [..., n, k], kept as [..., 1, k]; 1 where a column is zero (the
    least-squares fits here run on unit-norm columns)."""
    with np.errstate(over="ignore"):  # a column past 1e154 norms to inf: it fits as zero
        norm = np.linalg.norm(design, axis=-2, keepdims=True)
    norm[norm == 0] = 1.0
    return norm


def _combinations(pool: list[Term], const: Term, size: int) -> list[list[Term]]:
    """Sums of 1 to `size` terms of `pool` with distinct skeletons, each with and without `const`."""
    out = []
    for k in range(1, size + 1):
        for subset in itertools.combinations(pool, k):
            if len({term.key for term in subset}) == k:
                out += [list(subset), [*subset, const]]
    return out



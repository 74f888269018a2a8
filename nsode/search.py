"""NSODE proposes, a fitter decides: from beam candidates to one fitted, safe, parsimonious ODE.

The beam's expressions are read as skeletons: each is expanded into a sum of terms, every term
gets a free coefficient and every other number inside it becomes a free constant (integer and
structural exponents such as y**2, 1/y, sqrt(y) stay structure). Sub-sums (one term dropped)
and sums with a constant term added are proposed as well, because the model often writes the
right law plus a spurious term (`-y + 1.13/sqrt(y)` for y' = -0.5 y) or misses an offset.
Each expression is also read with its exponents near an integer or +-1/2 snapped to it (`snap`:
the beam reads `y**2.03`, the law has `y**2`), and so is each fitted candidate (`snap_fitted`:
the fit moves the beam's `y**2.6` to `y**2.98`, refitted as `y**3`) before the choice; the beam
that feeds the search branches into one constant interval per hypothesis (SEARCH_BRANCHES), so its
width goes to distinct skeletons.
The first `per_capita` beam expressions g are also read as y' = y*g: growth laws are written per
capita (logistic y*(a - b*y), Gompertz y*log(K/y)), and the model often writes the bracket alone
(`4.46 - log(y)`), which as a sum of terms no recombination turns into y*log(y).
A steady state, y' = 0, needs no term of the beam and is always a candidate (y' = c, zero-order
kinetics, is one on request: `drift`). The beam's terms are also recombined: the model often
writes every term of the law, but in different candidates (`y` in one, `y**2.3` in another), so
sums of up to `combine_size` of the `combine` terms it proposes first (each at the model's inner
constants and at inner constants fitted to the data term by term), and on request of the powers
y, ..., y^basis, are proposed too, all scored at once by linear least squares.

Then a funnel with counted budgets (core.fitting does every fit):
1. every skeleton: its term coefficients and y0 by linear least squares on the integral form,
   inner constants at the model's values (one numpy evaluation per term: cheap);
2. the `top_k` best by information criterion: all constants and y0 on the integral form;
3. the `refit` best of those: least squares on the LSODA trajectory (`max_nfev`); the others
   are integrated once with their integral-form constants;
   then the `prune` best of those by the criterion are refitted with each term dropped in turn
   (a spare term that stage 1 rewarded for absorbing noise costs more than it buys here);
4. by the information criterion on the trajectory residual, the first candidate whose solution
   exists from perturbed initial values over twice the observed span (`robust`), and whose law
   does not nearly stop between two observations of its course (`hidden_pause`), wins, unless
   another safe one within `forecast` of its criterion does better on criterion plus forecast
   error (fitted on the first 70% of the observations, scored on the rest) plus `node_cost` per
   node of its expression tree.
Budgets and rules were chosen on generated ODEs only (benchmarks/selection_study.py, model card).
"""
from __future__ import annotations

import collections
import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
import sympy
from scipy.integrate import cumulative_trapezoid
from scipy.optimize import least_squares

from core.expressions import Y, complexity, evaluate, nested_functions
from core.fitting import (MANY_DECADES, SOLVE_FAILURES, Template, abstract, better_start, bin_means, fit_integral,
                          fit_trajectory, hidden_pause, information_criterion, noise_level, noise_profile,
                          predictive_error, record_growth, round_to_error, standard_errors, trajectory,
                          unstable_reason)
from core.metrics import r2
from nsode.data.science import fixes_unit

MAX_TERMS = 6  # sums with more terms are not split into sub-sums
SEARCH_BEAM = 256  # beam width the search uses by default (CPU and GPU alike)
SEARCH_BRANCHES = 1  # constant intervals each beam hypothesis branches into (nsode.decode.beam_search; model card)
PROFILE_ROUNDS = 3  # reweighting rounds of the noise profile of a record that spans many decades
MAX_CONSTANTS = 7  # skeletons with more free constants are dropped
FORECAST_SHARE = 0.7  # the forecast check fits the first 70% of the observations, scores the rest
RIVAL_WINDOW = 5.0  # criterion units: a safe fit this close to the pick is a rival (the data barely prefer either)
SNAP = 0.1  # with `snap`, a beam exponent this close to an integer or to +-1/2 is also read as that exponent
RIDGE = 1e-12  # of the integral form's normal equations (unit-norm columns), for collinear terms
LSQ_RCOND = 1e-10  # where that would bend a fit, least squares drops directions this much weaker than the strongest
DENOMINATOR_NFEV = 20  # Levenberg-Marquardt steps of a fitted denominator (each len(d) + 1 evaluations)
FALLBACK_TIERS = 4  # further top_k skeletons by the cheap score fitted, tier by tier, when none shortlisted integrates
ADAPT_NFEV = 8  # evaluations per constant when a beam term's inner constants are fitted alone (a start only)


@dataclass
class Settings:
    """The search's budget and choices; all counted, none timed."""
    max_points: int = 1024  # a longer record is searched through means of consecutive groups (core.fitting.bin_means)
    top_k: int = 16  # skeletons given the full integral-form fit
    pareto: bool = False  # also the skeletons on the front of size vs cheap score (measured, not kept: model card)
    refit: int = 16  # of those, fitted by least squares on the trajectory
    max_nfev: int = 40  # trajectory evaluations per least-squares fit
    first_start: bool = True  # that fit starts at the first observation where it beats the integral y0 (version 26)
    variants: bool = True  # propose sub-sums and added constant terms
    combine: int = 16  # distinct beam terms (first proposed first) recombined into new sums; 0: none
    combine_size: int = 3  # terms per recombined sum, besides a constant term
    steady: bool = True  # y' = 0 (a steady state) is a candidate
    snap: bool = True  # also read each beam expression with exponents near an integer or +-1/2 snapped to it
    snap_fitted: bool = True  # also refit each trajectory-fitted candidate with its fitted exponents snapped likewise
    prune: int = 4  # the best N trajectory-fitted sums are also refitted with each term dropped in turn (version 20)
    prune_rounds: int = 3  # rounds of that, each on the best N fits so far, until one adds nothing (version 24)
    noise_growth: bool = True  # the choice weighs residuals by noise growing with |y| (version 22; model card)
    drift: bool = False  # y' = c is a candidate (measured, not kept: model card)
    basis: int = 0  # also recombine the powers y, ..., y**basis beside the model's terms (measured, not kept)
    per_capita: int = 64  # the first per_capita beam expressions g also read as y' = y*g (per-capita laws; 0: none)
    denominators: int = 0  # expressions also read with their denominator fitted, N numerator sets (measured, not kept)
    criterion: str = "bic"  # "bic" (parsimony) or "rss" (best fit outright)
    robust: bool = True  # reject fits whose solution fails from perturbed y0 or on 2x the span
    stability_noise: bool = False  # perturb y0 by the noise alone, curvature removed (level, not kept: model card)
    keep_sign: bool = True  # the check's perturbed starts never cross 0 where the observations do not (version 16)
    rest_in_noise: bool = True  # the check starts from 0 only when y0 lies within the noise of it (version 18)
    rest_limit: bool = True  # a law that tends to 0 at 0 (y log y) passes the check's start from rest (version 17)
    hidden_pause: bool = True  # a law that nearly stops between two observations is unsafe (version 21)
    start_scaled_bound: bool = True  # a start c times y0 may go c times as far in the check (version 23)
    growth_bound: bool = True  # a record that grew G > 100 fold may go G^2 times its size in the check (version 26)
    decade_weights: bool = True  # on such a record, fits and choice weigh residuals by noise unclipped (version 27)
    decade_reweight: bool = True  # and its noise profile is fitted by reweighted least squares (version 28)
    forecast: float = 5.0  # criterion window in which the best forecaster wins (0: lowest criterion)
    node_cost: float = 3.0  # in that window, criterion units charged per node of the fitted expression
    nesting_cost: float = 10.0  # and per function nested in another's argument (version 14; model card, "Session 34")
    sqrt_nodes: bool = False  # in that window, sqrt(y) counts as one function, not a power and its 1/2 (rule 62b)
    unit_cost: float = 5.0  # for a law that fixes the unit of y, sin(y) or exp(y), everywhere (version 15; "Session 35")
    unit_logs: bool = False  # log(y) with no scale and no term to absorb log(lambda) fixes it too (measured, not kept)
    forecast_score: str = "squared"  # or "predictive" (forecast_error; measured, not kept: model card)
    forecast_weight: float = 1.0  # of the forecast error in the tie-break (0.25-0.75 measured, not kept: model card)
    backcast: bool = False  # the forecast check also fits the last share, scores the first (measured, not kept)
    multiplicity: float = 0.0  # gamma of an extended BIC: 2 gamma log N_k per fit (measured, not kept: model card)
    consensus: bool = False  # the medoid course of the pick and its rivals wins (measured, not kept: model card)
    agreement: float = 0.0  # tied fits vote: the course most follow to this R^2 wins (0.99 measured, not kept: model card)
    course_tolerance: float = 0.0  # tied fits vote for courses followed within this share (0.1 measured, not kept)


@dataclass
class Found:
    """One fitted candidate: `expr` with its constants, the fitted y0 and its trajectory scores."""
    expr: sympy.Expr
    y0: float
    r2: float  # R^2 of the trajectory from y0 on the observations (-inf if it failed)
    ic: float  # information criterion on the trajectory residual (lower is better)
    constants: int
    source: str  # "model", "variant", "combination", "trivial" or any label the caller gives
    stage: str = "integral"  # "integral" (integrated once) or "trajectory" (least squares)
    rejected: str | None = None  # why it is unsafe to extrapolate, when it is
    nfev: int = 0  # trajectory evaluations of its least-squares fit
    safety_net: bool = False  # a wall-clock safety net fired while fitting it
    template: Template | None = None
    values: tuple[float, ...] = ()
    forecast: float = math.nan  # forecast error (noise variances) on the last observations, when compared
    prior: float = 0.0  # criterion units charged before the fit: multiplicity of its size, unit_cost

    @property
    def score(self) -> float:
        """What the choice ranks by: the information criterion plus the charges of `prior`."""
        return self.ic + self.prior


@dataclass
class _Term:
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
class _Skeleton:
    key: tuple[str, ...]
    terms: list[_Term]
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


def logs_have_scale(terms: list[_Term]) -> bool:
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


def free_constants(terms: list[_Term]) -> int:
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


def _term(rest: sympy.Expr, t: np.ndarray, y: np.ndarray, cache: dict) -> _Term | None:
    """The term `rest` with its integral along the observations (None where f is not finite)."""
    if rest not in cache:
        with np.errstate(all="ignore"):
            column = np.ones_like(y) if rest == 1 else np.broadcast_to(evaluate(rest, y), y.shape)
        start: list[float] = []
        key = sympy.srepr(abstract(rest, [], start, numbered=False))  # term_key, and the inner numbers
        cache[rest] = (_Term(key, rest, cumulative_trapezoid(column, t, initial=0.0),
                             0 if rest == 1 else len(start)) if np.all(np.isfinite(column)) else None)
    return cache[rest]


def _subsets(terms: list[_Term], variants: bool, const: _Term) -> list[tuple[list[_Term], bool]]:
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
            source: str = "model") -> dict[tuple, _Skeleton]:
    """Stage 1: the unique skeletons of `exprs` (and variants, and recombinations of their first
    `combine` distinct terms), each with its term coefficients and y0 fitted linearly on the
    integral form; per skeleton the best-scoring instance is kept."""
    cache: dict = {}
    const = _term(sympy.S.One, t, y, cache)
    sums: list[tuple[list[_Term], str]] = []
    first: dict[str, _Term] = {}  # each term skeleton at its first (best-ranked) instance
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
    found: dict[tuple, _Skeleton] = {}
    for (subset, label), (x, ic) in zip(sums, _linear_fits([s for s, _ in sums], y, sigma)):
        key = tuple(sorted(term.key for term in subset))
        if math.isfinite(ic) and (key not in found or ic < found[key].cheap_ic):
            found[key] = _Skeleton(key, subset, x[1:], float(x[0]), ic, label)
    return found


def propose_with(exprs, t: np.ndarray, y: np.ndarray, sigma: float, settings: Settings) -> dict[tuple, _Skeleton]:
    """`propose` with the candidates `settings` asks for (variants, recombinations, powers, y' = 0
    and y' = c): stage 1 of `search`, and of any study that replays it."""
    return propose(exprs, t, y, sigma, variants=settings.variants, combine=settings.combine,
                   combine_size=settings.combine_size, basis=settings.basis, steady=settings.steady,
                   drift=settings.drift, snap=settings.snap, per_capita=settings.per_capita,
                   denominators=settings.denominators)


def _linear_fits(sums: list[list[_Term]], y: np.ndarray, sigma: float) -> list[tuple[np.ndarray, float]]:
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


def _adapted(terms: list[_Term], t, y, cache: dict) -> list[_Term]:
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


def _combinations(pool: list[_Term], const: _Term, size: int) -> list[list[_Term]]:
    """Sums of 1 to `size` terms of `pool` with distinct skeletons, each with and without `const`."""
    out = []
    for k in range(1, size + 1):
        for subset in itertools.combinations(pool, k):
            if len({term.key for term in subset}) == k:
                out += [list(subset), [*subset, const]]
    return out


def template_of(skeleton: _Skeleton) -> tuple[Template, list[float]]:
    """The skeleton's parametrised right-hand side and the starting values of its constants."""
    params: list[sympy.Symbol] = []
    start: list[float] = []
    total = sympy.S.Zero
    for term, coefficient in zip(skeleton.terms, skeleton.coefficients):
        params.append(sympy.Symbol(f"c{len(params)}", real=True))
        start.append(float(coefficient))
        coefficient_symbol = params[-1]
        total += coefficient_symbol * (1 if term.rest == 1 else abstract(term.rest, params, start))
    return Template(total, tuple(params)), start


def restate(found: Found, start: float, t, y) -> None:
    """`found`, fitted to group means of the record (t, y) (core.fitting.bin_means) with its y0 at
    their first time `start`, restated for the record itself: y0 carried back to t[0] along its
    own law, R^2 taken on every observation (-inf where either fails)."""
    try:
        found.y0 = float(trajectory(found.template, found.values, found.y0, np.array([start, t[0]]))[-1])
        found.r2 = r2(trajectory(found.template, found.values, found.y0, t), y)
    except SOLVE_FAILURES:
        found.r2 = -math.inf


def _score(template: Template, values, y0: float, t, y, sigma: float,
           profile: np.ndarray | None = None) -> tuple[float, float]:
    """(R^2, information criterion) of the trajectory from y0 on the observations; with a noise
    `profile` (core.fitting.noise_profile) each residual counts in its own point's noise."""
    try:
        path = trajectory(template, values, y0, t)
    except SOLVE_FAILURES:
        return -math.inf, math.inf
    residual = _weighted(path - y, profile)
    return r2(path, y), information_criterion(float(residual @ residual), len(y), len(values) + 1, sigma)


def _weighted(residual: np.ndarray, profile: np.ndarray | None) -> np.ndarray:
    """Residuals in units of their own point's noise relative to the record's (unchanged without a profile)."""
    return residual if profile is None else residual / profile


def multiplicity_charge(skeletons: dict[tuple, _Skeleton], gamma: float) -> dict[int, float]:
    """Criterion units per number of free constants k: 2 gamma log N_k, N_k the skeletons with k
    constants scored in stage 1 (an extended BIC: a prior uniform over sizes, then over the
    skeletons of each size). The best of hundreds of three-constant sums fits the noise better
    than the law by chance; this charges the search for having looked at that many."""
    if not gamma:
        return {}
    counts = collections.Counter(s.constants for s in skeletons.values())
    return {k: 2 * gamma * math.log(n) for k, n in counts.items()}


def shortlist(skeletons: dict[tuple, _Skeleton], settings: Settings,
              charge: dict[int, float] | None = None) -> list[_Skeleton]:
    """The skeletons fitted in full: the `top_k` best by the cheap score (plus its multiplicity
    `charge`), and with `pareto` every skeleton that scores better than all smaller ones.
    Thousands of sums are scored, so by chance alone the best few are flexible sums that fit
    some of the noise; the front keeps the best law of each size in play (a short law would
    otherwise need to beat them all to be fitted)."""
    ranked = ranked_skeletons(skeletons, settings, charge)
    out = ranked[: settings.top_k]
    if settings.pareto:
        chosen = {id(s) for s in out}
        best = math.inf
        for skeleton in sorted(ranked, key=lambda s: (s.size, s.cheap_ic)):
            if skeleton.cheap_ic < best:
                best = skeleton.cheap_ic
                if id(skeleton) not in chosen:
                    out.append(skeleton)
    return out


def ranked_skeletons(skeletons: dict[tuple, _Skeleton], settings: Settings,
                     charge: dict[int, float] | None = None) -> list[_Skeleton]:
    """Every skeleton, best first by the cheap score plus its multiplicity `charge` and unit charge."""
    charge = charge or {}
    return sorted(skeletons.values(), key=lambda s: s.cheap_ic + charge.get(s.constants, 0.0) + s.unit_charge(settings))


def fallback_fits(skeletons: dict[tuple, _Skeleton], fitted: list[_Skeleton], t, y, sigma: float, settings: Settings,
                  charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """When none of the `fitted` skeletons can be integrated over the observations (a record the
    beam reads only with poles or blow-ups beside it), the next skeletons by the cheap score,
    `top_k` at a time for at most FALLBACK_TIERS tiers, then y' = 0 where it is a candidate: a
    worse law is an answer, a search that integrates nothing is none (version 30). Counted, so the
    answer does not depend on the machine's load."""
    k = settings.top_k
    done = {id(s) for s in fitted}
    rest = [s for s in ranked_skeletons(skeletons, settings, charge) if id(s) not in done]
    tiers = [rest[i * k:(i + 1) * k] for i in range(FALLBACK_TIERS)]
    steady = skeletons.get(())
    if steady is not None and id(steady) not in done | {id(s) for tier in tiers for s in tier}:
        tiers.append([steady])
    out: list[Found] = []
    for tier in tiers:
        out += fit_candidates(tier, t, y, sigma, settings, charge, profile)
        if any(math.isfinite(f.r2) for f in out):
            break
    return out


def fit_candidates(skeletons: list[_Skeleton], t, y, sigma: float, settings: Settings,
                   charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """Stages 2 and 3: all constants and y0 on the integral form for each skeleton, then least
    squares on the trajectory for the `settings.refit` best of those (by criterion plus
    multiplicity `charge`); unsorted. A noise `profile` weighs the final criterion, and the
    trajectory fits too on a record that spans many decades (`_decades`)."""
    charge = charge or {}
    fitted = []
    for skeleton in skeletons:
        template, start = template_of(skeleton)
        fit = fit_integral(template, t, y, start)
        if fit.ok:
            prior = charge.get(len(start), 0.0) + skeleton.unit_charge(settings)
            fitted.append((information_criterion(fit.rss, len(y), len(start) + 1, sigma) + prior, prior, template,
                           fit, skeleton.source))
    fitted.sort(key=lambda item: item[0])
    weights = profile if _decades(y, settings) else None  # the fits' own weights (version 27)
    out = []
    for rank, (_, prior, template, fit, source) in enumerate(fitted):
        values, y0, stage, nfev, net = fit.values, fit.y0, "integral", 0, False
        if rank < settings.refit:
            y0_start = better_start(template, fit.values, (fit.y0, y[0]), t, y) if settings.first_start else fit.y0
            exact = fit_trajectory(template, t, y, fit.values, y0_start, max_nfev=settings.max_nfev,
                                   weights=weights)
            nfev, net = exact.nfev, exact.safety_net
            if exact.ok:
                values, y0, stage = exact.values, exact.y0, "trajectory"
        quality, ic = _score(template, values, y0, t, y, sigma, profile)
        out.append(Found(template.substitute(values), y0, quality, ic, len(values), source, stage, nfev=nfev,
                         safety_net=net, template=template, values=tuple(values), prior=prior))
    return out


def choose(skeletons: dict[tuple, _Skeleton], t, y, sigma: float, settings: Settings) -> tuple[list[Found], dict]:
    """Stages 2-4 on the `top_k` skeletons by the cheap score; best first, the chosen one first
    unless every candidate was rejected (then the best by the criterion, flagged in `info`)."""
    charge = multiplicity_charge(skeletons, settings.multiplicity)
    profile = choice_profile(t, y, settings)
    listed = shortlist(skeletons, settings, charge)
    found = fit_candidates(listed, t, y, sigma, settings, charge, profile)
    if not any(math.isfinite(f.r2) for f in found):
        found += fallback_fits(skeletons, listed, t, y, sigma, settings, charge, profile)
    if settings.snap_fitted:
        found += _snapped_fits(found, t, y, sigma, settings, charge, profile)
    for _ in range(settings.prune_rounds if settings.prune else 0):
        pruned = _pruned_fits(found, t, y, sigma, settings, charge, profile)
        if not pruned:  # the best fits' drops were all fitted already
            break
        found += pruned
    by = (lambda f: f.score) if settings.criterion == "bic" else (lambda f: -f.r2)
    found.sort(key=lambda f: (by(f), f.constants))
    chosen = None
    checked = noise_level(t, y, curvature=True) if settings.stability_noise else sigma  # the check's level
    for f in found:
        if not math.isfinite(f.r2):
            break
        if settings.robust:
            f.rejected = _unsafe(f, t, y, checked, settings)
        if f.rejected is None:
            chosen = f
            break
    compared = 1
    if chosen is not None and settings.forecast > 0:
        chosen, compared = _best_forecast(found, chosen, t, y, sigma, settings, checked, profile)
    if chosen is not None and settings.consensus:
        chosen = _consensus(found, chosen, t, y, checked, settings)
    if chosen is not None:
        found.remove(chosen)
        found.insert(0, chosen)
    info = {"skeletons": len(skeletons), "fitted": len(found), "noise_sigma": sigma, "stability_sigma": checked,
            "noise_profile": profile is not None,
            "forecast_compared": compared,
            "rejected": sum(f.rejected is not None for f in found), "all_rejected": chosen is None,
            "nfev": sum(f.nfev for f in found), "safety_net": any(f.safety_net for f in found)}
    return found, info


def choice_profile(t, y, settings: Settings) -> np.ndarray | None:
    """The noise profile the choice weighs residuals by (core.fitting.noise_profile; None where the
    noise does not evidently grow with |y|, or without `noise_growth`): clipped, but on a record
    that spans many decades (`_decades`) unclipped and, with `decade_reweight`, fitted in each
    point's own level."""
    if not settings.noise_growth:
        return None
    if _decades(y, settings):
        return noise_profile(t, y, math.inf, reweight=PROFILE_ROUNDS if settings.decade_reweight else 0)
    return noise_profile(t, y)  # clipped to core.fitting.PROFILE_CLIP


def _decades(y, settings: Settings) -> bool:
    """Whether the record spans so many decades that the fits weigh each residual by its own point's
    noise (`decade_weights`): unweighted, its largest values alone set a growth's rate (y' = 10 y
    from 1 read 9.88 from y0 1.25), and a flexible sum then beats the law; a clipped profile
    cannot weigh a 1e8-fold range. Elsewhere the fits stay unweighted: the harness's R^2 counts
    large values most, and weighted fits spend accuracy on the small ones."""
    return settings.decade_weights and record_growth(y) > MANY_DECADES


def _consensus(found: list[Found], chosen: Found, t, y, sigma: float, settings: Settings | None = None) -> Found:
    """Among `chosen` and its rivals, the fit whose course over twice the span lies nearest the
    others' (squared distance, each other fit weighted by exp(-criterion difference / 2), its
    likelihood relative to the best): where the data leave the course open, the middle of what
    fits them is the smaller expected miss."""
    near = [chosen, *rivals(found, t, y, sigma, pick=chosen, settings=settings)]
    _, paths = extrapolations(near, t)
    usable = [(f, p) for f, p in zip(near, paths) if np.all(np.isfinite(p))]
    if len(usable) < 2 or usable[0][0] is not chosen:
        return chosen
    weights = likelihood_weights([f for f, _ in usable])
    courses = np.array([p for _, p in usable])
    distance = ((courses[:, None, :] - courses[None, :, :]) ** 2).sum(axis=-1)
    return usable[int(np.argmin(distance @ weights))][0]


def _snapped_fits(found: list[Found], t, y, sigma: float, settings: Settings,
                  charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """The trajectory-fitted candidates whose fitted exponents lie near an integer or +-1/2
    (`snapped`), refitted as new skeletons with those exponents fixed: the beam may read
    `y**2.4` and the fit move it to 2.98, where the law has `y**3`; one constant fewer, so the
    criterion prefers the snapped law when it fits as well."""
    changed = ((f.expr, snapped(f.expr)) for f in found if f.stage == "trajectory")
    return _fitted_anew([other for expr, other in changed if other != expr], found, t, y, sigma, settings, charge,
                        "snapped", profile)


def _pruned_fits(found: list[Found], t, y, sigma: float, settings: Settings,
                 charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """The `settings.prune` best trajectory-fitted sums (by criterion), each refitted with one term
    dropped in turn, as new skeletons. Stage 1 ranks sums on the integral form, where noise in
    the observations enters every term's integral: a sum with a spare term absorbs some of it, and
    the law alone can rank below the shortlist (`-y**3` read as `-1.0*y**3 - 0.00056`). On the
    trajectory the spare term buys less than the criterion charges for it, so the law wins."""
    fitted = sorted((f for f in found if f.stage == "trajectory" and math.isfinite(f.score)), key=lambda f: f.score)
    exprs = []
    for f in fitted[: settings.prune]:
        terms = split(f.expr)
        if 2 <= len(terms) <= MAX_TERMS:
            drops = (sympy.Add(*(c * r for j, (c, r) in enumerate(terms) if j != i)) for i in range(len(terms)))
            exprs += [other for other in drops if other.has(Y)]
    return _fitted_anew(exprs, found, t, y, sigma, settings, charge, "pruned", profile)


def _fitted_anew(exprs: list[sympy.Expr], found: list[Found], t, y, sigma: float, settings: Settings,
                 charge: dict[int, float] | None, source: str, profile: np.ndarray | None = None) -> list[Found]:
    """Each of `exprs` whose skeleton is new (not among `found`'s, nor an earlier one's), fitted as
    a skeleton of its own through stages 2 and 3, every one on the trajectory."""
    seen = {skeleton_key(f.expr) for f in found}
    new = []
    for expr in exprs:
        key = skeleton_key(expr)  # sympy work: once per expression
        if key not in seen:
            seen.add(key)
            new.append(expr)
    if not new:
        return []
    skeletons = propose(new, t, y, sigma, variants=False, source=source)
    return fit_candidates(list(skeletons.values()), t, y, sigma, replace(settings, refit=len(skeletons)), charge,
                          profile)


def _unsafe(f: Found, t, y, sigma: float, settings: Settings | None = None) -> str | None:
    """Why the fitted candidate is unsafe to extrapolate (core.fitting.unstable_reason, with the
    starts `settings` asks for; with `hidden_pause`, core.fitting.hidden_pause too), or None."""
    settings = settings or Settings()
    reason = unstable_reason(f.template, f.values, f.y0, t, sigma, y=y, keep_sign=settings.keep_sign,
                             rest_in_noise=settings.rest_in_noise, rest_limit=settings.rest_limit,
                             start_scaled=settings.start_scaled_bound, grown=settings.growth_bound)
    if reason is None and settings.hidden_pause:
        reason = hidden_pause(f.template, f.values, f.y0, t)
    return reason


def _best_forecast(found: list[Found], chosen: Found, t, y, sigma: float, settings: Settings,
                   checked: float | None = None, profile: np.ndarray | None = None) -> tuple[Found, int]:
    """Among the safe candidates whose criterion is within `settings.forecast` of the chosen
    one's (statistically about as good), the one with the lowest criterion plus forecast error
    (fitted on the first FORECAST_SHARE of the observations, its error on the rest, both in noise
    variances) plus `settings.node_cost` per node of its expression (the paper's complexity):
    a curve fit of the observed interval rarely forecasts as well as the law, and among
    statistical ties the shorter law is the likelier one (`tie_cost`). With `settings.agreement`
    only the fits whose course the most tied fits follow compete (`most_followed`); with
    `settings.course_tolerance` the fits that follow the heaviest course (`heaviest_course`).
    Returns the winner and how many were compared."""
    near = [chosen, *rivals(found, t, y, checked or sigma, settings.forecast, pick=chosen, settings=settings)]
    if len(near) == 1:
        return chosen, 1
    for f in near:
        f.forecast = forecast_error(f, t, y, sigma, settings, profile)
    def cost(f):
        nodes = complexity(f.expr) - (square_roots(f.expr) if settings.sqrt_nodes else 0)
        return tie_cost(f.score, f.forecast, nodes, nested_functions(f.expr), settings), f.constants
    if settings.course_tolerance:
        followed = heaviest_course(near, t, settings.course_tolerance, cost)
    elif settings.agreement:
        followed = most_followed(near, t, settings.agreement)
    else:
        followed = near
    return min(followed, key=cost), len(near)


def most_followed(fits: list[Found], t, threshold: float) -> list[Found]:
    """The fits whose course over twice the observed span the most fits follow (R^2 of a fit's
    course against it at least `threshold`; each fit, itself included, votes with weight
    exp(-criterion difference / 2), its likelihood relative to the best). Fits that recover the
    law follow one course, so a cluster of them shares the top vote; stand-ins part from it, and
    from each other, in different directions."""
    _, votes = course_votes(fits, t, lambda course, other: r2(course, other) >= threshold)
    top = max(votes)
    return [f for f, v in zip(fits, votes) if v >= top - 1e-9]


def heaviest_course(fits: list[Found], t, tolerance: float, cost) -> list[Found]:
    """The fits that follow the heaviest course over twice the observed span: each fit votes,
    with its likelihood relative to the best (`likelihood_weights`), for every course it follows
    (`same_course`), its own included; the course with the most weight (equal weights: the
    cheaper fit's by `cost`) wins, with every fit that follows it. Unlike `most_followed`, the
    measure is symmetric and holds for flat courses, so y' = 0 and a slow drift vote together."""
    follows, votes = course_votes(fits, t, lambda course, other: same_course(course, other, tolerance))
    top = min(range(len(fits)), key=lambda i: (-votes[i], cost(fits[i])))
    return [f for f, follow in zip(fits, follows[top]) if follow] or fits


def course_votes(fits: list[Found], t, follows) -> tuple[np.ndarray, np.ndarray]:
    """Which fits' courses over twice the observed span follow which (`follows(course, other)`, a
    fit always following itself, a course that fails following none) and each course's vote: the
    likelihood weights (`likelihood_weights`) of the fits that follow it."""
    _, paths = extrapolations(fits, t)
    finite = [bool(np.all(np.isfinite(p))) for p in paths]
    matrix = np.array([[finite[i] and finite[j] and (i == j or follows(paths[i], paths[j]))
                        for j in range(len(fits))] for i in range(len(fits))])
    return matrix, matrix @ likelihood_weights(fits)


def same_course(a: np.ndarray, b: np.ndarray, tolerance: float) -> bool:
    """Whether two courses agree: their RMS difference within `tolerance` of the larger one's
    spread, or of 1% of their largest magnitude where both are nearly flat."""
    spread = max(float(np.std(a)), float(np.std(b)), 0.01 * max(float(np.max(np.abs(a))), float(np.max(np.abs(b)))))
    return float(np.sqrt(np.mean((a - b) ** 2))) <= tolerance * spread


def likelihood_weights(fits: list[Found]) -> np.ndarray:
    """exp(-criterion difference / 2) of each fit to the best of `fits`: its likelihood relative to
    the best's, the weight a tied fit carries in the consensus and in the vote."""
    scores = np.array([f.score for f in fits])
    return np.exp(-(scores - scores.min()) / 2)


def tie_cost(score: float, forecast: float, nodes: int, nested: int, settings: Settings) -> float:
    """What the tie-break minimises among statistical ties: the criterion (with its prior), the
    weighted forecast error, and the charges per node and per nested function."""
    weighted = settings.forecast_weight * forecast if settings.forecast_weight else 0.0
    return score + weighted + settings.node_cost * nodes + settings.nesting_cost * nested


def square_roots(expr: sympy.Expr) -> int:
    """Powers with exponent 1/2 in `expr`: the paper's complexity counts sqrt(y) as y**(1/2), a node
    more than log(y), though to a scientist (and in the model's tokens) both are one function of y."""
    return sum(1 for node in sympy.preorder_traversal(expr) if node.is_Pow and node.exp == sympy.S.Half)


def forecast_error(f: Found, t, y, sigma: float, settings: Settings, profile: np.ndarray | None = None) -> float:
    """`f` refitted on the first FORECAST_SHARE of the observations, its error on the rest in
    noise variances: squared, or with `settings.forecast_score` "predictive" as a log predictive
    density that allows for what the first part leaves uncertain (core.fitting.predictive_error).
    A noise `profile` weighs the squared error (not the predictive score, nor the backcast).
    With `settings.backcast` the last FORECAST_SHARE is fitted as well and its error on the first
    points added (measured in session 30 and not kept: model card)."""
    cut = int(FORECAST_SHARE * len(y))
    part = fit_trajectory(f.template, t[:cut], y[:cut], f.values, f.y0, max_nfev=settings.max_nfev)
    if not part.ok:
        return math.inf
    if settings.forecast_score == "predictive":
        return predictive_error(f.template, part.values, part.y0, t, y, cut, sigma)
    try:
        path = trajectory(f.template, part.values, part.y0, t)
    except SOLVE_FAILURES:
        return math.inf
    error = float(np.sum(_weighted(path - y, profile)[cut:] ** 2)) / sigma**2
    if not settings.backcast:
        return error
    skip = len(y) - cut
    late = fit_trajectory(f.template, t, y, f.values, f.y0, max_nfev=settings.max_nfev, skip=skip)
    if not late.ok:
        return math.inf
    try:
        path = trajectory(f.template, late.values, late.y0, t[:skip])
    except SOLVE_FAILURES:
        return math.inf
    return error + float(np.sum((path - y[:skip]) ** 2)) / sigma**2


def rivals(found: list[Found], t, y, sigma: float, window: float = RIVAL_WINDOW, *, pick: Found | None = None,
           distinct: bool = False, settings: Settings | None = None) -> list[Found]:
    """The fits other than `pick` (default `found[0]`) whose criterion is at most `window` above
    the pick's and that are safe to extrapolate (checked as `settings` say: not at all without
    `settings.robust`), in the order
    of `found` (with `distinct`, each expression once, as shown to the user): laws the
    observations cannot tell from the pick. Where they part beyond the data,
    the data do not determine the extrapolation, whichever law is chosen (on simple ODEs at 1%
    noise most misses are of this kind: model card, "Simple ODEs: the search against the ceiling")."""
    settings = settings or Settings()
    pick = pick if pick is not None else (found[0] if found else None)
    if pick is None or not math.isfinite(pick.r2):
        return []
    out, seen = [], ({str(pick.expr)} if distinct else set())
    for f in found:
        if f is pick or not math.isfinite(f.r2) or f.score > pick.score + window:
            continue
        if distinct:  # the same law reached from two sources (another y0) is shown once
            if str(f.expr) in seen:
                continue
            seen.add(str(f.expr))
        if settings.robust and f.rejected is None:
            f.rejected = _unsafe(f, t, y, sigma, settings)
        if f.rejected is None:
            out.append(f)
    return out


def extrapolations(fits: list[Found], t, span: float = 2.0, points: int = 256) -> tuple[np.ndarray, list[np.ndarray]]:
    """The time grid over `span` times the observed interval and each fit's trajectory on it from
    its fitted y0 (NaN where the solver fails)."""
    t = np.asarray(t, float)
    grid = np.linspace(t[0], t[0] + span * (t[-1] - t[0]), points)
    paths = []
    for f in fits:
        try:
            paths.append(trajectory(f.template, f.values, f.y0, grid))
        except SOLVE_FAILURES:
            paths.append(np.full(points, np.nan))
    return grid, paths


@dataclass
class Supported:
    """A fitted candidate as the data support it: constants and y0 rounded at their standard errors."""
    expr: sympy.Expr  # the right-hand side with each constant rounded
    y0: float
    y0_error: float
    constants: tuple[tuple[float, float], ...]  # (fitted value, standard error) per constant


def supported(found: Found, t, y, sigma: float, profile: np.ndarray | None = None) -> Supported:
    """`found` with every number rounded to the digits the observations (t, y) with noise `sigma`
    support (core.fitting.standard_errors, round_to_error), and to as many more as it takes for
    the rounded law to fit within one noise variance of the unrounded one: constants that move
    together (c and p of c*y**p) each have a large error alone, yet rounding both at it would
    change the law. With the choice's noise `profile` (`choice_profile`), each point counts in its
    own noise, as in the choice. What is printed and plotted."""
    if found.template is None:
        return Supported(found.expr, found.y0, math.inf, ())
    t, y = np.asarray(t, float), np.asarray(y, float)
    errors = standard_errors(found.template, found.values, found.y0, t, sigma, profile=profile)
    unrounded = _score(found.template, found.values, found.y0, t, y, sigma, profile)[1]  # at this sigma
    for extra in range(17):  # same constants, so a criterion 1 higher is a residual one noise variance higher
        values = [round_to_error(v, e, extra=extra) for v, e in zip(found.values, errors[1:])]
        y0 = round_to_error(found.y0, errors[0], extra=extra)
        if _score(found.template, values, y0, t, y, sigma, profile)[1] <= unrounded + 1:
            break
    return Supported(found.template.substitute(values), y0, float(errors[0]),
                     tuple(zip(found.values, map(float, errors[1:]))))


def identifiable(rest: sympy.Expr) -> sympy.Expr:
    """`rest` without the numbers that only rescale it (a term's coefficient does that): in
    y/(1190 + 246*y) the denominator fixes one ratio, not two (y/(4.84 + y)); in exp(2 + 3*y) the 2
    is a factor e**2. Only factors of `rest` are rewritten (a denominator inside sin(...) is
    structure). Used for showing a pick; the search itself keeps the model's form (reading the
    beam so was measured level and not kept: model card, "Session 34")."""
    factors = []
    for factor in sympy.Mul.make_args(rest):
        if factor.is_Pow and factor.base.is_Add and factor.exp.is_Integer and factor.exp < 0:
            scales = [term.as_coeff_Mul()[0] for term in sympy.Add.make_args(factor.base) if term.has(Y)]
            lead = scales[0] if scales else sympy.S.One
            if lead.is_Number and lead not in (0, 1):
                parts = (term.as_coeff_Mul() for term in sympy.Add.make_args(factor.base))
                factor = sympy.Pow(sympy.Add(*(r if c == lead else (c / lead) * r for c, r in parts)), factor.exp)
        elif isinstance(factor, sympy.exp) and factor.args[0].is_Add:
            number = sum(a for a in factor.args[0].args if a.is_Number)
            if number != 0:
                factor = sympy.exp(factor.args[0] - number)
        factors.append(factor)
    return sympy.Mul(*factors).as_coeff_Mul()[1]  # a number split off above joins the coefficient


def identifiable_expression(expr: sympy.Expr, y) -> sympy.Expr:
    """`expr` with every term `identifiable`: the same function of y, each dropped scale moved into
    its term's coefficient (read at the observed values `y`); `expr` itself when nothing changes."""
    terms, changed = [], False
    for coefficient, rest in split(expr):
        simpler = identifiable(rest)
        if simpler != rest:  # rest / simpler is a number: read it where both are finite
            with np.errstate(all="ignore"):
                ratio = np.asarray(evaluate(rest, y), float) / np.asarray(evaluate(simpler, y), float)
            ratio = ratio[np.isfinite(ratio)]
            if not len(ratio):
                return expr
            coefficient, changed = coefficient * float(np.median(ratio)), True
        terms.append((coefficient, simpler))
    return sympy.Add(*(c * r for c, r in terms)) if changed else expr


def identifiable_form(found: Found, t, y, sigma: float) -> Found:
    """`found` as `identifiable_expression` writes it, with constants the data can determine one by
    one, so that their standard errors mean something; `found` itself when nothing changes. Numbers
    the fitted law has already merged (c0*cos(c1) is one number, c0*exp(c1)*y one coefficient) are
    one constant here too."""
    if found.template is None:
        return found
    expr = identifiable_expression(found.expr, y)
    params: list[sympy.Symbol] = []
    start: list[float] = []
    template = Template(abstract(expr, params, start), tuple(params))
    if expr is found.expr and len(params) >= len(found.template.params):
        return found
    r2_value, ic = _score(template, start, found.y0, t, y, sigma)
    return replace(found, expr=template.substitute(start), template=template, values=tuple(start), ic=ic,
                   constants=len(start), r2=r2_value)


def search(exprs, t, y, settings: Settings | None = None, *, extra=()) -> tuple[list[Found], dict]:
    """The whole search on candidate expressions `exprs` (numbers at the proposer's values, best
    first); `extra` are (label, expressions) pairs from other proposers, e.g. a grammar. A record
    longer than `settings.max_points` is read through group means (`info["points"]`: how many), and
    each fit's y0 then belongs to the first group's mean time (`restate` moves it to t[0])."""
    settings = settings or Settings()
    t, y = bin_means(t, y, settings.max_points)
    sigma = noise_level(t, y)
    skeletons = propose_with(exprs, t, y, sigma, settings)
    for label, more in extra:
        for key, skeleton in propose(more, t, y, sigma, variants=settings.variants, source=label).items():
            if key not in skeletons or skeleton.cheap_ic < skeletons[key].cheap_ic:
                skeletons[key] = skeleton
    found, info = choose(skeletons, t, y, sigma, settings)
    return found, {**info, "points": len(t)}

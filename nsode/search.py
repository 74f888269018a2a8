"""NSODE proposes, a fitter decides: from beam candidates to one fitted, safe, parsimonious ODE.

nsode.proposals reads the beam's expressions as skeletons (stage 1 below: sub-sums, added
constants, snapped exponents, per-capita readings, recombined terms, y' = 0) and scores them all
at once; this module fits the best of them and chooses one; nsode.digits shows the pick with the
digits the data support.

A funnel with counted budgets (core.fitting does every fit):
1. every skeleton (nsode.proposals): its term coefficients and y0 by linear least squares on the
   integral form, inner constants at the model's values (one numpy evaluation per term: cheap);
2. the `top_k` best by information criterion: all constants and y0 on the integral form (where
   none of them can be integrated over the observations, the next ones, `fallback_fits`);
3. the `refit` best of those: least squares on the LSODA trajectory (`max_nfev`); the others
   are integrated once with their integral-form constants;
   then the `prune` best of those by the criterion are refitted with each term dropped in turn
   (a spare term that stage 1 rewarded for absorbing noise costs more than it buys here), and
   fitted exponents near an integer or +-1/2, in the first fits and the pruned ones, are refitted
   as that exponent (`snap_fitted`, `snap_pruned`);
4. by the information criterion on the trajectory residual, the first candidate whose solution
   exists from perturbed initial values over twice the observed span without turning back
   (`robust`, `turn_back`, `origin`), and whose law does not nearly stop between two observations
   of its course (`hidden_pause`), wins, unless another safe one within `forecast` of its criterion
   does better on criterion plus forecast error (fitted on the first 70% of the observations,
   scored on the rest) plus `node_cost` per node of its expression tree.
With `misfit_powers` (off: measured in session 76, not kept), a pick that misses the data by more
than `misfit_gate` noise levels gets a second look: stage 1 again with powers of y recombined, the
new skeletons through stages 2 and 3 (`fitted`), stage 4 (`select`) over all the fits.
Budgets and rules were chosen on generated ODEs only (benchmarks/selection_study.py, docs/search.md).
"""
from __future__ import annotations

import collections
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
import sympy

from core.expressions import Y, complexity, nested_functions
from core.fitting import (SOLVE_FAILURES, Template, abstract, better_start, bin_means, fit_integral, fit_trajectory,
                          information_criterion, trajectory)
from core.metrics import r2
from core.noise import noise_level, noise_profile
from core.stability import MANY_DECADES, hidden_pause, record_growth, unstable_reason
from core.uncertainty import predictive_error
from nsode.proposals import MAX_TERMS, Skeleton, bracketed, propose, propose_with, skeleton_key, snapped, split

SEARCH_BEAM = 256  # beam width the search uses by default (CPU and GPU alike)
SEARCH_BRANCHES = 1  # constant intervals each beam hypothesis branches into (nsode.decode.beam_search; docs/search.md)
PROFILE_ROUNDS = 3  # reweighting rounds of the noise profile of a record that spans many decades
FORECAST_SHARE = 0.7  # the forecast check fits the first 70% of the observations, scores the rest
RIVAL_WINDOW = 5.0  # criterion units: a safe fit this close to the pick is a rival (the data barely prefer either)
FALLBACK_TIERS = 4  # when no shortlisted fit integrates, this many times top_k more skeletons are fitted
# a pick whose residuals exceed this many noise levels (root mean square, `misfit`) only approximates the
# data (measured: at most 1.7 on Textbook and Classic at sigma 0 to 0.02, the picks that fit them)
MISFIT_NOISES = 3.0


@dataclass
class Settings:
    """The search's budget and choices; all counted, none timed."""
    max_points: int = 1024  # a longer record is searched through means of consecutive groups (core.fitting.bin_means)
    glitches: bool = True  # single points off their neighbours' course are set aside (version 33; nsode.predict)
    top_k: int = 16  # skeletons given the full integral-form fit
    pareto: bool = False  # also the skeletons on the front of size vs cheap score (measured, not kept: docs/search.md)
    node_listed: int = 0  # also the N best by cheap score plus node_cost per node (measured, not kept: rule 70)
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
    snap_pruned: bool = True  # with snap_fitted, each round's pruned fits are snapped too (version 32)
    bracket: int = 0  # the N best fits with a free exponent refitted at the integers beside it (measured, not kept)
    noise_growth: bool = True  # the choice weighs residuals by noise growing with |y| (version 22; docs/search.md)
    drift: bool = False  # y' = c is a candidate (measured, not kept: docs/search.md)
    basis: int = 0  # also recombine the powers y, ..., y**basis beside the model's terms (measured, not kept)
    misfit_powers: int = 0  # where the pick misses the data by misfit_gate noise levels, a second look with these
    misfit_gate: float = MISFIT_NOISES  # powers (root mean square of the residuals in noise levels, `misfit`)
    per_capita: int = 64  # the first per_capita beam expressions g also read as y' = y*g (per-capita laws; 0: none)
    denominators: int = 0  # expressions also read with their denominator fitted, N numerator sets (measured, not kept)
    criterion: str = "bic"  # "bic" (parsimony) or "rss" (best fit outright)
    robust: bool = True  # reject fits whose solution fails from perturbed y0 or on 2x the span
    stability_noise: bool = False  # perturb y0 by the noise alone, curvature removed (level, not kept: docs/search.md)
    keep_sign: bool = True  # the check's perturbed starts never cross 0 where the observations do not (version 16)
    rest_in_noise: bool = True  # the check starts from 0 only when y0 lies within the noise of it (version 18)
    rest_limit: bool = True  # a law that tends to 0 at 0 (y log y) passes the check's start from rest (version 17)
    hidden_pause: bool = True  # a law that nearly stops between two observations is unsafe (version 21)
    start_scaled_bound: bool = True  # a start c times y0 may go c times as far in the check (version 23)
    growth_bound: bool = True  # a record that grew G > 100 fold may go G^2 times its size in the check (version 26)
    decade_weights: bool = True  # on such a record, fits and choice weigh residuals by noise unclipped (version 27)
    decade_reweight: bool = True  # and its noise profile is fitted by reweighted least squares (version 28)
    turn_back: bool = True  # a course that turns back from a start within y0's uncertainty is unsafe (version 31)
    origin: bool = True  # a record that starts just after t = 0 is checked from where it was at 0 (version 31)
    lead_added: bool = False  # that start uncertain by noise plus the lead's motion (measured, not kept: rule 71)
    forecast: float = 5.0  # criterion window in which the best forecaster wins (0: lowest criterion)
    node_cost: float = 3.0  # in that window, criterion units charged per node of the fitted expression
    nesting_cost: float = 10.0  # and per function nested in another's argument (docs/search.md, "Session 34")
    sqrt_nodes: bool = False  # in that window, sqrt(y) counts as one function, not a power and its 1/2 (rule 62b)
    unit_cost: float = 5.0  # for a law that fixes the unit of y, sin(y) or exp(y), everywhere (version 15; "Session 35")
    unit_logs: bool = False  # log(y) with no scale and no term to absorb log(lambda) fixes it too (measured, not kept)
    forecast_score: str = "squared"  # or "predictive" (forecast_error; measured, not kept: docs/search.md)
    forecast_weight: float = 1.0  # of the forecast error in the tie-break (0.25-0.75: not kept, docs/search.md)
    backcast: bool = False  # the forecast check also fits the last share, scores the first (measured, not kept)
    multiplicity: float = 0.0  # gamma of an extended BIC: 2 gamma log N_k per fit (measured, not kept: docs/search.md)
    consensus: bool = False  # the medoid course of the pick and its rivals wins (measured, not kept: docs/search.md)
    agreement: float = 0.0  # tied fits vote: the course most follow to this R^2 wins (0.99: not kept, docs/search.md)
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


def template_of(skeleton: Skeleton) -> tuple[Template, list[float]]:
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


def trajectory_score(template: Template, values, y0: float, t, y, sigma: float,
           profile: np.ndarray | None = None) -> tuple[float, float]:
    """(R^2, information criterion) of the trajectory from y0 on the observations; with a noise
    `profile` (core.noise.noise_profile) each residual counts in its own point's noise."""
    try:
        path = trajectory(template, values, y0, t)
    except SOLVE_FAILURES:
        return -math.inf, math.inf
    residual = _weighted(path - y, profile)
    return r2(path, y), information_criterion(float(residual @ residual), len(y), len(values) + 1, sigma)


def _weighted(residual: np.ndarray, profile: np.ndarray | None) -> np.ndarray:
    """Residuals in units of their own point's noise relative to the record's (unchanged without a profile)."""
    return residual if profile is None else residual / profile


def multiplicity_charge(skeletons: dict[tuple, Skeleton], gamma: float) -> dict[int, float]:
    """Criterion units per number of free constants k: 2 gamma log N_k, N_k the skeletons with k
    constants scored in stage 1 (an extended BIC: a prior uniform over sizes, then over the
    skeletons of each size). The best of hundreds of three-constant sums fits the noise better
    than the law by chance; this charges the search for having looked at that many."""
    if not gamma:
        return {}
    counts = collections.Counter(s.constants for s in skeletons.values())
    return {k: 2 * gamma * math.log(n) for k, n in counts.items()}


def shortlist(skeletons: dict[tuple, Skeleton], settings: Settings,
              charge: dict[int, float] | None = None) -> list[Skeleton]:
    """The skeletons fitted in full: the `top_k` best by the cheap score (plus its multiplicity
    `charge`), and with `pareto` every skeleton that scores better than all smaller ones.
    Thousands of sums are scored, so by chance alone the best few are flexible sums that fit
    some of the noise; the front keeps the best law of each size in play (a short law would
    otherwise need to beat them all to be fitted)."""
    ranked = ranked_skeletons(skeletons, settings, charge)
    out = ranked[: settings.top_k]
    if settings.node_listed:
        rest = sorted(ranked[settings.top_k:], key=lambda s: s.cheap_ic + settings.node_cost * s.size)
        out += rest[: settings.node_listed]
    if settings.pareto:
        chosen = {id(s) for s in out}
        best = math.inf
        for skeleton in sorted(ranked, key=lambda s: (s.size, s.cheap_ic)):
            if skeleton.cheap_ic < best:
                best = skeleton.cheap_ic
                if id(skeleton) not in chosen:
                    out.append(skeleton)
    return out


def ranked_skeletons(skeletons: dict[tuple, Skeleton], settings: Settings,
                     charge: dict[int, float] | None = None) -> list[Skeleton]:
    """Every skeleton, best first by the cheap score plus its multiplicity `charge` and unit charge."""
    charge = charge or {}
    return sorted(skeletons.values(), key=lambda s: s.cheap_ic + charge.get(s.constants, 0.0) + s.unit_charge(settings))


def fallback_fits(skeletons: dict[tuple, Skeleton], fitted: list[Skeleton], t, y, sigma: float, settings: Settings,
                  charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """When none of the `fitted` skeletons can be integrated over the observations (a record the
    beam reads only with poles or blow-ups beside it), the next FALLBACK_TIERS * `top_k` skeletons by
    the cheap score and y' = 0, where it is a candidate: a worse law is an answer, a search that
    integrates nothing is none (version 30). Counted, so the answer does not depend on the load."""
    done = {id(s) for s in fitted}
    more = [s for s in ranked_skeletons(skeletons, settings, charge) if id(s) not in done]
    more = more[:FALLBACK_TIERS * settings.top_k]
    steady = skeletons.get(())
    if steady is not None and id(steady) not in done and all(steady is not s for s in more):
        more.append(steady)
    return fit_candidates(more, t, y, sigma, settings, charge, profile)


def fit_candidates(skeletons: list[Skeleton], t, y, sigma: float, settings: Settings,
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
        quality, ic = trajectory_score(template, values, y0, t, y, sigma, profile)
        out.append(Found(template.substitute(values), y0, quality, ic, len(values), source, stage, nfev=nfev,
                         safety_net=net, template=template, values=tuple(values), prior=prior))
    return out


def choose(skeletons: dict[tuple, Skeleton], t, y, sigma: float, settings: Settings) -> tuple[list[Found], dict]:
    """Stages 2-4 on the `top_k` skeletons by the cheap score; best first, the chosen one first
    unless every candidate was rejected (then the best by the criterion, flagged in `info`)."""
    profile = choice_profile(t, y, settings)
    found = fitted(skeletons, t, y, sigma, settings, profile)
    return select(found, t, y, sigma, settings, profile, len(skeletons))


def fitted(skeletons: dict[tuple, Skeleton], t, y, sigma: float, settings: Settings,
           profile: np.ndarray | None) -> list[Found]:
    """Stages 2 and 3 on the `top_k` skeletons by the cheap score, with the fallbacks, snapped,
    pruned and bracketed fits `settings` asks for; unsorted, none yet checked."""
    charge = multiplicity_charge(skeletons, settings.multiplicity)
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
        if settings.snap_fitted and settings.snap_pruned:
            found += _snapped_fits(pruned, t, y, sigma, settings, charge, profile, known=found)
    if settings.bracket:
        found += _bracketed_fits(found, t, y, sigma, settings, charge, profile)
    return found


def select(found: list[Found], t, y, sigma: float, settings: Settings, profile: np.ndarray | None,
           skeletons: int) -> tuple[list[Found], dict]:
    """Stage 4: the fitted candidates `found` best first by the criterion, the chosen one first
    (the first safe one, or the best forecaster among the safe ones tied with it), and `info`."""
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
    info = {"skeletons": skeletons, "fitted": len(found), "noise_sigma": sigma, "stability_sigma": checked,
            "noise_profile": profile is not None,
            "forecast_compared": compared,
            "rejected": sum(f.rejected is not None for f in found), "all_rejected": chosen is None,
            "nfev": sum(f.nfev for f in found), "safety_net": any(f.safety_net for f in found)}
    return found, info


def choice_profile(t, y, settings: Settings) -> np.ndarray | None:
    """The noise profile the choice weighs residuals by (core.noise.noise_profile; None where the
    noise does not evidently grow with |y|, or without `noise_growth`): clipped, but on a record
    that spans many decades (`_decades`) unclipped and, with `decade_reweight`, fitted in each
    point's own level."""
    if not settings.noise_growth:
        return None
    if _decades(y, settings):
        return noise_profile(t, y, math.inf, reweight=PROFILE_ROUNDS if settings.decade_reweight else 0)
    return noise_profile(t, y)  # clipped to core.noise.PROFILE_CLIP


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
                  charge: dict[int, float] | None = None, profile: np.ndarray | None = None,
                  known: list[Found] | None = None) -> list[Found]:
    """The trajectory-fitted candidates whose fitted exponents lie near an integer or +-1/2
    (`snapped`), refitted as new skeletons with those exponents fixed: the beam may read
    `y**2.4` and the fit move it to 2.98, where the law has `y**3`; one constant fewer, so the
    criterion prefers the snapped law when it fits as well. Skeletons among `known` (default
    `found`) are not fitted again."""
    changed = ((f.expr, snapped(f.expr)) for f in found if f.stage == "trajectory")
    return _fitted_anew([other for expr, other in changed if other != expr], known or found, t, y, sigma, settings,
                        charge, "snapped", profile)


def _bracketed_fits(found: list[Found], t, y, sigma: float, settings: Settings,
                    charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """The `settings.bracket` best trajectory fits (by criterion) with a free exponent, refitted
    with each such exponent at the integers below and above it and at the nearest half-integer
    (`bracketed`). On noisy records an exponent is poorly determined: the fit may leave the law's
    `y**3` at 3.39, beyond snapping, and an odd law with as few constants then wins the tie."""
    fitted = _trajectory_fits_by_score(found)
    readings = (bracketed(f.expr) for f in fitted)
    exprs = [other for others in itertools.islice(filter(None, readings), settings.bracket) for other in others]
    return _fitted_anew(exprs, found, t, y, sigma, settings, charge, "bracketed", profile)


def _trajectory_fits_by_score(found: list[Found]) -> list[Found]:
    """The least-squares trajectory fits with a finite criterion, best first: what pruning and
    bracketing start from."""
    return sorted((f for f in found if f.stage == "trajectory" and math.isfinite(f.score)), key=lambda f: f.score)


def _pruned_fits(found: list[Found], t, y, sigma: float, settings: Settings,
                 charge: dict[int, float] | None = None, profile: np.ndarray | None = None) -> list[Found]:
    """The `settings.prune` best trajectory-fitted sums (by criterion), each refitted with one term
    dropped in turn, as new skeletons. Stage 1 ranks sums on the integral form, where noise in
    the observations enters every term's integral: a sum with a spare term absorbs some of it, and
    the law alone can rank below the shortlist (`-y**3` read as `-1.0*y**3 - 0.00056`). On the
    trajectory the spare term buys less than the criterion charges for it, so the law wins."""
    fitted = _trajectory_fits_by_score(found)
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
    """Why the fitted candidate is unsafe to extrapolate (`unsafe_reason`), or None."""
    return unsafe_reason(f.template, f.values, f.y0, t, y, sigma, settings)


def unsafe_reason(template: Template, values, y0: float, t, y, sigma: float,
                  settings: Settings | None = None) -> str | None:
    """Why y' = f(y; values) from y0 is unsafe to extrapolate from the record (t, y)
    (core.stability.unstable_reason, with the starts `settings` asks for; with `hidden_pause`,
    core.stability.hidden_pause too), or None."""
    settings = settings or Settings()
    reason = unstable_reason(template, values, y0, t, sigma, y=y, keep_sign=settings.keep_sign,
                             rest_in_noise=settings.rest_in_noise, rest_limit=settings.rest_limit,
                             start_scaled=settings.start_scaled_bound, grown=settings.growth_bound,
                             turn_back=settings.turn_back, origin=settings.origin, lead_added=settings.lead_added)
    if reason is None and settings.hidden_pause:
        reason = hidden_pause(template, values, y0, t)
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
    density that allows for what the first part leaves uncertain (core.uncertainty.predictive_error).
    A noise `profile` weighs the squared error (not the predictive score, nor the backcast).
    With `settings.backcast` the last FORECAST_SHARE is fitted as well and its error on the first
    points added (measured in session 30 and not kept: docs/search.md)."""
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
    if settings.misfit_powers and found:
        found, info = second_look(exprs, skeletons, found, info, t, y, sigma, settings)
    return found, {**info, "points": len(t)}


def second_look(exprs, skeletons: dict[tuple, Skeleton], found: list[Found], info: dict, t, y, sigma: float,
                settings: Settings) -> tuple[list[Found], dict]:
    """Where the pick misses the data by more than `settings.misfit_gate` noise levels (`misfit`,
    at the curvature-corrected level `nsode predict` notes with), the model's terms did not reach
    the law: stage 1 again with the powers y, ..., y**misfit_powers recombined, the new skeletons
    through stages 2 and 3, stage 4 over all the fits (`info["second_look"]` says so). Elsewhere
    `found` and `info` as they are."""
    profile = choice_profile(t, y, settings)
    missed = misfit(found[0], t, y, noise_level(t, y, curvature=True, profile=profile), profile)
    if not missed > settings.misfit_gate:
        return found, info
    powers = propose_with(exprs, t, y, sigma, replace(settings, basis=settings.misfit_powers))
    new = {key: skeleton for key, skeleton in powers.items() if key not in skeletons}
    more, info = select(found + fitted(new, t, y, sigma, settings, profile), t, y, sigma, settings, profile,
                        len(skeletons) + len(new))
    info["second_look"] = {"missed": missed, "powers": settings.misfit_powers, "skeletons": len(new),
                           "first": str(found[0].expr)}
    return more, info


def misfit(found: Found, t, y, sigma: float, profile: np.ndarray | None = None) -> float:
    """The root mean square of the fit's residuals in units of the noise `sigma` (each in its own
    point's noise with a `profile`): about 1 for a law that fits the data to their noise, well
    above for a curve fit that only follows them; inf where its solution fails on the data, NaN
    without a template (not a fit of the search)."""
    if found.template is None:
        return math.nan
    try:
        path = trajectory(found.template, found.values, found.y0, np.asarray(t, float))
    except SOLVE_FAILURES:
        return math.inf
    residual = _weighted(path - np.asarray(y, float), profile)
    return float(np.sqrt(np.mean(residual**2))) / sigma

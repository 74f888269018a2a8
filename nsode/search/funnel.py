"""NSODE proposes, a fitter decides: from beam candidates to one fitted, safe, parsimonious ODE.

nsode.search.proposals reads the beam's expressions as skeletons (stage 1 below: sub-sums, added
constants, snapped exponents, per-capita readings, recombined terms, y' = 0) and scores them all
at once; this module fits the best of them (stages 2 and 3), nsode.search.choice chooses one (stage 4),
and nsode.search.digits shows the pick with the digits the data support.

A funnel with counted budgets (odecore.fitting does every fit; nsode.search.settings holds the budgets):
1. every skeleton (nsode.search.proposals): its term coefficients and y0 by linear least squares on the
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
   scored on the rest) plus `node_cost` per node of its expression tree (nsode.search.choice.select).
With `misfit_powers` (off: measured in session 76, not kept), a pick that misses the data by more
than `misfit_gate` noise levels gets a second look: stage 1 again with powers of y recombined, the
new skeletons through stages 2 and 3 (`fitted`), stage 4 (`select`) over all the fits.
Budgets and rules were chosen on generated ODEs only (benchmarks/selection_study.py, docs/search.md).
"""
from __future__ import annotations

import collections
import itertools
import math
from dataclasses import replace

import numpy as np
import sympy

from odecore.expressions import Y
from odecore.fitting import Template, abstract, better_start, bin_means, fit_integral, fit_trajectory, information_criterion
from odecore.noise import noise_floor, noise_level
from nsode.search.choice import choice_profile, many_decades, select
from nsode.search.fits import Found, misfit, trajectory_score
from nsode.search.proposals import MAX_TERMS, bracketed, propose, propose_with, snapped
from nsode.search.settings import Settings
from nsode.search.terms import Skeleton, skeleton_key, split

SEARCH_BEAM = 256  # beam width the search uses by default (CPU and GPU alike)
# the widest beam nsode predict and Predictor take: memory and time grow with it (4096 on CPU: 1 GB
# and 30 s a record; 100000: 13.6 GB), and the paper reads at 1536 (nsode.decode.GPU_DEFAULT_BEAM)
MAX_BEAM = 4096
SEARCH_BRANCHES = 1  # constant intervals each beam hypothesis branches into (nsode.decode.beam_search; docs/search.md)
FALLBACK_TIERS = 4  # when no shortlisted fit integrates, this many times top_k more skeletons are fitted


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
    score = ranking_score(settings, charge)
    ranked = sorted(skeletons.values(), key=score)
    out = ranked[: settings.top_k]
    if settings.node_listed:
        rest = sorted(ranked[settings.top_k:], key=lambda s: score(s) + settings.node_cost * s.size)
        out += rest[: settings.node_listed]
    if settings.pareto:
        chosen = {id(s) for s in out}
        best = math.inf
        for skeleton in sorted(ranked, key=lambda s: (s.size, score(s))):
            if score(skeleton) < best:
                best = score(skeleton)
                if id(skeleton) not in chosen:
                    out.append(skeleton)
    return out


def ranking_score(settings: Settings, charge: dict[int, float] | None = None):
    """The score stage 1 ranks a skeleton by: its cheap score plus its multiplicity `charge` and
    unit charge (the shortlist's every rule ranks by it)."""
    charge = charge or {}
    return lambda s: s.cheap_ic + charge.get(s.constants, 0.0) + s.unit_charge(settings)


def ranked_skeletons(skeletons: dict[tuple, Skeleton], settings: Settings,
                     charge: dict[int, float] | None = None) -> list[Skeleton]:
    """Every skeleton, best first by `ranking_score`."""
    return sorted(skeletons.values(), key=ranking_score(settings, charge))


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
    trajectory fits too on a record that spans many decades (`nsode.search.choice.many_decades`)."""
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
    weights = profile if many_decades(y, settings) else None  # the fits' own weights (version 27)
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
                         safety_net=net, template=template, values=tuple(values), prior=prior,
                         weighted=weights is not None and stage == "trajectory"))
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
    if found and (settings.misfit_powers or settings.clean_powers):
        found, info = second_look(exprs, skeletons, found, info, t, y, sigma, settings)
    return found, {**info, "points": len(t)}


def second_look(exprs, skeletons: dict[tuple, Skeleton], found: list[Found], info: dict, t, y, sigma: float,
                settings: Settings) -> tuple[list[Found], dict]:
    """Where the model's terms may have reached the law only approximately, stage 1 again with the
    powers y, ..., y**N recombined, the new skeletons through stages 2 and 3, stage 4 over all the
    fits (`info["second_look"]` says so). Two gates: a record read as free of noise (its level, the
    curvature removed as `nsode predict` reads it, at odecore.noise's floor) gets N =
    `settings.clean_powers` whatever its pick (without noise the criterion tells fits apart sharply,
    so more candidates cannot let a chance fit win, while a curve fit of the model's terms can stand
    in for a sum of powers, as for 0.05*y**2*(10 - y); measured in session 97, not kept); a pick
    that misses the data by more than `settings.misfit_gate` noise levels (`misfit`, at that level)
    gets N = `settings.misfit_powers`. Elsewhere `found` and `info` as they are."""
    profile = choice_profile(t, y, settings)
    level = noise_level(t, y, curvature=True, profile=profile)  # never below the floor
    gate, powers = ("clean", settings.clean_powers) if level <= noise_floor(y) else (None, 0)
    missed = None  # measured only where the misfit gate is asked
    if settings.misfit_powers > powers:
        missed = misfit(found[0], t, y, level, profile)
        if missed > settings.misfit_gate:
            gate, powers = "misfit", settings.misfit_powers
    if not powers:
        return found, info
    with_powers = propose_with(exprs, t, y, sigma, replace(settings, basis=powers))
    new = {key: skeleton for key, skeleton in with_powers.items() if key not in skeletons}
    more, info = select(found + fitted(new, t, y, sigma, settings, profile), t, y, sigma, settings, profile,
                        len(skeletons) + len(new))
    changed = skeleton_key(more[0].expr) != skeleton_key(found[0].expr)
    info["second_look"] = {"gate": gate, "missed": missed, "powers": powers, "skeletons": len(new),
                           "first": str(found[0].expr), "changed": changed}
    return more, info

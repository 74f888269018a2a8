"""Stage 4 of the search (nsode.search): from the fitted candidates to the one shown.

By the information criterion on the trajectory residual, the first candidate whose solution
exists from perturbed initial values over twice the observed span without turning back, and
whose law does not nearly stop between two observations of its course (`unsafe_reason`), wins,
unless another safe one within `Settings.forecast` of its criterion does better on criterion
plus forecast error plus charges per node and nested function (`tie_cost`). `rivals` are the
safe fits the data cannot tell from the pick, which `nsode predict` shows beside it.
"""
from __future__ import annotations

import math

import numpy as np
import sympy

from odecore.expressions import complexity, nested_functions
from odecore.fitting import SOLVE_FAILURES, Template, fit_trajectory, trajectory
from odecore.metrics import r2
from odecore.noise import noise_level, noise_profile
from odecore.stability import MANY_DECADES, hidden_pause, record_growth, unstable_reason
from odecore.uncertainty import predictive_error
from nsode.search.fits import Found, distinct_laws, extrapolations, weighted
from nsode.search.settings import Settings

PROFILE_ROUNDS = 3  # reweighting rounds of the noise profile of a record that spans many decades
FORECAST_SHARE = 0.7  # the forecast check fits the first 70% of the observations, scores the rest
RIVAL_WINDOW = 5.0  # criterion units: a safe fit this close to the pick is a rival (the data barely prefer either)


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
    """The noise profile the choice weighs residuals by (odecore.noise.noise_profile; None where the
    noise does not evidently grow with |y|, or without `noise_growth`): clipped, but on a record
    that spans many decades (`many_decades`) unclipped and, with `decade_reweight`, fitted in each
    point's own level."""
    if not settings.noise_growth:
        return None
    if many_decades(y, settings):
        return noise_profile(t, y, math.inf, reweight=PROFILE_ROUNDS if settings.decade_reweight else 0)
    return noise_profile(t, y)  # clipped to odecore.noise.PROFILE_CLIP


def many_decades(y, settings: Settings) -> bool:
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


def _unsafe(f: Found, t, y, sigma: float, settings: Settings | None = None) -> str | None:
    """Why the fitted candidate is unsafe to extrapolate (`unsafe_reason`), or None."""
    return unsafe_reason(f.template, f.values, f.y0, t, y, sigma, settings)


def unsafe_reason(template: Template, values, y0: float, t, y, sigma: float,
                  settings: Settings | None = None) -> str | None:
    """Why y' = f(y; values) from y0 is unsafe to extrapolate from the record (t, y)
    (odecore.stability.unstable_reason, with the starts `settings` asks for; with `hidden_pause`,
    odecore.stability.hidden_pause too), or None."""
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
    density that allows for what the first part leaves uncertain (odecore.uncertainty.predictive_error).
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
    error = float(np.sum(weighted(path - y, profile)[cut:] ** 2)) / sigma**2
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
    if distinct:  # the same law, in another spelling or from another y0, is shown once
        found = distinct_laws([pick] + [f for f in found if f is not pick], y)
    out = []
    for f in found:
        if f is pick or not math.isfinite(f.r2) or f.score > pick.score + window:
            continue
        if settings.robust and f.rejected is None:
            f.rejected = _unsafe(f, t, y, sigma, settings)
        if f.rejected is None:
            out.append(f)
    return out

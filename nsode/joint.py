"""One law behind several records: y' = f(y) with shared constants and one initial value per record.

A user with several runs of one experiment (other starting amounts, other days) wants the one law
behind them all, as pysindy fits several trajectories at once. Each record's own search
(`Predictor.predict`: the model reads it, the fitter decides) proposes the skeletons of its best
fits, and new sums of the terms those fits write between them (records in other stretches of y
show other terms of one law); all are refitted on every record at once (odecore.fitting.fit_records,
each residual in its own record's noise), and a joint information criterion (the law's constants plus one
initial value per record, each charged log of all observations) ranks the fits. The best one
whose course is safe from every record's start wins (nsode.search.choice.unsafe_reason), unless a safe
fit within RIVAL_WINDOW of it is the shorter law (the single search's node and nesting costs;
no forecast: the other records are the test that a forecast stands in for). A law must hold
over every record's range of y, so a curve that follows one record (a sine standing in for a
logistic on its stretch of y) rarely fits the others: several records tell what one cannot.
The new sums are the best by two rankings: each record's own criterion summed (a strong charge per
constant, which keeps short sums) and one fit with shared coefficients (laws that fit every record
alike). A second look, run every time, recombines the records' terms with the powers y, ..., y**5
beside them, for laws whose terms no record proposed, and the criterion chooses over all the fits.
Measured against reading each record alone in docs/search.md, "Session 77" to "Session 79": far
more laws recovered, but where no proposed law fits records spread over regimes of y, one law fits
some of them worse than their own curve fits; so it is a mode (`nsode predict --joint`), not a
default.
"""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import sympy

from odecore import protocol
from odecore.expressions import complexity, nested_functions
from odecore.fitting import SOLVE_FAILURES, RecordsFit, Template, bin_means, fit_records, trajectory
from odecore.metrics import r2
from odecore.noise import noise_level, pooled_levels
from odecore.uncertainty import round_to_error
from odecore.trajectories import observed
from nsode.search.choice import RIVAL_WINDOW, choice_profile, tie_cost, unsafe_reason
from nsode.data.tokens import to_infix
from nsode.search.digits import identifiable_template
from nsode.search.fits import Found
from nsode.predict import Prediction, Predictor
from nsode.search.proposals import propose
from nsode.search.funnel import template_of
from nsode.search.settings import MISFIT_NOISES, Settings
from nsode.search.terms import Skeleton, skeleton_key

JOINT_SHORTLIST = 8  # each record's best fits (its search's order) whose skeletons are refitted on all records
JOINT_COMBINED = 8  # new sums of the records' terms fitted jointly besides them, per ranking asked for (`_recombined`)
JOINT_POWERS = 5  # the second look's powers y..y**N (rule 77c; 0: none)
SECOND_LOOKS = ("always", "missed")  # when the second look runs (rule 79), or only where the pick misses a record
JOINT_NFEV = 2  # times the single search's max_nfev: a joint fit moves the constants and every record's y0


@dataclass
class Record:
    """One record as the joint fit reads it: the search's view (group means of a long record, no
    points set aside), the noise level read from it, and each point's noise (a profile where the
    noise grows with |y|, as the search weighs it)."""
    t: np.ndarray
    y: np.ndarray
    sigma: float
    noise: np.ndarray | float


@dataclass
class Start:
    """Where a joint fit of one skeleton starts: its template and constants, its prior charge, the
    record that proposed it and a y0 for every record."""
    template: Template
    values: tuple[float, ...]
    prior: float
    proposed_by: int
    y0s: list[float]


@dataclass
class JointFit:
    """One skeleton fitted to every record: its law, the fit, the joint criterion, each record's R^2."""
    expr: sympy.Expr
    template: Template
    fit: RecordsFit
    score: float  # joint information criterion plus the skeleton's prior charge (lower is better)
    r2s: tuple[float, ...]  # R^2 of each record's trajectory from its fitted y0, on the record as the fit read it
    proposed_by: int  # the record whose search proposed the skeleton (its best rank among them)
    rejected: str | None = None  # why it is unsafe from some record's start

    @property
    def text(self) -> str:
        return to_infix(self.expr)


@dataclass
class JointPrediction:
    """What `predict_records` answers: one law for all records (`chosen` holds its constants and
    each record's y0, `fit.errors` their standard errors, constants first), the fits behind it and
    each record's own search. Its repr shows the law and the counts (the fits run to pages)."""
    expression: str  # python syntax in y ("" when no skeleton could be fitted to every record)
    fits: list[JointFit] = field(repr=False)  # best first by the criterion, the chosen one first
    own: list[Prediction] = field(repr=False)  # each record's own search
    records: list[Record] = field(repr=False)
    info: dict = field(default_factory=dict)

    @property
    def chosen(self) -> JointFit | None:
        return self.fits[0] if self.expression else None


def predict_records(predictor: Predictor, records, *, shortlist: int = JOINT_SHORTLIST,
                    powers: int = JOINT_POWERS, shared_ranking: bool = True,
                    second_look: str = "always", min_points: int = protocol.MIN_POINTS,
                    pooled_noise: bool = False) -> JointPrediction:
    """One law y' = f(y) for all `records` ((t, y) pairs of one system); ValueError naming the
    problem when a record is not one (odecore.trajectories.observed, at least `min_points` points) or
    fewer than two are given. `min_points` below 10 and `pooled_noise` are for the study of short
    records (docs/search.md, "Session 83"; measured, not what `nsode predict` does)."""
    if predictor.search is None:
        raise ValueError("a joint fit needs the search: a Predictor with search settings (Predictor.searching)")
    if isinstance(records, Mapping):  # iterating it would read each key as a record
        raise TypeError("records: a list of (t, y) pairs, not a mapping (pass list(records.values()))")
    records = list(records)  # a generator too
    if len(records) < 2:
        raise ValueError(f"a joint fit needs two or more records, got {len(records)}")
    _check_look(second_look)  # before the searches, not after
    records = [_checked(record, i, min_points) for i, record in enumerate(records)]
    own = [predictor.predict(t, y, min_points=min_points) for t, y in records]
    return joint_choice(own, records, predictor.search, shortlist=shortlist, powers=powers,
                        shared_ranking=shared_ranking, second_look=second_look, pooled_noise=pooled_noise)


def joint_choice(own: list[Prediction], records, settings: Settings, *,
                 shortlist: int = JOINT_SHORTLIST, powers: int = JOINT_POWERS,
                 shared_ranking: bool = True, second_look: str = "always",
                 pooled_noise: bool = False) -> JointPrediction:
    """The joint fit and choice given each record's own search `own` (its points set aside stay
    aside): what `predict_records` does after the searches. With `powers` N, a second look: the
    records' terms recombined again with the powers y, ..., y**N beside them, and the choice again
    over all fits (`second_look` "missed": only where the first pick misses some record by more than
    MISFIT_NOISES, as until session 79). `shared_ranking` recombines more sums (`_recombined`;
    False: the summed ranking alone, as until session 79). `pooled_noise` reads every record's noise
    from all records together (`_pooled_records`; measured for short records, not kept)."""
    _check_look(second_look)
    kept = [(np.delete(t, p.info["set_aside"]), np.delete(y, p.info["set_aside"])) for (t, y), p in zip(records, own)]
    read = _pooled_records(kept, settings) if pooled_noise else [_record(t, y, settings) for t, y in kept]
    proposed = _proposals(own, read, shortlist)
    with warnings.catch_warnings():  # a wild iterate overflows inside scipy: its fit fails and is left out
        warnings.simplefilter("ignore")
        known = _keys(proposed)
        recombined = _recombined(own, read, settings, shortlist, known, shared_ranking)
        proposed += recombined
        fits = [_joint_fit(start, read, settings) for start in proposed]
        fits = sorted((f for f in fits if f is not None), key=lambda f: f.score)
        chosen, checked = _choice(fits, read, settings)
        looked = bool(powers and fits and (second_look == "always"
                                           or _missed(chosen or fits[0], read) > MISFIT_NOISES))
        if looked:
            more = _recombined(own, read, replace(settings, basis=powers), shortlist, known | _keys(recombined),
                               shared_ranking)
            proposed += more
            fits += [f for f in (_joint_fit(start, read, settings) for start in more) if f is not None]
            fits.sort(key=lambda f: f.score)
            chosen, checked = _choice(fits, read, settings)
    if chosen is not None:
        fits.remove(chosen)
        fits.insert(0, chosen)
    fits = _one_per_skeleton(fits)
    info = {"records": len(records), "skeletons": len(proposed), "fitted": len(fits), "safety_checked": checked,
            "all_rejected": bool(fits) and chosen is None, "nfev": sum(f.fit.nfev for f in fits),
            "points": sum(len(r.t) for r in read), "second_look": looked, "pooled_noise": pooled_noise}
    return JointPrediction(fits[0].text if fits else "", fits, own, read, info)


def _check_look(second_look: str) -> None:
    if second_look not in SECOND_LOOKS:
        raise ValueError(f"second_look must be one of {', '.join(SECOND_LOOKS)}, got {second_look!r}")


def _one_per_skeleton(fits: list[JointFit]) -> list[JointFit]:
    """`fits` (the chosen one first, then best first) with each skeleton once: a second look can
    propose a sum fitted already (its keys are stage 1's, `known` holds the laws'), and the list
    showed it twice."""
    seen: set[tuple] = set()
    out = []
    for f in fits:
        key = skeleton_key(f.expr)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _keys(starts: list[Start]) -> set[tuple]:
    """The skeletons of `starts` (nsode.search.terms.skeleton_key)."""
    return {skeleton_key(start.template.substitute(start.values)) for start in starts}


def _checked(record, index: int, min_points: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        t, y = record
    except (TypeError, ValueError):
        raise ValueError(f"record {index + 1} is not a (t, y) pair: give the records as a list of pairs, "
                         "[(t1, y1), (t2, y2), ...]") from None
    try:
        return observed(t, y, min_points)
    except ValueError as err:
        raise ValueError(f"record {index + 1}: {err}") from None


def _record(t: np.ndarray, y: np.ndarray, settings: Settings) -> Record:
    t, y = bin_means(t, y, settings.max_points)
    sigma = noise_level(t, y)
    profile = choice_profile(t, y, settings)
    return Record(t, y, sigma, sigma if profile is None else sigma * profile)


def _pooled_records(records, settings: Settings) -> list[Record]:
    """The records, each point's noise read from all of them together (odecore.noise.pooled_levels):
    for records too short to read their own."""
    records = [bin_means(t, y, settings.max_points) for t, y in records]
    return [Record(t, y, float(np.sqrt(np.mean(level**2))), level)
            for (t, y), level in zip(records, pooled_levels(records))]


def _proposals(own: list[Prediction], read: list[Record], shortlist: int) -> list[Start]:
    """Each skeleton among the first `shortlist` integrable fits of each record's search, once, in
    order of its best rank: the fit to start from (the record's where it ranks best, the first
    such record on a tie), that record's index, and a starting y0 for every record (its own fit's
    y0 where its search fitted the same skeleton, else its first observation)."""
    best: dict[tuple, tuple[int, int]] = {}  # skeleton -> (rank, record) of its best appearance
    seen: dict[tuple, dict[int, Found]] = {}  # skeleton -> record -> that record's fit of it
    for index, prediction in enumerate(own):
        for rank, found in enumerate(_listed(prediction, shortlist)):
            key = skeleton_key(found.expr)
            seen.setdefault(key, {}).setdefault(index, found)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, index)
    out = []
    for key, (_, index) in sorted(best.items(), key=lambda item: item[1]):
        fits = seen[key]
        y0s = [fits[j].y0 if j in fits else float(r.y[0]) for j, r in enumerate(read)]
        out.append(Start(fits[index].template, fits[index].values, fits[index].prior, index, y0s))
    return out


def _listed(prediction: Prediction, shortlist: int) -> list[Found]:
    """The record's first `shortlist` fits that integrate over it, in its search's order."""
    return [f for f in prediction.fits if f.template is not None and math.isfinite(f.r2)][:shortlist]


def _recombined(own: list[Prediction], read: list[Record], settings: Settings, shortlist: int,
                known: set[tuple], shared_ranking: bool = False) -> list[Start]:
    """New sums of the terms the records' best fits write between them (records in other stretches
    of y show other terms of one law): stage 1 of the search (`propose`, the first `combine` distinct
    terms in sums of up to `combine_size`) on each record with the first `shortlist` fits of every
    record, best ranks first; of the skeletons every record can fit on the integral form and not
    among `known`, the JOINT_COMBINED best by their criteria summed over the records (each record
    free to choose its coefficients: a strong charge per constant, which keeps short sums); with
    `shared_ranking`, also the JOINT_COMBINED best by their joint integral-form criterion
    (`_linear_joint`: coefficients shared, so laws that fit every record alike), once each
    (docs/search.md, "Session 78" and "Session 79")."""
    ranked = [[f.expr for f in _listed(p, shortlist)] for p in own]
    exprs = [expr for rank in itertools.zip_longest(*ranked) for expr in rank if expr is not None]
    if not exprs:
        return []
    stage1 = [propose(exprs, r.t, r.y, r.sigma, variants=False, combine=settings.combine,
                      combine_size=settings.combine_size, basis=settings.basis) for r in read]
    common = set.intersection(*(set(skeletons) for skeletons in stage1)) - known
    summed = {key: sum(skeletons[key].cheap_ic for skeletons in stage1) for key in common}
    joint = {key: _linear_joint([skeletons[key] for skeletons in stage1], read)
             for key in (common if shared_ranking else ())}
    by_sum = sorted(summed, key=lambda key: (summed[key], key))[:JOINT_COMBINED]
    by_joint = [key for key in sorted(joint, key=lambda key: (joint[key][0], key))[:JOINT_COMBINED]
                if math.isfinite(joint[key][0]) and key not in by_sum]
    out = []
    for key in by_sum:  # from the first record's own fit, each record from its own y0
        template, values = template_of(stage1[0][key])
        out.append(Start(template, tuple(values), stage1[0][key].unit_charge(settings), 0,
                         [skeletons[key].y0 for skeletons in stage1]))
    for key in by_joint:  # from the shared coefficients and y0s of the joint linear fit
        _, coefficients, y0s = joint[key]
        template, values = template_of(replace(stage1[0][key], coefficients=coefficients))
        out.append(Start(template, tuple(values), stage1[0][key].unit_charge(settings), 0, y0s))
    return out


def _linear_joint(skeletons: list[Skeleton], read: list[Record]) -> tuple[float, np.ndarray, list[float]]:
    """One skeleton's terms fitted to every record at once on the integral form, y(t) = y0 + sum of
    c_k * integral of term k, with the coefficients shared and one y0 per record, each residual in
    its record's noise (linear least squares): the criterion chi2 + (constants + records) log N, the
    coefficients in the order of the first record's terms, and the y0s. Summing each record's own
    criterion lets every record choose its own coefficients, which ranks laws that fit no two
    records alike beside the one that fits them all; this ranking does not."""
    order = [term.key for term in skeletons[0].terms]
    count = len(read)
    rows, targets = [], []
    for index, (skeleton, record) in enumerate(zip(skeletons, read)):
        integrals = {term.key: term.integral for term in skeleton.terms}
        weight = 1.0 / np.broadcast_to(record.noise, record.y.shape)
        design = np.zeros((len(record.y), count + len(order)))
        design[:, index] = 1.0
        for k, key in enumerate(order):
            design[:, count + k] = integrals[key]
        rows.append(design * weight[:, None])
        targets.append(record.y * weight)
    design, target = np.vstack(rows), np.concatenate(targets)
    scale = np.linalg.norm(design, axis=0)
    if not (np.all(np.isfinite(design)) and np.all(scale > 0)):
        return math.inf, skeletons[0].coefficients, [s.y0 for s in skeletons]
    x = np.linalg.lstsq(design / scale, target, rcond=None)[0] / scale
    chi2 = float(np.sum((design @ x - target) ** 2))
    criterion = chi2 + (skeletons[0].constants + count) * math.log(len(target))
    return criterion, x[count:], [float(v) for v in x[:count]]


def _joint_fit(start: Start, read: list[Record], settings: Settings) -> JointFit | None:
    """The skeleton of `start` fitted to every record from there; None when some record's
    trajectory cannot be integrated at the solution."""
    template = start.template
    fit = fit_records(template, [(r.t, r.y, r.noise) for r in read], start.values, start.y0s,
                      max_nfev=JOINT_NFEV * settings.max_nfev)
    if not fit.ok:
        return None
    points = sum(len(r.t) for r in read)
    score = sum(fit.chi2) + (len(fit.values) + len(read)) * math.log(points) + start.prior
    r2s = []
    for y0, record in zip(fit.y0s, read):
        try:
            r2s.append(r2(trajectory(template, fit.values, y0, record.t), record.y))
        except SOLVE_FAILURES:
            return None
    return JointFit(template.substitute(fit.values), template, fit, score, tuple(r2s), start.proposed_by)


def _choice(fits: list[JointFit], read: list[Record], settings: Settings) -> tuple[JointFit | None, int]:
    """The first fit (by criterion) safe from every record's start, or the shortest law among the
    safe fits within RIVAL_WINDOW of it (`tie_cost` without a forecast); None when none is safe.
    Returns it and how many fits were checked."""
    checked = 0
    best = None
    tied = []
    for f in fits:
        if best is not None and f.score > best.score + RIVAL_WINDOW:
            break
        checked += 1
        if settings.robust:
            f.rejected = _unsafe_somewhere(f, read, settings)
        if f.rejected is None:
            best = best or f
            tied.append(f)
    if best is None:
        return None, checked
    cost = {id(f): tie_cost(f.score, 0.0, complexity(f.expr), nested_functions(f.expr), settings) for f in tied}
    return min(tied, key=lambda f: (cost[id(f)], len(f.fit.values))), checked


def record_misses(f: JointFit, read: list[Record]) -> list[float]:
    """How far the law misses each record: the root mean square of its residuals in its own noise
    (about 1 where it fits to the noise)."""
    return [math.sqrt(chi2 / len(record.t)) for chi2, record in zip(f.fit.chi2, read)]


def _missed(f: JointFit, read: list[Record]) -> float:
    """The most any record is missed (`record_misses`)."""
    return max(record_misses(f, read))


def _unsafe_somewhere(f: JointFit, read: list[Record], settings: Settings) -> str | None:
    for number, (y0, record) in enumerate(zip(f.fit.y0s, read), start=1):
        reason = unsafe_reason(f.template, f.fit.values, y0, record.t, record.y, record.sigma, settings)
        if reason is not None:
            return f"record {number}: {reason}"
    return None


def identifiable_joint(f: JointFit, read: list[Record]) -> JointFit:
    """`f` written with constants the records determine one by one
    (nsode.search.digits.identifiable_template: y/(4.84 + y), c0*y + c1*y*log(y)), refitted from
    its own values so that their standard errors mean something; `f` itself when nothing changes
    or the refit fails. What `nsode predict --joint` prints, as `identifiable_form` for one record."""
    rewritten = identifiable_template(f.expr, f.template, np.concatenate([r.y for r in read]))
    if not rewritten:
        return f
    template, start = rewritten
    fit = fit_records(template, [(r.t, r.y, r.noise) for r in read], start, f.fit.y0s)
    if not fit.ok or sum(fit.chi2) > sum(f.fit.chi2) + 1:  # the same law: its fit can only agree
        return f
    return replace(f, expr=template.substitute(fit.values), template=template, fit=fit)


def supported_values(f: JointFit, read: list[Record]) -> tuple[list[float], list[float], int]:
    """The constants and y0s rounded at their standard errors (odecore.uncertainty.round_to_error), with as
    many more digits (the third value) as it takes for the rounded law to fit every record within one
    noise variance of the fit (constants that move together each have a large error alone): what is printed."""
    errors = f.fit.errors or (math.inf,) * (len(f.fit.y0s) + len(f.fit.values))
    y0_errors, value_errors = errors[:len(read)], errors[len(read):]
    target = sum(f.fit.chi2) + 1
    for extra in range(17):
        values = [round_to_error(v, e, extra=extra) for v, e in zip(f.fit.values, value_errors)]
        y0s = [round_to_error(v, e, extra=extra) for v, e in zip(f.fit.y0s, y0_errors)]
        if _chi2(f.template, values, y0s, read) <= target:
            break
    return values, y0s, extra


def _chi2(template: Template, values, y0s, read: list[Record]) -> float:
    total = 0.0
    for y0, record in zip(y0s, read):
        try:
            residual = (trajectory(template, values, y0, record.t) - record.y) / record.noise
        except SOLVE_FAILURES:
            return math.inf
        total += float(residual @ residual)
    return total

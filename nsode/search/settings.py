"""The search's settings: every budget and rule of the search (nsode.search) in one dataclass.

A module of its own so that each stage (proposals, funnel, choice) and every
caller (the CLI's options, the harness's methods, the benchmarks) reads the same fields without
importing the stages that use them. Fields measured and not kept stay, off, so a study can turn
them on again (docs/search.md says what each measured).
"""
from __future__ import annotations

from dataclasses import dataclass

# a pick whose residuals exceed this many noise levels (root mean square, `misfit`) only approximates the
# data (measured: at most 1.7 on Textbook and Classic at sigma 0 to 0.02, the picks that fit them)
MISFIT_NOISES = 3.0


@dataclass(frozen=True)
class Settings:
    """The search's budget and choices; all counted, none timed. Frozen: a value is checked when
    the search is given it, so another is set with `dataclasses.replace`, which is checked again."""
    max_points: int = 1024  # a longer record is searched through means of consecutive groups (odecore.fitting.bin_means)
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
    clean_powers: int = 0  # on a record read as free of noise, that second look with y, ..., y**N (measured, not kept)
    per_capita: int = 64  # the first per_capita beam expressions g also read as y' = y*g (per-capita laws; 0: none)
    read_log: int = 0  # the first N expressions of the beam of log|y|, written back in y, also proposed (0: none)
    read_reciprocal: int = 64  # likewise of the beam of 1/y (nsode.search.readings; on since version 37)
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

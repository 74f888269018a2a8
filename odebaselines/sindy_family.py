"""Shared pieces of the SINDy variants a careful user runs (methods/sindy_weak.py,
sindy_ensemble.py, sindy_ic.py): the candidate library as pysindy `CustomLibrary` objects whose
feature names are expressions in y, a scale-free STLSQ fit, the integrated-trajectory error of a
candidate model (the shared fitter's `odecore.fitting.trajectory_rss`), and the two selection
rules (parsimony within a tolerance of the best trajectory error; an information criterion on
the trajectory).

Scale-free thresholds: pysindy's STLSQ thresholds coefficients in the units of the data, which
differ by orders of magnitude between ODEs. `sparse_fit` normalises the library columns
(`normalize_columns=True`) and divides the target by its norm, so a threshold of 0.05 drops the
terms whose share of the fitted derivative (in norm) is below about 5 %, whatever the units.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import sympy
from pysindy import CustomLibrary, STLSQ

from odebaselines.sindy import expression
from bench.method import are_numbers, are_whole, require
from odecore import fitting
from odecore.expressions import compile_vector, parse

SOLVE_MXSTEP = 500  # LSODA steps between two observations for a candidate model (the shared
# fitter's settings otherwise); a candidate that needs more (stiff, blowing up) counts as failed -
# a counted budget, so the choice does not depend on machine load
POLE_MARGIN = 0.1  # a rational term is kept only if its denominator keeps one sign on the
# observed range of y widened by this fraction of the range on each side


def polynomial_terms(degree: int) -> tuple[str, ...]:
    """y, y**2, ..., y**degree (the constant is the library's bias column)."""
    return tuple("y" if k == 1 else f"y**{k}" for k in range(1, int(degree) + 1))


def saturation_terms(constants: tuple[float, ...]) -> tuple[str, ...]:
    """Michaelis-Menten terms y/(c + y). With a constant column they also span 1/(c + y),
    since y/(c + y) = 1 - c/(c + y), so 1/(c + y) terms are not added separately."""
    return tuple(f"y/({float(c)!r} + y)" for c in constants)


def usable_terms(terms: tuple[str, ...], y: np.ndarray) -> tuple[str, ...]:
    """The terms that are finite on the data, not zero at every observation (a zero column has
    no norm to normalise by), and whose denominator has no zero near the observed range (a pole
    inside the data would let the fit chase it)."""
    y = np.asarray(y, dtype=float)
    low, high = float(np.min(y)), float(np.max(y))
    margin = POLE_MARGIN * max(high - low, 1e-12)
    grid = np.concatenate([y, np.linspace(low - margin, high + margin, 257)])
    kept = []
    for term in terms:
        expr = parse(term)
        denominator = compile_vector(sympy.fraction(sympy.together(expr))[1])(grid)
        values = compile_vector(expr)(grid)
        if np.all(np.isfinite(values)) and np.any(values[:len(y)] != 0) \
                and (np.all(denominator > 0) or np.all(denominator < 0)):
            kept.append(term)
    return tuple(kept)


def custom_library(terms: tuple[str, ...]) -> CustomLibrary:
    """pysindy's CustomLibrary of 1 (bias) and `terms`, named by the terms themselves."""
    return CustomLibrary([_column(term) for term in terms], [_name(term) for term in terms], include_bias=True)


def library_names(terms: tuple[str, ...]) -> tuple[str, ...]:
    """Names of the columns of `custom_library(terms)`, in order."""
    return ("1",) + tuple(terms)


def _column(term: str):
    values = compile_vector(parse(term))

    def column(x):  # one positional argument: CustomLibrary counts the arguments
        return values(x)
    return column


def _name(term: str):
    return lambda _input_name: term


def sparse_fit(theta: np.ndarray, target: np.ndarray, threshold: float, alpha: float,
               max_iter: int = 20) -> np.ndarray:
    """STLSQ coefficients of target ~ theta @ coef with a scale-free threshold (module docstring)."""
    scale = float(np.linalg.norm(target)) or 1.0
    optimizer = STLSQ(threshold=threshold, alpha=alpha, max_iter=max_iter, normalize_columns=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "eliminated all coefficients" is a valid answer (f = 0)
        optimizer.fit(np.asarray(theta, dtype=float), np.asarray(target, dtype=float) / scale)
    return scale * np.asarray(optimizer.coef_, dtype=float).reshape(-1)


def least_squares_on(theta: np.ndarray, target: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Ordinary least-squares coefficients on the columns in `support`, zero elsewhere; the
    columns are normalised first, or lstsq's cut-off drops the low powers of y in large units."""
    coef = np.zeros(theta.shape[1])
    if np.any(support):
        columns = theta[:, support]
        norms = np.linalg.norm(columns, axis=0)
        norms[norms == 0] = 1.0
        coef[support] = np.linalg.lstsq(columns / norms, target, rcond=None)[0] / norms
    return coef


@dataclass(frozen=True)
class Candidate:
    """One fitted model: its coefficients on the library, expression, trajectory error, setting."""

    coef: np.ndarray
    names: tuple[str, ...]
    rss: float
    params: dict = field(default_factory=dict)

    @property
    def terms(self) -> int:
        return int(np.count_nonzero(self.coef))

    @property
    def expression(self) -> str:
        return expression(self.coef, self.names)


def candidate(coef: np.ndarray, names: tuple[str, ...], t: np.ndarray, y: np.ndarray, **params) -> Candidate:
    """A Candidate with its integrated-trajectory error on the observations (infinite when a
    coefficient is not finite: the library overflowed on the data)."""
    if not np.all(np.isfinite(coef)):
        return Candidate(coef, names, math.inf, params)
    return Candidate(coef, names, fitting.trajectory_rss(parse(expression(coef, names)), t, y, mxstep=SOLVE_MXSTEP), params)


def unique(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates with distinct expressions, first occurrence kept (many settings give one model)."""
    seen, kept = set(), []
    for c in candidates:
        if c.expression not in seen:
            seen.add(c.expression)
            kept.append(c)
    return kept


def finite(candidates: list[Candidate]) -> list[Candidate]:
    usable = [c for c in candidates if math.isfinite(c.rss)]
    if not usable:
        overflowed = sum(not np.all(np.isfinite(c.coef)) for c in candidates)
        why = f"; {overflowed} had coefficients that are not finite: is the data's scale extreme?" if overflowed else ""
        raise RuntimeError(f"no fitted model could be integrated along the data ({len(candidates)} tried{why})")
    return usable


def check_grid(method) -> None:
    """For `check_params` of the methods that select among library degrees and STLSQ thresholds
    by the integrated trajectory (sindy-weak, sindy-ensemble)."""
    require(are_whole(method.degrees, 1), "degrees", method.degrees, "whole numbers >= 1, such as (1, 2, 3)")
    require(are_numbers(method.thresholds, 0), "thresholds", method.thresholds, "numbers >= 0, such as (0.01, 0.1)")
    require(are_numbers((method.alpha,), 0), "alpha", method.alpha, "a number >= 0")
    require(are_numbers((method.tolerance,), 0), "tolerance", method.tolerance, "a number >= 0")


def most_parsimonious(candidates: list[Candidate], tolerance: float, y: np.ndarray,
                      floor: float = 1e-4) -> list[Candidate]:
    """Candidates ranked by trajectory error, except that the models whose root-mean-square
    trajectory error is within `tolerance` (relative) of the best one's plus `floor` x std(y)
    come first, fewest terms first: at sigma = 0 every good model fits to round-off and the
    simplest should win; with noise the noise sets the scale and the tolerance applies."""
    usable = sorted(finite(candidates), key=lambda c: c.rss)
    n = len(y)
    cut = (1.0 + tolerance) * math.sqrt(usable[0].rss / n) + floor * float(np.std(y))
    near = sorted((c for c in usable if math.sqrt(c.rss / n) <= cut), key=lambda c: (c.terms, c.rss))
    return near + [c for c in usable if math.sqrt(c.rss / n) > cut]


CRITERIA = ("aic", "bic")


def information_criterion(c: Candidate, n: int, kind: str, floor: float = 0.0) -> float:
    """AIC = n log(RSS/n) + 2k or BIC = n log(RSS/n) + k log n of the trajectory fit (k = terms);
    `floor` bounds RSS/n from below, so models that all fit to round-off are told apart by k."""
    if kind not in CRITERIA:
        raise ValueError(f"unknown information criterion {kind!r}; use one of {', '.join(CRITERIA)}")
    fit = n * math.log(max(c.rss / n, floor, 1e-300))
    return fit + (2.0 if kind == "aic" else math.log(n)) * c.terms


@contextlib.contextmanager
def seeded(seed: int):
    """Seed numpy's global generator for the block and restore it after: pysindy's weak library
    (domain centres) and EnsembleOptimizer (bags) draw from `np.random` and take no seed."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)

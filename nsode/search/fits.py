"""One fitted candidate of the search (`Found`) and what is measured of it on a record: its
trajectory's R^2 and information criterion, its residuals in noise levels, its course beyond the
data. Shared by the fits (nsode.search), the choice (nsode.search.choice), the joint read (nsode.joint)
and what `nsode predict` prints (nsode.report, nsode.search.digits).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy

from odecore.expressions import evaluate
from odecore.fitting import SOLVE_FAILURES, Template, information_criterion, trajectory
from odecore.metrics import r2


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
    weighted: bool = False  # its least squares weighed each residual by the noise profile (many decades)

    @property
    def score(self) -> float:
        """What the choice ranks by: the information criterion plus the charges of `prior`."""
        return self.ic + self.prior


def distinct_laws(found: list[Found], y: np.ndarray) -> list[Found]:
    """`found` in its order, each law once: a later fit whose f takes the same values as an earlier
    one's at every observed y (to 1e-9) is left out. One law reaches the list in several spellings
    (`-y*log(1/y)` and `y*log(y)`, `(y**y)**cos(y)` and `(y**cos(y))**y` where y > 0) and from several
    sources (another y0); shown twice, it takes a place in the list and poses as a rival of itself."""
    kept, out = np.empty((len(found), np.size(y))), []
    for f in found:
        with np.errstate(all="ignore"):
            values = np.broadcast_to(np.asarray(evaluate(f.expr, y), dtype=float), np.shape(y)).ravel()
        earlier = kept[:len(out)]
        scale = 1e-12 * np.abs(values[np.isfinite(values)]).max(initial=0.0)
        if np.any(np.all(np.isclose(earlier, values, rtol=1e-9, atol=scale, equal_nan=True), axis=1)):
            continue
        kept[len(out)] = values
        out.append(f)
    return out


def restate(found: Found, start: float, t, y) -> None:
    """`found`, fitted to group means of the record (t, y) (odecore.fitting.bin_means) with its y0 at
    their first time `start`, restated for the record itself (`carried_back`)."""
    found.y0, found.r2 = carried_back(found.template, found.values, found.y0, start, t, y)


def carried_back(template: Template, values, y0: float, start: float, t, y) -> tuple[float, float]:
    """A fit to group means of the record (t, y), its y0 at their first time `start`, restated for
    the record itself: (y0 carried back to t[0] along its own law, R^2 on every observation; -inf
    where either fails)."""
    try:
        if start != t[0]:
            y0 = float(trajectory(template, values, y0, np.array([start, t[0]]))[-1])
        return y0, r2(trajectory(template, values, y0, t), y)
    except SOLVE_FAILURES:
        return y0, -math.inf


def trajectory_score(template: Template, values, y0: float, t, y, sigma: float,
           profile: np.ndarray | None = None) -> tuple[float, float]:
    """(R^2, information criterion) of the trajectory from y0 on the observations; with a noise
    `profile` (odecore.noise.noise_profile) each residual counts in its own point's noise."""
    try:
        path = trajectory(template, values, y0, t)
    except SOLVE_FAILURES:
        return -math.inf, math.inf
    residual = weighted(path - y, profile)
    return r2(path, y), information_criterion(float(residual @ residual), len(y), len(values) + 1, sigma)


def weighted(residual: np.ndarray, profile: np.ndarray | None) -> np.ndarray:
    """Residuals in units of their own point's noise relative to the record's (unchanged without a profile)."""
    return residual if profile is None else residual / profile


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
    residual = weighted(path - np.asarray(y, float), profile)
    return float(np.sqrt(np.mean(residual**2))) / sigma


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

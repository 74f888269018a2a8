"""Whether a fitted law is safe to extrapolate: a law that explodes, meets a pole or a domain
edge, or turns back just beside where the data start (within the start's uncertainty), or that
hides a pause between two observations, is rarely the law, however well it fits (issue 16's
robust picks; docs/search.md names each check's version).
"""
from __future__ import annotations

import math

import numpy as np

from odecore.fitting import SOLVE_FAILURES, Template, trajectory

MANY_DECADES = 100.0  # record_growth above this: a record spanning many decades (nsode.search)
PAUSE_SHARE = 0.25  # hidden_pause: |f| between two observations below this share of |f| at both is a pause
PAUSE_POINTS = 64  # hidden_pause: values of y looked at between two consecutive observations
ORIGIN_SHARE = 0.1  # unstable_reason(origin=True): a record whose first time lies this share of its span after 0


def unstable_reason(template: Template, values, y0: float, t: np.ndarray, sigma: float, *,
                    y: np.ndarray | None = None, span: float = 2.0, points: int = 128,
                    bound: float = 1e4, keep_sign: bool = False, rest_in_noise: bool = False,
                    rest_limit: bool = False, start_scaled: bool = False, grown: bool = False,
                    turn_back: bool = False, origin: bool = False, lead_added: bool = False) -> str | None:
    """Why the fitted ODE is unsafe to extrapolate, or None: from y0 and y0 +- delta its solution
    must exist on `span` times the observed interval (no pole, no domain edge, finite) and stay
    within `bound` times the size of the observations `y` (default |y0|). delta is the largest
    of 2 sigma, 1e-3 of that size, twice the fit's miss of the first observation, and how far
    the fitted law moves y in one median sampling interval: where the data start is known no
    better than that, and a curve fit that starts just beside an unstable equilibrium or a pole
    (steep, so that it can follow the data's slope right up to it) fails from where the data
    start. When 0 lies within delta of y0 the solution must also exist from exactly 0: many
    experiments start there (at rest, empty, uncharged), and a law with a removable singularity
    at 0 (sin(y)/y) fits the data beside it but cannot be integrated from it. With `keep_sign`,
    a perturbed start that crosses 0 where the observations `y` never do is left out (0 itself,
    the start at rest, is then checked instead): a population or a concentration recorded
    sparsely moves more than its own size in one interval, and no law need hold below 0. With
    `rest_in_noise`, 0 is checked only when y0 lies within the noise part of delta (not within
    the law's motion alone): a record that moves more than y0 per interval did not start at rest.
    With `rest_limit`, a law that is not a number at 0 but tends to 0 there from the observations'
    side (Gompertz's y log y) passes the start at rest: rest is its equilibrium in the limit, and
    what starts empty stays empty; a finite nonzero limit (sin(y)/y) or a pole still fails. With
    `start_scaled`, a course from a start c = |y0 +- delta| / |y0| > 1 times y0 may reach c times the
    bound, as the course of a law linear in y does: delta, read from noise that grows with the
    record, can be many times the first value of a growth, and the law itself then fails. With
    `grown`, a record that itself grew G-fold (`record_growth`) may go G^2 times its size where
    that exceeds the bound: exponential growth by G > 100 continues by G again over the next
    span, and the bound alone refuses the law itself from G = 1e4 (four decades) on. With
    `turn_back`, the course from y0 +- delta must not move against the course from y0 by more
    than 2 delta: an unstable equilibrium within the start's uncertainty sends the law's course
    the other way from where the data may have started, while a stable one moves it by delta at
    most. With `origin`, a record whose first time lies after 0 by at most ORIGIN_SHARE of its
    span most likely began at t = 0 (times counted from the experiment's start): delta covers
    the motion over that lead too, the law's and the record's over as long just after its first
    observation (a law that hides an equilibrium there moves slowly beside it). With `lead_added`,
    that motion adds to the start's own uncertainty (noise, the fit's miss) instead of replacing
    the smaller: where the record was at 0 is uncertain by both at once."""
    t = np.asarray(t, float)
    grid = np.linspace(t[0], t[0] + span * (t[-1] - t[0]), points)
    size = max(abs(y0) if y is None else float(np.max(np.abs(y))), 1e-12)
    miss = 0.0 if y is None else abs(float(y[0]) - y0)
    try:
        slope = abs(float(template.scalar(y0, *(float(v) for v in values))))
    except (ArithmeticError, ValueError, TypeError):
        return f"not real-valued at y0 = {y0:.4g}"
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    early = 0.0  # how far the record may have moved between t = 0 and its first observation
    if origin and y is not None and 0 < t[0] <= ORIGIN_SHARE * (t[-1] - t[0]):
        step = max(step, float(t[0]))  # the law's motion over the lead, below
        early = abs(float(y[min(np.searchsorted(t, 2 * t[0]), len(t) - 1)] - y[0]))  # the record's, just after it
    noise = max(2 * sigma, 1e-3 * size, 2 * miss)
    delta = max(noise + early if lead_added else noise, early, slope * step if math.isfinite(slope) else 0.0)
    starts = (y0, y0 - delta, y0 + delta) + ((0.0,) if abs(y0) <= (noise if rest_in_noise else delta) else ())
    if keep_sign and y is not None and (np.all(y > 0) or np.all(y < 0)):
        starts = tuple(start for start in starts if start == 0 or np.sign(start) == np.sign(y[0]))
    growth = record_growth(y) if grown and y is not None else 0.0
    reach = max(bound, growth * growth) * max(size, sigma)  # a product, not ** 2: past 1e154-fold it is inf, no OverflowError
    motion = 0.0  # of the course from y0 (the first start) over the grid
    for start in starts:
        at_rest = start == 0 and rest_limit and y is not None
        if at_rest and _rest_in_the_limit(template, values, y, noise / (grid[-1] - grid[0])):
            continue  # what starts empty stays empty
        try:
            path = trajectory(template, values, start, grid)
        except SOLVE_FAILURES as err:
            return f"from y0 = {start:.4g}: {err}"
        limit = reach
        if start_scaled and start != 0 and y0 != 0:
            limit *= max(1.0, abs(start / y0))
        if np.max(np.abs(path)) > limit:
            return f"from y0 = {start:.4g}: |y| reaches {np.max(np.abs(path)):.3g}"
        if start == y0:
            motion = float(path[-1] - path[0])
        elif turn_back and start != 0 and abs(motion) > delta and (path[-1] - path[0]) * np.sign(motion) < -2 * delta:
            return f"from y0 = {start:.4g}: the course turns back (an unstable equilibrium beside y0)"
    return None


def record_growth(y: np.ndarray) -> float:
    """How many times its early size a record grew: max |y| over the median |y| of its first 5%
    of observations (at least 3; a median, so that one noisy value near 0 does not read as a
    start from nothing). 1 where those are all 0."""
    y = np.abs(np.asarray(y, float))
    early = float(np.median(y[: max(3, len(y) // 20)]))
    return float(np.max(y)) / early if early > 0 else 1.0


def hidden_pause(template: Template, values, y0: float, t: np.ndarray, *, share: float = PAUSE_SHARE,
                 points: int = PAUSE_POINTS) -> str | None:
    """Where the fitted law nearly stops, or is not real-valued, between two consecutive
    observations of its own course, or None. A scalar ODE's course is monotone, so between
    y(t_i) and y(t_i+1) it passes every value; where |f| there falls below `share` of |f| at
    both ends, the course lingers between two samples (a denominator that almost vanishes, a
    near-zero the data never show). Such a pause only shifts the later course in time, so it
    buys a fit of the noise, and a law does not hide one between samples that see it on both
    sides. Steps that move the course by less than 1e-3 of its range are skipped (rest)."""
    try:
        course = trajectory(template, values, y0, np.asarray(t, float))
    except SOLVE_FAILURES:
        return None  # unstable_reason says why
    start, end = course[:-1], course[1:]
    moved = np.abs(end - start) > 1e-3 * (np.max(course) - np.min(course))
    if not np.any(moved):
        return None
    start, end = start[moved], end[moved]
    between = start[:, None] + (end - start)[:, None] * np.linspace(0, 1, points + 2)[None, 1:-1]
    c = [float(v) for v in values]
    ends = np.minimum(*(np.abs(template.values_and_gradients(v, c)[0]) for v in (start, end)))
    inside = np.abs(template.values_and_gradients(between.ravel(), c)[0]).reshape(between.shape)
    with np.errstate(invalid="ignore"):
        paused = (~np.isfinite(inside) | (inside < share * ends[:, None])) & np.isfinite(ends)[:, None]
    if not paused.any():
        return None
    i, j = np.argwhere(paused)[0]  # the first interval, and the first value in it
    what = f"falls to {inside[i, j]:.3g}" if np.isfinite(inside[i, j]) else "is not real-valued"
    return (f"f {what} at y = {between[i, j]:.4g}, between observations where |f| is at least {ends[i]:.3g}: "
            "a pause the samples cannot see")


def _rest_in_the_limit(template: Template, values, y: np.ndarray, tolerance: float) -> bool:
    """Whether f is not a number at 0 but tends to 0 from the observations' side: |f| within
    `tolerance` (a rate that moves y less than the noise over the check's span) at 1e-9 and 1e-12
    of the observations' size, and shrinking between them."""
    values = tuple(float(v) for v in values)
    peak = float(y[np.argmax(np.abs(y))])  # its sign is the observations' side, its size their scale
    try:
        at_zero = float(template.scalar(0.0, *values))
    except (ArithmeticError, ValueError, TypeError):
        at_zero = math.nan
    if math.isfinite(at_zero):
        return False  # a number at 0: integrated from there as any start
    try:
        near, nearer = (abs(float(template.scalar(scale * peak, *values))) for scale in (1e-9, 1e-12))
    except (ArithmeticError, ValueError, TypeError):
        return False
    return math.isfinite(near) and nearer <= near <= tolerance

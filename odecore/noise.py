"""The noise level of one observed trajectory, read from the data alone: every criterion and
stability check of a fit is in units of it. Each point's miss of the curve through its
neighbours measures the noise (irregular times allowed); `noise_profile` says whether it grows
with |y|, `pooled_levels` reads it from several short records together, and `isolated_glitches`
finds single readings that stand apart from their course.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import nnls

NOISE_FLOOR = 1e-4  # relative to the data's scale: the smallest noise level the criterion assumes
CURVATURE_RATIO = 2.0  # a line-fit noise estimate this many times the cubic's is mostly curvature
NOISE_GROWTH = 2.0  # noise_profile: the level at the largest |y| this many times that at the smallest
PROFILE_CLIP = 4.0  # noise_profile: relative levels are kept within [1/4, 4]
PROFILE_MIN_POINTS = 16  # noise_profile: fewer observations give no profile
GLITCH_NOISES = 8.0  # isolated_glitches: a point this many robust noise levels off its neighbours' course


def estimate_noise(t: np.ndarray, y: np.ndarray, *, curvature: bool = False) -> float:
    """Standard deviation of the observation noise (root mean square over the trajectory), from
    each point's miss of the straight line through its two neighbours; irregular times allowed.
    The curvature of a smooth trajectory adds O(h^2 y'') to that miss: negligible at the usual
    64-256 points, but on a dozen clean points it reads the curve as noise. The search keeps
    that estimate (its integral-form stages need the slack: docs/search.md, "Session 41"). With
    `curvature`, the miss of the cubic through the four nearest neighbours, O(h^4), is read too
    and taken instead when the line's estimate exceeds it by more than pure noise explains
    (`CURVATURE_RATIO`): the noise alone, for standard errors. The mean square, not a median: a
    median's estimate from 64 points is so noisy that the criterion's penalty of log n per
    constant drowns in it."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < 5:
        return 0.0
    w = (t[2:] - t[1:-1]) / (t[2:] - t[:-2])  # weight of the left neighbour
    residual = y[1:-1] - (w * y[:-2] + (1 - w) * y[2:])
    spread = np.sqrt(1 + w**2 + (1 - w) ** 2)  # the residual's noise is sigma times this
    line = _root_mean_square(residual / spread)
    if not curvature or len(y) < 10:  # fewer than 6 cubic misses: too loose to overrule the line
        return line
    cubic_misses = _interpolation_misses(t, y, 2)
    cubic = _root_mean_square(cubic_misses)
    limit = max(CURVATURE_RATIO, 1 + 4 / math.sqrt(len(cubic_misses)))
    return cubic if line > limit * cubic else line


def noise_profile(t: np.ndarray, y: np.ndarray, clip: float = PROFILE_CLIP, reweight: int = 0) -> np.ndarray | None:
    """Each observation's noise level relative to the record's root mean square, where the noise
    evidently grows with |y|; else None. Measured noise is often relative (1% of the reading):
    on a record whose values fall twentyfold its first points carry most of the noise, and
    an unweighted comparison of fits rewards a flexible law for following it there. The levels
    come from sigma_i^2 = a + b y_i^2 fitted by non-negative least squares to the squared misses
    of the cubic through each point's four nearest neighbours (a line's miss grows with the
    curvature, which is largest where a decay is fastest: at its largest values). "Evidently":
    the fitted level at the largest |y| is at least NOISE_GROWTH times that at the smallest. The
    profile is clipped to [1 / clip, clip]. Unweighted, the fit of a and b is set by the largest
    values, and over many decades a comes out as large as their own noise (a floor that hides the
    small values' quiet); `reweight` rounds refit it with each squared miss in its own fitted level
    (iteratively reweighted least squares)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < PROFILE_MIN_POINTS:
        return None
    design, squared = _level_data(t, y)
    (a, b), _ = nnls(design, squared)
    for _ in range(reweight):
        inner = a + b * y[2:-2] ** 2
        if not np.all(inner > 0):
            break
        (a, b), _ = nnls(design / inner[:, None], squared / inner)
    level = a + b * y**2
    if not np.all(level > 0) or level.max() < NOISE_GROWTH**2 * level.min():
        return None
    profile = np.sqrt(level / level.mean())
    return np.clip(profile, 1 / clip, clip)


def pooled_levels(records: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """Each point's noise level, read from all `records` together (runs of one instrument, each too
    short to read its own: on 8 points the line's miss is mostly curvature, and the noise level it
    reads is over 2.6 times the truth in a quarter of records): sigma_i^2 = a + b y_i^2, additive and
    relative noise alike, fitted by non-negative least squares to the squared misses of the cubic
    through each point's four nearest neighbours in every record; never below NOISE_FLOOR of each
    record's scale."""
    data = [_level_data(np.asarray(t, float), np.asarray(y, float)) for t, y in records if len(y) >= 5]
    a = b = 0.0
    if data:
        designs, squares = zip(*data)
        (a, b), _ = nnls(np.vstack(designs), np.concatenate(squares))
    return [np.maximum(np.sqrt(a + b * np.asarray(y, float) ** 2), noise_floor(y)) for _, y in records]


def _level_data(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The design [1, y_i^2] and the squared cubic misses of a record's inner points: what
    sigma_i^2 = a + b y_i^2 is fitted to (`noise_profile`, `pooled_levels`)."""
    return np.column_stack([np.ones(len(y) - 4), y[2:-2] ** 2]), _interpolation_misses(t, y, 2) ** 2


def _interpolation_misses(t: np.ndarray, y: np.ndarray, width: int) -> np.ndarray:
    """Each point's miss of the polynomial through its `width` neighbours on either side (the
    point itself left out), divided by the miss's spread under unit noise, sqrt(1 + sum w^2)."""
    inner = np.arange(width, len(y) - width)
    around = inner[:, None] + np.r_[-width:0, 1:width + 1]
    ti, tn = t[inner][:, None], t[around]
    weights = np.ones_like(tn)  # Lagrange weights of the neighbours at t_i
    for j in range(around.shape[1]):
        for k in range(around.shape[1]):
            if j != k:
                weights[:, j] *= (ti[:, 0] - tn[:, k]) / (tn[:, j] - tn[:, k])
    return (y[inner] - np.sum(weights * y[around], axis=1)) / np.sqrt(1 + np.sum(weights**2, axis=1))


def _root_mean_square(values: np.ndarray) -> float:
    return float(np.sqrt(np.mean(values**2)))


def noise_level(t: np.ndarray, y: np.ndarray, *, curvature: bool = False,
                profile: np.ndarray | None = None) -> float:
    """`estimate_noise`, but never below NOISE_FLOOR of the data's scale (clean data, solver error).
    With a noise `profile`, the root mean square of the cubic misses each divided by its point's
    profile instead: the level the profile is relative to, read from every point alike. Plain, a
    record whose noise grows with |y| is read from its few largest values (a growth over six
    decades from 40 points: from about three)."""
    if profile is None:
        level = estimate_noise(t, y, curvature=curvature)
    else:
        level = _root_mean_square(_interpolation_misses(t, y, 2) / np.asarray(profile, float)[2:-2])
    return max(level, noise_floor(y))


def noise_floor(y: np.ndarray) -> float:
    """NOISE_FLOOR of the data's scale (its spread plus a thousandth of its largest |y|, 1 for all
    zeros): the smallest noise level any reading of the data assumes."""
    y = np.asarray(y, float)
    return NOISE_FLOOR * ((float(np.std(y)) + 1e-3 * float(np.max(np.abs(y)))) or 1.0)


def isolated_glitches(t: np.ndarray, y: np.ndarray, threshold: float = GLITCH_NOISES) -> list[int]:
    """Indices of single points that stand apart from their neighbours' course: a glitch (a
    mistyped reading, a spike) bends a least-squares fit and inflates the noise level read from
    the data. Each point's miss of the cubic through its four nearest neighbours is compared with
    robust levels (medians of all misses) under both noise models, additive and relative to |y|;
    a glitch is beyond `threshold` under both, pushes its two neighbours' misses the other way,
    and leaves them ordinary (below half the threshold) once it is taken out. Curvature fails the
    last two tests: a sharp turn sampled by few points misses one way and stays. Measured on the
    built-in datasets' records (n 32-256, sigma 0-0.05; `benchmarks/glitches.py`, docs/search.md,
    "Version 33"): 3 of 8,256 glitch-free records flagged; a reading 1.5 times too large found in
    83-97% of the records at sigma 0.01, 44-74% at 0.02 (placed at indices 3 to n - 4). The first and
    last three points are never flagged: a point needs two neighbours each side, and its neighbours'
    misses to be judged."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < 7 or not np.any(y):
        return []
    misses, inner = _interpolation_misses(t, y, 2), y[2:-2]
    nonzero = inner != 0
    additive = max(1.4826 * float(np.median(np.abs(misses))), noise_floor(y))
    relative = 1.4826 * float(np.median(np.abs(misses[nonzero] / inner[nonzero]))) if nonzero.any() else 0.0

    def size(miss, value):  # in noise levels: the smaller reading of the two noise models
        scale = relative * np.abs(value)
        by_value = np.divide(np.abs(miss), scale, out=np.full(np.shape(miss), np.inf), where=scale > 0)
        return np.minimum(np.abs(miss) / additive, by_value)

    sign = np.sign(misses)
    pushed = (sign[:-2] == sign[2:]) & (sign[:-2] == -sign[1:-1])  # both neighbours' misses the other way
    glitches = []
    for i in np.flatnonzero((size(misses, inner)[1:-1] > threshold) & pushed) + 1:
        k = i + 2  # the point's index in y; its neighbours' misses without it, from their own neighbours
        around = np.r_[k - 3:k, k + 1:k + 4]
        if np.all(size(_interpolation_misses(t[around], y[around], 2), y[[k - 1, k + 1]]) < threshold / 2):
            glitches.append(int(k))
    return glitches

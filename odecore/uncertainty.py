"""How well the data determine a fit's numbers: their standard errors from the trajectory's
sensitivities, the digits worth printing, and how well a fit to the first part of a record
predicts the rest.
"""
from __future__ import annotations

import math

import numpy as np

from odecore.fitting import CONDITION_LIMIT, SOLVE_FAILURES, Template, standard_errors_from, trajectory

RESOLVED = 1e-6  # a difference step must move the trajectory this much, relative to it (solver rtol 1e-10)
UNDETERMINED_DIGITS = 4  # significant digits shown of a number with an infinite standard error


def sensitivities(template: Template, values, y0: float, t: np.ndarray, *,
                  rel_step: float = 1e-5) -> tuple[np.ndarray, np.ndarray] | None:
    """(J, size): J[i, j] the trajectory's sensitivity at t_i to number j of (y0, *values) times
    that number's size (central differences of tightly integrated solutions, steps relative to
    each number, so units do not matter); None where a perturbed trajectory cannot be integrated
    or J is not finite. A number whose own step moves the trajectory less than the solver's error
    can resolve (a slope fitted to 1e-16 on a straight line) is stepped tenfold larger, up to the
    largest number's step."""
    x = np.array([y0, *values], dtype=float)
    t = np.asarray(t, float)
    size = np.where(x != 0, np.abs(x), 1.0)
    largest = float(np.max(size))
    jac = np.empty((len(t), len(x)))
    for i in range(len(x)):
        while True:
            h = rel_step * size[i]
            up, down = x.copy(), x.copy()
            up[i] += h
            down[i] -= h
            try:
                paths = [trajectory(template, p[1:], p[0], t, rtol=1e-10, atol=1e-12) for p in (up, down)]
            except SOLVE_FAILURES:
                return None
            moved = np.max(np.abs(paths[0] - paths[1]), initial=0.0)
            if moved > RESOLVED * np.max(np.abs(paths[0]), initial=0.0) or size[i] >= largest:
                break
            size[i] = min(10 * size[i], largest)
        jac[:, i] = (paths[0] - paths[1]) / (2 * h)
    if not np.all(np.isfinite(jac)):
        return None
    return jac * size, size


def standard_errors(template: Template, values, y0: float, t: np.ndarray, sigma: float, *,
                    rel_step: float = 1e-5, profile: np.ndarray | None = None, weighted: bool = True) -> np.ndarray:
    """Standard errors of (y0, *values) for observations at `t` with noise `sigma`: the square
    roots of the diagonal of sigma^2 (J^T J)^-1, J the trajectory's sensitivity to them
    (`sensitivities`). inf for a number the data cannot determine (odecore.fitting.standard_errors_from:
    c0 and c2 in c0*y + c1*y*log(c2*y), while c1 and y0 keep theirs), and for all where the
    trajectory cannot be integrated. With a noise `profile`, point
    i's noise is sigma times profile[i]: for a fit `weighted` by it (each row of J divided by it),
    where the noise grows with |y|, the quiet small values fix a growth's rate far better than
    equal noise would say; for an unweighted fit, whose large values count as much as they are
    noisy, the errors are the sandwich's (odecore.fitting.standard_errors_from), wider."""
    found = sensitivities(template, values, y0, t, rel_step=rel_step)
    if found is None:
        return np.full(len(values) + 1, math.inf)
    jac, size = found
    if profile is not None and weighted:
        jac = jac / np.asarray(profile, float)[:, None]
    return sigma * size * standard_errors_from(jac, noise=None if weighted else profile)


def predictive_error(template: Template, values, y0: float, t: np.ndarray, y: np.ndarray, cut: int,
                     sigma: float) -> float:
    """How well the fit to the first `cut` observations (its numbers `values`, `y0`) predicts the
    rest, in noise variances: minus twice the log predictive density of y[cut:] up to a constant,
    r' S^-1 r + log det S with S = I + J_rest (J_first' J_first)^-1 J_rest' (noise plus the
    first part's uncertainty about the numbers, carried to the rest; J = `sensitivities`).
    Unlike the squared forecast error, a number the first part cannot pin down (a saturation
    level seen only later) costs the log of its uncertainty, not the square of its drift.
    inf where the trajectory or its sensitivities cannot be computed."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    try:
        r = (trajectory(template, values, y0, t) - y)[cut:] / sigma
    except SOLVE_FAILURES:
        return math.inf
    found = sensitivities(template, values, y0, t)
    if found is None or not np.all(np.isfinite(r)):
        return math.inf
    jac = found[0]  # S does not depend on the sensitivities' units
    _, s, vt = np.linalg.svd(jac[:cut], full_matrices=False)
    if s[0] == 0:
        return math.inf
    s = np.maximum(s, CONDITION_LIMIT * s[0])  # a direction the first part misses: very uncertain, not infinitely
    b = jac[cut:] @ vt.T / s  # S = I + b b'
    m = np.eye(len(s)) + b.T @ b
    rb = b.T @ r
    return float(r @ r - rb @ np.linalg.solve(m, rb) + np.linalg.slogdet(m)[1])


def round_to_error(value: float, error: float, max_digits: int = 6, extra: int = 0) -> float:
    """`value` rounded at the decimal place of the first significant digit of its standard
    error (the digits the data support), to at least one and at most `max_digits` significant
    digits, plus `extra`: 0.49873 +- 0.0021 reads 0.499; a number the data cannot tell from zero
    keeps one digit. An infinite error (the number trades off exactly against others, so the
    data fix none of its digits alone) keeps UNDETERMINED_DIGITS, as the candidate list does."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{_supported_digits(value, error, max_digits, extra)}g}")


def written_to_error(value: float, error: float, max_digits: int = 6, extra: int = 0) -> str:
    """`value` as `round_to_error` rounds it, written with every digit it keeps, trailing zeros
    included (4.00 +- 0.012, not 4); a value already rounded further keeps its own digits."""
    rounded = round_to_error(value, error, max_digits, extra)
    if rounded == 0 or not math.isfinite(rounded) or not math.isfinite(error):
        return f"{rounded:g}"  # no padding zeros: they would claim digits the data do not fix
    own = len(repr(abs(rounded)).split("e")[0].replace(".", "").strip("0"))  # shortest round-trip digits
    digits = max(_supported_digits(rounded, error, max_digits, extra), own)
    mantissa, _, exponent = f"{rounded:#.{digits}g}".partition("e")
    return mantissa.rstrip(".") + (f"e{exponent}" if exponent else "")


def _supported_digits(value: float, error: float, max_digits: int, extra: int) -> int:
    magnitude = math.floor(math.log10(abs(value)))
    if math.isfinite(error) and error > 0:
        digits = magnitude - math.floor(math.log10(error)) + 1
    else:
        digits = UNDETERMINED_DIGITS if not math.isfinite(error) else max_digits
    return min(min(max(digits, 1), max_digits) + extra, 17)

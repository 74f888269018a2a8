"""Stage 1's cheap score: every sum of terms fitted at once by linear least squares on the integral
form y(t) - y(t_0) = sum_k c_k integral(term_k), batched by size (nsode.search.proposals).
"""
from __future__ import annotations

import math

import numpy as np

from odecore.fitting import information_criterion
from nsode.search.terms import MAX_CONSTANTS, Term, free_constants

RIDGE = 1e-12  # of the integral form's normal equations (unit-norm columns), for collinear terms
LSQ_RCOND = 1e-10  # where that would bend a fit, least squares drops directions this much weaker than the strongest


def linear_fits(sums: list[list[Term]], y: np.ndarray, sigma: float) -> list[tuple[np.ndarray, float]]:
    """(y0 and term coefficients, information criterion) of each sum by linear least squares on
    the integral form, batched by size (normal equations on unit-norm columns, a tiny ridge for
    collinear terms; solved exactly where that ridge would bend the fit, as on a record with a
    large offset); a sum with more than MAX_CONSTANTS constants scores inf."""
    out: list = [(np.zeros(len(s) + 1), math.inf) for s in sums]
    constants = [free_constants(subset) for subset in sums]
    by_size: dict[int, list[int]] = {}
    for i, subset in enumerate(sums):
        if constants[i] <= MAX_CONSTANTS:
            by_size.setdefault(len(subset), []).append(i)
    columns: dict[int, int] = {}  # id of a term -> its row in `integrals` (row 0: the y0 column)
    rows = [np.ones_like(y)]
    for subset in sums:
        for term in subset:
            if id(term) not in columns:
                columns[id(term)] = len(rows)
                rows.append(term.integral)
    integrals = np.array(rows)
    for size, index in by_size.items():
        picks = np.array([[0, *(columns[id(term)] for term in sums[i])] for i in index])
        design = integrals[picks].transpose(0, 2, 1)  # [sums, n, 1 + size]
        norm = column_norms(design)
        unit = design / norm
        gram = np.einsum("snk,snj->skj", unit, unit)
        x = np.linalg.solve(gram + RIDGE * np.eye(size + 1), np.einsum("snk,n->sk", unit, y)[..., None])[..., 0]
        finite = np.isfinite(gram).all(axis=(1, 2))
        weak = np.zeros(len(gram), bool)  # where the ridge would bend the fit: solved exactly
        weak[finite] = np.linalg.eigvalsh(gram[finite])[:, 0] < 1e4 * RIDGE
        if np.any(weak):
            try:
                x[weak] = least_squares_unit(unit[weak], y)
            except np.linalg.LinAlgError:  # an SVD that does not converge keeps the ridge's fit
                pass
        x = x / norm[:, 0, :]
        rss = np.sum((np.einsum("snk,sk->sn", design, x) - y) ** 2, axis=1)
        for j, i in enumerate(index):
            out[i] = (x[j], information_criterion(float(rss[j]), len(y), constants[i] + 1, sigma))
    return out


def least_squares_unit(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of each design [sums, n, k] (unit-norm columns) against y, by QR and
    the SVD of its small factor: exact where columns are nearly collinear (on a record with a large
    offset the integrals of 1 and of y are nearly parallel, and normal equations square that), the
    minimum-norm solution where they are collinear (directions below LSQ_RCOND of the strongest dropped)."""
    q, r = np.linalg.qr(design)
    u, s, vt = np.linalg.svd(r, full_matrices=False)  # fewer points than columns too
    keep = s > LSQ_RCOND * s[..., :1]
    inverse = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    projected = np.einsum("skj,sk->sj", u, np.einsum("snk,n->sk", q, y)) * inverse
    return np.einsum("sjk,sj->sk", vt, projected)


def column_norms(design: np.ndarray) -> np.ndarray:
    """Column norms of a design [..., n, k], kept as [..., 1, k]; 1 where a column is zero (the
    least-squares fits here run on unit-norm columns)."""
    with np.errstate(over="ignore"):  # a column past 1e154 norms to inf: it fits as zero
        norm = np.linalg.norm(design, axis=-2, keepdims=True)
    norm[norm == 0] = 1.0
    return norm

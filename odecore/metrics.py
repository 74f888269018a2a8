"""How close a predicted trajectory is to the true one: R^2, L1, L-infinity and isclose.

The same R^2 serves the harness's scores and NSODE's selection of candidates.
"""
from __future__ import annotations

import numpy as np

from odecore import protocol

METRICS = ("r2", "l1", "linf", "isclose")


def r2(pred: np.ndarray, truth: np.ndarray) -> float:
    """Coefficient of determination; -inf when the residual overflows; for a constant truth
    (no variance to explain), 1 when every point is within the isclose tolerances and -inf
    otherwise. A truth is constant when it varies by less than the solver's relative tolerance
    (protocol.RTOL): such variation is rounding and solver error, and a float mean one rounding
    step off a constant array left ss_tot at 1e-28, where a prediction off by 1e-9 scored -2e13."""
    pred, truth = _paired(pred, truth)
    with np.errstate(over="ignore", invalid="ignore"):  # a blown-up trajectory scores -inf
        ss_res = float(np.sum((truth - pred) ** 2))
    ss_tot = float(np.sum((truth - np.mean(truth)) ** 2))
    if not np.isfinite(ss_res):
        return -np.inf
    if ss_tot == 0.0 or np.ptp(truth) <= protocol.RTOL * float(np.max(np.abs(truth))):
        close = np.allclose(pred, truth, atol=protocol.ISCLOSE_ATOL, rtol=protocol.ISCLOSE_RTOL)
        return 1.0 if close else -np.inf
    return 1.0 - ss_res / ss_tot


def compare(pred: np.ndarray, truth: np.ndarray) -> dict:
    """{metric: value} of `pred` against `truth` (same grid): R^2, mean and max |difference|
    (units of y), and the share of points within the paper's isclose tolerances."""
    pred, truth = _paired(pred, truth)
    diff = np.abs(pred - truth)
    close = np.isclose(pred, truth, atol=protocol.ISCLOSE_ATOL, rtol=protocol.ISCLOSE_RTOL)
    return {"r2": r2(pred, truth), "l1": float(np.mean(diff)), "linf": float(np.max(diff)),
            "isclose": float(close.sum() / len(truth))}


def _paired(pred, truth) -> tuple[np.ndarray, np.ndarray]:
    """Both as float arrays of one shape, not empty: numpy would broadcast a column against a
    row, or one value against a trajectory, into a plausible but meaningless score."""
    pred, truth = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    if pred.shape != truth.shape or truth.size == 0:
        raise ValueError(f"prediction and truth must be non-empty arrays of one shape (got {pred.shape} and "
                         f"{truth.shape})")
    return pred, truth

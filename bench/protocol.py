"""The paper's evaluation protocol in one place: every module reads its constants from here."""
from __future__ import annotations

import numpy as np

T = 2.0  # observation (interpolation) interval [0, T]
T_EXTRA = 4.0  # extrapolation interval [T, T_EXTRA]
GRID = 1024  # equidistant points on each interval
RTOL = ATOL = 1e-9  # LSODA tolerances for ground truth and for integrating predictions
SOLVE_TIME_LIMIT = 10.0  # seconds of wall clock for one ODE solve

NOISE_LEVELS = (0.0, 0.001, 0.005, 0.01, 0.015, 0.02)  # sigma of multiplicative noise
N_SAMPLES = (128, 192, 256)  # observed points per trajectory
MIN_POINTS = 10  # fewer observations than this are refused

ISCLOSE_ATOL, ISCLOSE_RTOL = 1e-10, 0.05  # the paper's "average isclose"
R2_FLOOR = -np.inf  # R^2 given to failed or invalid predictions when taking medians

DEFAULT_TIME_LIMIT = 180.0  # seconds per (method, task); the paper's 3 minutes per fit


def interpolation_grid() -> np.ndarray:
    return np.linspace(0.0, T, GRID)


def extrapolation_grid() -> np.ndarray:
    return np.linspace(T, T_EXTRA, GRID)

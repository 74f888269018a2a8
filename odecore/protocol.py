"""The paper's evaluation protocol in one place: the harness, the baselines and the training-data
generator read their constants from here (the generator's `default.yaml` leaves these keys out
and takes them from `GENERATOR_DEFAULTS`)."""
from __future__ import annotations

import numpy as np

T = 2.0  # observation (interpolation) interval [0, T]
T_EXTRA = 4.0  # extrapolation interval [T, T_EXTRA]
GRID = 1024  # equidistant points on each interval
RTOL = ATOL = 1e-9  # LSODA tolerances for ground truth and for integrating predictions
MXSTEP = 20_000  # LSODA's step limit between two output points
SOLVE_MAX_RHS_CALLS = 5_000_000  # evaluations of f per ODE solve (truth, scoring): about 10 s on a 2-core VM
SOLVE_TIME_LIMIT = 60.0  # seconds of wall clock per solve: a safety net; the count above decides first
Y0_CHECK_MAX_RHS_CALLS = 1_000_000  # evaluations of f when checking a drawn y0 (about 2 s on a 2-core VM)
FD_TOLERANCE = 1.0  # a valid solution has max |FD derivative - f(y)| at most this (data generator and y0 draws)
REST_AT_EDGE = 1e-6  # |f| at the edge of its domain, relative to the largest |f| on the way, that counts as
#                    rest: a truth or a scored prediction reaching such an edge stays there (odecore.solving.solve)

NOISE_LEVELS = (0.0, 0.001, 0.005, 0.01, 0.015, 0.02)  # sigma of multiplicative noise
N_SAMPLES = (128, 192, 256)  # observed points per trajectory
MIN_POINTS = 10  # fewer observations than this are refused (harness and `nsode predict` alike)

ISCLOSE_ATOL, ISCLOSE_RTOL = 1e-10, 0.05  # the paper's "average isclose"
R2_FLOOR = -np.inf  # R^2 given to failed or invalid predictions when taking medians

DEFAULT_TIME_LIMIT = 180.0  # seconds per (method, task); the paper's 3 minutes per fit
RUN_TIME_LIMIT = 180.0  # seconds per hyperparameter run of an FD baseline (the paper: 3 minutes per run)
# task deadlines of the baselines whose grid search needs longer than one run (bsr, ffx; gplearn,
# operon, proged, pysr, sindy): the whole search must fit, each run still bounded by RUN_TIME_LIMIT
SEARCH_TIME_LIMIT = 420.0
LONG_SEARCH_TIME_LIMIT = 600.0

MAIN_FIGURE = {"dataset": "classic", "n": 192}  # the paper's main figure (Figure 3): Classic at n = 192
DATASET_FIGURE_N = 128  # n of the per-dataset R^2 figures

# what a solved trajectory depends on besides the equation and y0 (the truth cache's key; rest at a
# domain's edge is not in it: it only solves what failed before, and the cache holds no failure)
SOLVER_SETTINGS = {"method": "LSODA (scipy.integrate.odeint)", "rtol": RTOL, "atol": ATOL,
                   "atol_scaling": "times |y0| when below 1", "mxstep": MXSTEP, "steps_past_last_time": False,
                   "T": T, "T_extra": T_EXTRA, "grid": GRID}

# the training-data generator's defaults for the keys it shares with the protocol
GENERATOR_DEFAULTS = {"t_max": T, "t_extra": T_EXTRA, "grid": GRID, "rtol": RTOL, "atol": ATOL,
                      "fd_tolerance": FD_TOLERANCE}


def interpolation_grid() -> np.ndarray:
    return np.linspace(0.0, T, GRID)


def extrapolation_grid() -> np.ndarray:
    return np.linspace(T, T_EXTRA, GRID)


def truth_grid(t_max: float = T, t_extra: float = T_EXTRA, grid: int = GRID) -> np.ndarray:
    """[0, T] and [T, T_extra] (`grid` points each) as one grid, T once, for one LSODA run over
    both intervals: the harness's ground truth and the generator's solutions (its own T, grid)."""
    return np.concatenate([np.linspace(0.0, t_max, grid), np.linspace(t_max, t_extra, grid)[1:]])

"""SINDy (Brunton et al. 2016) with the paper's grid search: STLSQ on a library of polynomials
up to degree 10 plus sin, cos, exp, sqrt and log of y, fitted to smoothed finite differences.

"Finite-difference order" [2, 3, 5, 7, 9] is read as the degree of the local polynomial that
the derivative estimator fits over its 15-point window (pynumdiff widens the window to
3 * degree + 1 points for degrees 5, 7 and 9). Library terms that are not finite on the data
(log or sqrt of negative values, overflow) are dropped before each fit. All 800 settings take
a few seconds: each STLSQ fit is milliseconds, so no per-run child process is needed.
"""
import numpy as np

from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.sindy import SindyRegressor
from odecore import protocol


class Sindy(FiniteDifferenceMethod):
    name = "sindy"
    version = "1"
    requires = ("pysindy", "pynumdiff")
    time_limit = protocol.LONG_SEARCH_TIME_LIMIT
    description = "SINDy (pysindy STLSQ) on smoothed finite differences, grid-searched as in the paper"
    grid = {
        "threshold": [float(x) for x in np.logspace(-5, 0, 10)],
        "alpha": [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2],
        "max_iter": [20, 100],
    }
    fd_degrees = (2, 3, 5, 7, 9)
    run_time_limit = None  # a fit takes milliseconds; the task's deadline bounds the whole search

    def make_regressor(self, seed, time_limit=None):
        return SindyRegressor()

"""Shared fixtures of the baseline tests: the issue's logistic task and a bad trajectory."""
import numpy as np
import pytest

from core import protocol
from core.solving import solve_truth
from bench.method import Observations
from bench.tasks import Task, Trajectory

LOGISTIC = "0.23*y*(1 - y)"


@pytest.fixture(scope="session")
def logistic():
    """y' = 0.23 y (1 - y) from y0 = 0.1, solved on the protocol's grids."""
    y, y_extra = solve_truth(LOGISTIC, 0.1)
    return Trajectory("test", "logistic-0.1", 0, LOGISTIC, 0.1, protocol.interpolation_grid(), y,
                      protocol.extrapolation_grid(), y_extra)


@pytest.fixture(scope="session")
def logistic_observations(logistic):
    return Task(logistic, 0.0, 256, 0).observations()


@pytest.fixture
def overflowing_observations():
    """A trajectory that passes the input checks (|y| below 1e100) but whose powers overflow (an ODE blowing up)."""
    t = np.linspace(0, 2, 64)
    return Observations(t, 1e60 * np.exp(40 * t))


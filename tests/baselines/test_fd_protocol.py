"""The shared finite-difference protocol: derivative on irregular t, split, hard per-run limit."""
import time

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from baselines import fd
from bench.method import Budget, InvalidInput, Observations


class ProportionalRegressor(BaseEstimator, RegressorMixin):
    """dy = a * y by least squares, after sleeping `sleep` seconds (to provoke the time limit)."""

    def __init__(self, sleep=0.0, random_state=0):
        self.sleep = sleep
        self.random_state = random_state

    def fit(self, X, y):
        time.sleep(self.sleep)
        a = float(X[:, 0] @ y / (X[:, 0] @ X[:, 0]))
        self.expression_ = f"{a!r}*y"
        return self


class Proportional(fd.FiniteDifferenceMethod):
    name = "proportional-test"
    grid = {"sleep": [0.0, 30.0]}
    run_time_limit = 1.0

    def make_regressor(self, seed, time_limit=None):
        return ProportionalRegressor(random_state=seed)


def exponential_observations(n=128, seed=0):
    t = np.sort(np.random.default_rng(seed).choice(np.linspace(0, 2, 1024), n, replace=False))
    return Observations(t, 3.0 * np.exp(-0.5 * t))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_derivative_is_correct_on_random_irregular_times(seed):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 2, 128))
    y = np.sin(3 * t) + 2 * np.exp(-t)
    exact = 3 * np.cos(3 * t) - 2 * np.exp(-t)
    assert np.max(np.abs(fd.derivative(t, y) - exact)) < 1e-2 * np.max(np.abs(exact))
    obs = exponential_observations(seed=seed)
    relative = np.abs(fd.derivative(obs.t, obs.y) + 0.5 * obs.y) / (0.5 * obs.y)
    assert relative.max() < 1e-4


def test_split_trains_on_first_half_and_validates_on_second():
    t = np.linspace(0, 2, 50)
    ((train, valid),) = list(fd.split(t).split())
    assert t[train].max() <= 1.0 < t[valid].min()
    with pytest.raises(InvalidInput, match="at least 5 observations on each side"):
        fd.split(np.linspace(0, 2, 9))


@pytest.mark.parametrize("seed", range(5))
def test_sparse_or_crowded_times_are_split_at_their_middle_point(seed):
    rng = np.random.default_rng(seed)
    for t in (np.sort(rng.uniform(0, 2, 10)), np.r_[np.linspace(0, 0.1, 20), 5.0]):
        ((train, valid),) = list(fd.split(t).split())
        assert min(len(train), len(valid)) >= 5 and t[train].max() < t[valid].min()


def test_run_over_its_time_limit_is_killed_and_the_search_continues():
    start = time.perf_counter()
    prediction = Proportional().run(exponential_observations(), Budget(time_limit=60.0))
    assert time.perf_counter() - start < 15  # the 30 s run was killed after 1 s
    assert prediction.metadata["failed_runs"] == 1
    assert prediction.metadata["best_params"]["sleep"] == 0.0
    assert float(prediction.expression.split("*")[0]) == pytest.approx(-0.5, rel=1e-4)


def test_time_limited_fit_raises_fit_timeout():
    with pytest.raises(fd.FitTimeout):
        fd.TimeLimited(ProportionalRegressor(sleep=30.0), seconds=0.5).fit(np.ones((20, 1)), np.ones(20))


def test_every_run_failing_gives_one_clean_error():
    method = Proportional(grid={"sleep": [30.0]}, run_time_limit=0.5)
    with pytest.raises(RuntimeError, match="every hyperparameter run failed"):
        method.run(exponential_observations(), Budget(time_limit=60.0))


class TrueLawRegressor(BaseEstimator, RegressorMixin):
    """Answers the true law whatever derivative estimate it is given."""

    def fit(self, X, y):
        self.expression_ = "-0.5*y"
        return self


class TrueLaw(fd.FiniteDifferenceMethod):
    name = "true-law-test"
    run_time_limit = None

    def make_regressor(self, seed, time_limit=None):
        return TrueLawRegressor()


@pytest.mark.parametrize("degrees", [(9, 2), (2, 9)])
def test_fd_orders_are_compared_on_one_target(degrees):
    """The same law from every order scores the same: a smooth order's own estimate lies closer to
    it under noise, but that is no reason to prefer the order (the first of equals is kept)."""
    clean = exponential_observations()
    noisy = Observations(clean.t, clean.y * (1 + 0.02 * np.random.default_rng(0).standard_normal(len(clean.t))))
    prediction = TrueLaw(fd_degrees=degrees).run(noisy, Budget(time_limit=None))
    assert prediction.metadata["best_params"]["fd_degree"] == degrees[0]
    own = {d: np.mean((fd.derivative(noisy.t, noisy.y, degree=d) + 0.5 * noisy.y)[noisy.t > 1] ** 2) for d in degrees}
    assert own[2] < own[9]  # scored on its own estimate, order 2 would always win
    reference = fd.derivative(noisy.t, noisy.y, degree=3)
    expected = np.mean((reference + 0.5 * noisy.y)[noisy.t > 1] ** 2)
    assert prediction.metadata["reference_validation_mse"] == pytest.approx(expected)

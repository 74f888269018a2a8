"""The shared finite-difference protocol: derivative on irregular t, split, hard per-run limit."""
import time
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from odebaselines import fd
from bench.method import Budget, InvalidInput, Observations, OutOfTime


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
    prediction = Proportional().run(exponential_observations(), Budget(time_limit=60.0))
    assert prediction.metadata["failed_runs"] == 1  # the 30 s run was killed after 1 s: had it finished, none
    assert prediction.metadata["best_params"]["sleep"] == 0.0
    assert float(prediction.expression.split("*")[0]) == pytest.approx(-0.5, rel=1e-4)


def test_time_limited_fit_raises_fit_timeout():
    with pytest.raises(fd.FitTimeout):
        fd.TimeLimited(ProportionalRegressor(sleep=30.0), seconds=0.5).fit(np.ones((20, 1)), np.ones(20))


def test_every_run_out_of_time_is_a_timeout_with_one_clean_reason():
    """A longer limit could give an answer: OutOfTime (a timeout row, rerun under a longer limit), not an error."""
    method = Proportional(grid={"sleep": [30.0]}, run_time_limit=0.5)
    with pytest.raises(OutOfTime, match=r"^every hyperparameter run failed; last error: FitTimeout: fit exceeded its 0.5 s"):
        method.run(exponential_observations(), Budget(time_limit=60.0))


class FailingRegressor(ProportionalRegressor):
    def fit(self, X, y):
        raise ArithmeticError("no fit here")


def test_every_run_failing_is_an_error_named_once():
    method = Proportional(grid={"sleep": [0.0, 1.0]})
    method.make_regressor = lambda seed, time_limit=None: FailingRegressor()
    with pytest.raises(RuntimeError, match=r"^every hyperparameter run failed; last error: ArithmeticError: no fit here$") \
            as failure:
        method.run(exponential_observations(), Budget(time_limit=60.0))
    assert not isinstance(failure.value, OutOfTime)  # a longer limit would not help


def test_the_derivative_follows_its_degree_and_window():
    """Exact for a polynomial of its degree on irregular times; a narrow window follows a wave a
    wide one smooths away."""
    t = np.sort(np.random.default_rng(0).uniform(0, 2, 128))
    np.testing.assert_allclose(fd.derivative(t, t**5 - 2 * t**3 + t, 15, 5), 5 * t**4 - 6 * t**2 + 1, atol=1e-6)
    exact = 3 * np.cos(3 * t)
    narrow, wide = (np.max(np.abs(fd.derivative(t, np.sin(3 * t), w, 2) - exact)) for w in (7, 41))
    assert narrow < wide / 2


def test_times_that_straddle_one_are_split_there_and_each_run_gets_its_share_of_the_task():
    ((train, valid),) = list(fd.split(np.linspace(0.4, 2, 50)).split())
    assert np.linspace(0.4, 2, 50)[train].max() <= 1 < np.linspace(0.4, 2, 50)[valid].min()
    assert fd.per_run_limit({"a": [1, 2, 3]}, 180, 10) == pytest.approx(fd.SAFETY * 10 / 4)
    assert fd.per_run_limit({"a": [1, 2, 3]}, 1.0, 60) == 1.0


class OffsetRegressor(BaseEstimator, RegressorMixin):
    """dy = a * y + offset, a by least squares: one setting of the grid is right."""

    def __init__(self, offset=0.0, random_state=0):
        self.offset = offset
        self.random_state = random_state

    def fit(self, X, y):
        a = float(X[:, 0] @ (y - self.offset) / (X[:, 0] @ X[:, 0]))
        self.expression_ = f"{a!r}*y + {self.offset!r}"
        return self

    def predict(self, X):
        return fd.evaluate_expression(self.expression_, X)


class Offset(fd.FiniteDifferenceMethod):
    name = "offset-test"
    grid = {"offset": [0.3, 0.0, -0.2]}
    run_time_limit = None

    def make_regressor(self, seed, time_limit=None):
        return OffsetRegressor(random_state=seed)


def test_the_setting_and_the_fd_degree_with_the_least_validation_error_win():
    obs = exponential_observations()
    found = Offset().run(obs, Budget(time_limit=60.0))
    assert found.metadata["best_params"]["offset"] == 0.0 and found.metadata["validation_mse"] < 1e-6
    alone = {d: Offset(fd_degrees=(d,)).run(obs, Budget(time_limit=60.0)).metadata["validation_mse"] for d in (1, 3)}
    both = Offset(fd_degrees=(1, 3)).run(obs, Budget(time_limit=60.0))
    assert alone[1] != alone[3] and both.metadata["best_params"]["fd_degree"] == min(alone, key=alone.get)


def test_five_points_on_a_side_of_t_1_are_enough_to_split_there():
    """MIN_SPLIT_POINTS is a minimum: exactly five training points at t <= 1 split at 1 (not at the
    middle of the times, nor half by count)."""
    t = np.array([0.2, 0.4, 0.6, 0.8, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 3.0])
    ((train, valid),) = list(fd.split(t).split())
    assert train.tolist() == [0, 1, 2, 3, 4] and valid.tolist() == list(range(5, 12))


def test_of_fd_degrees_that_validate_equally_the_first_listed_wins(monkeypatch):
    """Ties keep the earlier degree (one derivative for every degree makes the two searches equal)."""
    obs = exponential_observations()
    monkeypatch.setattr(fd, "derivative", lambda t, y, window, degree: -0.5 * y)
    for degrees in ((3, 1), (1, 3)):
        assert Offset(fd_degrees=degrees).run(obs, Budget(time_limit=60.0)).metadata["best_params"]["fd_degree"] == degrees[0]


class LimitRecorded(Offset):
    """`Offset` with a per-run limit; records the limit each search's regressor is made with."""
    run_time_limit = 180.0
    limits: list = []

    def make_regressor(self, seed, time_limit=None):
        LimitRecorded.limits.append(time_limit)
        return OffsetRegressor(random_state=seed)


def test_each_fd_degree_plans_its_runs_within_its_share_of_the_task():
    """Two degrees share a task of 8 s: each search of 3 settings and a refit plans runs of at most
    SAFETY x 4 s / 4, so the whole run ends before the task's limit."""
    LimitRecorded.limits = []
    LimitRecorded(fd_degrees=(1, 3)).run(exponential_observations(), Budget(time_limit=8.0))
    assert LimitRecorded.limits == [pytest.approx(fd.SAFETY * 4.0 / 4)] * 2


def test_fd_degrees_given_as_a_list_are_a_tuple():
    """`--methods sindy:fd_degrees=[3,5]` reads a list; the method keeps it as the tuple its checks expect."""
    method = Offset(fd_degrees=[1, 3])
    method.check_params()
    assert method.fd_degrees == (1, 3) and method.get_params()["fd_degrees"] == (1, 3)


def test_a_derivative_that_is_not_finite_is_refused(monkeypatch):
    """A non-finite FD estimate is an InvalidInput (a clean row), never handed to the regressors."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the import warns about optional CVXPY
        import pynumdiff.polynomial_fit
    monkeypatch.setattr(pynumdiff.polynomial_fit, "polydiff", lambda y, t, **kw: (y, np.where(t > 0, np.nan, 0.0)))
    t = np.linspace(0, 2, 32)
    with pytest.raises(InvalidInput, match="not finite"):
        fd.derivative(t, np.exp(-t))


def test_a_prediction_that_is_not_finite_scores_minus_infinity():
    """A law undefined at a validation point (log of y < 0) ranks below every finite one, instead of
    scoring nan (which GridSearchCV would rank unpredictably)."""
    X, dy = np.array([[1.0], [-1.0]]), np.zeros(2)
    assert fd.neg_mse(SimpleNamespace(expression_="log(y)"), X, dy) == -np.inf
    assert fd.neg_mse(SimpleNamespace(expression_="2*y"), X, dy) == pytest.approx(-4.0)


def test_the_search_record_counts_runs_failures_and_runs_stopped_by_time_with_the_refit():
    """metadata: every setting's run, the failed ones (score -inf), and the runs cut by their own time
    limit, the refit of the best setting included; grid keys lose TimeLimited's estimator__ prefix."""
    search = SimpleNamespace(
        cv_results_={"mean_test_mse": np.array([-0.1, -np.inf, -0.3]),
                     "mean_test_stopped_by_time": np.array([1.0, 0.0, 0.0])},
        best_estimator_=SimpleNamespace(expression_="-0.5*y", stopped_by_time_=True, defect_=None),
        best_params_={"estimator__a": 1}, best_score_=-0.1)
    prediction = fd.prediction_from_search(search)
    assert prediction.expression == "-0.5*y"
    assert prediction.metadata == {"best_params": {"a": 1}, "validation_mse": 0.1, "runs": 3, "failed_runs": 1,
                                   "runs_stopped_by_time": 2}


def test_the_last_error_is_named_by_its_type_without_module_path_or_wrapping():
    assert fd.last_error(RuntimeError("RuntimeError: ValueError: bad input")) == "ValueError: bad input"
    assert fd.last_error(ValueError("3 fits failed\nodebaselines.fd.FitTimeout: fit exceeded its 1 s limit")) \
        == "FitTimeout: fit exceeded its 1 s limit"
    assert fd.last_error(ArithmeticError("no fit here")) == "ArithmeticError: no fit here"


def test_a_smoothing_window_under_three_points_is_refused():

    Offset(fd_window=3).check_params()
    with pytest.raises(ValueError, match="fd_window=2: expected a whole number >= 3"):
        Offset(fd_window=2).check_params()


def test_the_derivative_is_accurate_on_times_far_from_zero():
    """Local fits are made in time around the middle observation: a user's record on t in [100, 102]
    gets the same degree-9 derivative as one on [0, 2] (absolute t makes the Vandermonde ill-conditioned)."""
    s = np.sort(np.random.default_rng(0).uniform(0, 2, 128))
    for offset in (0.0, 100.0):
        assert np.max(np.abs(fd.derivative(s + offset, np.sin(3 * s), 15, 9) - 3 * np.cos(3 * s))) < 1e-7

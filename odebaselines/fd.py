"""The finite-difference (FD) protocol shared by every method that fits y' = f(y) as functional
symbolic regression on (y_i, dy_i) pairs (SINDy, FFX, BSR, PySR, FEAT, Operon, gplearn, the GP
family). One place, four small parts, as in the paper's appendix on baselines:

1. `derivative(t, y, window=15, degree=3)`: smoothed finite differences with a 15-point window,
   correct on irregular t (local polynomial fits in t, pynumdiff `polynomial_fit.polydiff`;
   pysindy's SmoothedFiniteDifference assumes equal spacing and is wrong here, see NOTES.md).
2. `split(t)`: a scikit-learn `PredefinedSplit` that trains on the observations with
   t <= T/2 = 1 and validates on t > 1; after the search the best setting is refit on all points.
3. `TimeLimited(estimator, seconds)`: runs each hyperparameter fit in a child process and kills
   it at the deadline (the paper: 3 minutes per run); the timed-out fit raises `FitTimeout`,
   which `GridSearchCV` records as a failed run (score `error_score`) and the search goes on.
4. `FiniteDifferenceMethod`: a `Method` whose `run` does derivative -> grid search -> refit.

Contract for regressors (what a method's `make_regressor(seed, time_limit)` returns):
- a scikit-learn regressor (subclass `BaseEstimator, RegressorMixin`; constructor only stores
  plain parameters, so `get_params`/`set_params`/`clone` work and the grid can set them);
- `fit(X, dy)` with X of shape (n, 1) whose only column is y, and dy the FD estimate of dy/dt;
- after `fit`, the attribute `expression_`: the found f(y) as a string in the variable `y` that
  `odecore.expressions.parse` accepts, constants written at full precision (`repr(float)` or
  `odecore.expressions.to_string`);
- `predict(X)` is optional: under `TimeLimited` predictions come from evaluating `expression_`
  (so the validation score is that of the expression the method returns). Without a time limit
  (`run_time_limit = None`) the regressor's own `predict` is used if it has one, else
  `expression_` is evaluated.

A method file then looks like:

    class Gplearn(FiniteDifferenceMethod):
        name = "gplearn"; version = "1"; requires = ("gplearn",)
        grid = {"population_size": [1000], "generations": [20, 50]}
        def make_regressor(self, seed, time_limit=None):
            return MyGplearnRegressor(random_state=seed)

Budget knobs are constructor arguments: `Method(grid={...}, run_time_limit=5.0, fd_degrees=(3,))`
overrides the class attributes `grid`, `run_time_limit` and `fd_degrees` for that instance
(on the command line: `--methods sindy:fd_degrees=(3,)`). Each run's limit is also capped so that the whole
search (all settings plus the refit) fits in the task's `Budget.time_limit`.
"""
from __future__ import annotations

import re
import time
import warnings
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import GridSearchCV, ParameterGrid, PredefinedSplit

from odecore import protocol
from bench.method import (Budget, InvalidInput, Method, Observations, OutOfTime, Prediction, are_numbers, are_whole,
                          is_whole, require)
from odecore.expressions import compile_vector, parse
from odecore.processes import Deadline, call_with_deadline

WINDOW = 15  # points in the smoothing window (paper: smoothed finite differences, window 15)
DEGREE = 3  # degree of the local polynomial when a method does not tune it
SPLIT_TIME = protocol.T / 2  # train on t <= 1, validate on 1 < t <= 2
MIN_SPLIT_POINTS = 5  # fewer points than this on either side of the split is refused
RUN_TIME_LIMIT = protocol.RUN_TIME_LIMIT  # seconds per hyperparameter run (paper: 3 minutes)
SAFETY = 0.9  # share of the task's time limit the search may plan to use


class FitTimeout(RuntimeError):
    """A hyperparameter run exceeded its time limit and was killed."""


def check_fd_settings(settings) -> None:
    """For `check_params` of methods that try several (window, degree) derivative estimates."""
    require(isinstance(settings, (tuple, list)) and len(settings) > 0 and all(
        isinstance(pair, (tuple, list)) and len(pair) == 2 and is_whole(pair[0], 3) and is_whole(pair[1], 1)
        for pair in settings), "fd_settings", settings, "(window >= 3, degree >= 1) pairs, such as ((15, 3),)")


def derivative(t: np.ndarray, y: np.ndarray, window: int = WINDOW, degree: int = DEGREE) -> np.ndarray:
    """dy/dt at every observation from local polynomial fits of `degree` in t over `window` points.

    Correct on irregular t: each window's polynomial is fitted at the actual times (pynumdiff's
    window is `window` average steps wide). pynumdiff widens the window to 3 * degree + 1 points
    when `window` is smaller than that (degree 5 -> 17, 7 -> 23, 9 -> 29 points).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the import warns about optional CVXPY; polyfit warns on high degrees
        from pynumdiff.polynomial_fit import polydiff

        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        # fit in local time around 0: absolute t near 2 makes degree-9 Vandermonde matrices ill-conditioned
        _, dy = polydiff(y, t - t[len(t) // 2], degree=int(degree), window_size=int(window))
    if not np.all(np.isfinite(dy)):
        raise InvalidInput("finite-difference derivative is not finite")
    return dy


def split(t: np.ndarray) -> PredefinedSplit:
    """Train on t <= 1, validate on t > 1 (the paper's split of the [0, 2] trajectory).

    Observations that do not straddle t = 1 (user CSV data on another time range) are split at
    the middle of their time range instead, and sparse ones whose points crowd one side of both
    cuts at their middle point, so that any 2 * MIN_SPLIT_POINTS observations can be split.
    """
    t = np.asarray(t, dtype=float)
    if len(t) < 2 * MIN_SPLIT_POINTS:
        raise InvalidInput(f"need at least {MIN_SPLIT_POINTS} observations on each side of the train/validation split")
    for cut in (SPLIT_TIME, 0.5 * (t[0] + t[-1])):
        train = t <= cut
        if min(np.sum(train), np.sum(~train)) >= MIN_SPLIT_POINTS:
            return PredefinedSplit(np.where(train, -1, 0))
    return PredefinedSplit(np.where(np.arange(len(t)) < len(t) // 2, -1, 0))  # times are sorted


def neg_mse(estimator, X, y) -> float:
    """Validation score: minus the mean squared error on dy/dt; -inf when a prediction is not finite."""
    with np.errstate(all="ignore"):
        pred = estimator.predict(X) if hasattr(estimator, "predict") else evaluate_expression(estimator.expression_, X)
        pred = np.asarray(pred, dtype=float).reshape(-1)
    if pred.shape != np.shape(y) or not np.all(np.isfinite(pred)):
        return -np.inf
    return -float(np.mean((pred - y) ** 2))


def stopped_by_time(estimator, X, y) -> float:
    """A second grid-search score: 1 for a run that its own time limit ended (a GP run given
    `max_time`), 0 for one that spent its counted budget; the sweep's rows count them."""
    return float(getattr(estimator, "stopped_by_time_", False))


def evaluate_expression(expression: str, X: np.ndarray) -> np.ndarray:
    """f(y) at X[:, 0]; nan where f is undefined."""
    return compile_vector(parse(expression))(np.asarray(X, dtype=float)[:, 0])


class TimeLimited(BaseEstimator, RegressorMixin):
    """Fits `estimator` in a child process and kills it after `seconds` (hard limit, no signals
    in the fitting process; `odecore.processes.call_with_deadline`). The child sends back only
    `expression_` (and `stopped_by_time_` of a regressor that stops by itself, and `defect_`), so regressors
    need not be picklable after fitting; `predict` evaluates that expression. The child dies with
    its parent and stays in the parent's process group, so the runner's kill of a worker also
    kills it.
    """

    def __init__(self, estimator=None, seconds: float = RUN_TIME_LIMIT, start_method: str = "fork"):
        self.estimator = estimator
        self.seconds = seconds
        self.start_method = start_method

    def fit(self, X, y):
        start = time.perf_counter()
        try:
            self.expression_, self.stopped_by_time_, self.defect_ = call_with_deadline(
                _fit_expression, (clone(self.estimator), np.asarray(X), np.asarray(y)), self.seconds, self.start_method)
        except Deadline:
            raise FitTimeout(f"fit exceeded its {self.seconds:g} s limit; killed") from None
        finally:
            self.fit_time_ = time.perf_counter() - start
        return self

    def predict(self, X):
        if not hasattr(self, "expression_"):
            raise RuntimeError("TimeLimited is not fitted (or its fit timed out)")
        return evaluate_expression(self.expression_, X)


def _fit_expression(estimator, X, y) -> tuple[str, bool, str | None]:
    """In the child: fit, and refuse unparseable output here, with the regressor's own message;
    with the expression, whether the regressor's own time limit ended its run, and its `defect_`
    (a library's known fault that changed what it computed; None without one)."""
    estimator.fit(X, y)
    expression = estimator.expression_
    parse(expression)
    return expression, bool(getattr(estimator, "stopped_by_time_", False)), getattr(estimator, "defect_", None)


class FiniteDifferenceMethod(Method):
    """A method that regresses the FD derivative on y with a grid search over `grid`.

    Subclasses set `grid` (a `GridSearchCV` parameter grid over the regressor's parameters)
    and implement `make_regressor(seed, time_limit)`. `fd_degrees` are the local polynomial degrees of the
    derivative estimate to try (one more grid dimension: one `GridSearchCV` per degree, the best
    validation score over all wins; each is scored against its own derivative estimate, as a
    pipeline FD -> regressor would be); `run_time_limit` is the hard limit per hyperparameter
    run (None: fit in process without a limit, for regressors that take milliseconds).
    """

    uses_finite_differences = True
    grid: ClassVar[dict[str, list] | list[dict[str, list]]] = {}  # as GridSearchCV's param_grid
    run_time_limit: ClassVar[float | None] = RUN_TIME_LIMIT
    fd_window: ClassVar[int] = WINDOW
    fd_degrees: ClassVar[tuple[int, ...]] = (DEGREE,)

    def __init__(self, grid=None, run_time_limit=..., fd_degrees=None, fd_window=None):
        """Every knob is a constructor argument (scikit-learn style: stored, no work); left out,
        it keeps the class's value (which `get_params` then reports): `Sindy(fd_degrees=(3,))` is a
        smaller variant, and `--methods sindy:fd_degrees=(3,)` sets it from the command line."""
        given = {"grid": grid, "fd_degrees": fd_degrees, "fd_window": fd_window}
        given = {k: v for k, v in given.items() if v is not None}
        if run_time_limit is not ...:
            given["run_time_limit"] = run_time_limit
        for knob, value in given.items():
            setattr(self, knob, tuple(value) if knob == "fd_degrees" and isinstance(value, list) else value)

    def check_params(self) -> None:
        super().check_params()
        require(isinstance(self.fd_degrees, tuple) and are_whole(self.fd_degrees, 1), "fd_degrees", self.fd_degrees,
                "whole numbers >= 1, such as (3,) or (3, 5)")
        require(is_whole(self.fd_window, 3), "fd_window", self.fd_window, "a whole number >= 3")
        limit = self.run_time_limit
        require(limit is None or are_numbers((limit,), 1e-300), "run_time_limit", limit, "seconds > 0, or None")
        try:
            keys = {key for point in ParameterGrid(self.grid) for key in point}
        except (TypeError, ValueError) as err:
            raise ValueError(f"grid={self.grid!r}: {err}") from None
        try:
            known = set(self.make_regressor(0).get_params())
        except Exception:  # the regressor cannot be built here: unavailable_reason says why
            return
        require(keys <= known, "grid", self.grid, f"parameters of the regressor ({', '.join(sorted(known))})")

    def make_regressor(self, seed: int, time_limit: float | None = None) -> BaseEstimator:
        """An unfitted regressor for one hyperparameter run; `time_limit` is the seconds that run
        may take before it is killed (None: no limit), for regressors that stop by themselves."""
        raise NotImplementedError

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        X = observations.y[:, None]
        share = None if budget.time_limit is None else budget.time_limit / len(self.fd_degrees)
        best, failure, timed_out = None, "", False
        for degree in self.fd_degrees:
            dy = derivative(observations.t, observations.y, self.fd_window, degree)
            run_limit = None if self.run_time_limit is None else per_run_limit(self.grid, self.run_time_limit, share)
            search = grid_search(self.make_regressor(budget.seed, run_limit), self.grid, observations.t,
                                 self.run_time_limit, share)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # FitFailedWarning / non-finite scores are recorded below
                    search.fit(X, dy)
            except (ValueError, RuntimeError) as err:  # sklearn raises ValueError when every run failed
                failure = last_error(err)
                timed_out = timed_out or isinstance(err, FitTimeout) or FitTimeout.__name__ in str(err)
                continue
            if best is None or search.best_score_ > best[1].best_score_:
                best = (degree, search)
        if best is None:  # runs killed at their share of the limit: a longer limit could give an answer
            raise (OutOfTime if timed_out else RuntimeError)(f"every hyperparameter run failed; last error: {failure}")
        prediction = prediction_from_search(best[1])
        prediction.metadata["best_params"]["fd_degree"] = best[0]
        return prediction


def last_error(err: BaseException) -> str:
    """`Type: message` of a grid search's last failure, spelt the same whether the refit raised it or
    scikit-learn listed it (`odebaselines.fd.FitTimeout: ...`), and without the RuntimeError that a
    failure in `TimeLimited`'s child comes wrapped in (`RuntimeError: RuntimeError: ...`)."""
    line = (str(err).strip().splitlines() or [""])[-1]  # scikit-learn's summary ends with the last failure
    if not re.match(r"[\w.]+: ", line):
        line = f"{type(err).__name__}: {line}"
    line = re.sub(r"^(?:\w+\.)+(?=\w+: )", "", line)  # the module path of the type
    return re.sub(r"^RuntimeError: (?=\w+: )", "", line)


def grid_search(regressor: BaseEstimator, grid: dict[str, list] | list[dict[str, list]], t: np.ndarray,
                run_time_limit: float | None, task_time_limit: float | None = None) -> GridSearchCV:
    """An unfitted `GridSearchCV` over `grid` with the protocol's split, score and time limit.

    With a time limit the regressor is wrapped in `TimeLimited` and the grid keys get the
    `estimator__` prefix. The per-run limit is capped at an equal share of SAFETY x the task's
    limit over all settings plus the refit, so the search ends before the runner kills the task.
    """
    cv = split(t)
    grids = _grids(grid)
    if run_time_limit is not None:
        regressor = TimeLimited(regressor, seconds=per_run_limit(grids, run_time_limit, task_time_limit))
        grids = [{f"estimator__{key}": values for key, values in g.items()} for g in grids]
    return GridSearchCV(regressor, grids, scoring={"mse": neg_mse, "stopped_by_time": stopped_by_time}, cv=cv,
                        refit="mse", n_jobs=1, error_score=-np.inf)


def _grids(grid: dict[str, list] | list[dict[str, list]]) -> list[dict[str, list]]:
    return [dict(g) for g in (grid if isinstance(grid, list) else [grid])] or [{}]


def per_run_limit(grid: dict[str, list] | list[dict[str, list]], run_time_limit: float,
                  task_time_limit: float | None = None) -> float:
    """Seconds one hyperparameter run may take: `run_time_limit`, capped at an equal share of
    SAFETY x the task's limit over all settings of `grid` plus the refit."""
    if not task_time_limit:
        return run_time_limit
    return min(run_time_limit, SAFETY * task_time_limit / (len(ParameterGrid(_grids(grid))) + 1))


def prediction_from_search(search: GridSearchCV) -> Prediction:
    """The refit best estimator's expression, with the chosen setting and the search's record:
    runs, failed runs, and runs (the refit included) that stopped at their time limit before
    their counted budget was spent - a load-dependent result where that is not 0."""
    scores = np.asarray(search.cv_results_["mean_test_mse"], dtype=float)
    if not np.any(np.isfinite(scores)):
        raise RuntimeError(f"all {len(scores)} hyperparameter runs failed or timed out")
    best = search.best_estimator_
    if getattr(best, "defect_", None):  # out here: the search's own warnings were silenced
        warnings.warn(best.defect_, stacklevel=2)
    params = {k.removeprefix("estimator__"): v for k, v in search.best_params_.items()}
    metadata = {"best_params": params, "validation_mse": -float(search.best_score_),
                "runs": int(len(scores)), "failed_runs": int(np.sum(~np.isfinite(scores))),
                "runs_stopped_by_time": int(np.sum(search.cv_results_["mean_test_stopped_by_time"] == 1.0))
                + int(getattr(best, "stopped_by_time_", False))}
    return Prediction(best.expression_, metadata=metadata)

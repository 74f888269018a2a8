"""SINDy recovers simple Textbook ODEs at sigma = 0 (the harness issue's acceptance test)."""
import numpy as np
import pytest

from bench import datasets
from odebaselines.sindy import SindyRegressor, usable_terms
from odecore.expressions import parse
from bench.method import Budget
from bench.registry import discover
from bench.scoring import score
from bench.tasks import Task
from baselines_support import assert_same_f
from odebaselines import sindy as sindy_module


@pytest.fixture(scope="module")
def textbook():
    return {tr.equation_id: tr for tr in datasets.load("textbook")}


@pytest.mark.parametrize("equation", ["compound-interest", "logistic"])
def test_sindy_recovers_textbook_equation_without_noise(textbook, equation):
    sindy = discover()["sindy"].load()()
    prediction = sindy.run(Task(textbook[equation], 0.0, 256, 0).observations(), Budget(time_limit=600))
    result = score(prediction.expression, textbook[equation])
    assert result.status == "ok", result.reason
    assert result.interpolation["r2"] > 0.99, prediction.expression
    assert_same_f(prediction.expression, textbook[equation])  # a constant y' = c also scores R^2 > 0.98


def test_terms_undefined_on_the_data_are_dropped_and_the_fit_still_works():
    y = np.linspace(-2, 2, 60)
    assert "log(y)" not in usable_terms(y) and "sqrt(y)" not in usable_terms(y)
    model = SindyRegressor(threshold=1e-3, alpha=1e-3).fit(y[:, None], 0.5 * y - y**3)
    assert "log" not in model.expression_
    assert np.allclose(model.predict(y[:, None]), 0.5 * y - y**3, atol=1e-6)
    parse(model.expression_)


@pytest.mark.filterwarnings("ignore:Sparsity parameter is too big")  # threshold 1 on purpose
def test_the_ridge_alpha_reaches_stlsq():
    """`alpha` is one of the paper's grid dimensions: a heavy ridge shrinks a coefficient below the
    threshold (STLSQ's final refit is unbiased, so alpha acts through the terms it keeps)."""
    y = np.linspace(1.0, 2.0, 40)[:, None]
    light = SindyRegressor(terms=("y",), threshold=1.0, alpha=1e-8).fit(y, 2.0 * y[:, 0])
    heavy = SindyRegressor(terms=("y",), threshold=1.0, alpha=1e3).fit(y, 2.0 * y[:, 0])
    assert light.coef_[0] == pytest.approx(2.0, rel=1e-6)
    assert heavy.coef_[0] == 0.0


def test_a_zeroed_term_undefined_where_it_is_predicted_does_not_spoil_the_prediction():
    """Validation points (t > 1) can lie where a term the fit dropped is undefined (log of y < 0)."""
    y = np.linspace(0.5, 2.0, 40)[:, None]
    model = SindyRegressor(terms=("y", "log(y)"), threshold=0.1, alpha=1e-8).fit(y, 0.5 * y[:, 0])
    assert model.coef_[1] == 0.0 and model.coef_[0] == pytest.approx(0.5)
    assert model.predict(np.array([[-1.0], [-2.0]])) == pytest.approx([-0.5, -1.0])


def test_sindy_searches_the_paper_s_800_settings():
    """10 thresholds x 8 alphas x 2 max_iter x 5 FD degrees, as the module docstring and the paper say."""
    from sklearn.model_selection import ParameterGrid

    from bench.registry import discover

    sindy = discover()["sindy"].load()()
    assert len(ParameterGrid(sindy.grid)) * len(sindy.fd_degrees) == 800
    assert sorted(sindy.grid["max_iter"]) == [20, 100] and sindy.fd_degrees == (2, 3, 5, 7, 9)


def test_the_threshold_reaches_stlsq():
    """`threshold` is a grid dimension: 0.2 y**2 survives threshold 0.1 and is cut at 0.5."""
    y = np.linspace(1.0, 2.0, 40)[:, None]
    dy = 2.0 * y[:, 0] + 0.2 * y[:, 0] ** 2
    low = SindyRegressor(terms=("y", "y**2"), threshold=0.1, alpha=1e-8).fit(y, dy)
    high = SindyRegressor(terms=("y", "y**2"), threshold=0.5, alpha=1e-8).fit(y, dy)
    assert low.coef_ == pytest.approx([2.0, 0.2], rel=1e-6)
    assert high.coef_[1] == 0.0 and "y**2" not in high.expression_


def test_max_iter_reaches_stlsq(monkeypatch):
    """`max_iter` is a grid dimension (20 or 100): the regressor hands it to pysindy's STLSQ."""
    seen = []
    real = sindy_module.STLSQ

    def spy(**kwargs):
        seen.append(kwargs)
        return real(**kwargs)
    monkeypatch.setattr(sindy_module, "STLSQ", spy)
    y = np.linspace(1.0, 2.0, 40)[:, None]
    SindyRegressor(terms=("y",), threshold=0.01, alpha=0.05, max_iter=100).fit(y, 2.0 * y[:, 0])
    assert seen == [{"threshold": 0.01, "alpha": 0.05, "max_iter": 100}]


def test_sindy_fits_in_process_without_a_child_per_run():
    """SINDy's 800 millisecond fits are not wrapped in TimeLimited (one child process each)."""
    from bench.registry import discover
    from odebaselines.fd import grid_search

    method = discover()["sindy"].load()()
    assert method.run_time_limit is None
    search = grid_search(method.make_regressor(0), method.grid, np.linspace(0, 2, 32), method.run_time_limit)
    assert isinstance(search.estimator, SindyRegressor)


def test_the_law_leaves_out_terms_the_fit_zeroed():
    """SINDy's answer names only kept terms: a zeroed log(y) would make the law nan wherever y < 0
    (0 * nan), so scoring an extrapolation that crosses 0 would fail."""
    from odecore.expressions import compile_vector, parse

    y = np.linspace(0.5, 2.0, 40)[:, None]
    model = SindyRegressor(terms=("y", "log(y)"), threshold=0.1, alpha=1e-8).fit(y, 0.5 * y[:, 0])
    assert "log" not in model.expression_
    assert compile_vector(parse(model.expression_))(np.array([-1.0])) == pytest.approx([-0.5])

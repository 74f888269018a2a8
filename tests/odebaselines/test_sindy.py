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

"""Helpers of the baseline tests (pytest puts this folder on sys.path; no __init__.py)."""
import pytest

from bench.method import Budget
from bench.registry import discover
from bench.scoring import score


# Methods that cannot run on the project's CPU machines, and why; every other method must load.
EXPECTED_UNAVAILABLE = {
    "pysr": "PySR needs Julia, which cannot be installed here",
    "feat": "feat-ml does not build here",
}


def load(name):
    """The method class. Only a method expected to be unavailable here skips (with its reason);
    any other unavailable method fails, so a broken dependency cannot hide behind a skip."""
    cls = discover()[name].load()
    reason = cls().unavailable_reason()
    if reason and name in EXPECTED_UNAVAILABLE:
        pytest.skip(f"{EXPECTED_UNAVAILABLE[name]} ({reason})")
    assert reason is None, f"{name} should run here but is unavailable: {reason}"
    return cls


def r2_on(trajectory, prediction) -> float:
    result = score(prediction.expression, trajectory)
    assert result.status == "ok", result.reason
    return result.interpolation["r2"]


def run(method, observations, time_limit=120.0):
    return method.run(observations, Budget(time_limit=time_limit, seed=0))


def assert_same_f(expression: str, trajectory, tolerance: float = 0.05) -> None:
    """The predicted f agrees with the true f on the observed range of y, within `tolerance` of
    max |f|. R^2 alone cannot tell: the best constant y' = 0.58 scores R^2 0.998 (interpolation)
    and 0.983 (extrapolation) on compound interest, y' = 0.1 y; it misses f by 9% here."""
    import numpy as np

    from odecore.expressions import compile_vector, parse

    y = np.linspace(trajectory.y.min(), trajectory.y.max(), 200)
    true, predicted = compile_vector(parse(trajectory.expression))(y), compile_vector(parse(expression))(y)
    error = float(np.max(np.abs(predicted - true)) / np.max(np.abs(true)))
    assert error <= tolerance, f"f misses the true {trajectory.expression} by {error:.1%}: {expression}"

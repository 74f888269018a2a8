"""Helpers of the baseline tests (pytest puts this folder on sys.path; no __init__.py)."""
import pytest

from bench.method import Budget
from bench.registry import discover
from bench.scoring import score


def load(name):
    """The method class, or a skip with its unavailability reason."""
    cls = discover()[name].load()
    reason = cls.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return cls


def r2_on(trajectory, prediction) -> float:
    result = score(prediction.expression, trajectory)
    assert result.status == "ok", result.reason
    return result.interpolation["r2"]


def run(method, observations, time_limit=120.0):
    return method.run(observations, Budget(time_limit=time_limit, seed=0))

"""ProGED-style grammar search: sampling, constant fitting, recovery of the logistic ODE."""
import re
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import sympy

from bench import Budget
from odebaselines import grammar
from odecore.expressions import parse, Y
from baselines_support import load, r2_on, run


def test_sampled_skeletons_are_distinct_and_use_y():
    skeletons = grammar.sample_skeletons(64, np.random.default_rng(0))
    assert len(skeletons) == 64
    assert len({s.key for s in skeletons}) == 64
    assert all(s.expr.has(grammar.Y) and 1 <= len(s.constants) <= grammar.MAX_CONSTANTS for s in skeletons)


def test_non_identifiable_constants_are_merged():
    c = sympy.symbols("a b c", real=True)
    skeleton = grammar.canonical(c[0] * c[1] * grammar.Y + c[2] * grammar.Y)
    assert len(skeleton.constants) == 1


def test_constants_of_the_logistic_skeleton_are_fitted_on_the_trajectory(logistic_observations):
    obs = logistic_observations
    y = grammar.Y
    skeleton = grammar.canonical(sympy.Symbol("a", real=True) * y + sympy.Symbol("b", real=True) * y**2)
    fit = grammar.fit_skeleton(skeleton, obs.t, obs.y, np.random.default_rng(0))
    f = parse(fit.expression)
    assert float(f.coeff(y, 1)) == pytest.approx(0.23, rel=1e-3)
    assert float(f.coeff(y, 2)) == pytest.approx(-0.23, rel=1e-3)


def test_proged_recovers_the_logistic_equation(logistic, logistic_observations):
    prediction = run(load("proged")(sample_size=24), logistic_observations)
    assert r2_on(logistic, prediction) > 0.99, prediction.expression
    f, y = parse(prediction.expression).expand(), grammar.Y
    assert float(f.coeff(y, 1)) == pytest.approx(0.23, rel=0.01), prediction.expression
    assert float(f.coeff(y, 2)) == pytest.approx(-0.23, rel=0.01), prediction.expression


def test_a_search_cut_by_its_time_limit_says_so(logistic_observations):
    """A cut search is recorded (the report counts it; a resume under a longer limit redoes it)."""
    full = run(load("proged")(sample_size=4, restarts=1), logistic_observations)
    assert full.metadata["runs_stopped_by_time"] == 0 and full.metadata["skeletons_fitted"] == 4
    try:
        cut = run(load("proged")(sample_size=64), logistic_observations, time_limit=0.5)
    except RuntimeError as failure:  # cut before a single skeleton was fitted
        assert "stopped at its 0.425 s time limit" in str(failure)
    else:
        assert cut.metadata["runs_stopped_by_time"] == 1 and cut.metadata["skeletons_fitted"] < 64


def test_proged_gives_a_law_or_a_clean_failure_where_powers_of_y_overflow(overflowing_observations):
    try:
        parse(run(load("proged")(sample_size=4, restarts=1), overflowing_observations, time_limit=30).expression)
    except RuntimeError as failure:  # a clean failure names what overflowed, not any error
        assert "\n" not in str(failure) and re.search("nan|finite|overflow|infinit", str(failure), re.I), failure


def test_constants_that_only_multiply_or_enter_a_function_alone_are_one_constant():
    a, b = sympy.symbols("a b", real=True)
    assert len(grammar.canonical(a * b * grammar.Y).constants) == 1
    assert grammar.canonical(sympy.exp(a) * grammar.Y).key == grammar.canonical(a * grammar.Y).key


def test_the_fewest_constants_win_within_a_tenth_of_the_best_error():
    y = grammar.Y
    two, one = grammar.canonical(sympy.Symbol("a") * y + sympy.Symbol("b") * y**2), grammar.canonical(sympy.Symbol("a") * y)
    assert grammar.rank([grammar.Fit(two, (1.0, 1.0), 1.0), grammar.Fit(one, (1.0,), 1.05)], 1.0)[0].skeleton is one
    assert grammar.rank([grammar.Fit(two, (1.0, 1.0), 1.0), grammar.Fit(one, (1.0,), 1.2)], 1.0)[0].skeleton is two


def test_a_skeleton_keeps_its_best_restart_from_the_first_observation(monkeypatch):
    from types import SimpleNamespace

    rss, calls = iter([1.0, 0.25, 4.0]), []

    def fake(template, t, y, start, **kwargs):
        calls.append(kwargs)
        return SimpleNamespace(ok=True, rss=next(rss), values=(len(calls) / 4,))
    monkeypatch.setattr(grammar, "fit_trajectory", fake)
    fit = grammar.fit_skeleton(grammar.canonical(sympy.Symbol("a") * grammar.Y), np.linspace(0, 2, 8), np.ones(8),
                               np.random.default_rng(0), restarts=3)
    assert fit.values == (0.5,) and all(call["fit_y0"] is False for call in calls)


def test_proged_answers_the_best_ranked_fit_within_085_of_its_limit(monkeypatch):
    import importlib.util
    from pathlib import Path

    from bench.method import Budget, Observations

    spec = importlib.util.spec_from_file_location("proged_file", Path(__file__).parents[2] / "methods" / "proged.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    y, limits = grammar.Y, []
    best, second = (grammar.Fit(grammar.canonical(sympy.Symbol("a") * y**k), (-0.5,), 0.1 * k) for k in (1, 2))
    monkeypatch.setattr(module, "search", lambda *args, time_limit: limits.append(time_limit) or [best, second])
    t = np.linspace(0, 2, 16)
    answer = module.ProGED().run(Observations(t, np.exp(-0.5 * t)), Budget(time_limit=100.0, seed=0))
    assert answer.expression == best.expression and limits == [pytest.approx(85.0)]


def test_a_skeletons_first_start_has_every_constant_at_one():
    """ProGED's first start is C = 1, the random ones follow: with one restart only C = 1 is tried.
    Here it is the start from which y' = C y**2 fits (this seed's first random start, 4.4, blows up
    before t = 1 and fails)."""
    C0 = sympy.Symbol("C0", real=True)
    t = np.linspace(0, 1, 32)
    fit = grammar.fit_skeleton(grammar.Skeleton(C0 * Y**2, (C0,)), t, 0.5 / (1 - 0.5 * t),
                               np.random.default_rng(4), restarts=1)
    assert fit.values == pytest.approx((1.0,), rel=1e-4) and fit.rmse < 1e-6


def test_proged_hands_its_sample_size_restarts_and_the_task_seed_to_the_search(monkeypatch, logistic_observations):
    cls = load("proged")
    seen = []

    def search(t, y, sample_size, restarts, seed, time_limit):
        seen.append((sample_size, restarts, seed))
        return grammar.search(t, y, sample_size, restarts, seed, time_limit=time_limit)

    monkeypatch.setattr(sys.modules[cls.__module__], "search", search)
    cls(sample_size=2, restarts=2).run(logistic_observations, Budget(time_limit=60, seed=7))
    assert seen == [(2, 2, 7)]


def test_proged_never_answers_a_skeleton_it_could_not_integrate(monkeypatch, logistic_observations):
    """Failed fits (infinite error) are neither the answer nor a candidate; with none left the task fails."""
    cls = load("proged")
    fit = lambda text, rmse: SimpleNamespace(expression=text, rmse=rmse, skeleton=SimpleNamespace(expr=text))
    module = sys.modules[cls.__module__]
    monkeypatch.setattr(module, "search", lambda *a, **k: [fit("-y", 0.5), fit("y**9", float("inf"))])
    prediction = run(cls(sample_size=2), logistic_observations)
    assert prediction.expression == "-y" and prediction.candidates == ()
    monkeypatch.setattr(module, "search", lambda *a, **k: [fit("y**9", float("inf"))])
    with pytest.raises(RuntimeError, match=r"no sampled skeleton could be integrated along the data \(1 fitted\)"):
        run(cls(sample_size=1), logistic_observations)


def _fake_fitter(rss_values, calls):
    """A stand-in for odecore.fitting.fit_trajectory that records its starts and keyword arguments
    and returns the given residual sums of squares in turn (values: the call's number)."""
    rss = iter(rss_values)

    def fake(template, t, y, start, **kwargs):
        calls.append(dict(kwargs, start=np.array(start)))
        return SimpleNamespace(ok=True, rss=next(rss), values=(float(len(calls)),))
    return fake


def test_derivations_deeper_than_max_depth_are_rejected():
    """A derivation past MAX_DEPTH raises _TooDeep (and is redrawn by sample_skeletons)."""
    with pytest.raises(grammar._TooDeep):
        grammar.sample_tokens(np.random.default_rng(0), "y", grammar.MAX_DEPTH + 1)
    assert grammar.sample_tokens(np.random.default_rng(0), "y", grammar.MAX_DEPTH) == ["y"]


def test_skeletons_with_exactly_max_constants_are_kept():
    """The bound on free constants is inclusive: a 5-constant skeleton is sampled, a 6-constant one never."""
    counts = {len(s.constants) for s in grammar.sample_skeletons(150, np.random.default_rng(0))}
    assert grammar.MAX_CONSTANTS in counts and max(counts) == grammar.MAX_CONSTANTS


def test_the_grammar_is_sampled_with_its_rule_probabilities():
    """T -> C has probability 0.2 (not 1/2, as a uniform choice of rule would give)."""
    rng, draws = np.random.default_rng(0), []
    for _ in range(2000):
        try:
            draws.append(grammar.sample_tokens(rng, "T") == ["C"])
        except grammar._TooDeep:
            pass
    assert np.mean(draws) == pytest.approx(0.2, abs=0.03)


def test_random_restarts_start_uniformly_in_minus_five_to_five(monkeypatch):
    """After C = 1, starts are drawn from [-5, 5]: negative constants are reached from negative starts."""
    calls = []
    monkeypatch.setattr(grammar, "fit_trajectory", _fake_fitter([1.0] * 40, calls))
    grammar.fit_skeleton(grammar.canonical(sympy.Symbol("a") * grammar.Y), np.linspace(0, 2, 8),
                         np.linspace(1, 2, 8), np.random.default_rng(0), restarts=40)
    starts = np.array([float(c["start"][0]) for c in calls[1:]])
    assert len(starts) == 39 and -5 <= starts.min() < -2.5 and 2.5 < starts.max() <= 5


def test_restarts_stop_early_only_at_a_fit_exact_to_round_off(monkeypatch):
    """A good but inexact fit (rss 1e-8 on y of variance 0.09) does not end the restarts; the better
    second restart is kept."""
    calls = []
    monkeypatch.setattr(grammar, "fit_trajectory", _fake_fitter([1e-8, 1e-10], calls))
    fit = grammar.fit_skeleton(grammar.canonical(sympy.Symbol("a") * grammar.Y), np.linspace(0, 2, 16),
                               np.linspace(0, 1, 16), np.random.default_rng(0), restarts=2)
    assert len(calls) == 2 and fit.values == (2.0,)


def test_a_fit_reports_the_root_mean_squared_error_and_a_fit_budget_per_constant(monkeypatch):
    """Fit.rmse is sqrt(rss / n) (it becomes the row's trajectory_rmse); each start may make
    100 x (constants + 1) function evaluations."""
    calls = []
    monkeypatch.setattr(grammar, "fit_trajectory", _fake_fitter([4.0], calls))
    a, b = sympy.symbols("a b", real=True)
    fit = grammar.fit_skeleton(grammar.canonical(a * grammar.Y + b * grammar.Y**2), np.linspace(0, 2, 16),
                               np.linspace(1, 2, 16), np.random.default_rng(0), restarts=1)
    assert fit.rmse == pytest.approx(0.5) and calls[0]["max_nfev"] == 300


def test_no_restart_starts_after_the_deadline(monkeypatch):
    """A skeleton reached after the search's deadline is not fitted at all (infinite error)."""
    calls = []
    monkeypatch.setattr(grammar, "fit_trajectory", _fake_fitter([1.0], calls))
    fit = grammar.fit_skeleton(grammar.canonical(sympy.Symbol("a") * grammar.Y), np.linspace(0, 2, 8),
                               np.linspace(1, 2, 8), np.random.default_rng(0), deadline=time.perf_counter() - 1)
    assert calls == [] and fit.rmse == float("inf")


def test_a_search_past_its_deadline_fits_no_further_skeleton(monkeypatch):
    """With no time left the search returns no fits (not a list of unfitted skeletons)."""
    t = np.linspace(0, 2, 16)
    assert grammar.search(t, np.exp(-t), sample_size=8, time_limit=0.0) == []


def _quick_search(monkeypatch, y, seed=0):
    """search() with every fit replaced by a cheap one; returns the skeleton keys fitted and the rank scale."""
    keys, scales = [], []
    monkeypatch.setattr(grammar, "fit_skeleton", lambda s, t, y, rng, restarts, deadline:
                        keys.append(s.key) or grammar.Fit(s, (1.0,) * len(s.constants), 1.0))
    real_rank = grammar.rank
    monkeypatch.setattr(grammar, "rank", lambda fits, scale: scales.append(scale) or real_rank(fits, scale))
    grammar.search(np.linspace(0, 2, 16), y, sample_size=8, seed=seed)
    return keys, scales


def test_the_search_samples_from_the_seed_it_is_given(monkeypatch):
    """Equal seeds give equal skeletons, another seed other skeletons (ProGED gets the task's seed)."""
    one, _ = _quick_search(monkeypatch, np.linspace(1, 2, 16), seed=1)
    again, _ = _quick_search(monkeypatch, np.linspace(1, 2, 16), seed=1)
    other, _ = _quick_search(monkeypatch, np.linspace(1, 2, 16), seed=2)
    assert one == again and one != other


def test_the_absolute_tie_tolerance_follows_the_scale_of_y(monkeypatch):
    """rank's absolute slack is 1e-6 x std(y): at std 100 a one-constant fit 5e-5 worse than an exact
    two-constant one still wins; search hands rank std(y) (1 for data at rest)."""
    y = grammar.Y
    two = grammar.canonical(sympy.Symbol("a") * y + sympy.Symbol("b") * y**2)
    one = grammar.canonical(sympy.Symbol("a") * y)
    fits = [grammar.Fit(two, (1.0, 1.0), 0.0), grammar.Fit(one, (1.0,), 5e-5)]
    assert grammar.rank(fits, scale=100.0)[0].skeleton is one
    assert grammar.rank(fits, scale=1.0)[0].skeleton is two
    data = 100 * np.linspace(0, 1, 16)
    assert _quick_search(monkeypatch, data)[1] == [pytest.approx(float(np.std(data)))]
    assert _quick_search(monkeypatch, np.full(16, 3.0))[1] == [1.0]


def test_proged_offers_at_most_four_candidates(monkeypatch, logistic_observations):
    """The answer is the best usable fit; the next four (no more) are its candidates."""
    import sys

    cls = load("proged")
    fits = [SimpleNamespace(expression=f"{-k}*y", rmse=0.1 * k, skeleton=SimpleNamespace(expr="C0*y"))
            for k in range(1, 8)]
    monkeypatch.setattr(sys.modules[cls.__module__], "search", lambda *a, **k: fits)
    prediction = run(cls(sample_size=7), logistic_observations)
    assert prediction.expression == "-1*y" and prediction.candidates == ("-2*y", "-3*y", "-4*y", "-5*y")

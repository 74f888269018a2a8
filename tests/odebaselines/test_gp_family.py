"""The SRBench GP family on DEAP: recovery of two Textbook ODEs, determinism, invalid programs.

Budgets are small (population 100, tens of generations) so the file runs in well under three
minutes on one core; the seeds are fixed, so a pass is reproducible.
"""
import random
import warnings

import numpy as np
import pytest
import sympy
from deap import base, tools

from bench import datasets
from odebaselines import gp
from odebaselines.gp_ellyn import AFPRegressor, EHCRegressor, EPLEXRegressor, FEAFPRegressor, express
from odebaselines.gp_gomea import GPGOMEARegressor
from odebaselines.gp_selection import epsilon_lexicase
from odecore.expressions import parse
from bench.scoring import score
from bench.tasks import Task
from baselines_support import assert_same_f

SMALL = {
    "afp": lambda seed: AFPRegressor(population_size=100, generations=50, random_state=seed),
    "fe_afp": lambda seed: FEAFPRegressor(population_size=100, generations=50, random_state=seed),
    "ehc": lambda seed: EHCRegressor(population_size=100, generations=30, random_state=seed),
    "eplex": lambda seed: EPLEXRegressor(population_size=100, generations=40, random_state=seed),
    "gpgomea": lambda seed: GPGOMEARegressor(population_size=100, max_evaluations=5000, random_state=seed),
}


@pytest.fixture(scope="module")
def textbook():
    return {tr.equation_id: tr for tr in datasets.load("textbook")}


def observed_derivative(trajectory):
    """(y, dy/dt) at the 192 noise-free observations; np.gradient suffices at sigma = 0."""
    obs = Task(trajectory, 0.0, 192, 0).observations()
    return obs.y, np.gradient(obs.y, obs.t)


@pytest.mark.parametrize("method", sorted(SMALL))
@pytest.mark.parametrize("equation", ["compound-interest", "logistic"])
def test_each_method_recovers_textbook_equation(textbook, method, equation):
    y, dy = observed_derivative(textbook[equation])
    model = SMALL[method](0).fit(y[:, None], dy)
    result = score(model.expression_, textbook[equation])
    assert result.status == "ok", result.reason
    assert result.interpolation["r2"] > 0.99, model.expression_
    # small GP budgets find approximations (up to 8% off here); the best constant is 15% off
    assert_same_f(model.expression_, textbook[equation], tolerance=0.1)


@pytest.mark.parametrize("method", sorted(SMALL))
def test_same_seed_gives_same_expression_and_other_seed_differs(textbook, method):
    y, dy = observed_derivative(textbook["logistic"])
    y, dy = y[::4], dy[::4]
    fit = lambda seed: SMALL[method](seed).set_params(**_tiny(method)).fit(y[:, None], dy).expression_
    state = random.getstate()
    first = fit(7)
    assert random.getstate() == state  # DEAP's global stream is restored after a fit
    assert fit(7) == first
    assert fit(8) != first


def _tiny(method):
    return {"max_evaluations": 1500} if method == "gpgomea" else {"generations": 8}


@pytest.mark.parametrize("method", sorted(SMALL))
def test_invalid_programs_never_crash_a_fit(method):
    y = np.linspace(0.0, 800.0, 40)  # exp and cube overflow, y = 0 hits div and log poles
    target = np.where(y > 400, 1e300, -3.0) * 1e5  # squared errors overflow too
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warnings would reach users' logs
        model = SMALL[method](0).set_params(**_tiny(method)).fit(y[:, None], target)
        predicted = model.predict(y[:, None])
    assert np.all(np.isfinite(predicted))
    parse(model.expression_)


def test_evaluator_gives_inf_error_for_overflow_and_nan():
    pset = gp.primitive_set(gp.ELLYN_FUNCTIONS)
    y = np.array([0.0, 1.0, 1000.0])
    evaluator = gp.Evaluator(y, np.zeros(3), max_time=None)
    huge = "cube(cube(cube(cube(cube(y)))))"  # 1000^243 overflows to inf
    for text in [huge, f"sub({huge}, {huge})", f"sin({huge})"]:  # inf, inf - inf = NaN, sin(inf) = NaN
        assert evaluator.error(gp.gp.PrimitiveTree.from_string(text, pset)) == np.inf
    assert evaluator.count == 3


def test_expression_string_equals_program_away_from_protection():
    random.seed(1)
    pset = gp.primitive_set(tuple(f for f in gp.ELLYN_FUNCTIONS if f != "exp"))  # exp's clip is its protection
    y = np.linspace(0.5, 3.0, 25)
    checked = 0
    for _ in range(300):
        program = gp.random_tree(pset, 1, 5)
        with gp.quiet_numpy():
            values = gp.evaluate(program, y)
            expr = parse(gp.expression(program, scale=(0.5, -2.0), points=y))
            written = sympy.lambdify(sympy.Symbol("y", real=True), expr, "numpy")(y) * np.ones_like(y)
        away = np.isfinite(written)  # at log(0) or x/0 the written form is infinite, the program not
        if np.all(np.isfinite(values)) and np.all(np.abs(values) < 1e8) and away.sum() > 20:
            np.testing.assert_allclose(written[away], 0.5 - 2.0 * values[away], rtol=1e-8, atol=1e-8)
            checked += 1
    assert checked > 200
    assert gp.expression(gp.gp.PrimitiveTree.from_string("exp(y)", gp.primitive_set(("exp",)))) == "exp(y)"


def test_silenced_primitives_pass_their_first_argument_and_express_into_the_tree():
    pset = gp.primitive_set(gp.ELLYN_FUNCTIONS)
    tree = gp.gp.PrimitiveTree.from_string("add(mul(y, 3.0), sin(y))", pset)
    y = np.linspace(0.0, 1.0, 5)
    silenced = frozenset({0, 1})  # add -> its first argument; mul -> y
    np.testing.assert_allclose(gp.evaluate(tree, y, silenced), y)
    assert gp.expression(express(tree, silenced)) == "y"


def _clones(errors):
    """Rows 10-19 identical, which DEAP loops over to the last case."""
    errors[10:20] = errors[9]
    return errors


def _near_clones(errors):
    """Half the rows one program's clones, a few of them off on one case each: most cases then
    keep every candidate, the steps the vectorised rule skips."""
    errors[:30] = errors[0]
    errors[[3, 7, 11], [4, 9, 9]] += [0.5, 0.25, 1.0]
    return errors


@pytest.mark.parametrize("shape", [_clones, _near_clones])
def test_vectorised_epsilon_lexicase_picks_what_deap_picks(shape):
    errors = shape(np.random.default_rng(0).random((60, 25)).round(2))

    class Fitness(base.Fitness):
        weights = (-1.0,) * errors.shape[1]

    class Individual:
        def __init__(self, index, row):
            self.index, self.fitness = index, Fitness(tuple(row))

    individuals = [Individual(i, row) for i, row in enumerate(errors)]
    random.seed(5)
    expected = [ind.index for ind in tools.selAutomaticEpsilonLexicase(individuals, 200)]
    random.seed(5)
    assert epsilon_lexicase(errors, 200) == expected


@pytest.mark.parametrize("method", ["eplex", "gpgomea"])
def test_method_file_runs_the_fd_protocol_end_to_end(textbook, method):
    """Through methods/<name>.py: FD derivative, grid search on the [0, 1] / (1, 2] split, refit."""
    from bench.method import Budget
    from bench.registry import discover

    budget = {"max_evaluations": [4000], "population_size": [100]}
    grid = dict(budget, functions=[gp.GOMEA_FUNCTIONS_ARITHMETIC] if method == "gpgomea" else [gp.ELLYN_FUNCTIONS_NO_TRIG])
    runner = discover()[method].load()(grid=grid)
    trajectory = textbook["logistic"]
    prediction = runner.run(Task(trajectory, 0.0, 192, 0).observations(), Budget(time_limit=120.0, seed=0))
    assert prediction.metadata["failed_runs"] == 0
    assert score(prediction.expression, trajectory).interpolation["r2"] > 0.99
    again = runner.run(Task(trajectory, 0.0, 192, 0).observations(), Budget(time_limit=120.0, seed=0))
    assert again.expression == prediction.expression


def test_counted_budget_decides_and_a_time_limit_that_fires_is_recorded(textbook):
    """`evaluations` bounds each run, so a generous deadline changes nothing; a deadline that ends
    runs before their count is spent is counted in the metadata (a load-dependent result)."""
    from bench.method import Budget
    from bench.registry import discover

    ehc = discover()["ehc"].load()
    grid = {"population_size": [100], "functions": [gp.ELLYN_FUNCTIONS_NO_TRIG]}
    observations = Task(textbook["logistic"], 0.0, 128, 0).observations()
    counted = ehc(grid=grid, evaluations=3000)
    first = counted.run(observations, Budget(time_limit=120.0, seed=0))
    assert first.metadata["runs_stopped_by_time"] == 0
    assert counted.run(observations, Budget(time_limit=600.0, seed=0)).expression == first.expression
    rushed = ehc(grid=grid, evaluations=10**9).run(observations, Budget(time_limit=2.0, seed=0))
    assert rushed.metadata["runs_stopped_by_time"] == 2  # the grid's one run and the refit


def test_evaluations_must_be_a_whole_number():
    from bench.registry import discover

    with pytest.raises(ValueError, match="evaluations=0"):
        discover()["afp"].load()(evaluations=0).check_params()


def test_of_two_equally_good_programs_the_younger_survives_deletion():
    from types import SimpleNamespace

    from odebaselines.gp_selection import pareto_tournament_deletion

    old, young = SimpleNamespace(age=5, err=2.0, tree=[0]), SimpleNamespace(age=0, err=2.0, tree=[0])
    assert pareto_tournament_deletion([old, young], 1, np.random.default_rng(0), key=lambda i: i.err) == [young]

"""The SRBench GP family on DEAP: recovery of two Textbook ODEs, determinism, invalid programs.

Budgets are small (population 100, tens of generations) so the file runs in well under three
minutes on one core; the seeds are fixed, so a pass is reproducible.
"""
import random
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import sympy
from deap import base, tools

from bench import datasets
from odebaselines import gp
from odebaselines.gp_ellyn import AFPRegressor, EHCRegressor, EPLEXRegressor, FEAFPRegressor, express
from odebaselines.gp_gomea import GPGOMEARegressor
from odebaselines.gp_selection import epsilon_lexicase, pareto_tournament_deletion
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


def test_an_evaluation_on_a_subset_of_points_counts_as_that_share_of_one():
    """FE-AFP's predictor evaluations on 10 of 100 points count 0.1 each against `max_evaluations`."""
    pset = gp.primitive_set(gp.ELLYN_FUNCTIONS)
    evaluator = gp.Evaluator(np.linspace(1.0, 2.0, 100), np.zeros(100), max_time=None)
    program = gp.gp.PrimitiveTree.from_string("mul(y, y)", pset)
    evaluator.error(program, rows=np.arange(10))
    assert evaluator.count == pytest.approx(0.1)
    evaluator.error(program)
    assert evaluator.count == pytest.approx(1.1)


def test_crossover_and_mutation_never_make_a_program_longer_than_max_length():
    """ellyn's program length limit: a longer child is replaced by its parent."""
    pset = gp.primitive_set(gp.ELLYN_FUNCTIONS)
    random.seed(3)
    longest = 0
    for _ in range(300):
        a, b = gp.random_tree(pset, 2, 5), gp.random_tree(pset, 2, 5)
        a, b = (a, b) if len(a) <= 12 else (b, a)
        if len(a) > 12:
            continue
        crossed, mutated = gp.crossover(a, b, 12), gp.mutate(a, pset, 12)
        longest = max(longest, len(crossed), len(mutated))
        assert len(crossed) <= 12 and len(mutated) <= 12
    assert longest == 12  # the limit was reached, not just never approached


def test_of_two_programs_of_equal_age_and_error_the_shorter_survives_deletion():
    """AFP's Pareto deletion: 'equal pairs: the longer one goes', whichever of the pair is drawn first."""
    long, short = SimpleNamespace(age=1, err=2.0, tree=[0] * 5), SimpleNamespace(age=1, err=2.0, tree=[0])
    for pool in ([long, short], [short, long]):
        for seed in range(6):
            kept = pareto_tournament_deletion(pool, 1, np.random.default_rng(seed), key=lambda i: i.err)
            assert kept == [short]


@pytest.mark.parametrize("name", ["afp", "fe_afp", "ehc", "eplex", "gpgomea"])
def test_each_gp_method_gives_its_regressor_the_seed_the_budget_and_the_cooperative_time_limit(name):
    """`evaluations` bounds every run, the task's seed reaches it, and it stops by itself at 0.8 of
    its hard limit (the protocol kills it at the limit and scores the run as failed)."""
    from bench.registry import discover

    regressor = discover()[name].load()(evaluations=1234).make_regressor(5, 10.0)
    assert regressor.max_evaluations == 1234 and regressor.random_state == 5
    assert regressor.max_time == pytest.approx(8.0)
    assert discover()[name].load()().make_regressor(5, None).max_time is None


def test_generations_bound_the_run_exactly():
    """generations=0 scores only the initial population; generations=1 one generation more."""
    y = np.linspace(0.5, 2.0, 30)
    none = AFPRegressor(population_size=20, generations=0, random_state=0).fit(y[:, None], -0.5 * y)
    assert none.n_evaluations_ == 20
    one = AFPRegressor(population_size=20, generations=1, random_state=0).fit(y[:, None], -0.5 * y)
    assert one.n_evaluations_ > 20


def test_a_counted_budget_stops_a_generation_where_it_is_spent():
    """The budget is checked after every child, not only between generations (AFP: a generation of
    100 children costs about 200 evaluations)."""
    y = np.linspace(0.5, 2.0, 30)
    afp = AFPRegressor(population_size=100, max_evaluations=150, random_state=0).fit(y[:, None], -0.5 * y)
    assert 150 <= afp.n_evaluations_ <= 152
    gomea = GPGOMEARegressor(population_size=50, max_evaluations=200, random_state=0).fit(y[:, None], -0.5 * y)
    assert gomea.n_evaluations_ == 200


def test_gpgomea_without_linear_scaling_returns_the_program_unscaled():
    """SRBench also ran GP-GOMEA without linear scaling: the answer is then the evolved program itself."""
    y = np.linspace(0.5, 2.0, 30)
    model = GPGOMEARegressor(population_size=20, max_evaluations=300, linear_scaling=False,
                             random_state=0).fit(y[:, None], 3.0 - 0.5 * y)
    assert model.scale_ is None
    assert model.expression_ == gp.expression(model.program_, points=y)
    scaled = GPGOMEARegressor(population_size=20, max_evaluations=300, random_state=0).fit(y[:, None], 3.0 - 0.5 * y)
    assert scaled.scale_ is not None


def test_the_local_search_iterations_reach_the_run():
    """`hill_climbing_iterations` and EHC's `epigenetic_iterations` are counted evaluations of each child."""
    from odebaselines.gp_ellyn import EHCRegressor

    y = np.linspace(0.5, 2.0, 30)
    count = lambda cls, **kw: cls(population_size=30, generations=2, random_state=0, **kw).fit(y[:, None], -0.5 * y).n_evaluations_
    assert count(AFPRegressor, hill_climbing_iterations=0) < count(AFPRegressor, hill_climbing_iterations=1) \
        < count(AFPRegressor, hill_climbing_iterations=3)
    assert count(EHCRegressor, epigenetic_iterations=0) < count(EHCRegressor, epigenetic_iterations=3)

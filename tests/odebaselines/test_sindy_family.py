"""The careful-user SINDy family (sindy-weak, sindy-ensemble, sindy-ic) recovers simple ODEs from
128 irregular samples and stays sane under noise; shared pieces in odebaselines.sindy_family."""
import math

import numpy as np
import pytest

from odebaselines import sindy_family as family
from odecore import protocol
from odecore.expressions import parse
from odecore.solving import solve_truth
from bench.method import Budget
from bench.registry import discover
from bench.scoring import score
from bench.tasks import Task, Trajectory
from methods.sindy_ensemble import SindyEnsemble
from methods.sindy_ic import SindyIC
from methods.sindy_weak import SindyWeak

METHODS = ("sindy-weak", "sindy-ensemble", "sindy-ic")


def trajectory(expression: str, y0: float) -> Trajectory:
    y, y_extra = solve_truth(expression, y0)
    return Trajectory("test", expression, 0, expression, y0, protocol.interpolation_grid(), y,
                      protocol.extrapolation_grid(), y_extra)


@pytest.fixture(scope="module")
def decay():
    return trajectory("-0.5*y", 3.0)


@pytest.fixture(scope="module")
def textbook_logistic():
    """y' = 0.23 y (1 - y) from Textbook's y0 = 4.9: a strongly curved decay to 1."""
    return trajectory("0.23*y*(1 - y)", 4.9)


def fit(method: str, trajectory: Trajectory, sigma: float):
    prediction = discover()[method].load()().run(Task(trajectory, sigma, 128, 0).observations(),
                                                   Budget(time_limit=180, seed=0))
    parse(prediction.expression)
    result = score(prediction.expression, trajectory)
    assert result.status == "ok", result.reason
    return prediction, result


@pytest.mark.parametrize("method", METHODS)
def test_recovers_exponential_decay_coefficient_and_extrapolates(method, decay):
    prediction, result = fit(method, decay, 0.0)
    expr = parse(prediction.expression)
    assert float(expr.coeff(parse("y"))) == pytest.approx(-0.5, abs=0.005), prediction.expression
    assert abs(float(expr.subs(parse("y"), 0))) < 0.005, prediction.expression
    assert result.extrapolation["r2"] > 0.99


@pytest.mark.parametrize("method", METHODS)
def test_recovers_logistic_without_noise(method, textbook_logistic):
    prediction, result = fit(method, textbook_logistic, 0.0)
    assert result.interpolation["r2"] > 0.99, prediction.expression
    assert result.extrapolation["r2"] > 0.99, prediction.expression


def test_a_constant_ode_fails_the_logistic_check(textbook_logistic):
    """The logistic test discriminates: the best constant slope does not reach R^2 0.99."""
    y = textbook_logistic.y
    slope = (y[-1] - y[0]) / protocol.T
    result = score(repr(float(slope)), textbook_logistic)
    assert result.interpolation["r2"] < 0.99 and result.extrapolation["r2"] < 0.99


@pytest.mark.parametrize("method", METHODS)
def test_stays_sane_on_noisy_decay(method, decay):
    prediction, result = fit(method, decay, 0.02)
    assert result.interpolation["r2"] > 0.9, prediction.expression


@pytest.mark.parametrize("method", METHODS)
def test_listed_as_available_with_explicit_parameters(method):
    cls = discover()[method].load()
    instance = cls()
    assert instance.unavailable_reason() is None
    assert cls.description and cls.version and cls.time_limit > 0
    assert "pysindy" in cls.requires
    params = instance.get_params()
    assert params and repr(cls(**params)) == repr(instance)


def test_rational_terms_with_a_pole_near_the_data_are_dropped():
    y = np.linspace(-0.8, 3.0, 50)
    kept = family.usable_terms(family.polynomial_terms(2) + family.saturation_terms((0.5, 1.0, 5.0)), y)
    assert kept == ("y", "y**2", "y/(5.0 + y)")


def test_information_criterion_prefers_fewer_terms_at_equal_fit():
    small = family.Candidate(np.array([0.0, -0.5]), ("1", "y"), 1e-3)
    large = family.Candidate(np.array([1e-6, -0.5]), ("1", "y"), 0.99e-3)
    for kind in ("aic", "bic"):
        assert family.information_criterion(small, 128, kind) < family.information_criterion(large, 128, kind)


def test_sindy_ic_tells_fits_to_round_off_apart_by_their_number_of_terms(decay):
    # without the floor on RSS/n, a five-term polynomial that fits the clean decay to 1e-12 beats -0.5*y
    prediction, _ = fit("sindy-ic", decay, 0.0)
    assert len(parse(prediction.expression).as_ordered_terms()) == 1, prediction.expression


def test_coefficients_that_overflow_are_named_not_parsed_as_nan():
    t = np.linspace(0, 2, 40)
    y = 2 * np.exp(-0.5 * t)
    overflowed = family.candidate(np.array([np.nan, 1.0]), ("1", "y"), t, y)
    assert overflowed.rss == np.inf
    with pytest.raises(RuntimeError, match="1 had coefficients that are not finite"):
        family.finite([overflowed])


def test_the_least_squares_refit_does_not_depend_on_the_units_of_y():
    y = np.linspace(1.0, 3.0, 40)
    theta = np.column_stack([y ** k for k in range(6)])
    target = 0.7 - 0.5 * y + 0.1 * y ** 3
    support = np.array([True, True, False, True, False, False])
    for scale in (1.0, 1e3, 1e6):  # the same law in other units: y -> s y, y' -> s y'
        scaled = np.column_stack([(scale * y) ** k for k in range(6)])
        coef = family.least_squares_on(scaled, scale * target, support)
        assert coef[[0, 1, 3]] * scale ** np.array([-1.0, 0.0, 2.0]) == pytest.approx([0.7, -0.5, 0.1], rel=1e-6)
    assert family.least_squares_on(theta, target, ~support)[support].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("method", METHODS)
def test_data_at_rest_is_read_as_y_prime_zero(method):
    at_rest = trajectory("0", 0.0)
    prediction, result = fit(method, at_rest, 0.0)
    assert float(parse(prediction.expression)) == 0.0


def test_weak_form_widens_its_test_functions_for_sparse_or_gapped_sampling():
    from bench.method import InvalidInput, Observations

    method = discover()["sindy-weak"].load()()
    sparse = np.linspace(0, 2, 10)
    prediction = method.run(Observations(sparse, 3 * np.exp(-0.5 * sparse)), Budget(time_limit=60, seed=0))
    assert float(parse(prediction.expression).coeff(parse("y"))) == pytest.approx(-0.5, abs=0.005)
    gapped = np.r_[np.linspace(0, 0.7, 30), np.linspace(1.3, 2, 30)]  # no data in (0.7, 1.3)
    parse(method.run(Observations(gapped, 3 * np.exp(-0.5 * gapped)), Budget(time_limit=60, seed=0)).expression)
    with pytest.raises(InvalidInput, match="too sparse or gapped"):
        lonely = np.r_[np.linspace(0, 0.2, 10), 2.0]
        method.run(Observations(lonely, 3 * np.exp(-0.5 * lonely)), Budget(time_limit=60, seed=0))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_the_sparse_fit_threshold_is_free_of_the_units_of_y(scale):
    y = scale * np.linspace(1, 3, 40)
    coef = family.sparse_fit(np.column_stack([np.ones_like(y), y, y**2]), -0.5 * y, 0.05, 1e-6)
    assert list(coef != 0) == [False, True, False] and coef[1] == pytest.approx(-0.5, rel=1e-6)


def test_the_criteria_and_the_parsimony_rule_count_terms_as_documented():
    import math

    two = family.Candidate(np.array([1.0, 1.0, 0.0]), ("1", "y", "y^2"), 1.0)
    assert family.information_criterion(two, 100, "bic") == pytest.approx(100 * math.log(0.01) + 2 * math.log(100))
    assert family.information_criterion(two, 100, "aic") == pytest.approx(100 * math.log(0.01) + 4)
    y = np.linspace(1, 3, 100)
    for big, small in ((1.0, 1.08), (1e-20, 1e-16)):  # within 10%, and both at round-off (the floor)
        three, one = (family.Candidate(np.array(c), ("1", "y", "y^2"), rss)
                      for c, rss in (([1.0, 1.0, 1.0], big), ([0.0, 1.0, 0.0], small)))
        assert family.most_parsimonious([three, one], 0.1, y)[0] is one


def test_seeding_for_pysindy_leaves_the_callers_global_generator_as_it_was():
    """pysindy draws from np.random: the block is seeded, and the caller's stream goes on after it
    as if the block had not run."""
    np.random.seed(11)
    expected = np.random.rand(3)
    np.random.seed(11)
    with family.seeded(5):
        inside = np.random.rand(2)
    assert np.array_equal(np.random.rand(3), expected)
    np.random.seed(5)
    assert np.array_equal(inside, np.random.rand(2))


def _slope(prediction):
    return float(parse(prediction.expression).coeff(parse("y")))


def test_sindy_ic_scores_by_the_criterion_it_is_given(decay):
    """criterion=aic charges 2 per term, bic log(n): on the clean decay both pick the same fit."""
    observations = Task(decay, 0.0, 128, 0).observations()
    small = dict(degree=2, saturation_constants=(), thresholds=(0.01,))
    aic = SindyIC(criterion="aic", **small).run(observations, Budget(time_limit=60, seed=0))
    bic = SindyIC(criterion="bic", **small).run(observations, Budget(time_limit=60, seed=0))
    terms = len(aic.expression.split(" + "))
    assert aic.expression == bic.expression and "bic" not in aic.metadata
    assert aic.metadata["aic"] - bic.metadata["bic"] == pytest.approx(terms * (2 - math.log(128)))


def test_sindy_ic_offers_each_saturation_term_beside_the_constant_alone():
    """The documented libraries: 1, y, ..., y^d for d <= 2 plus one y/(c + y), d = 0 included."""
    libraries = SindyIC(degree=3, saturation_constants=(1.0,)).libraries(np.linspace(0.5, 3.0, 40))
    assert set(libraries) == {("y",), ("y", "y**2"), ("y", "y**2", "y**3"),
                              ("y/(1.0 + y)",), ("y", "y/(1.0 + y)"), ("y", "y**2", "y/(1.0 + y)")}


def test_sindy_ic_and_ensemble_use_the_fd_settings_they_are_given(decay):
    observations = Task(decay, 0.0, 128, 0).observations()
    ic = SindyIC(degree=1, saturation_constants=(), fd_settings=((31, 2),)).run(observations, Budget(seed=0))
    assert ic.metadata["best_params"]["fd_setting"] == (31, 2)
    ensemble = SindyEnsemble(degrees=(1,), thresholds=(0.05,), n_models=4, fd_settings=((31, 2),))
    assert ensemble.run(observations, Budget(seed=0)).metadata["best_params"]["fd_setting"] == (31, 2)


def test_sindy_weak_of_degree_one_fits_y(decay):
    """`degrees` = (1,) is the library 1, y: the clean decay is -0.5*y."""
    prediction = SindyWeak(degrees=(1,)).run(Task(decay, 0.0, 128, 0).observations(), Budget(seed=0))
    assert _slope(prediction) == pytest.approx(-0.5, abs=0.005), prediction.expression


def test_sindy_weak_draws_its_test_functions_from_the_task_seed(decay):
    observations = Task(decay, 0.02, 128, 0).observations()
    weak = SindyWeak(degrees=(1,), thresholds=(0.01,), test_functions=(50,))
    fit = lambda seed: weak.run(observations, Budget(seed=seed)).expression
    assert fit(0) == fit(0) != fit(1)


def test_sindy_ensemble_keeps_a_term_in_every_bag_at_inclusion_one(decay):
    """inclusion = 1 is allowed ([0, 1]) and keeps the terms nonzero in every bagged model."""
    ensemble = SindyEnsemble(degrees=(1,), thresholds=(0.05,), n_models=10, inclusion=1.0)
    prediction = ensemble.run(Task(decay, 0.0, 128, 0).observations(), Budget(seed=0))
    assert prediction.metadata["inclusion_probability"]["y"] == 1.0
    assert _slope(prediction) == pytest.approx(-0.5, abs=0.005), prediction.expression


def test_sindy_ensemble_bags_n_models_drawn_from_the_task_seed(decay):
    """Inclusion probabilities are shares of `n_models` bags, and the bags follow the seed."""
    observations = Task(decay, 0.02, 128, 0).observations()
    small = dict(degrees=(3,), thresholds=(0.05,), fd_settings=((15, 3),))
    three = SindyEnsemble(n_models=3, **small).run(observations, Budget(seed=0)).metadata["inclusion_probability"]
    assert all(3 * p == pytest.approx(round(3 * p)) for p in three.values()), three
    probability = lambda seed: SindyEnsemble(**small).run(observations, Budget(seed=seed)).metadata["inclusion_probability"]
    assert probability(0) == probability(0) != probability(1)


def test_sindy_ensemble_threshold_is_free_of_the_units_of_y():
    """The decay in units of 1e-4: its derivative's norm is tiny, and an unscaled threshold drops every term."""
    tiny = trajectory("-0.5*y", 3e-4)
    prediction = SindyEnsemble(degrees=(1,)).run(Task(tiny, 0.0, 128, 0).observations(), Budget(seed=0))
    assert _slope(prediction) == pytest.approx(-0.5, abs=0.005), prediction.expression


def test_sindy_weak_test_functions_have_the_degree_they_are_given(decay):
    """`test_degree` is p of the test functions (1 - s^2)^p: another p integrates against other weights."""
    observations = Task(decay, 0.0, 128, 0).observations()
    t, y = observations.t, observations.y
    system = lambda p: SindyWeak(test_degree=p)._weak_system(t, y, ("y",), 50, 0)
    (theta2, target2), (theta4, target4), (again, _) = system(2), system(4), system(4)
    assert np.array_equal(theta4, again)
    assert not np.allclose(theta2, theta4) and not np.allclose(target2, target4)

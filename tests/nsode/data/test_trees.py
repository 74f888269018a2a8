"""The expression sampler: uniform tree shapes, and the configured decoration probabilities."""
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from nsode.data import config as cfg
from nsode.data import trees


def _n_ops(prefix) -> int:
    return sum(isinstance(t, str) and t != "y" for t in prefix)


def test_tree_sizes_follow_the_exact_counts_not_biased_to_small_trees():
    config = cfg.default()
    rng = np.random.default_rng(0)
    sizes = Counter(_n_ops(trees.sample_expression(rng, config)) for _ in range(6000))
    expected = trees.size_distribution(config.max_ops)  # D(1, n) / sum: most mass on n = K
    observed = np.array([sizes[n] for n in range(1, config.max_ops + 1)])
    assert expected[config.max_ops] > 0.7  # the counts themselves favour large trees
    chi2 = stats.chisquare(observed, expected[1:] * observed.sum())
    assert chi2.pvalue > 1e-3


def test_trees_of_one_size_are_uniform_over_shapes():
    rng = np.random.default_rng(1)
    shapes = Counter(tuple(trees.sample_shape(3, rng)) for _ in range(4000))
    assert len(shapes) == trees.count_trees(1, 3)  # every shape occurs
    counts = np.array(list(shapes.values()))
    assert stats.chisquare(counts).pvalue > 1e-3


def test_operator_and_leaf_frequencies_match_the_configured_probabilities():
    config = cfg.default().replace(binary_ops={"add": 0.4, "mul": 0.4, "pow": 0.2},
                                   unary_ops={"sin": 0.5, "exp": 0.25, "log": 0.25}, p_sym=0.7, p_int=0.3)
    rng = np.random.default_rng(2)
    ops, leaves, ints, n_const = Counter(), Counter(), 0, 0
    for _ in range(3000):
        for tok in trees.sample_expression(rng, config):
            if isinstance(tok, str) and tok != "y":
                ops[tok] += 1
            else:
                leaves["y" if tok == "y" else "c"] += 1
                if tok != "y":
                    n_const += 1
                    ints += isinstance(tok, int)
                    assert tok != 0 and -10 <= tok <= 10
    for group in (config.binary_ops, config.unary_ops):
        total = sum(ops[k] for k in group)
        for name, p in group.items():
            assert abs(ops[name] / total - p) < 4 * np.sqrt(p * (1 - p) / total), name
    assert not set(ops) - set(config.binary_ops) - set(config.unary_ops)
    n_leaves = sum(leaves.values())
    assert abs(leaves["y"] / n_leaves - 0.7) < 4 * np.sqrt(0.21 / n_leaves)
    assert abs(ints / n_const - 0.3) < 4 * np.sqrt(0.21 / n_const)


def test_constants_are_nonzero_and_keep_a_requested_sign():
    config = cfg.default()
    rng = np.random.default_rng(3)
    values = [trees.sample_constant(rng, config) for _ in range(4000)]
    assert all(v != 0 and -10 <= v <= 10 for v in values)
    integers = [v for v in values if isinstance(v, int)]
    assert set(integers) == set(range(-10, 11)) - {0}
    assert all(trees.sample_constant(rng, config, sign=-1) < 0 for _ in range(500))
    assert all(trees.sample_constant(rng, config, sign=+1) > 0 for _ in range(500))


def test_a_wide_integer_range_is_sampled_without_listing_it():
    # int_range [-10, 1e15] built a list of every integer: generation ran for ever without a line of output
    config = cfg.from_dict({**cfg.default().to_dict(), "p_int": 1.0, "int_range": [-10, 10**15]})
    rng = np.random.default_rng(4)
    values = [trees.sample_constant(rng, config, sign=s) for s in (0, 1, -1) for _ in range(200)]
    assert all(isinstance(v, int) and v != 0 and -10 <= v <= 10**15 for v in values)
    assert all(v < 0 for v in values[400:]) and all(v > 0 for v in values[200:400])
    assert max(values) > 10**14  # drawn from the whole range, not from a listed start of it
    with pytest.raises(cfg.ConfigError, match="int_range must lie within"):
        cfg.from_dict({**cfg.default().to_dict(), "int_range": [-10, 10**20]})


def test_a_huge_exponent_of_a_y_subtree_is_refused_not_expanded():
    # (y/9)**((-9)**10) made sympy compute 9**3486784401 exactly: a data generation run hung on it.
    prefix = ["mul", "sub", "pow", "div", "y", 9, "pow", -9, 10, 5.842490676388326, "y"]
    with pytest.raises(trees.InvalidTree, match="exponent"):
        trees.to_sympy(prefix)
    assert str(trees.to_sympy(["pow", "y", 3])) == "y**3"


def test_a_y_subtree_that_cancels_is_evaluated_as_a_float():
    # exp(exp(exp(12.5 + y - y))): sympy evaluated the last exp with arbitrary-precision floats
    # (computing ln 2 to hundreds of thousands of digits); a generation run sat on it for an hour.
    prefix = ["exp", "exp", "exp", "add", "sub", "y", "y", 12.5]
    with pytest.raises(trees.InvalidTree, match="not a finite real"):
        trees.to_sympy(prefix)
    assert trees.to_sympy(["add", "y", "mul", "sub", "y", "y", 3.0]) == trees.Y


def test_an_integer_range_from_zero_never_draws_zero():
    config = cfg.default().replace(p_int=1.0, int_range=[0, 10])
    rng = np.random.default_rng(0)
    assert {trees.sample_constant(rng, config) for _ in range(500)} == set(range(1, 11))


def test_a_huge_negative_exponent_of_a_y_subtree_is_refused():
    # y**(-9**11): sympy would work on it for ever
    with pytest.raises(trees.InvalidTree, match="exponent"):
        trees.to_sympy(["pow", "y", "pow", -9, 11])


def test_operator_weights_are_normalised_and_weight_zero_is_left_out():
    config = cfg.default().replace(binary_ops={"add": 1, "mul": 3}, unary_ops={"sin": 1, "cos": 0})
    assert dict(config.binary_ops) == {"add": 0.25, "mul": 0.75} and "cos" not in config.unary_ops
    trees.sample_expression(np.random.default_rng(0), config)  # rng.choice needs weights summing to 1


@pytest.mark.parametrize("real_range", [(-5.0, -1.0), (-5.0, 0.0), (1.0, 5.0)])
def test_a_constant_resampled_with_a_sign_keeps_it_whatever_side_of_0_the_range_lies(real_range):
    """Resampling keeps a constant's sign: a range wholly below 0 gave positives as negatives
    (numpy's uniform(0, -5)), and [-5, 0] drew 0 for ever."""
    config = cfg.default().replace(p_int=0.0, real_range=real_range)
    rng = np.random.default_rng(0)
    for sign in (1, -1):
        values = [trees.sample_constant(rng, config, sign) for _ in range(50)]
        assert all(v * sign > 0 for v in values)
        assert all(0 < abs(v) <= 5 for v in values)

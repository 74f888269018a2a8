"""Prefix tokens <-> sympy <-> infix, and the two-hot constant encoding."""
import numpy as np
import pytest
import sympy

from nsode.data import config as cfg
from nsode.data import simplify
from nsode.data import tokens as tok
from nsode.data import trees


def _round_trips(expr) -> None:
    prefix = tok.encode(expr)
    assert tok.decode(tok.from_strings(tok.to_strings(prefix))) == expr  # through the stored strings
    assert tok.parse_infix(tok.to_infix(expr)) == expr  # through the stored infix text
    assert all(t in tok.TOKEN_TO_ID for t in tok.to_strings(prefix) if not t[-1].isdigit())
    assert tok.skeleton(tok.decode(prefix)) == tok.skeleton(expr)


def test_token_round_trip_of_10000_random_expressions():
    # 10,000 random trees in canonical form (constant folding, support filter). sympy.simplify
    # (~50 ms each) is left out here to stay fast: it changes which expressions come out, not
    # their kind, and the simplified ones are round-tripped in the next test and in every shard.
    config = cfg.default()
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(10_000):
        prefix = trees.sample_expression(rng, config)
        try:
            expr = simplify.canonical(trees.to_sympy(prefix))
            simplify.check_support(expr, config)
        except (simplify.Rejected, trees.InvalidTree):
            continue
        _round_trips(expr)
        checked += 1
    assert checked > 6000


def test_token_round_trip_of_simplified_expressions():
    config = cfg.default()
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(5_000):  # bounded: a generator that rejects everything fails here instead of hanging
        try:
            cand = simplify.process(trees.sample_expression(rng, config), config)
        except simplify.Rejected:
            continue
        _round_trips(cand.expr)
        checked += 1
        if checked == 60:
            break
    assert checked == 60, f"only {checked} of 5000 sampled expressions survived simplification"


@pytest.mark.parametrize("c", [-10.0, -9.5, -0.25, 0.0, 1e-9, 3.7, 9.999, 10.0])
def test_two_hot_round_trip_at_edges(c):
    i, a, j, b = tok.two_hot(c)
    assert a + b == pytest.approx(1.0) and 0 <= a <= 1 and 0 <= b <= 1
    assert j == i + 1 and i in tok.GRID_IDS and j in tok.GRID_IDS
    assert tok.from_two_hot(i, a, j, b) == pytest.approx(c, abs=1e-12)


def test_two_hot_round_trip_of_random_constants():
    for c in np.random.default_rng(2).uniform(-10, 10, 20_000):
        assert tok.from_two_hot(*tok.two_hot(c)) == pytest.approx(c, abs=1e-12)


def test_constants_outside_the_grid_cannot_be_encoded():
    with pytest.raises(tok.EncodingError):
        tok.two_hot(10.5)


def test_targets_are_one_hot_for_symbols_and_two_hot_for_constants():
    rows = tok.targets(["add", "y", 2.5])
    assert rows[0] == (tok.TOKEN_TO_ID["add"], tok.TOKEN_TO_ID["add"], 1.0, 0.0)
    assert rows[2] == (tok.TOKEN_TO_ID["2"], tok.TOKEN_TO_ID["3"], 0.5, 0.5)
    assert rows[-1][0] == tok.TOKEN_TO_ID[tok.EOS]


def test_infix_parser_is_the_core_whitelist_narrowed_to_the_vocabulary():
    from odecore.expressions import parse

    text = "-2*(y + 1)*exp(y)"
    assert sympy.expand(tok.parse_infix(text) - parse(text)) == 0  # the same value,
    assert tok.parse_infix(text) != parse(text)  # but the product is kept as printed
    for outside in ("tan(y)", "pi*y", "__import__('os')", "y^2"):
        with pytest.raises(tok.EncodingError):
            tok.parse_infix(outside)


def test_a_skeleton_keeps_the_sign_of_a_coefficient():
    assert tok.skeleton(tok.parse_infix("-3*y")) != tok.skeleton(tok.parse_infix("3*y"))


def test_tokens_left_after_a_complete_expression_are_refused():
    with pytest.raises(tok.EncodingError, match="after a complete"):
        tok.decode(["y", "y"])


def test_a_difference_is_written_with_sub_and_the_positive_term_first():
    assert tok.encode(tok.parse_infix("sin(y) - 3*y")) == ["sub", "sin", "y", "mul", 3.0, "y"]


@pytest.mark.parametrize("bad", ["inf", "-inf", "nan", float("inf")])
def test_a_constant_that_is_not_finite_is_refused_even_when_clipping(bad):
    """A non-finite constant is never a target (clip=True must not turn inf into the grid's end) nor decoded
    into sympy's oo / nan."""
    with pytest.raises(tok.EncodingError, match="not finite"):
        tok.targets(["mul", bad, "y"], clip=True)
    with pytest.raises(tok.EncodingError, match="not finite"):
        tok.decode(["mul", bad, "y"])

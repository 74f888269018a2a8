import torch

from nsode.decode import constant_from_argmax, decoded_constant, two_hot_rule

GRID = torch.arange(-10.0, 11.0)


def logits_for(weights: dict[float, float]) -> torch.Tensor:
    """Logits whose softmax puts the given probabilities on grid values (tiny elsewhere)."""
    p = torch.full((21,), 1e-9)
    for v, w in weights.items():
        p[int(v) + 10] = w
    return p.log()


def test_argmax_constant_takes_larger_neighbour_and_renormalises():
    # 0.7 on 3 and 0.3 on 4 (plus a smaller 0.1 on 2) decodes to 0.7 * 3 + 0.3 * 4 = 3.3
    logits = logits_for({3: 0.6, 4: 0.6 * 3 / 7, 2: 0.1})
    assert abs(constant_from_argmax(logits, GRID) - 3.3) < 1e-5


def test_neighbour_on_the_left_and_grid_ends():
    assert abs(constant_from_argmax(logits_for({-4: 0.5, -5: 0.5 / 3}), GRID) - (-4.25)) < 1e-5
    assert abs(constant_from_argmax(logits_for({10: 0.9, 9: 0.1}), GRID) - 9.9) < 1e-5
    assert abs(constant_from_argmax(logits_for({-10: 1.0}), GRID) - (-10.0)) < 1e-5


def test_interval_rule_agrees_with_greedy_rule_at_the_argmax():
    torch.manual_seed(0)
    for _ in range(50):
        logits = torch.randn(21) * 3
        valid, alpha, value = two_hot_rule(logits, GRID)
        i = int(logits.argmax())
        greedy = constant_from_argmax(logits, GRID)
        assert any(abs(float(value[k]) - greedy) < 1e-5 for k in (i - 1, i) if 0 <= k < 20 and valid[k])


def test_an_interval_counts_when_one_end_picks_the_other():
    """2 picks 3 (its larger neighbour) though 3 picks 4: the interval (2, 3) is a candidate."""
    valid, _, _ = two_hot_rule(logits_for({2: 0.3, 3: 0.1, 4: 0.5}), GRID)
    assert bool(valid[12]) and bool(valid[13])  # intervals (2, 3) and (3, 4)


def test_a_decoded_constant_snaps_only_within_five_thousandths_of_an_integer():
    from nsode.decode import decoded_constant

    assert decoded_constant(1.996) == 2.0 and decoded_constant(2.03) == 2.03


def test_a_constant_snaps_within_0_005_of_an_integer_and_keeps_four_decimals():
    assert decoded_constant(2.006) == 2.006 and decoded_constant(-0.9951) == -1.0
    assert decoded_constant(2.0314) == 2.0314


def test_ties_between_neighbours_go_right():
    assert abs(constant_from_argmax(logits_for({3: 0.5, 2: 0.2, 4: 0.2}), GRID) - (3 * 5 + 4 * 2) / 7) < 1e-5
    valid, _, _ = two_hot_rule(logits_for({1: 0.3, 2: 0.01, 3: 0.02, 4: 0.01, 5: 0.3}), GRID)
    assert bool(valid[13]) and not bool(valid[12])  # 3 picks 4 on the tie; nobody picks (2, 3)

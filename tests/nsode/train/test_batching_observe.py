"""What the model sees of a stored solution, per variant."""
import numpy as np
import pytest

from nsode.train.batching import observe

T = np.linspace(0, 2, 1024)
Y = 3 * np.exp(-0.5 * T)


def test_nsode_sees_256_equidistant_grid_points_without_noise():
    t, y = observe(T, Y, "nsode", np.random.default_rng(0))
    assert len(t) == 256 and np.allclose(np.diff(t), T[4] - T[0]) and np.array_equal(y, Y[::4])


def test_nsode_eps_on_grid_draws_128_distinct_grid_points_with_one_percent_noise():
    t, y = observe(T, Y, "nsode-eps", np.random.default_rng(0), off_grid=0.0)
    assert len(t) == 128 and np.all(np.diff(t) > 0) and np.isin(t, T).all()
    ratio = y / (3 * np.exp(-0.5 * t))
    assert 0.005 < ratio.std() < 0.02 and abs(ratio.mean() - 1) < 0.005


def test_off_grid_reaches_the_paper_variant_too():
    """--off-grid with --variant nsode was accepted and stored, and changed nothing: 256 clean
    points at uniform times, values on the solution (no noise)."""
    t, y = observe(T, Y, "nsode", np.random.default_rng(0), off_grid=1.0)
    assert len(t) == 256 and np.all(np.diff(t) > 0) and not np.isin(t, T).any()
    assert np.allclose(y, 3 * np.exp(-0.5 * t), rtol=1e-6)


def test_off_grid_times_are_uniform_and_their_values_follow_the_solution():
    t, y = observe(T, Y, "nsode-eps", np.random.default_rng(1), off_grid=1.0)
    assert len(t) == 128 and np.all(np.diff(t) > 0) and 0 <= t[0] and t[-1] <= 2
    assert not np.isin(t, T).any()
    ratio = y / (3 * np.exp(-0.5 * t))
    assert abs(ratio.mean() - 1) < 0.005 and ratio.std() < 0.02
    shares = [np.mean([not np.isin(observe(T, Y, "nsode-eps", rng)[0], T).any() for _ in range(200)])
              for rng in [np.random.default_rng(2)]]
    assert 0.4 < shares[0] < 0.6  # the variant's default: half the examples off the grid


def test_the_loss_is_the_mean_two_hot_cross_entropy_over_real_positions_only():
    import torch

    from nsode.train.batching import two_hot_loss

    logits = torch.randn(2, 3, 36, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[[5, 6], [0, 0], [0, 0]], [[1, 0], [7, 8], [3, 0]]])  # row 0: one real position
    weights = torch.tensor([[[0.3, 0.7], [0, 0], [0, 0]], [[1, 0], [0.5, 0.5], [1, 0]]])
    logp = logits.log_softmax(-1)
    expected = -torch.stack([0.3 * logp[0, 0, 5] + 0.7 * logp[0, 0, 6], logp[1, 0, 1],
                             0.5 * logp[1, 1, 7] + 0.5 * logp[1, 1, 8], logp[1, 2, 3]]).mean()
    loss, _ = two_hot_loss(logits, ids, weights)
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)


T = np.linspace(0, 2, 1024)
Y = 3 * np.exp(-0.5 * T)


def test_a_solution_shorter_than_the_variant_s_count_is_observed_whole():
    """A stored solution cut short (fewer grid points than the variant observes) gives each of its points once."""
    for variant in ("nsode", "nsode-eps"):
        t, y = observe(T[:50], Y[:50], variant, np.random.default_rng(0), off_grid=0.0)
        assert len(t) == 50 and np.array_equal(t, T[:50]), variant


def test_token_accuracy_counts_real_positions_only():
    import torch

    from nsode.train.batching import two_hot_loss

    ids = torch.tensor([[[5, 5], [0, 0], [0, 0]]])  # one real position, two of padding
    weights = torch.tensor([[[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
    logits = torch.zeros(1, 3, 36)
    logits[0, :, 7] = 1.0  # wrong at the real position; padding positions' argmax is irrelevant
    assert float(two_hot_loss(logits, ids, weights)[1]) == 0.0
    logits[0, 0, 5] = 2.0
    assert float(two_hot_loss(logits, ids, weights)[1]) == 1.0

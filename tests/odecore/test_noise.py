"""The noise level read from the data: irregular samples, curvature, relative noise, glitches."""
import numpy as np
import pytest

from odecore.noise import estimate_noise, isolated_glitches, noise_profile, pooled_levels, noise_floor


def test_noise_estimate_reads_the_noise_level_of_irregular_samples():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 2, 256))
    y = 3 * np.exp(-0.5 * t) + 0.02 * rng.normal(size=t.size)
    assert estimate_noise(t, y) == pytest.approx(0.02, rel=0.15)
    assert estimate_noise(t, 3 * np.exp(-0.5 * t)) < 1e-4


def test_noise_estimate_on_a_dozen_points_does_not_read_curvature_as_noise():
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 2, 12))
    curve = 1 + 3 * np.exp(-2 * t)  # fast: the line through two neighbours misses it by ~0.01
    assert estimate_noise(t, curve) > 0.01  # the search's estimate: the line's miss, curvature and all
    assert estimate_noise(t, curve, curvature=True) < 1e-3
    noisy = curve + 0.003 * rng.normal(size=t.size)
    assert 0.0015 < estimate_noise(t, noisy, curvature=True) < 0.006


def test_isolated_glitches_are_named_and_noise_or_a_sharp_turn_is_not():
    rng = np.random.default_rng(4)
    logistic = lambda t: 3 / (1 + 9 * np.exp(-1.5 * t))  # from 0.3 to near 3
    for _ in range(20):  # relative noise, irregular times: nothing to name
        t = np.sort(rng.uniform(0, 2, 128))
        assert isolated_glitches(t, logistic(t) * (1 + 0.01 * rng.normal(size=t.size))) == []
    for _ in range(20):  # three readings half again too large, on even times (uneven neighbours can
        t = np.linspace(0, 2, 128)  # hide one: 83-97% are found on the datasets' random times)
        y = logistic(t) * (1 + 0.01 * rng.normal(size=t.size))
        y[[40, 90, 100]] *= 1.5
        assert isolated_glitches(t, y) == [40, 90, 100]
    t = np.sort(rng.uniform(0, 2, 128))  # additive noise on a record that crosses zero
    assert isolated_glitches(t, 1 - 2 * np.exp(-t) + 0.01 * rng.normal(size=t.size)) == []
    t = np.linspace(0, 2, 32)  # a clean fast transient seen by few points: curvature, not a glitch
    assert isolated_glitches(t, 0.1 + 3 * np.exp(-12 * t)) == []
    assert isolated_glitches(t[:6], 3 * np.exp(-t[:6])) == []  # too few points to tell


def test_noise_estimate_on_pure_noise_keeps_the_line_estimate_almost_always():
    rng = np.random.default_rng(3)
    t = np.linspace(0, 2, 16)
    estimates = [estimate_noise(t, rng.normal(size=t.size), curvature=True) for _ in range(200)]
    assert np.mean(np.abs(np.log(estimates)) > np.log(2)) < 0.05


def test_noise_profile_follows_relative_noise_on_a_record_that_falls_twentyfold():
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 10, 128))
    clean = 4 / (1 + 2 * t)  # y' = -0.5 y^2 from 4 down to 0.19
    y = clean * (1 + 0.01 * rng.normal(size=t.size))
    profile = noise_profile(t, y)
    assert profile is not None and np.all(np.diff(profile[np.argsort(y)]) >= 0)  # the level grows with y
    assert profile[0] / profile[-1] > 4 and profile.max() <= 4 and profile.min() >= 0.25
    assert noise_profile(t, clean + 0.01 * rng.normal(size=t.size)) is None  # the same level everywhere
    assert noise_profile(t, 3 + np.exp(-t) * (1 + 0.01 * rng.normal(size=t.size))) is None  # y within 3-4: no evident growth
    assert noise_profile(t[:12], clean[:12]) is None  # too few points to tell


@pytest.mark.parametrize("relative", [False, True])
def test_short_records_read_their_noise_level_together(relative):
    """Three runs of 8 fast decays: each run's own line estimate reads curvature; pooled cubic misses
    read the noise, additive or relative: unbiased, and within a factor of 2 in most of 50 draws."""
    rng = np.random.default_rng(5)
    t = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])
    own, pooled = [], []
    for _ in range(50):
        clean = [y0 * np.exp(-1.2 * t) for y0 in (4.0, 2.0, 1.0)]
        noise = [0.01 * c if relative else np.full(t.size, 0.01) for c in clean]
        runs = [(t, c + n * rng.normal(size=t.size)) for c, n in zip(clean, noise)]
        levels = pooled_levels(runs)
        own += [estimate_noise(*run) / np.sqrt(np.mean(n**2)) for run, n in zip(runs, noise)]
        pooled += [np.sqrt(np.mean(lv**2)) / np.sqrt(np.mean(n**2)) for lv, n in zip(levels, noise)]
        if relative:
            assert np.all(np.diff(levels[0]) <= 1e-12)  # the level falls with y along a decay
    assert np.median(own) > 2 and 0.8 < np.median(pooled) < 1.25
    assert np.mean(np.abs(np.log(pooled)) < np.log(2.1)) > 0.8
    assert np.all(pooled_levels([(t, np.ones(t.size))] * 2)[0] > 0)  # clean and flat: the floor, not 0


@pytest.mark.parametrize("seed", range(10))
def test_noise_on_a_record_that_grows_less_than_twofold_has_no_profile(seed):
    """Only evidently growing noise gets a profile: on 1 to 1.7 relative and additive noise look alike."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, 256))
    assert noise_profile(t, np.exp(0.53 * t) * (1 + 0.01 * rng.normal(size=t.size))) is None


def test_a_sharp_turn_on_irregular_times_is_not_a_glitch():
    """A logistic rise sampled at 32 random times: curvature misses one way and its neighbours do
    not push back, which tells it from a glitch (evenly spaced samples never showed the difference)."""
    for seed in range(40):
        t = np.sort(np.random.default_rng(seed).uniform(0, 2, 32))
        assert isolated_glitches(t, 3 / (1 + 50 * np.exp(-10 * t))) == [], seed


def test_the_noise_floor_of_a_flat_record_is_a_share_of_its_size():
    """A record at rest (no spread) still has a scale, a thousandth of its largest |y|; all zeros: 1."""
    assert noise_floor(np.full(16, 5.0)) == pytest.approx(1e-4 * 5e-3)
    assert noise_floor(np.full(16, -2000.0)) == pytest.approx(1e-4 * 2.0)
    assert noise_floor(np.zeros(16)) == pytest.approx(1e-4)


def test_a_bump_below_the_noise_floor_of_a_clean_record_is_not_a_glitch():
    """On a clean decay the cubic's misses are round-off and curvature (~1e-8); a reading 1e-6 off
    stands 100 such misses apart, but is far below the noise floor: not a glitch to drop."""
    t = np.linspace(0, 2, 64)
    y = 2 * np.exp(-0.5 * t)
    y[30] += 1e-6
    assert isolated_glitches(t, y) == []
    y[30] += 0.5  # a real glitch is found
    assert isolated_glitches(t, y) == [30]


def test_on_ten_points_the_cubic_overrules_the_line_only_past_the_bar_its_few_misses_set():
    """Six cubic misses scatter, so pure noise sometimes reads a line estimate over twice the
    cubic's: here 2.37 times, below 1 + 4/sqrt(6) = 2.63, so the line's estimate stands."""
    t = np.linspace(0, 2, 10)
    y = np.random.default_rng(245).normal(size=10)
    assert estimate_noise(t, y, curvature=True) == estimate_noise(t, y)

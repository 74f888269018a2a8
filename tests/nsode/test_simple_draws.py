"""benchmarks/nsode_quality.py's simple draws: the same laws faster (`rate`), from lower
starts (`start`) and other law sets (`forms`), as search_ab.py's draws use them."""
import sys
from pathlib import Path

import numpy as np
import sympy

from odecore.expressions import Y

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from nsode_quality import GROWTH_FORMS, simple_cases  # noqa: E402


def test_a_faster_draw_is_the_same_laws_on_a_compressed_clock():
    slow, fast = simple_cases(6, 0.0, seed=3), simple_cases(6, 0.0, seed=3, rate=2.0)
    assert len(slow) == len(fast) == 6
    for (truth, _, f), (truth2, _, f2) in zip(slow, fast):
        assert sympy.simplify(f2 - 2 * f) == 0
        # y2(t) = y(2 t): the fast truth at grid point k is the slow one at point 2 k
        assert np.allclose(truth2[:128], truth[::2], rtol=1e-5, atol=1e-7)


def test_a_low_start_scales_the_first_observation_and_leaves_out_collapsing_laws():
    base, low = simple_cases(24, 0.0, seed=46), simple_cases(24, 0.0, seed=46, start=0.1)
    assert len(low) < len(base)  # harvested logistics below their threshold collapse
    firsts = {str(f): y[0] for _, y, f in base}
    for _, y, f in low:
        assert np.isclose(y[0], 0.1 * firsts[str(f)])


def test_a_growth_draw_holds_gompertz_laws_in_every_unit():
    for scale in (1.0, 100.0):
        cases = simple_cases(4, 0.0, seed=47, scale=scale, start=0.1, forms=GROWTH_FORMS)
        assert len(cases) == 4
        for truth, y, f in cases:
            u = sympy.Symbol("u", positive=True)
            rate = sympy.simplify(u * sympy.diff(f.subs(Y, u) / u, u))  # y (f/y)' = -a for a y log(K/y)
            assert rate.is_number and rate < 0
            assert truth[-1] > y[0] and np.all(np.diff(truth) > 0)  # growth from below its level


def test_a_draw_in_other_units_is_the_same_laws_rescaled():
    one, hundred = simple_cases(6, 0.0, seed=3), simple_cases(6, 0.0, seed=3, scale=100.0)
    for (truth, _, f), (truth100, _, f100) in zip(one, hundred):
        assert np.allclose(truth100, 100 * truth)
        for v in (0.5, 2.0):  # y' = f(y) in units 100 times smaller: 100 f(y / 100)
            assert np.isclose(float(f100.subs(Y, 100 * v)), 100 * float(f.subs(Y, v)))

import math

import numpy as np
import sympy

from odecore.expressions import Y, compile_scalar
from odecore.solving import solve
from nsode.select import select

TRUTHS = [-0.5 * Y, Y * (1 - Y / 4), sympy.sin(Y) + 0.5, -Y**3 + Y, 2 - sympy.sqrt(Y)]
DISTRACTORS = [-0.45 * Y, Y * (1 - Y / 3.5), sympy.sin(Y) + 0.6, -Y**3 + 1.1 * Y, 2.2 - sympy.sqrt(Y),
               sympy.exp(Y), Y**2, sympy.log(Y) - 3, -Y + 1, sympy.cos(Y)]


def test_fast_ranking_picks_the_same_expression_as_integrating_every_candidate():
    rng = np.random.default_rng(0)
    t = np.sort(rng.choice(np.linspace(0, 2, 1024), 128, replace=False))
    for truth in TRUTHS:
        y = solve(compile_scalar(truth), 1.5, t) * rng.normal(1, 0.01, t.shape)
        cands = DISTRACTORS + [truth]
        fast = select(cands, t, y, exact=3)
        naive = select(cands, t, y, exact=None)
        assert fast[0].expr == naive[0].expr == truth
        assert fast[0].r2 == naive[0].r2 > 0.99


def test_search_refits_a_perturbed_constant():
    from nsode.search.funnel import search
    from nsode.search.settings import Settings

    t = np.linspace(0, 2, 128)
    y = solve(compile_scalar(-0.5 * Y), 3.0, t)
    best = search([-0.4 * Y], t, y, Settings(variants=False))[0][0]
    assert best.stage == "trajectory" and best.r2 > 0.99999
    assert abs(float(best.expr.coeff(Y)) + 0.5) < 1e-4


def test_fast_evaluator_matches_the_shared_compiled_evaluator():
    from odecore.expressions import compile_vector
    from odecore.expressions import evaluate

    y = np.linspace(-3, 3, 41)
    for expr in TRUTHS + DISTRACTORS + [Y ** sympy.Rational(3, 2), 1 / (Y - 0.5), sympy.log(Y) * Y**-2]:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(evaluate(expr, y), compile_vector(expr)(y), rtol=1e-12, equal_nan=True)


def _decay_record():
    t = np.linspace(0, 2, 64)
    return t, solve(compile_scalar(-0.5 * Y), 1.5, t)


RATES = [-0.5 * Y, -0.45 * Y, -0.4 * Y, -0.35 * Y, -0.3 * Y, -0.25 * Y, -0.2 * Y, -0.15 * Y, -0.1 * Y, -0.05 * Y]


def test_select_integrates_exactly_the_shortlist():
    t, y = _decay_record()
    assert sum(math.isfinite(s.r2) for s in select(RATES, t, y, exact=3)) == 3
    assert sum(math.isfinite(s.r2) for s in select(RATES, t, y)) == 8  # EXACT_TOP


def test_selection_orders_the_integrated_by_r2_not_by_proxy(monkeypatch):
    import nsode.select as selection

    t, y = _decay_record()
    # a proxy that ranks the truth last of the shortlist: the order must still follow the exact R^2
    monkeypatch.setattr(selection, "proxy_r2", lambda e, t, y: -abs(float(e.coeff(Y)) + 0.4))
    out = selection.select(RATES[:4], t, y, exact=None)
    assert out[0].expr == -0.5 * Y
    assert [s.r2 for s in out] == sorted((s.r2 for s in out), reverse=True)


def test_candidates_left_unintegrated_follow_by_proxy_score():
    """After the integrated shortlist come the others, best proxy first, whatever order they came in."""
    t, y = _decay_record()
    out = select(list(reversed(RATES)), t, y, exact=1)
    assert out[0].expr == -0.5 * Y and math.isfinite(out[0].r2)
    assert all(s.r2 == -math.inf for s in out[1:])
    assert [s.proxy for s in out[1:]] == sorted((s.proxy for s in out[1:]), reverse=True)



def test_the_naive_path_integrates_every_candidate():
    """exact=None is the paper's selection: LSODA for all ten candidates, not the default shortlist of 8."""
    t, y = _decay_record()
    assert sum(math.isfinite(s.r2) for s in select(RATES, t, y, exact=None)) == len(RATES) == 10

"""Acceptance tests of the shipped checkpoints (both ship with the package: a missing one fails)."""
import numpy as np
import pytest

from nsode.data.tokens import parse_infix
from nsode.predict import Predictor, default_checkpoint
from nsode.select import exact_r2

SHIPPED = default_checkpoint("nsode-eps")


def test_shipped_nsode_eps_recovers_exponential_decay():
    # The acceptance test. The model card records how narrowly the shipped tiny model
    # passes it (neighbouring training snapshots did not): a retrained checkpoint must pass it again.
    t = np.linspace(0, 2, 128)
    y = 3 * np.exp(-0.5 * t)
    result = Predictor(SHIPPED).predict(t, y)  # the CPU default beam
    assert result.r2 > 0.99 and result.y0 == 3.0  # the paper's pick starts from the first observation
    truth_grid = np.linspace(0, 4, 256)  # the chosen ODE also extrapolates the decay
    assert exact_r2(parse_infix(result.expression), truth_grid, 3 * np.exp(-0.5 * truth_grid)) > 0.99
    f = parse_infix(result.expression)  # and it is the law itself, c*y with c near -0.5: a wrong form
    rate = (f / next(iter(f.free_symbols))).simplify()  # with a small extra term passed the checks above
    assert rate.is_number and abs(float(rate) + 0.5) < 0.01, result.expression


@pytest.mark.parametrize("variant", ["nsode", "nsode-eps", "nsode-eps-scaled"])
def test_shipped_checkpoints_load(variant):
    from nsode.model import load

    model = load(default_checkpoint(variant))
    assert sum(p.numel() for p in model.parameters()) > 10**6


def test_harness_method_reports_a_missing_checkpoint(tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("nsode_methods", Path(__file__).parents[2] / "methods" / "nsode.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert "missing: no such checkpoint folder" in mod.NSODE(checkpoint=str(tmp_path / "missing")).unavailable_reason()
    assert "no shipped checkpoint 'nosuch' (shipped: nsode, nsode-eps, nsode-eps-scaled)" in \
        mod.NSODE(checkpoint="nosuch").unavailable_reason()
    (tmp_path / "run" / "best").mkdir(parents=True)  # a training run's folder, not its checkpoint
    (tmp_path / "run" / "best" / "config.json").write_text("{}")
    assert f"a training run? use {tmp_path / 'run' / 'best'}" in \
        mod.NSODE(checkpoint=str(tmp_path / "run")).unavailable_reason()


def test_harness_method_runs_on_observations():
    import importlib.util
    from pathlib import Path

    from bench import Budget, Observations
    from odecore.expressions import parse

    spec = importlib.util.spec_from_file_location("nsode_methods2", Path(__file__).parents[2] / "methods" / "nsode.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    method = mod.NSODE(checkpoint="nsode-eps", beam=16)
    method.setup()
    t = np.linspace(0, 2, 64)
    pred = method.run(Observations(t, 2 + np.sin(t)), Budget())
    parse(pred.expression)
    assert pred.candidates and pred.metadata["load_s"] >= 0 and pred.metadata["device"] == "cpu"


def test_scale_invariant_milestone_proposes_the_same_skeletons_in_any_power_of_two_units():
    from nsode.data.tokens import skeleton

    predictor = Predictor(default_checkpoint("nsode-eps-scaled"), beam=16)
    assert predictor.model.config.input_scaling == "pow2"
    t = np.linspace(0, 2, 64)
    y = 3 * np.exp(-0.5 * t)
    reference = [skeleton(e) for e, _ in predictor.candidates(t, y)]
    for a, s in [(32.0, 128.0), (1.0, 2.0 ** -7)]:  # t on [0, 64] with y near 400; y near 0.02
        assert [skeleton(e) for e, _ in predictor.candidates(a * t, s * y)] == reference

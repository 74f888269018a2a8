"""Acceptance tests of the shipped checkpoints (both ship with the package: a missing one fails)."""
from types import SimpleNamespace

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


def test_harness_method_hands_beam_branches_and_threads_to_its_predictor():
    """`nsode-eps+refine:beam=8,branches=2,threads=3` reach the decoder and torch, not the defaults."""
    import torch

    from methods.nsode import NSODE

    threads = torch.get_num_threads()
    try:
        method = NSODE(**{**NSODE.variants["nsode-eps+refine"].params, "beam": 8, "branches": 2, "threads": 3})
        method.setup()
        assert (method.predictor_.beam, method.predictor_.branches) == (8, 2)
        assert method.predictor_.search is not None and method.predictor_.scaled is not None
        if not torch.cuda.is_available():
            assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(threads)


def test_harness_method_fails_with_the_reason_when_no_candidate_can_be_integrated():
    """An empty answer is a failed task with its reason, not a row whose expression is ''."""
    import torch

    from bench import Budget, Observations
    from methods.nsode import NSODE

    method = NSODE(checkpoint="nsode-eps")
    model = SimpleNamespace(parameters=lambda: iter([torch.zeros(1)]))
    nothing = SimpleNamespace(expression="", candidates=[], r2=float("nan"), chosen=None, timings={}, info={})
    method.predictor_, method.load_s_ = SimpleNamespace(predict=lambda t, y: nothing, model=model), 0.0
    t = np.linspace(0, 2, 32)
    with pytest.raises(ValueError, match="no beam candidate could be integrated over the observed interval"):
        method.run(Observations(t, np.exp(-t)), Budget())


def test_harness_method_reads_a_checkpoint_path_under_the_home_folder():
    """`--methods nsode:checkpoint=~/runs/best` names a folder under $HOME, not one called '~'."""
    from pathlib import Path

    from methods.nsode import NSODE

    assert NSODE(checkpoint="~/runs/best").checkpoint_path() == Path.home() / "runs" / "best"

"""Methods are estimators: every knob is a named constructor argument that `get_params`
reports and the command line sets (`NAME:key=value`); a variant is a parameter set of one class."""
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import Method, registry
from bench.method import Prediction
from nsode.options import SEARCH_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
def _weights(name: str) -> str:
    return hashlib.sha256((ROOT / "nsode/checkpoints" / name / "model.safetensors").read_bytes()).hexdigest()[:8]


WEIGHTS = _weights("nsode-eps")
SEARCH_WEIGHTS = _weights("nsode-eps") + "+" + _weights("nsode-eps-scaled")  # the search's two proposers (version 6)
SEARCH_VERSION = "37"  # nsode-eps+refine's version: a change to the search is deliberate


@pytest.fixture(scope="module")
def specs():
    return registry.discover()


def test_every_builtin_method_names_its_parameters_and_rebuilds_from_them(specs):
    for name, spec in specs.items():
        method = spec.instantiate()
        rebuilt = spec.load()(**method.get_params())
        assert repr(rebuilt) == repr(method), name


def test_nsode_variants_are_parameter_sets_of_one_class(specs):
    classes = {specs[name].load() for name in ("nsode", "nsode-eps", "nsode-eps+refine")}
    assert len(classes) == 1
    refine = specs["nsode-eps+refine"]
    assert refine.label == "nsode-eps+refine" and refine.version == SEARCH_VERSION + "+" + SEARCH_WEIGHTS and specs["nsode-eps"].version == "2+" + WEIGHTS
    params = refine.instantiate().get_params()
    assert (params["checkpoint"], params["scaled_checkpoint"]) == ("nsode-eps", "nsode-eps-scaled")
    assert params["search"] is True and params["beam"] == 256
    assert specs["nsode"].instantiate().get_params()["checkpoint"] == "nsode"
    # every setting of the search that a command-line flag reaches is a parameter of the method too
    assert set(SEARCH_OPTIONS) <= set(params)


def test_command_line_parameters_override_a_variant(specs):
    (refine, sindy) = registry.select(["nsode-eps+refine:beam=16,top_k=4", "sindy:fd_degrees=(3,)"], specs)
    assert refine.label == "nsode-eps+refine:beam=16,top_k=4" and refine.version == SEARCH_VERSION + "+" + SEARCH_WEIGHTS
    params = refine.instantiate().get_params()
    assert (params["beam"], params["top_k"], params["search"], params["checkpoint"]) == (16, 4, True, "nsode-eps")
    assert sindy.instantiate().get_params()["fd_degrees"] == (3,)


def test_an_unknown_parameter_is_refused_with_the_known_ones(specs):
    with pytest.raises(registry.RegistryError, match="no parameter.*beam"):
        registry.select(["nsode:beem=16"], specs)


def test_a_broken_literal_is_refused_and_plain_text_stays_a_string():
    with pytest.raises(registry.RegistryError, match="not a valid Python literal"):
        registry.parse_method_argument("sindy:fd_degrees=(3,")
    assert registry.parse_method_argument("sindy:optimizer=stlsq") == ("sindy", {"optimizer": "stlsq"})


def test_a_variant_with_a_parameter_runs_from_the_command_line(tmp_path):
    t = np.linspace(0, 2, 64)
    csv = tmp_path / "decay.csv"
    pd.DataFrame({"t": t, "y": 2.0 * np.exp(-0.5 * t)}).to_csv(csv, index=False)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", str(csv), "--quiet", "--n", "32",
                             "--methods", "nsode-eps+refine:beam=16", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    from bench.store import ResultStore
    rows = ResultStore(out).read()
    assert list(rows["method"]) == ["nsode-eps+refine:beam=16"] and list(rows["status"]) == ["ok"]
    assert list(rows["method_version"].astype(str)) == [SEARCH_VERSION + "+" + SEARCH_WEIGHTS]
    assert json.loads(rows["metadata"][0])["source"] in {"model", "variant", "snapped", "pruned", "per-capita"}


def test_a_method_s_version_names_its_weights_so_other_weights_never_reuse_a_row(specs, tmp_path):
    import shutil

    copy = tmp_path / "weights"
    shutil.copytree(ROOT / "nsode/checkpoints/nsode-eps", copy)
    same = specs["nsode-eps"].with_params({"checkpoint": str(copy)})
    assert same.version == specs["nsode-eps"].version  # same weights, same version
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-1] ^= 1  # one bit of one weight
    (copy / "model.safetensors").write_bytes(bytes(data))
    assert specs["nsode-eps"].with_params({"checkpoint": str(copy)}).version != specs["nsode-eps"].version
    assert specs["sindy"].version == "1"  # no weights, no fingerprint
    settings = tmp_path / "settings"
    shutil.copytree(ROOT / "nsode/checkpoints/nsode-eps", settings)
    config = json.loads((settings / "config.json").read_text())
    (settings / "config.json").write_text(json.dumps({**config, "input_scaling": "pow2"}))
    assert specs["nsode-eps"].with_params({"checkpoint": str(settings)}).version != specs["nsode-eps"].version


def test_a_broken_checkpoint_folder_is_refused_before_the_sweep(specs, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(ROOT / "nsode/checkpoints/nsode-eps", broken)
    weights = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(weights[:1000])  # a copy cut short
    reason = registry.unavailable_reason(specs["nsode-eps"].with_params({"checkpoint": str(broken)}))
    assert "not a whole safetensors file" in reason
    (broken / "model.safetensors").write_bytes(weights)
    (broken / "config.json").write_text("{garbage")
    assert "cannot be read" in registry.unavailable_reason(specs["nsode-eps"].with_params({"checkpoint": str(broken)}))


@pytest.mark.parametrize("argument, problem", [
    ("sindy-ic:criterion=bogus", "one of aic, bic"),
    ("sindy-ic:thresholds=0.1", "not a sequence"),
    ("sindy-ic:alpha=", "not a number"),
    ("nsode-eps+refine:top_k=0", "at least 1"),
    ("nsode-eps+refine:criterion=aic", "use one of bic, rss"),
    ("nsode-eps+refine:beam=0", "whole number >= 1, or None"),
    ("sindy-ic:alpha=1e-3,alpha=2", "given twice"),
    ("sindy-ic:degree=2.5", "whole number"),
    ("sindy-ic:alpha=-1", ">= 0"),
    ("sindy-ic:thresholds=()", "numbers >= 0"),
    ("sindy:fd_degrees=3", r"such as \(3,\)"),
    ("sindy:fd_window=-5", "whole number >= 3"),
    ("sindy:run_time_limit='x'", "seconds > 0"),
    ("sindy:grid={'a': [1]}", "parameters of the regressor"),
    ("proged:restarts=0", "whole number >= 1"),
    ("sindy-weak:support=0.5", r"in \(0, 0.5\)"),
    ("sindy-weak:test_functions=(0,)", "whole numbers >= 1"),
    ("sindy-weak:degrees=(2.5,)", "whole numbers >= 1"),
    ("sindy-ensemble:inclusion=1.5", r"in \[0, 1\]"),
    ("sindy-ensemble:n_models=1", ">= 2"),
    ("sindy-ensemble:fd_settings=((2, 1),)", "window >= 3"),
    ("sindy-ensemble:tolerance=-0.1", ">= 0"),
    ("nsode:threads=0", "whole number >= 1"),
    ("nsode:threads=1.5", "whole number >= 1"),
])
def test_a_bad_parameter_value_is_refused_before_the_sweep(specs, argument, problem):
    with pytest.raises(registry.RegistryError, match=problem):
        registry.select([argument], specs)


def test_every_builtin_method_and_variant_passes_its_own_parameter_check(specs):
    for name, spec in specs.items():
        if not spec.missing_parameters():
            spec.instantiate().check_params()
    chosen = registry.select(["nsode-eps+refine:snap=false,top_k=8", "sindy-ic:criterion=aic"], specs)
    assert chosen[0].label == "nsode-eps+refine:snap=False,top_k=8"  # true/false as typed read as flags


def test_two_classes_of_one_name_in_a_method_file_are_refused(tmp_path):
    plugin = tmp_path / "twins.py"
    plugin.write_text("from bench import Method, Prediction\n\n"
                      "class A(Method):\n    name = 'twin'\n\n"
                      "class B(Method):\n    name = 'twin'\n")
    with pytest.raises(registry.RegistryError, match="A and B are both named 'twin'"):
        registry.discover((str(plugin),))
    text = tmp_path / "twins.txt"
    text.write_text(plugin.read_text())
    with pytest.raises(registry.RegistryError, match="not a Python file"):
        registry.discover((str(text),))


def test_a_prediction_keeps_its_candidates_as_expression_strings():
    assert Prediction("-y", candidates="y**2").candidates == ("y**2",)  # one string, one candidate
    assert Prediction("-y", candidates=["y", 2]).candidates == ("y", "2")
    with pytest.raises(TypeError, match="candidates must be a list of expression strings, not int"):
        Prediction("-y", candidates=3)
    with pytest.raises(TypeError, match="metadata must be a dict, not list"):
        Prediction("-y", metadata=[1])


def test_a_prediction_writes_a_sympy_law_or_a_number_as_text_and_refuses_anything_else():
    """A sympy expression used to pass, and its row failed after the fit ("an expression is text")."""
    import sympy

    assert Prediction(-0.5 * sympy.Symbol("y")).expression == "-0.5*y"
    assert Prediction(np.float64(0.25)).expression == "0.25" and Prediction(0).expression == "0"
    for wrong in (None, True, ["-y"]):
        with pytest.raises(TypeError, match="expression must be an expression string such as '-0.5\\*y'"):
            Prediction(wrong)


def test_a_flag_parameter_refuses_a_number_and_a_number_parameter_refuses_a_flag():
    """True is an int to Python: `search=1` or `rate=true` must not pass the kind check."""

    class Knobs(Method):
        name = "knobs"

        def __init__(self, search=True, rate=0.5):
            self.search, self.rate = search, rate

    with pytest.raises(ValueError, match=r"search=1 is not a flag \(True or False\)"):
        Knobs(search=1).check_params()
    with pytest.raises(ValueError, match="rate=True is not a number"):
        Knobs(rate=True).check_params()
    Knobs(search=False, rate=2).check_params()


ROOT = Path(__file__).resolve().parents[2]


def test_nsode_branches_zero_is_refused_before_the_sweep(specs):
    """branches=0 would reach the decoder as 'all branches' (the paper's beam) without a word."""
    with pytest.raises(registry.RegistryError, match=r"branches=0: expected a whole number >= 1, or None"):
        registry.select(["nsode-eps+refine:branches=0"], specs)


def test_a_broken_scaled_checkpoint_is_refused_before_the_sweep(specs, tmp_path):
    """The search's second proposer is checked as its first: one line before the sweep, not an error per task."""
    broken = tmp_path / "scaled"
    shutil.copytree(ROOT / "nsode/checkpoints/nsode-eps-scaled", broken)
    (broken / "model.safetensors").write_bytes((broken / "model.safetensors").read_bytes()[:1000])
    spec = specs["nsode-eps+refine"].with_params({"scaled_checkpoint": str(broken)})
    assert "not a whole safetensors file" in registry.unavailable_reason(spec)
    missing = specs["nsode-eps+refine"].with_params({"scaled_checkpoint": "nosuch"})
    assert "no shipped checkpoint 'nosuch'" in registry.unavailable_reason(missing)

"""The truth stays in the driver: a method sees observations and a budget only, the oracle gets
the truth through its one door, scores are computed from the true y0, and warnings raised
inside a method are recorded in its row instead of reaching the terminal."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import registry, runner
from bench.registry import discover
from bench.method import Budget, Observations
from bench.scoring import score
from bench.tasks import Trajectory
from odecore import protocol

FIXTURES = str(Path(__file__).parent / "fixtures" / "misbehaving_methods.py")
ROOT = Path(__file__).resolve().parents[2]


def run_sweep(tmp_path, *names, **kwargs):
    specs = registry.discover((FIXTURES,))
    sweep = runner.Sweep(datasets=("textbook",), methods=tuple(registry.select(list(names), specs)),
                         out=str(tmp_path / "out"), method_files=(FIXTURES,), **kwargs)
    return runner.run(sweep, progress=False).read()


def test_a_method_cannot_read_the_truth(tmp_path):
    rows = run_sweep(tmp_path, "peeks", "truth", jobs=2)
    peeks = rows[rows.method == "peeks"]
    assert len(peeks) == 12 and (peeks.status == "ok").all()
    assert [json.loads(m)["found"] for m in peeks.metadata] == [[]] * 12
    truth = rows[rows.method == "truth"]
    assert (truth.status == "ok").all() and (truth.r2_interp > 0.999999).all()


def test_observations_carry_no_truth_field():
    fields = set(Observations.__dataclass_fields__)
    assert fields == {"t", "y"}


def test_extrapolation_is_scored_from_the_true_y0():
    """y' = -0.5 y from y0 = 2, predicted y' = 0: the prediction integrated from the true y0 is 2
    everywhere, so L1 on [T, T_extra] is the mean of |2 - 2 exp(-t/2)| there (a restart at y(T)
    would give |2 exp(-1) - 2 exp(-t/2)|, a start at a noisy y0 yet another value)."""
    t, t_extra = protocol.interpolation_grid(), protocol.extrapolation_grid()
    y, y_extra = 2 * np.exp(-0.5 * t), 2 * np.exp(-0.5 * t_extra)
    trajectory = Trajectory("hand", "decay", 0, "-0.5*y", 2.0, t, y * (1 + 0.01), t_extra, y_extra)
    scores = score("0", trajectory)
    assert scores.status == "ok"
    assert scores.extrapolation["l1"] == pytest.approx(np.mean(np.abs(2.0 - y_extra)), rel=1e-12)
    assert scores.extrapolation["linf"] == pytest.approx(2.0 - 2 * np.exp(-2.0), rel=1e-12)
    assert scores.interpolation["l1"] == pytest.approx(np.mean(np.abs(2.0 - 1.01 * y)), rel=1e-12)


def test_method_parameters_are_set_from_the_command_line(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", "textbook", "--quiet",
                             "--methods", "scaled:rate=0.25", "scaled", "--method-file", FIXTURES, "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    from bench.store import ResultStore
    rows = ResultStore(out).read()
    by = rows.groupby("method")["expression"].agg(set)
    assert by["scaled:rate=0.25"] == {"0.25*y"} and by["scaled"] == {"0.1*y"}


def test_method_argument_syntax():
    assert registry.parse_method_argument("sindy") == ("sindy", {})
    assert registry.parse_method_argument("sindy:fd_degrees=(3, 5),run_time_limit=None") == (
        "sindy", {"fd_degrees": (3, 5), "run_time_limit": None})
    assert registry.parse_method_argument("x:grid={'a': [1, 2]},mode=fast") == ("x", {"grid": {"a": [1, 2]}, "mode": "fast"})
    with pytest.raises(registry.RegistryError):
        registry.parse_method_argument("sindy:degree")


def test_warnings_inside_a_method_are_recorded_not_printed(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", "textbook", "--quiet",
                             "--methods", "warns", "--method-file", FIXTURES, "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
    from bench.store import ResultStore
    warned = [json.loads(w) for w in ResultStore(out).read()["warnings"]]
    assert len(warned) == 12  # Textbook's twelve trajectories, each with its warnings
    assert all("RuntimeWarning: overflow encountered in exp" in w for w in warned)
    assert all(any("divide by zero" in line for line in w) for w in warned)


def test_warnings_inside_a_method_on_dask_are_recorded_not_printed(tmp_path, write_record):
    t = np.linspace(0, 2, 32)
    csv = write_record(tmp_path / "growth.csv", t, 2.0 * np.exp(0.1 * t))
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", str(csv), "--n", "32", "--quiet",
                             "--backend", "dask", "-j", "1", "--methods", "warns", "--method-file", FIXTURES,
                             "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ""
    from bench.store import ResultStore
    (warned,) = [json.loads(w) for w in ResultStore(out).read()["warnings"]]
    assert any("RuntimeWarning: overflow encountered in exp" in line for line in warned)


def test_the_refit_oracle_recovers_clean_laws_and_misses_some_under_noise(tmp_path):
    # truth-refit knows the skeleton, not the numbers: on clean data its refit is the law; at
    # sigma 0.02 the refitted numbers drift, so its scores are a reference, not a copy of the truth
    rows = run_sweep(tmp_path, "truth-refit", noise=(0.0, 0.02), jobs=1)
    assert (rows.status == "ok").all(), rows.reason.tolist()
    clean, noisy = rows[rows.noise == 0.0], rows[rows.noise == 0.02]
    assert len(clean) == len(noisy) == 12
    assert (clean.r2_interp > 0.9999).all() and (clean.r2_extrap > 0.999).all()
    assert noisy.r2_interp.median() > 0.99
    assert (noisy.r2_extrap.fillna(-float("inf")) < 0.9).sum() >= 2


def test_the_refit_oracle_says_when_the_true_law_cannot_be_fitted(monkeypatch):
    """A failed refit is a failed task with its reason, not a TypeError from unpacking None."""
    import odecore.fitting

    monkeypatch.setattr(odecore.fitting, "refit_numbers", lambda *args, **kwargs: None)
    oracle = discover()["truth-refit"].instantiate()
    oracle.receive_truth("-0.5*y")
    t = np.linspace(0, 2, 16)
    with pytest.raises(ValueError, match="the true law's numbers could not be fitted to these observations"):
        oracle.run(Observations(t, 2 * np.exp(-0.5 * t)), Budget())


def test_the_truth_oracle_fails_with_the_reason_on_a_record_without_a_known_law():
    oracle = discover()["truth"].instantiate()
    oracle.receive_truth(None)
    t = np.linspace(0, 2, 16)
    with pytest.raises(ValueError, match="this task has no known true expression"):
        oracle.run(Observations(t, 2 * np.exp(-0.5 * t)), Budget())

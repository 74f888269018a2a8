"""An installed package (`pip install .`, not -e) finds the built-in methods, datasets and configs
in `bench/shipped/`, keeps its cache out of site-packages and names itself by version; shipped
checkpoints and configs are taken by name, as a user without a checkout has no paths to them."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from bench import paper
from odecore import shipped
from nsode import CHECKPOINTS, checkpoint_folder
from nsode.checkpoint_files import CheckpointError, check


def test_a_wheels_layout_runs_the_harness_from_any_folder(tmp_path):
    """Before setup.py copied them, a wheel held no methods/, datasets/ or configs/: `bench list`
    listed no method, and the truths' cache was written into site-packages. Before the shared packages
    were named odecore and odebaselines, a `core.py` in the folder a sweep ran from broke every command."""
    site, elsewhere = tmp_path / "site-packages", tmp_path / "elsewhere"
    for package in ("bench", "odecore", "odebaselines", "nsode"):  # what the wheel's packages hold
        shutil.copytree(shipped.ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__", "shipped"))
    shipped.copy_into(site)  # what setup.py adds to them
    elsewhere.mkdir()
    (elsewhere / "core.py").write_text("raise ImportError('the user own core.py')\n")  # a sweep's folder holds
    (elsewhere / "baselines").mkdir()  # the user's own modules, which must not take the place of ours
    (elsewhere / "baselines" / "__init__.py").write_text("raise ImportError('the user own baselines')\n")
    env = {key: value for key, value in os.environ.items() if key != "BENCH_CACHE"}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "cache"))

    def bench(*args):
        return subprocess.run([sys.executable, "-m", "bench", *args], cwd=elsewhere, env=env, capture_output=True,
                              text=True, timeout=300)

    listed = bench("list")
    assert listed.returncode == 0 and "textbook" in listed.stdout and "sindy-weak" in listed.stdout, listed.stderr
    ran = bench("run", "--dataset", "textbook", "--methods", "truth", "--noise", "0", "--n", "32", "--out", "res", "--quiet")
    assert ran.returncode == 0 and "| truth (oracle) |" in ran.stdout, ran.stderr
    assert list((tmp_path / "cache" / "odebench-nsode").glob("textbook-*.npz"))  # the user's cache folder
    assert not list(site.rglob("*.npz"))  # nothing written into the package
    commit = json.loads((elsewhere / "res" / "sweep.json").read_text())["runs"][-1]["commit"]
    assert commit.startswith("odebench-nsode ")  # not the git repository above site-packages, if any
    from bench import reproduction

    assert reproduction._code_kind(commit) == "package" and reproduction._code_kind("65c2b2b") == "git commit"


def test_shipped_checkpoints_and_configs_are_taken_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert checkpoint_folder("nsode-eps") == CHECKPOINTS / "nsode-eps"
    (tmp_path / "nsode-eps").mkdir()  # a folder of that name here is the user's own
    assert checkpoint_folder("nsode-eps").resolve() == (tmp_path / "nsode-eps").resolve()
    with pytest.raises(CheckpointError, match=r"no such checkpoint folder \(shipped, by name: nsode, nsode-eps"):
        check("nsode-epz")
    assert paper.load_config("cpu")["out"] == paper.load_config(shipped.folder("configs") / "cpu.yaml")["out"]


def test_missing_configs_name_the_shipped_ones_and_data_configs_are_taken_by_name(tmp_path, monkeypatch):
    from nsode.data import config as data_config

    monkeypatch.chdir(tmp_path)
    with pytest.raises(paper.ConfigError, match=r"configs/paper.yaml: no such config file \(shipped, by name: cpu, paper\)"):
        paper.load_config("configs/paper.yaml")  # the README's path, typed outside a checkout
    assert data_config.load("data_cpu") == data_config.load(CHECKPOINTS / "data_cpu.yaml")
    with pytest.raises(data_config.ConfigError, match=r"no such config file \(shipped, by name: data_cpu, "):
        data_config.load("data_cpx")


def test_an_installed_package_keeps_its_shipped_files(tmp_path, monkeypatch, capsys):
    """A wheel built from a source distribution without MANIFEST.in's folders had no method; `nsode.data
    large` overwrote the installed package's excluded-skeleton list."""
    with pytest.raises(FileNotFoundError, match="methods: no \\*.py to ship"):
        shipped.copy_into(tmp_path / "site", source=tmp_path)
    from nsode.data.__main__ import main

    monkeypatch.setattr(shipped, "CHECKOUT", False)
    assert main(["large", "--out", str(tmp_path / "large.json"), "--count", "1"]) == 2
    assert "give --excluded FILE" in capsys.readouterr().err and not (tmp_path / "large.json").exists()

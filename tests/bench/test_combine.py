"""`bench report` and `bench plot` combine several result folders; a (task, method) stored twice is refused."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(*args):
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Three folders of the oracle on Textbook: sigma 0, sigma 0.01, and sigma 0 again."""
    root = tmp_path_factory.mktemp("sweeps")
    for name, noise in (("clean", 0), ("noisy", 0.01), ("again", 0)):
        result = bench("run", "--methods", "truth", "--noise", noise, "--out", root / name, "--quiet")
        assert result.returncode == 0, result.stderr
    return root


def test_report_of_two_folders_holds_the_rows_of_both(sweeps, tmp_path):
    result = bench("report", sweeps / "clean", sweeps / "noisy", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "medians.csv")
    assert sorted(table["noise"]) == [0.0, 0.01] and table["tasks"].tolist() == [12, 12]


def test_plot_of_two_folders_draws_both_noise_levels(sweeps, tmp_path):
    result = bench("plot", sweeps / "clean", sweeps / "noisy", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(pd.read_csv(tmp_path / "r2_interp.csv")["noise"]) == [0.0, 0.01]


def test_the_same_task_and_method_in_two_folders_is_a_one_line_error_naming_it(sweeps, tmp_path):
    for command in ("report", "plot"):
        result = bench(command, sweeps / "clean", sweeps / "again", "--out", tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert "truth on textbook/" in result.stderr and "both hold" in result.stderr
        assert str(sweeps / "clean") in result.stderr and str(sweeps / "again") in result.stderr
    assert not (tmp_path / "medians.csv").exists()


def test_several_folders_need_an_output_folder(sweeps):
    result = bench("report", sweeps / "clean", sweeps / "noisy")
    assert result.returncode == 2 and "--out" in result.stderr


def test_a_file_in_parts_that_the_store_did_not_write_is_named(sweeps, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(sweeps / "clean", folder)
    (folder / "parts" / "notes.parquet").write_bytes(b"junk")
    result = bench("report", folder)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "notes.parquet is not a readable result part" in result.stderr
    pd.DataFrame({"a": [1]}).to_parquet(folder / "parts" / "notes.parquet")
    result = bench("report", folder)
    assert result.returncode == 2 and "is not a result part (no column dataset" in result.stderr


def test_a_read_while_bench_score_replaces_the_parts_lists_them_again(sweeps, tmp_path, monkeypatch):
    """A part deleted between the listing and its read was named as a foreign file to move out."""
    import shutil

    from bench import store

    folder = tmp_path / "copy"
    shutil.copytree(sweeps / "clean", folder)
    rows = store.ResultStore(folder).read()
    halves = rows.iloc[:6], rows.iloc[6:]
    for part in (folder / "parts").glob("*.parquet"):
        part.unlink()
    for k, half in enumerate(halves):
        half.to_parquet(folder / "parts" / f"part-{k}.parquet")
    real, replaced = store._part, []

    def replacing(file):  # as `bench score` does: one new part holding every row, the old ones deleted
        if not replaced:
            replaced.append(True)
            rows.to_parquet(folder / "parts" / "part-9.parquet")
            for k in range(2):
                (folder / "parts" / f"part-{k}.parquet").unlink()
        return real(file)

    monkeypatch.setattr(store, "_part", replacing)
    again = store.ResultStore(folder).read()
    assert len(again) == len(rows) == 12


def test_compare_across_folders_reads_only_the_two_methods(sweeps, tmp_path):
    """Two sweeps that both ran the oracle compare their other methods: the oracle's rows are not asked for."""
    import shutil

    for name, method in (("clean", "first"), ("again", "second")):
        shutil.copytree(sweeps / name, tmp_path / name)
        for part in list((tmp_path / name / "parts").glob("*.parquet")):
            rows = pd.read_parquet(part).assign(method=method)
            rows.to_parquet(part.with_name(f"{method}-{part.name}"))
    result = bench("compare", tmp_path / "clean", tmp_path / "again", "--methods", "first", "second")
    assert result.returncode == 0, result.stderr
    assert "first" in result.stdout and "second" in result.stdout
    result = bench("compare", tmp_path / "clean", tmp_path / "again", "--methods", "first", "truth")
    assert result.returncode == 2 and "both hold truth" in result.stderr

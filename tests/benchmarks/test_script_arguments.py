"""The benchmark scripts refuse bad arguments in one line, before any measuring."""
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("argv, message", [
    (["datagen.py", "--skeletons", "0"], "--skeletons: 0 must be at least 1"),
    (["harness_overhead.py", "--repeat", "0"], "--repeat: 0 must be at least 1"),
    (["cli_startup.py", "--method", "nosuch"], "unknown method 'nosuch'"),
    (["long_records.py", "--points", "5"], "--points: 5 must be at least 10"),
    (["gp_throughput.py", "--seconds", "0"], "--seconds: '0' must be a finite number > 0"),
    (["compare_sweeps.py", "missing-a", "missing-b"], "missing-a: no such folder"),
    (["compare_sweeps.py", ".", "."], "no stored rows in"),
    (["equal_time.py", "."], "no log.csv"),
    (["nsode_curves.py", "--runs", ".", "--extra", ".", "--data", "."], ". has no snapshots/step-N folders"),
    (["selection_study.py", "rules", "missing.csv"], "missing.csv: no such file"),
    (["search_ab.py", "compare", "missing-a", "missing-b"], "missing-a: no such file"),
    (["nsode_quality.py", "--datasets", "bogus", "--simple", "0"], "unknown dataset 'bogus'"),
    (["nsode_latency.py", "--checkpoint", ".", "--trajectories", "1", "--beams", "2"], "is not an NSODE checkpoint"),
    (["generated_dataset.py", "--simple", "0", "--science", "0", "--out", "x.json"], "no laws to write"),
    (["joint_records.py", "--records", "1"], "--records: 1 must be at least 2"),
    (["joint_records.py", "--dataset", "textbook"], "textbook: no law has two or more starts"),
    # refused before the work, not after it (a traceback at the end once lost the run's results)
    (["joint_records.py", "--simple", "1", "--starts", "2", "--records", "3", "--laws", "1"],
     "--records 3: a law here has only 2 starts"),
    (["joint_records.py", "--simple", "1", "--out", "nowhere/x.csv"], "the folder nowhere does not exist"),
    (["generated_dataset.py", "--simple", "1", "--science", "0", "--out", "nowhere/g.json"],
     "the folder nowhere does not exist"),
    (["equal_time.py", str(SCRIPTS.parent / "nsode" / "checkpoints" / "nsode-eps"), "--plot", "nowhere/x.png"],
     "the folder nowhere does not exist"),
    (["glitches.py", "--threshold", "-3"], "'-3' must be a finite number > 0"),
])
def test_a_bad_argument_is_one_line(tmp_path, argv, message):
    done = subprocess.run([sys.executable, str(SCRIPTS / argv[0]), *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written where it ran


def test_a_generated_dataset_is_one_the_harness_reads(tmp_path):
    from bench.datasets import load

    out = tmp_path / "gen3.json"
    done = subprocess.run([sys.executable, str(SCRIPTS / "generated_dataset.py"), "--simple", "2", "--science", "1",
                           "--paper", "1", "--seed", "3", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    trajectories = load(str(out))
    assert [tr.equation_id for tr in trajectories] == ["simple-00", "simple-01", "science-00", "paper-00"]
    assert trajectories[0].expression.endswith("*y")  # the first simple form, y' = -a*y
    assert all(tr.has_truth and len(tr.y_extra) for tr in trajectories)


def test_a_generated_dataset_of_simple_laws_alone_asks_the_generator_for_nothing(tmp_path):
    # --science 0 once ran the science generator through all its blocks, keeping every law it found
    out = tmp_path / "gen4.json"
    done = subprocess.run([sys.executable, str(SCRIPTS / "generated_dataset.py"), "--simple", "3", "--science", "0",
                           "--seed", "4", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "3 simple, 0 science-family and 0 paper-family laws" in done.stdout

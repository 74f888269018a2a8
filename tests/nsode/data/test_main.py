"""`python -m nsode.data`: the command line passes its options on."""

from nsode.data import generate, large
from nsode.data.__main__ import main

EMPTY = {"shards": 0, "skeletons": 0, "odes": 0, "solutions": 0, "drops": {}}


def test_generate_passes_every_option_to_the_generator(tmp_path, monkeypatch):
    """--solution-seed, -j and --skeletons-only reach `generate.generate` (an ignored --solution-seed would
    silently solve a copied skeleton list with the same constants and initial values again)."""
    calls = []
    monkeypatch.setattr(generate, "generate", lambda *a, **k: calls.append((a, k)) or EMPTY)
    assert main(["generate", "--out", str(tmp_path / "d"), "--n-skeletons", "4", "--seed", "3",
                 "--solution-seed", "30", "-j", "2", "--skeletons-only", "-q"]) == 0
    (args, kwargs), = calls
    assert args[1:3] == (4, 3)
    assert kwargs["solution_seed"] == 30 and kwargs["jobs"] == 2
    assert kwargs["solve"] is False and kwargs["progress"] is False


def test_large_passes_count_per_complexity_seed_and_excluded_file(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(large, "main", lambda **k: calls.append(k))
    assert main(["large", "--out", str(tmp_path / "l.json"), "--count", "5", "--per-complexity", "2",
                 "--seed", "7", "--excluded", str(tmp_path / "ex.yaml"), "-q"]) == 0
    (kwargs,) = calls
    assert kwargs == dict(out=tmp_path / "l.json", seed=7, per_complexity=2, total=5,
                          excluded_file=tmp_path / "ex.yaml", progress=False)



def test_large_writes_the_checkout_s_dataset_from_any_folder(tmp_path, monkeypatch):
    """Run outside the checkout root, the default --out was a relative datasets/large.json there, while
    the skeleton list it is written with was the checkout's: the two no longer matched."""
    calls = []
    monkeypatch.setattr(large, "main", lambda **k: calls.append(k))
    monkeypatch.chdir(tmp_path)
    assert main(["large", "--count", "5", "-q"]) == 0
    assert calls[0]["out"] == large.DATASET_FILE and calls[0]["out"].is_absolute()

"""The committed Large dataset: its contents, the harness's view of it, and the training exclusion."""
import json
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from nsode.data import generate, large
from nsode.data import shards as store
from nsode.data import tokens as tok
from odecore.expressions import complexity

SPEC = json.loads(large.DATASET_FILE.read_text())
EQUATIONS = SPEC["equations"]


def test_large_has_162_odes_with_distinct_skeletons_at_most_10_per_complexity():
    assert len(EQUATIONS) == 162
    assert max(Counter(eq["complexity"] for eq in EQUATIONS).values()) <= 10
    assert len({eq["skeleton"] for eq in EQUATIONS}) == 162
    assert len({eq["id"] for eq in EQUATIONS}) == 162
    assert SPEC["source"] == f"{generate.GENERATOR_VERSION}, seed {large.SEED}"


def test_large_equations_are_canonical_and_their_stored_fields_agree():
    for eq in EQUATIONS:
        expr = tok.parse_infix(eq["expression"])
        assert tok.skeleton(expr) == eq["skeleton"]
        assert complexity(expr) == eq["complexity"]
        assert len(eq["y0"]) == 1 and -5 <= eq["y0"][0] <= 5


def test_the_harness_reads_large_with_the_same_complexities():
    from bench import datasets
    from odecore.expressions import parse

    spec = datasets.read_spec(datasets.resolve("large"))
    assert [complexity(parse(eq["expression"])) for eq in spec["equations"]] == [eq["complexity"] for eq in EQUATIONS]


@pytest.mark.parametrize("index", [0, 40, 80, 120, 161])
def test_large_initial_values_pass_the_generators_checks(index):
    from nsode.data import config as cfg

    eq = EQUATIONS[index]
    assert large.valid_initial_value(tok.parse_infix(eq["expression"]), eq["y0"][0], cfg.default())


def test_the_excluded_list_is_the_large_skeleton_list():
    assert generate.excluded_skeletons() == {eq["skeleton"] for eq in EQUATIONS}


def test_a_generated_training_set_contains_no_large_skeleton(tiny_folder):
    # the tiny folder was generated with the stored exclusion list in force
    trained = set(pq.read_table(tiny_folder / store.SKELETON_FILE).column("skeleton").to_pylist())
    assert trained and not trained & generate.excluded_skeletons()
    assert store.read_config(tiny_folder)[1]["excluded_skeletons"] == 162


def test_large_skeletons_are_excluded_when_the_search_meets_them(tmp_path, tiny_config, monkeypatch):
    # search with Large's own seed: the first candidates it finds are Large skeletons, all skipped
    seed = large.SEED
    found, _ = generate.candidate_block(0, seed, tiny_config)
    assert {c.skeleton for c in found} & generate.excluded_skeletons()
    generate.generate(tmp_path / "g", 5, seed, tiny_config, progress=False)
    table = pq.read_table(tmp_path / "g" / store.SKELETON_FILE)
    assert not set(table.column("skeleton").to_pylist()) & generate.excluded_skeletons()
    search = json.loads(table.schema.metadata[b"search"])
    assert search["candidates"]["excluded (Large)"] > 0
    assert np.all(np.diff(table.column("skeleton_index").to_numpy()) == 1)


def test_large_leaves_elementary_and_curated_skeletons_to_training():
    # excluding them from training would remove y' = -c*y, Textbook's -c - c*y, Classic's sqrt(y), ...
    from nsode.data import config as cfg

    curated = large.curated_skeletons(cfg.default())
    assert {"c*y", "-c - c*y", "sqrt(y)", "log(y)"} <= curated
    assert min(eq["complexity"] for eq in EQUATIONS) > large.ELEMENTARY_COMPLEXITY
    assert not {eq["skeleton"] for eq in EQUATIONS} & curated
    assert "-c*y" not in generate.excluded_skeletons()


def test_elementary_skeletons_up_to_the_bound_are_left_to_training():
    assert large.reserved("c + y", 3, frozenset()) and not large.reserved("c*y**2 + y", 4, frozenset())


SPEC = json.loads(large.DATASET_FILE.read_text())
EQUATIONS = SPEC["equations"]


def test_build_draws_the_committed_equations_at_most_per_complexity_sorted_by_complexity():
    """`build` reproduces the committed Large: the first ODE of each complexity it accepts is one of large.json's
    (same expression, y0, skeleton), at most per_complexity per complexity, renumbered in complexity order."""
    spec = large.build(total=10, per_complexity=1, progress=False)
    eqs = spec["equations"]
    committed = {(e["expression"], e["y0"][0], e["skeleton"], e["complexity"]) for e in EQUATIONS}
    assert all((e["expression"], e["y0"][0], e["skeleton"], e["complexity"]) in committed for e in eqs)
    assert len({e["complexity"] for e in eqs}) == 10  # one per complexity
    assert spec["generator"]["candidates"]["complexity full"] > 0  # the cap was met and enforced
    assert [e["complexity"] for e in eqs] == sorted(e["complexity"] for e in eqs)
    assert [e["id"] for e in eqs] == [f"large-{i:03d}" for i in range(10)]


def test_a_curated_skeleton_of_any_complexity_is_reserved_for_training():
    """Textbook/Classic skeletons stay in training whatever their complexity (not only elementary ones)."""
    skeleton = "c*y**2 + y"
    assert not large.reserved(skeleton, 4, frozenset())
    assert large.reserved(skeleton, 4, frozenset({skeleton}))


def test_equations_of_later_blocks_are_drawn_from_their_own_candidates_stream(monkeypatch):
    """Each candidate's constants and y0 come from the stream of its global position (block * per block + k):
    the committed equations found in block 1 come out again (block 0 skipped here to stay fast)."""
    from collections import Counter

    from nsode.data import generate

    real = generate.candidate_block
    monkeypatch.setattr(generate, "candidate_block",
                        lambda block, *args: ([], Counter()) if block == 0 else real(block, *args))
    spec = large.build(total=2, progress=False)
    assert spec["generator"]["blocks"] == 2
    committed = {(e["expression"], e["y0"][0], e["skeleton"]) for e in EQUATIONS}
    assert all((e["expression"], e["y0"][0], e["skeleton"]) in committed for e in spec["equations"])

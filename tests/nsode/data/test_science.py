"""The science family: every term kind, constants by role, the generator end to end, and the paper
family left as it was."""
import hashlib
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from nsode.data import config as cfg
from nsode.data import generate, science, simplify
from nsode.data import shards as store
from nsode.data import tokens as tok
from odecore.expressions import compile_vector
from odecore.solving import fd_residual

# the tiny paper folder of conftest (7 skeletons, seed 3) as generated before the science family existed
PAPER_DIGEST = "12892edfe85b56f9"


@pytest.fixture(scope="module")
def science_config(tiny_config):
    return tiny_config.replace(family="science", skeletons_per_shard=5)


@pytest.fixture(scope="module")
def science_folder(tmp_path_factory, science_config):
    """20 skeletons, seed 11, one process."""
    folder = tmp_path_factory.mktemp("science") / "data"
    generate.generate(folder, 20, 11, science_config, jobs=1, progress=False)
    return folder


def _assert_same(a, b):
    """Every table of two folders equal, with its metadata, and the same config.json."""
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*.parquet"))
    assert files == sorted(str(p.relative_to(b)) for p in b.rglob("*.parquet")) and len(files) > 2
    for name in files:
        ta, tb = pq.read_table(a / name), pq.read_table(b / name)
        assert ta.equals(tb) and ta.schema.metadata == tb.schema.metadata, name
    assert (a / store.CONFIG_FILE).read_text() == (b / store.CONFIG_FILE).read_text()


@pytest.mark.parametrize("kind", sorted(science.TERMS))
def test_every_term_kind_gives_simplifiable_laws_whose_constants_keep_the_skeleton(kind, science_config):
    rng = np.random.default_rng(5)
    accepted = 0
    for _ in range(6):
        prefix = science.sample_term(kind, rng, science_config)
        if kind == "constant":  # alone it is a constant f, rejected by design
            prefix = ["add", *prefix, *science.sample_term("poly", rng, science_config)]
        cand = simplify.process(prefix, science_config)
        sets, y0 = science.draw_sets(cand.expr, cand.skeleton, rng, science_config)
        assert len(sets) == science_config.n_const and y0.shape == (len(sets), science_config.n_iv)
        assert all(tok.skeleton(expr) == cand.skeleton for expr, _ in sets)
        assert np.isfinite(y0).all() and (y0 != 0).all()
        accepted += 1
    assert accepted == 6


def test_constants_scale_with_y_and_rates_stay_in_range(science_config):
    rng = np.random.default_rng(0)
    # Michaelis-Menten y' = a - b*y/(c + y) after simplification: (a*c + (a - b)*y)/(c + y)
    expr = simplify.process(["sub", 1.3, "div", "mul", 1.5, "y", "add", 1.2, "y"], science_config).expr
    dims, consistent = science.roles(expr)
    assert consistent and sorted(dims) == [(1.0, 0.0), (1.0, 1.0), (2.0, 1.0)]
    for _ in range(20):
        _, values, scale = science.draw_constants(expr, rng, science_config)
        assert 0.01 <= scale <= 100
        by_dim = dict(zip(dims, values))
        assert 0.25 <= by_dim[(1.0, 0.0)] / scale <= 4  # the half-saturation constant c is on y's scale
        assert 0.05 <= abs(by_dim[(1.0, 1.0)]) / scale <= 5  # a rate times S
    # y' = -a*y: a pure rate, either scale of y
    _, values, _ = science.draw_constants(simplify.process(["mul", -1.3, "y"], science_config).expr, rng,
                                       science_config)
    assert -5 <= values[0] <= -0.05


def test_laws_that_fix_the_unit_of_y_get_scale_one_and_logs_get_positive_y(science_config):
    rng = np.random.default_rng(1)
    sine = simplify.process(["mul", 1.3, "sin", "y"], science_config)
    assert science.roles(sine.expr)[1] is False
    assert all(science.draw_constants(sine.expr, rng, science_config)[2] == 1.0 for _ in range(5))
    _, y0 = science.draw_sets(sine.expr, sine.skeleton, rng, science_config.replace(n_const=20))
    assert (y0 < 0).any() and (y0 > 0).any() and np.abs(y0).max() <= 2
    gompertz = simplify.process(science.sample_term("log", np.random.default_rng(3), science_config), science_config)
    assert science.needs_positive_y(gompertz.expr)
    assert (science.draw_sets(gompertz.expr, gompertz.skeleton, rng, science_config)[1] > 0).all()


def test_hill_terms_keep_one_exponent(science_config):
    rng = np.random.default_rng(2)
    hill = simplify.process(["mul", 1.4, "div", "pow", "y", 3, "add", 2.7, "pow", "y", 3], science_config)
    draws = science.draw_sets(hill.expr, hill.skeleton, rng, science_config.replace(n_const=10))[0]
    assert len(draws) == 10
    for expr, values in draws:
        exponents = [v for v, role in simplify.constant_slots(expr) if role == simplify.EXPONENT]
        assert len(set(exponents)) == 1 and 2 <= exponents[0] <= 5


def test_science_folder_solves_its_odes_and_holds_no_large_skeleton(science_folder, science_config):
    config, provenance = store.read_config(science_folder)
    assert config == science_config and provenance["seed"] == 11
    skeletons = pq.read_table(science_folder / store.SKELETON_FILE).column("skeleton").to_pylist()
    assert len(skeletons) == 20 == len(set(skeletons))
    assert not set(skeletons) & generate.excluded_skeletons()
    rows = list(store.iter_rows(science_folder, columns=["expression", "y", "y0"]))
    assert len(rows) > 20
    scales = [abs(r["y0"]) for r in rows]
    assert max(scales) / min(scales) > 100  # raw units over decades
    t = config.t_train()
    for r in rows:
        assert fd_residual(compile_vector(tok.parse_infix(r["expression"])), t, np.array(r["y"])) \
            <= config.fd_tolerance


def test_science_folder_is_the_same_on_rerun_and_resume(tmp_path, science_folder, science_config):
    generate.generate(tmp_path / "again", 20, 11, science_config, jobs=1, progress=False)
    _assert_same(science_folder, tmp_path / "again")
    resumed = tmp_path / "resumed"
    shutil.copytree(science_folder, resumed)
    (resumed / "shards" / store.shard_name(1)).unlink()
    generate.generate(resumed, 20, 11, science_config, jobs=1, progress=False)
    _assert_same(science_folder, resumed)


def test_paper_family_output_and_config_file_are_unchanged(tiny_folder):
    rows = store.iter_rows(tiny_folder, columns=["skeleton", "expression", "y0"])
    text = "\n".join(f"{r['skeleton']}|{r['expression']}|{r['y0']!r}" for r in rows)
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == PAPER_DIGEST
    recorded = json.loads((tiny_folder / store.CONFIG_FILE).read_text())
    assert "family" not in recorded and not any(k.startswith("science_") for k in recorded)
    assert store.read_config(tiny_folder)[0].family == "paper"


def test_unknown_family_is_a_one_line_config_error():
    with pytest.raises(cfg.ConfigError, match="family must be one of paper, science"):
        cfg.default().replace(family="biology")
    with pytest.raises(cfg.ConfigError, match="science_terms: unknown operator"):
        cfg.default().replace(science_terms={"poly": 1, "bessel": 1})
    config = cfg.default().replace(family="science")
    assert cfg.from_dict(config.to_dict()) == config == cfg.from_dict(json.loads(config.to_json()))


def test_a_law_with_a_pole_in_y_needs_positive_y():
    from odecore.expressions import Y

    assert science.needs_positive_y(1 / (Y + 2)) and not science.needs_positive_y(Y**2 - 3)


SCIENCE = cfg.default().replace(family="science")


def test_polynomial_terms_and_resampled_exponents_reach_the_largest_degree():
    rng = np.random.default_rng(0)
    degrees = set()
    for _ in range(300):
        term = science.sample_term("poly", rng, SCIENCE)
        degrees.add(1 if term[2] == "y" else term[4])
    assert degrees == set(range(1, SCIENCE.science_max_degree + 1))
    slots = simplify.constant_slots(simplify.canonical(tok.parse_infix("1.5*y**3")))
    assert {science._exponents(slots, rng, SCIENCE)[0] for _ in range(200)} == {2.0, 3.0, 4.0, 5.0}


def test_the_number_of_terms_follows_its_configured_weights():
    rng = np.random.default_rng(0)
    three = SCIENCE.replace(science_terms={"poly": 1}, science_n_terms=[0, 0, 1])
    assert all(science.sample_expression(rng, three)[:3] == ["add", "add", "mul"] for _ in range(50))
    one = three.replace(science_n_terms=[1, 0, 0])
    assert all(science.sample_expression(rng, one)[0] == "mul" for _ in range(50))


def test_a_constant_asked_to_be_positive_or_negative_is():
    rng = np.random.default_rng(0)
    assert all(science._constant(rng, +1) > 0 for _ in range(200))
    assert all(science._constant(rng, -1) < 0 for _ in range(200))


def test_a_constant_of_the_dimension_of_a_squared_rate_spans_the_squared_range():
    expr = simplify.canonical(tok.parse_infix("sqrt(3*y + 2)"))
    dims, consistent = science.roles(expr)
    assert consistent and (2.0, 2.0) in dims
    k = dims.index((2.0, 2.0))
    rng = np.random.default_rng(0)
    ratios = []
    for _ in range(200):
        _, values, scale = science.draw_constants(expr, rng, SCIENCE)
        ratios.append(abs(values[k]) / scale**2)
    lo, hi = SCIENCE.science_rate_range
    assert lo**2 * 0.999 <= min(ratios) and max(ratios) <= hi**2 * 1.001
    assert min(ratios) < lo and max(ratios) > hi  # a rate squared, not a rate


def test_initial_values_are_on_the_scale_of_a_half_saturation_constant():
    candidate = simplify.process(["sub", 1.3, "div", "mul", 1.5, "y", "add", 1.2, "y"], SCIENCE)
    dims, _ = science.roles(candidate.expr)
    k = dims.index((1.0, 0.0))  # K = S * U(0.25, 4), y0 = S * U(0.1, 2)
    sets, y0 = science.draw_sets(candidate.expr, candidate.skeleton, np.random.default_rng(0), SCIENCE)
    ratio = np.abs(y0) / np.abs(np.array([values[k] for _, values in sets]))[:, None]
    assert 0.1 / 4 <= ratio.min() and ratio.max() <= 2 / 0.25


def test_a_negative_exponent_keeps_its_sign_when_resampled():
    """An inverse power (1/y**2) is redrawn as another inverse power, never as a growing one: the
    exponent's sign belongs to the skeleton."""
    slots = simplify.constant_slots(simplify.canonical(tok.parse_infix("1.3*y**(-2) - 1.2*y")))
    rng = np.random.default_rng(0)
    drawn = {science._exponents(slots, rng, SCIENCE)[0] for _ in range(100)}
    assert drawn == {-2.0, -3.0, -4.0, -5.0}

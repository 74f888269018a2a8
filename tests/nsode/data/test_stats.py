"""`python -m nsode.data stats` and the expressions feed of the harness's dataset figures."""
import pandas as pd

from odecore.expressions import complexity
from nsode.data import generate, stats
from nsode.data import shards as store
from nsode.data.tokens import parse_infix
from nsode.data.__main__ import main


def test_expressions_yields_each_ode_once_with_its_complexity(tiny_folder):
    pairs = list(stats.expressions(tiny_folder))
    ode_ids = {r["ode_id"] for r in store.iter_rows(tiny_folder, columns=["ode_id"])}
    assert len(pairs) == len(ode_ids) == generate.totals(tiny_folder)["odes"]
    assert all(c == complexity(parse_infix(e)) for e, c in pairs)


def test_stats_prints_the_tables_and_writes_the_plot(tiny_folder, tmp_path, capsys):
    plot = tmp_path / "stats.png"
    assert main(["stats", str(tiny_folder), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    for heading in ("## Counts", "## Complexity", "## Operator and leaf frequencies", "solution: solve failed"):
        assert heading in out
    assert plot.stat().st_size > 10_000
    capsys.readouterr()
    assert main(["stats", str(tiny_folder), "--plot", str(tmp_path / "x.txt")]) == 0  # matplotlib writes no .txt
    assert main(["stats", str(tiny_folder), "--plot", str(tmp_path)]) == 0  # a folder: stats.png inside
    said = capsys.readouterr().out
    assert (tmp_path / "x.txt.png").is_file() and f"plot: {tmp_path / 'x.txt.png'}" in said
    assert f"plot: {tmp_path / 'stats.png'}" in said


def test_stats_of_a_folder_without_shards_is_a_one_line_error(tmp_path, capsys):
    assert main(["stats", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_shard_cut_short_and_a_large_count_of_0_are_one_line_errors(tiny_folder, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_folder, copy)
    shard = store.shard_paths(copy)[0]
    shard.write_bytes(b"")
    assert main(["stats", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and shard.name in err and "not a readable parquet file" in err
    for option in ("--count", "--per-complexity"):  # 0 ODEs would overwrite the dataset; 0 per complexity, hang
        try:
            main(["large", "--out", str(tmp_path / "large.json"), option, "0"])
        except SystemExit as refused:
            assert refused.code == 2
    assert "must be at least 1" in capsys.readouterr().err and not (tmp_path / "large.json").exists()


def test_help_reads_for_every_command(capsys):
    for command in ([], ["generate"], ["stats"], ["large"]):
        try:
            main([*command, "--help"])
        except SystemExit as done:
            assert done.code == 0
    out = capsys.readouterr().out
    assert "--n-skeletons" in out and "--scheduler" in out and "excluded_skeletons.yaml" in out


def test_token_frequencies_count_y_as_a_leaf_of_its_own_and_numbers_as_constants():
    """The operator and leaf table: `y` has its own row; every number (whatever its text) is `constant`."""
    frame = pd.DataFrame({"tokens": [["add", "y", "3.0"], ["mul", "-2.5", "sin", "y"]]})
    table = stats.token_frequencies(frame).set_index("token")["count"]
    assert table["y"] == 2 and table["constant"] == 2
    assert table["add"] == table["mul"] == table["sin"] == 1 and table["sub"] == 0
    assert table.sum() == 7


def test_odes_has_one_row_per_ode_with_its_number_of_solutions(tiny_folder):
    """The complexity histogram and operator frequencies count ODEs, not solutions."""
    frame = stats.odes(tiny_folder)
    totals = generate.totals(tiny_folder)
    assert frame["ode_id"].is_unique and len(frame) == totals["odes"]
    assert frame["solutions"].sum() == totals["solutions"] > len(frame)

"""The one reader of trajectory files: what a CSV may look like, and what is refused."""
import numpy as np
import pytest

from odecore.trajectories import TrajectoryFileError, read_records, read_trajectory, check_trajectory

T = np.linspace(0, 2, 20)
ROWS = "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(T, 3 * np.exp(-0.5 * T)))


@pytest.mark.parametrize("text", [
    "t,y\n" + ROWS,
    "# measured 2026-11-27\n# lab 3\nt,y\n" + ROWS,  # comment lines before the header are skipped
    "# t,y\n" + ROWS,  # numpy.savetxt's header: the comment is the header
    " T , Y \n" + ROWS,
])
def test_a_trajectory_is_read_with_or_without_comment_lines(tmp_path, text):
    (tmp_path / "d.csv").write_text(text)
    read = read_trajectory(tmp_path / "d.csv")
    assert len(read.t) == 20 and read.y[0] == 3.0


def test_numpy_savetxt_output_is_read(tmp_path):
    np.savetxt(tmp_path / "d.csv", np.c_[T, 2 * T], delimiter=",", header="t,y")
    assert np.allclose(read_trajectory(tmp_path / "d.csv").y, 2 * T)


@pytest.mark.parametrize("text, message", [
    ("t,y,Y\n" + "".join(f"{a},{a},{a}\n" for a in T), "more than one column is named y"),
    ("t,y,y\n" + "".join(f"{a},{a},{100 * a}\n" for a in T), "more than one column is named y"),  # not y.1
    ("t,t,y\n" + "".join(f"{a},{1000 * a},{a}\n" for a in T), "more than one column is named t"),
    ("t,y\n" + ROWS.replace("\n", ",x\n", 11).replace(",x\n", "\n", 10), "line 12 has 3 values"),
    ("# just a note\n" + ROWS, "the header line holds numbers .* add a line t,y above the data"),
    ("t,y\n", "no data below the header"),
    ("t,y\n" + "".join(f"{a},{a},{a}\n" for a in T), "more values than the header"),
    ("t;y\n" + "".join(f"{a};{2 * a}\n".replace(".", ",") for a in T), "separates its columns with ';'"),
    ("t\ty\n" + "".join(f"{a}\t{2 * a}\n" for a in T), "separates its columns with tabs"),
])
def test_ambiguous_columns_are_refused_by_name(tmp_path, text, message):
    (tmp_path / "d.csv").write_text(text)
    with pytest.raises(TrajectoryFileError, match=message):
        read_trajectory(tmp_path / "d.csv")


def _with_laws(laws: list[str], header: str = "t,y,expression") -> str:
    return header + "\n" + "".join(f"{row.rstrip()},{law}\n" for row, law in zip(ROWS.splitlines(), laws))


@pytest.mark.parametrize("text, law", [
    (_with_laws(["1"] * 20), "1"),  # a constant law is text, not the number 1.0
    (_with_laws([""] + ["-0.5*y"] * 19), "-0.5*y"),  # an empty first cell
    (_with_laws(["-0.5*y"] + [""] * 19, header="t,y, Expression "), "-0.5*y"),
    (_with_laws([""] * 20), None),
])
def test_the_expression_column_gives_the_one_law_its_cells_hold(tmp_path, text, law):
    (tmp_path / "d.csv").write_text(text)
    assert read_trajectory(tmp_path / "d.csv").expression == law


def test_a_users_own_expression_column_is_only_a_column(tmp_path):
    """`nsode predict` reads a record, not a law: a gene-expression reading is one more column."""
    (tmp_path / "d.csv").write_text("t,y,Expression\n" + "".join(f"{a},{b},{i}.5\n" for i, (a, b) in
                                                                    enumerate(zip(T, np.exp(-T)))))
    data = read_trajectory(tmp_path / "d.csv", sort=True, law=False)
    assert data.expression is None and np.allclose(data.y, np.exp(-T))
    with pytest.raises(TrajectoryFileError, match="20 different laws"):
        read_trajectory(tmp_path / "d.csv")


@pytest.mark.parametrize("cells, message", [
    ("s,mM", r"column t holds 's' in row 1 below the header, not a number; only numbers may follow the header"),
    ('0,"1,5"', r"column y holds '1,5' in row 1 below the header, not a number; write decimals with a point"),
    ("2024-01-01 10:00,1", r"holds '2024-01-01 10:00' in row 1 .*; convert dates and clock times to numbers"),
    ("0,1\n# note,", r"column t holds '# note' in row 2 below the header"),
    ("0,\n1,nan", r"2 rows with an empty, NaN or infinite t or y \(the first is row 1 below the header\)"),
])
def test_a_cell_that_is_not_a_number_is_named_with_its_row(tmp_path, cells, message):
    (tmp_path / "d.csv").write_text(f"t,y\n{cells}\n" + ROWS)
    with pytest.raises(TrajectoryFileError, match=message):
        read_trajectory(tmp_path / "d.csv", sort=True)


def test_an_expression_column_with_two_laws_or_a_bad_one_is_refused(tmp_path):
    for laws, message in ((["-0.5*y"] * 19 + ["-y"], r"2 different laws \('-0.5\*y', '-y'\); one"),
                          (["y**"] * 20, "column 'expression'")):
        (tmp_path / "d.csv").write_text(_with_laws(laws))
        with pytest.raises(TrajectoryFileError, match=message):
            read_trajectory(tmp_path / "d.csv")


@pytest.mark.parametrize("content, message", [
    (b"", "the file is empty"),
    ("t,y,note\n" + "".join(f"{a},{a},caf\xe9\n" for a in range(12)), "not UTF-8 text"),
])
def test_empty_and_non_utf8_files_say_so(tmp_path, content, message):
    (tmp_path / "d.csv").write_bytes(content if isinstance(content, bytes) else content.encode("latin-1"))
    with pytest.raises(TrajectoryFileError, match=message):
        read_trajectory(tmp_path / "d.csv")


def test_binary_files_and_non_files_are_named_as_such(tmp_path):
    import gzip
    (tmp_path / "d.csv.gz").write_bytes(gzip.compress(("t,y\n" + ROWS).encode()))
    with pytest.raises(TrajectoryFileError, match=r"not a text CSV file \(binary or compressed\?\); give") as err:
        read_trajectory(tmp_path / "d.csv.gz")
    assert len(str(err.value)) < 200  # no raw bytes in the message
    with pytest.raises(TrajectoryFileError, match="not a regular file"):
        read_trajectory("/dev/null")


def test_a_duplicate_time_is_printed_in_full(tmp_path):
    times = 1_700_000_000 + np.r_[np.arange(31), 30, np.arange(32, 40)]
    (tmp_path / "d.csv").write_text("t,y\n" + "".join(f"{a},{0.95 ** i}\n" for i, a in enumerate(times)))
    with pytest.raises(TrajectoryFileError, match="duplicate time 1700000030;"):
        read_trajectory(tmp_path / "d.csv")


def test_the_largest_reversal_of_a_monotone_record_is_zero_and_of_a_turn_its_depth():
    from odecore.trajectories import largest_reversal

    assert largest_reversal(3 * np.exp(-0.5 * T)) == 0 and largest_reversal(np.full(20, 2.0)) == 0
    assert largest_reversal([0, 1, 3, 2.5, 4]) == pytest.approx(0.5)  # fell back by 0.5 before rising on
    # up to 1, then down to sin 3
    assert largest_reversal(np.sin(np.linspace(0, 3, 51))) == pytest.approx(1 - np.sin(3), abs=1e-3)


def test_one_file_of_several_records_is_split_by_its_column_each_sorted(tmp_path):
    rows = [(t, 1 + t, "b") for t in range(12)] + [(t, 2 * t, " a") for t in range(11, -1, -1)]
    path = tmp_path / "runs.csv"
    path.write_text("t,y,Run\n" + "".join(f"{t},{y},{r}\n" for t, y, r in rows))  # times repeat across runs
    records = read_records(path, "run")
    assert list(records) == ["b", "a"]  # in the order the file names them, labels stripped
    assert np.array_equal(records["a"].t, np.arange(12)) and np.array_equal(records["a"].y, 2 * np.arange(12))


@pytest.mark.parametrize("rows, by, message", [
    ([(t, t, "a") for t in range(12)], "run", "column run names one record ('a'); give two or more"),
    ([(t, t, "a") for t in range(12)], "batch", "no column 'batch' tells its records apart (other columns: 'run')"),
    ([(t, t, "a") for t in range(12)] + [(t, t, "b") for t in range(3)], "run", "run b: only 3 points"),
    ([(t, t, "a") for t in range(12)] + [(0.5, 1, "")], "run", "row 13 below the header has no run"),
    ([(t, t, "a") for t in range(12)] + [(0.5, 1, "  ")], "run", "row 13 below the header has run ''"),
    ([(t, t, "a") for t in range(12)], "t", "column 't' holds the times"),
])
def test_a_file_whose_records_cannot_be_read_apart_is_refused_by_name(tmp_path, rows, by, message):
    path = tmp_path / "runs.csv"
    path.write_text("t,y,run\n" + "".join(f"{t},{y},{r}\n" for t, y, r in rows))
    with pytest.raises(TrajectoryFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_records(path, by)


def test_a_file_with_its_own_column_names_is_read_from_the_columns_named(tmp_path):
    path = tmp_path / "growth.csv"
    path.write_text("# plate reader, 37 C\nHours,OD600,well\n" + "".join(f"{t},{0.1 * 1.5 ** t},{t // 12}\n"
                                                                        for t in range(24)))
    data = read_trajectory(path, columns=(" hours", "od600 "))  # names without case or spaces, as t and y are
    assert np.array_equal(data.t, np.arange(24)) and data.y[1] == pytest.approx(0.15)
    assert data.columns == ("Hours", "OD600")  # as the file spells them, for a figure's axes
    records = read_records(path, "well", columns=("hours", "OD600"))
    assert list(records) == ["0", "1"] and records["1"].columns == ("Hours", "OD600")
    for columns, message in ((("t", "y"), "naming columns t and y, comma-separated (found 'Hours', 'OD600', 'well')"),
                             (("hours", "od"), "naming columns hours and od, comma"),
                             (("hours", "Hours"), "two different, named columns")):
        with pytest.raises(TrajectoryFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read_trajectory(path, columns=columns)
    with pytest.raises(TrajectoryFileError, match="column 'hours' holds the times"):
        read_records(path, "hours", columns=("Hours", "OD600"))


def test_a_minimum_point_count_from_python_must_be_a_whole_number_of_at_least_two():
    from odecore.trajectories import observed

    t = np.linspace(0, 1, 12)
    assert len(observed(t, t, min_points=2)[0]) == 12
    for bad in (0, -1, "3", 2.5):
        with pytest.raises(ValueError, match="min_points="):
            observed(t, t, min_points=bad)


def test_columns_are_read_and_dates_or_masked_values_are_refused_by_name():
    """A list of datetime objects was "values that are not numbers"; a masked array gave its
    placeholders (-999) to the fit; a column vector (n, 1) was refused."""
    import datetime

    from odecore.trajectories import observed

    t = np.linspace(0, 1, 12)
    assert observed(t[:, None], np.exp(t)[:, None])[0].shape == (12,)
    days = [datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=h) for h in range(12)]
    with pytest.raises(ValueError, match="t holds dates or durations: convert them to numbers"):
        observed(days, np.exp(t))
    masked = np.ma.masked_equal(np.where(t > 0.5, -999.0, np.exp(t)), -999.0)
    with pytest.raises(ValueError, match="y has 6 masked values; remove those points"):
        observed(t, masked)


def test_the_fewest_points_and_finite_times_are_checked_exactly():
    from odecore.trajectories import check_trajectory

    check_trajectory(np.arange(10.0), np.ones(10))
    with pytest.raises(ValueError, match="only 9 points; at least 10"):
        check_trajectory(np.arange(9.0), np.ones(9))
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_trajectory(np.r_[0, 1, np.nan, np.arange(3, 12)], np.ones(12))


def test_by_naming_the_value_column_says_it_holds_the_values(tmp_path, write_runs):
    with pytest.raises(TrajectoryFileError, match="column 'Y' holds the values"):
        read_records(write_runs(tmp_path / "runs.csv"), "Y")


@pytest.mark.parametrize("label", ['"A\n1"', "A\x071"])
def test_a_record_label_of_more_than_one_line_or_a_control_character_is_refused(tmp_path, label):
    path = tmp_path / "runs.csv"
    path.write_text("t,y,run\n" + "".join(f"{t},{1 + t},a\n" for t in range(12))
                    + "".join(f"{t},{1 + t},{label}\n" for t in range(12)))
    with pytest.raises(TrajectoryFileError, match="row 13 below the header has run .*printable text on one line"):
        read_records(path, "run")


def test_a_commented_header_above_the_real_one_is_only_a_comment(tmp_path):
    (tmp_path / "d.csv").write_text("# t,y\nt,y\n" + ROWS)
    read = read_trajectory(tmp_path / "d.csv")
    assert len(read.t) == 20 and read.y[0] == 3.0


def test_numpy_savetxt_header_is_read_without_case(tmp_path):
    np.savetxt(tmp_path / "d.csv", np.c_[T, 2 * T], delimiter=",", header="Hours,OD600")
    read = read_trajectory(tmp_path / "d.csv", columns=("hours", "od600"))
    assert np.allclose(read.y, 2 * T) and read.columns == ("Hours", "OD600")


def test_a_record_of_zeros_is_a_record_and_a_tiny_one_or_a_tiny_span_is_refused():
    """Sizes are checked where squares underflow: all zeros (a record at rest at 0) pass, |y| all
    below 1e-100 does not; nor do times spanning less than 1e-100."""
    t = np.arange(10.0)
    check_trajectory(t, np.zeros(10))
    with pytest.raises(ValueError, match="largest \\|y\\| is 1e-101"):
        check_trajectory(t, np.full(10, 1e-101))
    with pytest.raises(ValueError, match="the times span 9e-102"):
        check_trajectory(t * 1e-102, np.ones(10))

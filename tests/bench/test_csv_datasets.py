"""CSV datasets in the harness (bench.datasets.load_csv): one record per file, or several told apart
by a column; every problem named in one line."""
import pytest

from bench.datasets import CsvReading, DatasetError, load_csv


def _bad_files(folder, count):
    folder.mkdir()
    for k in range(count):
        (folder / f"f{k}.csv").write_text("t,y\n0,1\n1,2\n")  # too short


def test_a_folder_s_problems_beyond_the_shown_five_are_counted_exactly(tmp_path):
    _bad_files(tmp_path / "five", 5)
    with pytest.raises(DatasetError, match="5 of 5 files") as err:
        load_csv(tmp_path / "five")
    assert "more" not in str(err.value)
    _bad_files(tmp_path / "six", 6)
    with pytest.raises(DatasetError, match="; and 1 more$"):
        load_csv(tmp_path / "six")


def test_the_harness_refuses_a_record_whose_times_are_not_sorted(tmp_path):
    path = tmp_path / "p1.csv"
    path.write_text("t,y,well\n" + "".join(f"{t},{1 + t},A1\n" for t in range(12))
                    + "".join(f"{t},{1 + t},B1\n" for t in range(11, -1, -1)))
    with pytest.raises(DatasetError, match="well B1: times are not sorted"):
        load_csv(path, CsvReading(by="well"))


def test_a_several_record_file_without_t_and_y_gets_the_columns_hint(tmp_path, write_runs):
    path = write_runs(tmp_path / "p1.csv", header="Hours,OD600,well")
    with pytest.raises(DatasetError, match="naming columns t and y.*; or name the file's own: --columns TIME VALUE"):
        load_csv(path, CsvReading(by="well"))
    assert [tr.record for tr in load_csv(path, CsvReading(("hours", "od600"), "well"))] == ["a", "b"]


def test_a_duplicate_time_within_a_record_read_by_a_column_is_not_sent_to_that_option(tmp_path, write_runs):
    path = write_runs(tmp_path / "p1.csv", labels=("a", "b"))
    path.write_text(path.read_text() + "3,9,b\n")
    with pytest.raises(DatasetError, match="duplicate time") as err:
        load_csv(path, CsvReading(by="run"))
    assert "--by" not in str(err.value)
    (tmp_path / "one.csv").write_text("t,y\n" + "".join(f"{t},{1 + t}\n" for t in (*range(12), 3)))
    with pytest.raises(DatasetError, match="several runs in one file[?] --by COLUMN"):  # one file, one record
        load_csv(tmp_path / "one.csv")

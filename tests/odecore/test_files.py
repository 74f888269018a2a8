import os
from pathlib import Path

import pytest

from odecore.files import write_text_atomic, why_unwritable


def test_a_link_is_written_through_to_its_target_and_stays_a_link(tmp_path):
    (tmp_path / "target.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("target.json")
    write_text_atomic("new\n", tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "target.json").read_text() == "new\n"
    (tmp_path / "dangling.json").symlink_to("missing.json")  # a link to a file not yet written creates it
    write_text_atomic("first\n", tmp_path / "dangling.json")
    assert (tmp_path / "dangling.json").is_symlink() and (tmp_path / "missing.json").read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json", "link.json", "missing.json", "target.json"]


def test_a_pipe_or_device_is_refused_not_replaced_by_a_file(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError, match="not a regular file"):
        write_text_atomic("x\n", tmp_path / "pipe")
    assert (tmp_path / "pipe").is_fifo() and [p.name for p in tmp_path.iterdir()] == ["pipe"]
    if Path("/dev/full").is_char_device():
        with pytest.raises(OSError, match="not a regular file"):
            write_text_atomic("x\n", Path("/dev/full"))
        assert Path("/dev/full").is_char_device()


def test_the_probe_of_a_link_to_a_file_not_yet_written_keeps_the_link(tmp_path):
    """A link is probed at its target: the probe's file there is removed again, and the link stays."""
    (tmp_path / "out").mkdir()
    (tmp_path / "link.json").symlink_to(tmp_path / "out" / "fit.json")
    assert why_unwritable(tmp_path / "link.json") is None
    assert (tmp_path / "link.json").is_symlink() and not (tmp_path / "out" / "fit.json").exists()
    assert "does not exist" in why_unwritable(tmp_path / "missing" / "fit.json")


def test_a_file_is_written_into_folders_made_for_it(tmp_path):
    write_text_atomic("x\n", tmp_path / "a" / "b" / "sweep.json")
    assert (tmp_path / "a" / "b" / "sweep.json").read_text() == "x\n"
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["sweep.json"]  # no temporary file left

"""The commit a sweep records says when the checkout had uncommitted edits, and is not borrowed from a
repository the code merely sits inside (bench.provenance)."""
import subprocess

from bench import provenance


def _git(folder, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_recorded_commit_says_when_tracked_files_were_edited(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "notes.txt").write_text("untracked")  # untracked files do not count
    assert provenance.git_commit(tmp_path) == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance.git_commit(tmp_path) == head + "-dirty"


def test_a_folder_inside_another_repository_has_no_commit_of_its_own(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    assert provenance.git_commit(tmp_path / "inner") == "unknown"

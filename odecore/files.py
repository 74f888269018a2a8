"""Files written whole or not at all: a kill mid-write leaves the old file, never a torn one."""
from __future__ import annotations

import errno
import os
from pathlib import Path


def write_text_atomic(text: str, path: Path) -> None:
    """Write `text` beside `path`, then rename it into place. A link is written through to its
    target (the link stays a link); a device, pipe or socket at `path` is an OSError, not replaced
    by a file (renaming over /dev/full would swap the device for a file)."""
    path = Path(path)
    if path.exists() and not path.is_file():  # exists and is_file read through links, as open does
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    path = Path(os.path.realpath(path))  # os.replace would put a file where the link was
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


FIGURE_ENDINGS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")  # what matplotlib writes by the name's ending


def figure_file(path: Path) -> Path:
    """The file a figure named `path` is written to: .png added to a name without a known ending
    (matplotlib would add it anyway, or refuse `.txt` with a traceback)."""
    path = Path(path)
    return path if path.suffix.lower() in FIGURE_ENDINGS else path.with_name(path.name + ".png")


def why_unwritable(path: Path) -> str | None:
    """Why a file cannot be written whole at `path`, or None: asked before the work that makes
    it, so that a bad place is refused then, not after (and no empty file is left behind). A
    device, pipe or socket is told from stat alone, never opened (a pipe without a reader would
    hold the probe's open forever); a link is probed at its target, where the file will go."""
    path = Path(path)
    if path.is_dir():
        return "that is a folder; give a file name"
    if path.exists() and not path.is_file():
        return "not a regular file"
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if not target.parent.is_dir():
        return f"the folder {target.parent} does not exist"
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as err:
        return f"cannot write there ({err.strerror or err})"
    if not existed:
        target.unlink()
    return None


def why_no_folder(path: Path) -> str | None:
    """Why a folder cannot be made or written at `path`, or None: asked before hours of work whose
    outputs go there (`bench paper --docs`), not after."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "exists and is not a folder"
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot write in {ancestor}"
    return None


def figure_target(path: Path, example: str = "figure.png") -> tuple[Path, str | None]:
    """The file a figure named `path` goes to (`figure_file`) and why it cannot go there (None
    when it can). A folder or a device is told as named, before .png is added: /dev/fd/63 is the
    pipe named, not 63.png."""
    path = Path(path)
    if path.is_dir():
        return path, f"that is a folder; give a file name such as {path / example}"
    if path.exists() and not path.is_file():
        return path, "not a regular file"
    target = figure_file(path)
    return target, why_unwritable(target)

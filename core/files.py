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

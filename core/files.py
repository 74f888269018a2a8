"""Files written whole or not at all: a kill mid-write leaves the old file, never a torn one."""
from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(text: str, path: Path) -> None:
    """Write `text` beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)

"""Where a result came from: the git commit of the checkout and the machine, as plain values.

The runner stores them in `sweep.json` at every (re)start of a sweep; the reproduction report
reads them back, so the machine named in a report is the one that ran the sweep.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

from odecore import shipped

ROOT = shipped.ROOT
DISTRIBUTION = "odebench-nsode"


def git_commit(root: Path = ROOT) -> str:
    """The commit of the checkout, with "-dirty" when tracked files differ from it. An installed
    package is named by its version instead ("odebench-nsode 0.1.0"): the git repository above
    site-packages, if any, is the user's, not this project's. "unknown" when neither is known."""
    if root == ROOT and not shipped.CHECKOUT:
        try:
            return f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)}"
        except importlib.metadata.PackageNotFoundError:
            return "unknown"
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        if Path(top).resolve() != root.resolve():  # a folder inside some other repository
            return "unknown"
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def machine() -> dict:
    """CPU count, processor and platform of this machine (what `platform` and `os` report)."""
    return {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "machine": platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "cpu_model": _cpu_model()}


def _cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), which `platform.processor()` often leaves empty."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def describe() -> dict:
    return {"commit": git_commit(), "machine": machine()}

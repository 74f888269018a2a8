"""Where the folders the project ships beside its code live: in a checkout, its own `methods/`,
`datasets/` and `configs/`; in an installed wheel, `bench/shipped/` (setup.py copies them there),
so that `pip install .` finds the same built-in methods, datasets and configs as `pip install -e .`."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT = (ROOT / "pyproject.toml").is_file()  # a wheel's site-packages has none
FOLDERS = {"methods": "*.py", "datasets": "*.json", "configs": "*.yaml"}


def folder(name: str) -> Path:
    """The shipped folder `name` (one of FOLDERS)."""
    return ROOT / name if CHECKOUT else ROOT / "bench" / "shipped" / name


def by_name(name_or_path: str | Path, folder: Path, suffix: str = "") -> Path:
    """`name_or_path` as given, or, for a bare name that is nothing here, the shipped file or folder
    of that name in `folder` (`cpu` for configs/cpu.yaml with suffix .yaml), where one exists: a
    user of an installed package has no paths to the shipped files. A local one of the name wins."""
    path = Path(name_or_path)
    shipped = Path(folder) / f"{path.name}{suffix}"
    return shipped if not path.exists() and len(path.parts) == 1 and shipped.exists() else path


def no_such_config(path: Path, folder: Path, suffix: str = ".yaml") -> str:
    """The one-line message for a config that is neither a file here nor a shipped name in `folder`."""
    names = ", ".join(sorted(p.stem for p in Path(folder).glob(f"*{suffix}")))
    return f"{path}: no such config file (shipped, by name: {names})"


def cache_folder() -> Path:
    """Where solved truths are kept: $BENCH_CACHE; else datasets/cache in a checkout; else the
    user's cache folder, never inside an installed package (an uninstall would leave it behind)."""
    if os.environ.get("BENCH_CACHE"):
        return Path(os.environ["BENCH_CACHE"])
    if CHECKOUT:
        return ROOT / "datasets" / "cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "odebench-nsode"


def copy_into(package_root: Path, source: Path = ROOT) -> None:
    """Copy a checkout's shipped folders into `package_root`/bench/shipped: what setup.py does to
    the files a wheel is built from. A folder missing from `source` stops the build (a wheel built
    from a source distribution without MANIFEST.in's folders had no method and no dataset)."""
    for name, pattern in FOLDERS.items():
        files = sorted((Path(source) / name).glob(pattern))
        if not files:
            raise FileNotFoundError(f"{Path(source) / name}: no {pattern} to ship (MANIFEST.in must carry {name}/)")
        target = Path(package_root) / "bench" / "shipped" / name
        target.mkdir(parents=True, exist_ok=True)
        for file in files:
            shutil.copyfile(file, target / file.name)

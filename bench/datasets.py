"""Dataset files -> ground-truth trajectories.

A dataset is a JSON file under `datasets/` (or anywhere, given by path) listing equations with
their initial values; or a CSV file or folder of CSV files of observed trajectories (columns t
and y, or the two a sweep names; optional column `expression`; with a column that tells records
apart, several per file: `CsvReading`), for which the data are the only truth. Ground-truth
solutions are computed with LSODA on the protocol's grids and cached on disk, keyed by a hash
of everything they depend on.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.tasks import Trajectory
from odecore import protocol, shipped
from odecore.arguments import close_matches, is_finite_number, is_whole
from odecore.expressions import ExpressionError, complexity, parse
from odecore.solving import SolveError, is_valid_initial_value, solve_truth
from odecore.trajectories import TY, TrajectoryFileError, column_names, hinted, read_records, read_trajectory

DATASETS_DIR = shipped.folder("datasets")
CACHE_DIR = shipped.cache_folder()  # solved truths
FORMAT = "bench-dataset/1"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # a dataset name is also a cache file name


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class CsvReading:
    """How a sweep reads CSV trajectories: t and y from `columns`; with `by`, each file holds
    several records told apart by that column (wells, runs), each a trajectory of the file's law
    (its y0_index the record's place in the file, `record` its label). JSON datasets ignore it."""
    columns: tuple[str, str] = TY
    by: str | None = None

    def as_entry(self) -> dict:
        """What a result folder records of it beside each CSV file's digest (names as compared)."""
        entry = {"columns": list(column_names(self.columns))}
        return {**entry, "by": self.by.strip().lower()} if self.by else entry

    @classmethod
    def of_entry(cls, entry: dict) -> CsvReading:
        """The reading a digest entry records (t and y, one record a file, where it records none)."""
        return cls(tuple(entry.get("columns", TY)), entry.get("by"))


def builtin_names() -> list[str]:
    return sorted(p.stem for p in DATASETS_DIR.glob("*.json"))


GENERATED_LATER = ("large",)  # built-in datasets written by `python -m nsode.data large`, not shipped


def resolve(name_or_path: str) -> Path:
    """The file or folder behind a dataset argument: a built-in name or a path."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():  # '' would be the current folder
        raise DatasetError(f"dataset {name_or_path!r}: give a built-in name ({', '.join(builtin_names())}) or a path")
    path = Path(name_or_path)
    if path.exists():
        return path
    builtin = DATASETS_DIR / f"{name_or_path}.json"
    if builtin.exists():
        return builtin
    if name_or_path in GENERATED_LATER:
        raise DatasetError("dataset 'large' does not exist yet: generate it with `python -m nsode.data large`")
    if "/" in name_or_path or "\\" in name_or_path or path.suffix.lower() in (".json", ".csv"):  # meant as a path
        raise DatasetError(f"dataset {name_or_path}: no such file or folder")
    raise DatasetError(f"unknown dataset {name_or_path!r}{close_matches([name_or_path], builtin_names())}: "
                       f"use one of {', '.join(builtin_names())} or a path")


def is_csv(path: Path) -> bool:
    """Whether a resolved dataset argument holds CSV trajectories (a folder, or a .csv file)."""
    return path.is_dir() or path.suffix.lower() == ".csv"


def load(name_or_path: str, reading: CsvReading = CsvReading()) -> list[Trajectory]:
    """All ground-truth trajectories of a dataset (solving and caching them on first use); a CSV
    dataset is read as `reading` says (a JSON dataset has nothing to choose)."""
    path = resolve(name_or_path)
    csv = is_csv(path)
    spec = None if csv else read_spec(path)
    name = csv_name(path) if csv else spec["name"]
    builtin = DATASETS_DIR / f"{name}.json"
    if builtin.exists() and builtin.resolve() != path.resolve():  # its rows would mix with the built-in's
        raise DatasetError(f"{path}: the name {name!r} is a built-in dataset's; give yours another name")
    if csv:
        return load_csv(path, reading)
    try:
        return load_spec_trajectories(spec)
    except DatasetError as err:  # a truth that cannot be solved: name the file too
        raise DatasetError(f"{path}: {err}") from None


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark, as Windows editors write, is read
    except (OSError, ValueError) as err:  # ValueError: bad JSON or not UTF-8
        suffix = path.suffix.lower()
        hint = ("" if suffix == ".json" else "; a .csv file is one trajectory, not a JSON file of laws"
                if suffix == ".csv" else "; a CSV trajectory needs a .csv ending")
        raise DatasetError(f"{path}: not a readable JSON dataset file ({err}){hint}") from None


def read_spec(path: Path) -> dict:
    spec = _read_json(Path(path))
    if not isinstance(spec, dict):
        raise DatasetError(f"{path}: expected a JSON object with \"format\": \"{FORMAT}\" "
                           f"(found a {type(spec).__name__})")
    if "format" not in spec:
        raise DatasetError(f"{path}: missing \"format\": \"{FORMAT}\"")
    if spec["format"] != FORMAT:
        raise DatasetError(f"{path}: unsupported format {spec['format']!r} (expected {FORMAT!r})")
    for key in ("name", "version", "equations"):
        if key not in spec:
            raise DatasetError(f"{path}: missing field {key!r}")
    if not isinstance(spec["name"], str) or not NAME.fullmatch(spec["name"]):
        raise DatasetError(f"{path}: 'name' must be a short word of letters, digits, '-', '_' or '.'")
    version = spec["version"]
    if isinstance(version, bool) or not isinstance(version, (str, int, float)) or version == "":
        raise DatasetError(f"{path}: 'version' must be text or a number, such as \"1\"")
    if not isinstance(spec["equations"], list) or not spec["equations"]:
        raise DatasetError(f"{path}: 'equations' must be a non-empty list of equations")
    seen = set()
    for i, eq in enumerate(spec["equations"]):
        if not isinstance(eq, dict) or "id" not in eq or "expression" not in eq:
            raise DatasetError(f"{path}: equation {i} needs an 'id' and an 'expression'")
        if not isinstance(eq["id"], (str, int)) or isinstance(eq["id"], bool):
            raise DatasetError(f"{path}: equation {i}: 'id' must be a string or an integer")
        eq["id"] = str(eq["id"])  # rows and file names key by text: 1 and "1" are one id
        if not eq["id"] or eq["id"] != eq["id"].strip() or "/" in eq["id"]:
            raise DatasetError(f"{path}: equation {i}: 'id' {eq['id']!r} must be non-empty, without '/' "
                               "or spaces around it (tasks are named dataset/id/y0)")
        where = f"{path}: equation {eq['id']!r}"
        if eq["id"] in seen:
            raise DatasetError(f"{where} appears twice (ids are compared as text: 1 and \"1\" are one id)")
        seen.add(eq["id"])
        if not isinstance(eq["expression"], str):
            raise DatasetError(f"{where}: 'expression' must be a string such as \"-0.5*y\"")
        try:
            parse(eq["expression"])
        except ExpressionError as err:
            raise DatasetError(f"{where}: {err}") from None
        y0 = eq.get("y0")
        if not isinstance(y0, list) or not y0 or not all(is_finite_number(v) for v in y0):
            raise DatasetError(f"{where}: 'y0' must be a non-empty list of finite numbers")
    return spec


def data_files(name_or_path: str) -> dict[str, Path]:
    """{what its rows are keyed by: the file} ("name" for a JSON dataset, a built-in one too: a
    regenerated large.json is other data; "name/stem" for each CSV file)."""
    path = resolve(name_or_path)
    if is_csv(path):
        return {f"{csv_name(path)}/{f.stem}": f for f in csv_files(path)}
    return {read_spec(path)["name"]: path}


def load_spec_trajectories(spec: dict) -> list[Trajectory]:
    t, t_extra = protocol.interpolation_grid(), protocol.extrapolation_grid()
    cached = _cached_solutions(spec)
    out = []
    for eq in spec["equations"]:
        expr = parse(eq["expression"])
        for i, y0 in enumerate(eq["y0"]):
            y, y_extra = cached[(eq["id"], i)]
            out.append(Trajectory(
                dataset=spec["name"], equation_id=eq["id"], y0_index=i, expression=eq["expression"],
                y0=float(y0), t=t, y=y, t_extra=t_extra, y_extra=y_extra,
                complexity=complexity(expr)))
    return out


RESIDUALS = ("absolute", "relative")  # how a drawn start's FD residual is judged (the "y0_draw" rule's "residual")


def draw_initial_values(expression: str, count: int, low: float, high: float, seed: int,
                        max_draws: int = 10_000, residual: str = "absolute") -> tuple[list[float], list[float]]:
    """`count` valid y0 ~ U(low, high); halves the range after `max_draws` draws with too few.
    `residual` "relative" judges each start's FD residual in units of y (odecore.solving), for laws
    in large units; "absolute" is the rule Classic's starts were drawn with.

    Returns the values and the range they were drawn from.
    """
    rng = np.random.default_rng([seed, zlib.crc32(expression.encode())])
    while True:
        found = []
        for _ in range(max_draws):
            y0 = float(rng.uniform(low, high))
            if is_valid_initial_value(expression, y0, relative=residual == "relative"):
                found.append(y0)
                if len(found) == count:
                    return found, [low, high]
        if high - low < 1e-6:
            raise DatasetError(f"no {count} valid initial values for {expression!r}")
        low, high = low / 2, high / 2


SHOWN_PROBLEMS = 5  # a folder's unreadable files named in its one-line error


def load_csv(path: Path, reading: CsvReading = CsvReading()) -> list[Trajectory]:
    """Trajectories from a CSV file or a folder of CSV files, read as `reading` says (optional
    column `expression`, the law, where each file is one trajectory)."""
    files = csv_files(path)
    if not files:
        raise DatasetError(f"{path}: no .csv files in this folder")
    out, problems = [], []
    for file in files:  # every file's problem at once, not one per attempt
        try:
            out += (_read_csv_records(file, csv_name(path), reading) if reading.by
                    else [_read_csv_trajectory(file, csv_name(path), reading.columns)])
        except DatasetError as err:
            problems.append(str(err))
    if len(problems) == 1:
        raise DatasetError(problems[0])
    if problems:
        more = f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
        raise DatasetError(f"{path}: {len(problems)} of {len(files)} files cannot be read: "
                           + "; ".join(problems[:SHOWN_PROBLEMS]) + more)
    return out


def csv_name(path: Path) -> str:
    """A CSV dataset's name: its folder's whole name (`runs.v2`), or its file's name without `.csv`."""
    path = Path(path)
    return path.name if path.is_dir() else path.stem


def csv_files(path: Path) -> list[Path]:
    """The trajectories of a CSV dataset: the file, or a folder's `.csv` files (any case), sorted;
    rows are keyed by the file's stem, so two files with one stem (a.csv, a.CSV) are refused."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix.lower() == ".csv")
    twice = sorted(stem for stem, count in Counter(f.stem for f in files).items() if count > 1)
    if twice:
        raise DatasetError(f"{path}: {len(twice)} name(s) used by two files, such as {twice[0]!r} "
                           f"({', '.join(f.name for f in files if f.stem == twice[0])}): rename one")
    return files


def _read_csv_trajectory(file: Path, dataset: str, columns: tuple[str, str]) -> Trajectory:
    try:
        data = read_trajectory(file, sort=False, columns=columns)
    except TrajectoryFileError as err:
        raise DatasetError(hinted(str(err))) from None
    empty = np.empty(0)
    return Trajectory(dataset=dataset, equation_id=file.stem, y0_index=0, expression=data.expression,
                      y0=float(data.y[0]), t=data.t, y=data.y, t_extra=empty, y_extra=empty, has_truth=False,
                      complexity=complexity(parse(data.expression)) if data.expression else None)


def _read_csv_records(file: Path, dataset: str, reading: CsvReading) -> list[Trajectory]:
    """Each record of a file that holds several (`reading.by`), a trajectory of the file's law."""
    try:
        records = read_records(file, reading.by, sort=False, columns=reading.columns, min_records=1)
    except TrajectoryFileError as err:
        raise DatasetError(hinted(str(err), by=True)) from None
    empty = np.empty(0)
    return [Trajectory(dataset=dataset, equation_id=file.stem, y0_index=i, expression=None, y0=float(data.y[0]),
                       t=data.t, y=data.y, t_extra=empty, y_extra=empty, has_truth=False, record=label)
            for i, (label, data) in enumerate(records.items())]


def _cached_solutions(spec: dict) -> dict:
    """{(equation id, y0 index): (y on [0, T], y on [T, T_extra])}, from the cache or solved now."""
    items = [(eq["id"], i, eq["expression"], float(y0))
             for eq in spec["equations"] for i, y0 in enumerate(eq["y0"])]
    # everything a solution depends on: the solver and its settings, the grids, the equations
    digest = hashlib.sha256(json.dumps([protocol.SOLVER_SETTINGS, items], sort_keys=True).encode()).hexdigest()[:16]
    file = CACHE_DIR / f"{spec['name']}-{digest}.npz"
    if file.exists():
        with np.load(file, allow_pickle=False) as data:
            y, y_extra = data["y"], data["y_extra"]
    else:
        y = np.empty((len(items), protocol.GRID))
        y_extra = np.empty_like(y)
        failures = []
        for k, (eq_id, _, expression, y0) in enumerate(items):
            try:
                y[k], y_extra[k] = solve_truth(expression, y0)
            except SolveError as err:
                failures.append(f"equation {eq_id!r}, y0={y0}: {err}")
        if failures:  # every one named at once: the user fixes them in one go
            more = f" ({len(failures)} cannot be solved)" if len(failures) > 1 else ""
            raise DatasetError(f"dataset {spec['name']!r}{more}: " + "; ".join(failures))
        _store(file, y, y_extra)
    return {(eq_id, i): (y[k], y_extra[k]) for k, (eq_id, i, _, _) in enumerate(items)}


def _store(file: Path, y: np.ndarray, y_extra: np.ndarray) -> None:
    """Keep solved truths for the next run; a read-only install only loses the speed-up."""
    tmp = file.with_suffix(f".{os.getpid()}.tmp.npz")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, y=y, y_extra=y_extra)
        os.replace(tmp, file)
    except OSError as err:
        if tmp.is_file():
            tmp.unlink()
        warnings.warn(f"solved trajectories not cached ({err.strerror or err}: {file.parent}); "
                      f"set BENCH_CACHE to a writable folder to keep them", stacklevel=3)


def _check_y0_rule(path: Path, rule) -> None:
    """One line for a "y0_draw" rule that cannot draw (a count of 0 would search for ever)."""
    if not isinstance(rule, dict):
        raise DatasetError(f"{path}: \"y0_draw\" must be an object such as {{\"count\": 3, \"low\": 0.1, "
                           f"\"high\": 5, \"seed\": 0}} (found {rule!r})")
    missing = [key for key in ("count", "low", "high", "seed") if key not in rule]
    if missing:
        raise DatasetError(f"{path}: the \"y0_draw\" rule needs {', '.join(missing)} "
                           "(and may give max_draws, default 10000, and residual, default absolute)")
    if rule.get("residual", "absolute") not in RESIDUALS:
        raise DatasetError(f"{path}: \"y0_draw\" residual must be one of {', '.join(RESIDUALS)} "
                           f"(found {rule['residual']!r})")
    for key, low in (("count", 1), ("seed", 0), ("max_draws", 1)):
        if key in rule and not is_whole(rule[key], low):
            raise DatasetError(f"{path}: \"y0_draw\" {key} must be a whole number >= {low} (found {rule[key]!r})")
    if not (is_finite_number(rule["low"]) and is_finite_number(rule["high"]) and rule["low"] < rule["high"]):
        raise DatasetError(f"{path}: \"y0_draw\" low and high must be numbers with low < high "
                           f"(found {rule['low']!r}, {rule['high']!r})")


def fill_initial_values(path: Path, progress=None) -> int:
    """Draw and store y0 for every equation of a dataset file that has none yet (see "y0_draw").

    Returns the number of equations filled. The file is rewritten atomically after each one, so
    an interrupted run keeps its progress.
    """
    path = Path(path)
    spec = _read_json(path)
    rule = spec.get("y0_draw") if isinstance(spec, dict) else None
    if not rule:
        raise DatasetError(f"{path}: no \"y0_draw\" rule to draw initial values with")
    _check_y0_rule(path, rule)
    equations = spec.get("equations")
    if not isinstance(equations, list) or not all(isinstance(eq, dict) and isinstance(eq.get("expression"), str)
                                                   for eq in equations):
        raise DatasetError(f"{path}: \"equations\" must be a list of objects, each with an \"expression\"")
    todo = [eq for eq in equations if not eq.get("y0")]
    for eq in todo:  # every law read before the first draw
        try:
            parse(eq["expression"])
        except ExpressionError as err:
            raise DatasetError(f"{path}: equation {eq.get('id')!r}: {err}") from None
    for eq in progress(todo) if progress else todo:
        eq["y0"], eq["y0_range"] = draw_initial_values(
            eq["expression"], rule["count"], rule["low"], rule["high"], rule["seed"], rule.get("max_draws", 10_000),
            rule.get("residual", "absolute"))
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(spec, indent=1) + "\n")
        os.replace(tmp, path)
    return len(todo)

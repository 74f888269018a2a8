"""The one reader of trajectory files: a CSV with columns t and y (and optionally `expression`,
the true f), for `bench run --dataset FILE.csv` and `nsode predict FILE.csv` alike.

Both callers get the same checks and messages; the only difference is a parameter: `sort=True`
(`nsode predict`) orders rows by time, `sort=False` (the harness, whose tasks must be exactly
the file) refuses unsorted times.
"""
from __future__ import annotations

import datetime
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from odecore import protocol
from odecore.arguments import is_whole
from odecore.expressions import ExpressionError, parse


class TrajectoryFileError(ValueError):
    """A trajectory file that cannot be used; the message names the file and what to fix."""


@dataclass(frozen=True)
class TrajectoryFile:
    t: np.ndarray
    y: np.ndarray
    expression: str | None = None  # the true f(y), when the file has an `expression` column
    columns: tuple[str, str] = ("t", "y")  # t's and y's columns as the file spells them (`Hours`, `OD600`)


TY = ("t", "y")  # the columns a trajectory file names, unless its reader is told others


def read_trajectory(path: str | Path, *, sort: bool = False, min_points: int = protocol.MIN_POINTS,
                    law: bool = True, columns: tuple[str, str] = TY) -> TrajectoryFile:
    """t and y of a CSV file, checked: numbers only, finite, at least `min_points` rows, no
    duplicate times, increasing times (or sorted, with `sort`), and with `law` the `expression`
    column's law. Without `law` (a user's own record) that column is one more column, ignored:
    a gene-expression reading is not a law. `columns` names the columns read as t and y (a
    user's file says `hours,OD600`; names are read without case or spaces). Raises
    TrajectoryFileError."""
    path = Path(path)
    frame, t, y, spelled = _columns(path, columns)
    return _checked_file(path, t, y, sort, min_points, _expression(path, frame) if law else None, spelled)


def read_records(path: str | Path, by: str, *, sort: bool = True, min_points: int = protocol.MIN_POINTS,
                 columns: tuple[str, str] = TY, min_records: int = 2) -> dict[str, TrajectoryFile]:
    """The records of one CSV file that holds several, told apart by column `by` (a run, an
    experiment): {its value: that record's t and y}, in the order the file first names them, each
    checked as a file of its own (`read_trajectory`, `columns` as there); `min_records` or more are
    needed (two to read one law from several). Raises TrajectoryFileError."""
    path = Path(path)
    frame, t, y, spelled = _columns(path, columns)
    return _records(path, frame, t, y, by, sort, min_points, column_names(columns), min_records, spelled)


def hinted(message: str, by: bool = False) -> str:
    """A reader's error with the command-line option that fixes it, where one does (`nsode predict`
    and `bench run` both name them `--columns` and `--by`; `by`: the file was already read by a column,
    so a duplicate time is within one record and `--by` is no fix)."""
    if "duplicate time" in message and not by:
        return message + " (several runs in one file? --by COLUMN reads each run apart)"
    if "needs a first line naming columns" in message:
        return message + "; or name the file's own: --columns TIME VALUE"
    return message


def column_names(columns: tuple[str, str]) -> tuple[str, str]:
    """The names of t's and y's columns as the reader compares them: without case or spaces."""
    return tuple(name.strip().lower() for name in columns)


def _columns(path: Path, columns: tuple[str, str]):
    """(the file's columns as read, its t, its y, t's and y's column names as the file spells them):
    every check of `read_trajectory` but the trajectory's own (`check_trajectory`)."""
    import pandas as pd

    columns = column_names(columns)
    if len(set(columns)) < 2 or not all(columns):
        raise TrajectoryFileError(f"{path}: t and y need two different, named columns (given {columns[0]!r} and "
                                  f"{columns[1]!r})")

    path = Path(path)
    if path.is_dir():
        raise TrajectoryFileError(f"{path}: is a folder; give a CSV file")
    if not path.exists():
        raise TrajectoryFileError(f"{path}: no such file")
    if not path.is_file():
        raise TrajectoryFileError(f"{path}: not a regular file; give a CSV file")
    if _binary(path):
        raise TrajectoryFileError(f"{path}: not a text CSV file (binary or compressed?); give a plain CSV file")
    skip, names, header = _comment_lines(path, columns)
    separator = next((mark for mark in (";", "\t", "|") if mark in header and "," not in header), None)
    if names is None and separator:
        shown = {"\t": "tabs"}.get(separator, repr(separator))
        raise TrajectoryFileError(f"{path}: the header {_shown(header)} separates its columns with {shown}; "
                                  f"write them comma-separated ({columns[0]},{columns[1]}), with a decimal point")
    raw = [name.strip().lower() for name in (names or header.split(","))]
    twice = sorted({c for c in columns if raw.count(c) > 1})  # before pandas renames the second y.1
    if twice:
        raise TrajectoryFileError(f"{path}: more than one column is named {' and '.join(twice)} "
                                  "(names are read without case or spaces); keep one")
    try:
        with warnings.catch_warnings():  # more values in a row than names in the header
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, index_col=False, skiprows=skip,  # never a column taken silently as the index
                                dtype=_text_columns(names or header.split(",")),
                                **({"header": None, "names": names} if names else {}))
    except pd.errors.ParserWarning:
        raise TrajectoryFileError(f"{path}: some rows have more values than the header has names") from None
    except pd.errors.EmptyDataError:
        raise TrajectoryFileError(f"{path}: the file is empty; write a header line t,y and one row per point") from None
    except UnicodeDecodeError:
        raise TrajectoryFileError(f"{path}: not UTF-8 text; save the file as UTF-8 (or plain ASCII)") from None
    except pd.errors.ParserError as err:  # pandas names the line: "Expected 2 fields in line 11, saw 3"
        line = re.search(r"line (\d+), saw (\d+)", str(err))
        where = f"line {line[1]} has {line[2]} values" if line else "some rows have more values"
        raise TrajectoryFileError(f"{path}: {where}, more than the header has names") from None
    except Exception as err:
        raise TrajectoryFileError(f"{path}: not a readable CSV file ({type(err).__name__})") from None
    as_named = [str(c).strip() for c in frame.columns]  # for messages; compared without case
    frame.columns = [name.lower() for name in as_named]
    if not set(columns) <= set(frame.columns):
        found = ", ".join(map(repr, as_named)) or "none"
        if as_named and all(_is_number(name) for name in as_named):
            raise TrajectoryFileError(f"{path}: the header line holds numbers ({found}), not column names; "
                                      f"add a line {columns[0]},{columns[1]} above the data")
        raise TrajectoryFileError(f"{path}: needs a first line naming columns {columns[0]} and {columns[1]}, "
                                  f"comma-separated (found {found})")
    if frame.empty:
        raise TrajectoryFileError(f"{path}: no data below the header; write one row per point")
    twice = sorted({c for c in columns if list(frame.columns).count(c) > 1})
    if twice:
        raise TrajectoryFileError(f"{path}: more than one column is named {' and '.join(twice)} "
                                  "(names are read without case or spaces); keep one")
    t, y = _numbers(path, frame, columns[0]), _numbers(path, frame, columns[1])
    missing = ~(np.isfinite(t) & np.isfinite(y))
    if missing.any():  # named here, where rows are still the file's
        raise TrajectoryFileError(f"{path}: {int(missing.sum())} row{'' if missing.sum() == 1 else 's'} with an "
                                  f"empty, NaN or infinite t or y (the first is row {int(np.argmax(missing)) + 1} "
                                  "below the header); remove those points")
    return frame, t, y, tuple(as_named[frame.columns.get_loc(name)] for name in columns)


def _records(path: Path, frame, t: np.ndarray, y: np.ndarray, by: str, sort: bool,
             min_points: int, columns: tuple[str, str], min_records: int,
             spelled: tuple[str, str]) -> dict[str, TrajectoryFile]:
    column = by.strip().lower()
    if column in columns:
        raise TrajectoryFileError(f"{path}: column {by!r} holds the {'times' if column == columns[0] else 'values'}; "
                                  "name the column that tells the records apart (a well, a run)")
    if column not in frame.columns:
        found = (", ".join(repr(c) for c in frame.columns if c not in columns)
                 or f"none besides {columns[0]} and {columns[1]}")
        raise TrajectoryFileError(f"{path}: no column {by!r} tells its records apart (other columns: {found})")
    labels = frame[column]
    if labels.isna().any():
        raise TrajectoryFileError(f"{path}: row {int(np.argmax(labels.isna().to_numpy())) + 1} below the header has "
                                  f"no {column}; give every row its record")
    labels = labels.astype(str).str.strip().to_numpy()
    unnamed = [i for i, label in enumerate(labels) if not label or not label.isprintable()]
    if unnamed:
        raise TrajectoryFileError(f"{path}: row {unnamed[0] + 1} below the header has {column} {labels[unnamed[0]]!r}: "
                                  "name each record with printable text on one line")
    names = list(dict.fromkeys(labels))
    if len(names) < min_records:
        raise TrajectoryFileError(f"{path}: column {column} names one record ({names[0]!r}); give two or more")
    return {name: _checked_file(path, t[labels == name], y[labels == name], sort, min_points, None, spelled,
                                where=f"{column} {name}: ") for name in names}


def _checked_file(path: Path, t: np.ndarray, y: np.ndarray, sort: bool, min_points: int, expression: str | None,
                  spelled: tuple[str, str], where: str = "") -> TrajectoryFile:
    if sort:
        order = np.argsort(t, kind="stable")
        t, y = t[order], y[order]
    try:
        check_trajectory(t, y, min_points)
    except ValueError as err:
        raise TrajectoryFileError(f"{path}: {where}{err}") from None
    return TrajectoryFile(t, y, expression, spelled)


def _numbers(path: Path, frame, name: str) -> np.ndarray:
    """Column `name` as floats (empty cells NaN); a cell that is not a number is named with its row
    and, for the usual causes (a decimal comma, a date, a units row), the fix."""
    import pandas as pd

    column = frame[name]
    values = pd.to_numeric(column, errors="coerce")
    bad = (values.isna() & column.notna()).to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        cell = str(column.iloc[row]).strip()
        raise TrajectoryFileError(f"{path}: column {name} holds {_shown(cell, 30)} in row {row + 1} below the header, "
                                  f"not a number{_cell_hint(cell)}")
    return values.to_numpy(float)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _cell_hint(cell: str) -> str:
    """The likely fix for a cell that is not a number."""
    if re.fullmatch(r"[-+]?\d*,\d+", cell):
        return "; write decimals with a point (1.5, not 1,5)"
    if re.search(r"\d[-/.]\d{1,2}[-/.]\d|\d:\d\d", cell):
        return "; convert dates and clock times to numbers in a unit you choose (such as hours since the first)"
    if re.search(r"[A-DF-Za-df-z]", cell):
        return "; only numbers may follow the header (units and notes go in lines starting with #, before it)"
    return ""


def _binary(path: Path) -> bool:
    """Whether the file's start holds a NUL byte, as binary and compressed files do and text never does."""
    try:
        with open(path, "rb") as handle:
            return b"\0" in handle.read(4096)
    except OSError:
        return False


def _shown(text: str, limit: int = 60) -> str:
    """A line quoted for a message, cut to `limit` characters."""
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _comment_lines(path: Path, columns: tuple[str, str]) -> tuple[int, list[str] | None, str]:
    """(lines to skip, header names or None, the first line after them). Lines starting with #
    before the header are skipped; when the last of them names the `columns` and the next line
    does not (numpy.savetxt writes `# t,y`), it is the header."""
    skip, last = 0, None
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as lines:
            for line in lines:
                if not line.lstrip().startswith("#"):
                    following = line
                    break
                skip, last = skip + 1, line
            else:
                following = ""
    except OSError:
        return 0, None, ""
    def named(text: str) -> list[str]:
        return [part.strip() for part in text.split(",")]
    if last is not None:
        header = named(last.lstrip().lstrip("#"))
        if set(columns) <= {h.lower() for h in header} and not set(columns) <= {h.lower() for h in named(following)}:
            return skip, header, following
    return skip, None, following


MAX_SIZE = 1e100  # larger or (unless zero) smaller |y| is refused: its squares overflow or underflow


def observed(t, y, min_points: int = protocol.MIN_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Fresh float copies of t and y (the caller's arrays stay theirs; a column (n, 1), such as a
    one-column DataFrame, is read as its n values), checked by `check_trajectory`. ValueError for
    dates, durations, booleans, complex numbers or masked values, whose conversion to floats would
    pick a unit (microseconds since 1970), drop a part or read a placeholder without a word."""
    arrays = []
    for name, values in (("t", t), ("y", y)):
        if np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any():
            raise ValueError(f"{name} has {int(np.ma.getmaskarray(values).sum())} masked values; remove those points")
        raw = np.asarray(values)
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        if raw.dtype.kind in "mM" or (raw.dtype.kind == "O" and any(
                isinstance(v, (datetime.date, datetime.timedelta)) for v in raw.ravel())):
            raise ValueError(f"{name} holds dates or durations: convert them to numbers in a unit you choose "
                             "(such as hours since the first)")
        if raw.dtype.kind in "bc":
            raise ValueError(f"{name} holds {'booleans' if raw.dtype.kind == 'b' else 'complex numbers'}, "
                             "not real numbers")
        try:
            arrays.append(np.array(raw, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"{name} holds values that are not numbers") from None
    check_trajectory(arrays[0], arrays[1], min_points)
    return arrays[0], arrays[1]


def check_trajectory(t: np.ndarray, y: np.ndarray, min_points: int = protocol.MIN_POINTS) -> None:
    """The rules every observed trajectory obeys, from a file or from code: 1-D t and y of equal
    length, at least `min_points` points, all finite, strictly increasing times, y neither
    beyond 1e100 nor all below 1e-100 in size (unless all zero), times spanning 1e-100 to 1e100. ValueError
    whose one-line message names the problem and the fix."""
    if not is_whole(min_points, 2):
        raise ValueError(f"min_points={min_points!r}: must be a whole number of at least 2")
    if t.ndim != 1 or y.ndim != 1 or t.shape != y.shape:
        raise ValueError(f"t and y must be 1-D arrays of equal length (got {t.shape} and {y.shape})")
    if len(t) < min_points:
        raise ValueError(f"only {len(t)} point{'' if len(t) == 1 else 's'}; at least {min_points} are needed")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        bad = int(np.sum(~np.isfinite(t)) + np.sum(~np.isfinite(y)))
        raise ValueError(f"{bad} empty, NaN or infinite values in t or y; remove those points")
    size = float(np.max(np.abs(y)))
    if size > MAX_SIZE or 0 < size < 1 / MAX_SIZE:  # squares and variances over- or underflow
        raise ValueError(f"the largest |y| is {size:.3g}, outside [1e-100, 1e100]; rescale y (change its unit)")
    times, counts = np.unique(t, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"duplicate time {float(times[counts > 1][0]):.15g}; keep one point per time")
    if np.any(np.diff(t) < 0):
        raise ValueError("times are not sorted in increasing order; sort the points by t")
    span = float(t[-1] - t[0])
    if not 1 / MAX_SIZE <= span <= MAX_SIZE:  # a solver's steps over- or underflow
        raise ValueError(f"the times span {span:.3g}, outside [1e-100, 1e100]; rescale t (change its unit)")


def largest_reversal(y) -> float:
    """How far the record rises and then falls back, or falls and then rises back: 0 for a
    monotone record. A solution of a scalar autonomous ODE y' = f(y) never turns, so a reversal
    well beyond the noise says that no such law can reproduce the record."""
    y = np.asarray(y, float)
    low = np.maximum(np.minimum.accumulate(y), np.minimum.accumulate(y[::-1])[::-1])  # lowest before and after
    high = np.minimum(np.maximum.accumulate(y), np.maximum.accumulate(y[::-1])[::-1])
    return float(max(np.max(y - low), np.max(high - y)))


def _text_columns(names: list[str]) -> dict[str, type]:
    """The expression column is read as text: a constant law such as `1` is not a number."""
    names = [name.rstrip("\r\n") for name in names]
    return {key: str for name in names if name.strip().lower() == "expression" for key in (name, name.strip())}


def _expression(path: Path, frame) -> str | None:
    """The law of the optional expression column: its non-empty cells must agree."""
    if "expression" not in frame.columns:
        return None
    laws = list(dict.fromkeys(v.strip() for v in frame["expression"] if isinstance(v, str) and v.strip()))
    if not laws:
        return None
    if len(laws) > 1:
        shown = ", ".join(map(repr, laws[:2])) + (", ..." if len(laws) > 2 else "")
        raise TrajectoryFileError(f"{path}: column 'expression' holds {len(laws)} different laws ({shown}); "
                                  "one trajectory has one law")
    try:
        parse(laws[0])
    except ExpressionError as err:
        raise TrajectoryFileError(f"{path}: column 'expression': {err}") from None
    return laws[0]

"""Argument types shared by the command lines (`python -m bench`, `python -m nsode`): a bad
number is refused by argparse in one line that names the option. Also how the commands exit
(`run_command`), list options that add up when repeated (`Repeatable`) and the check of a count
given from Python (`is_whole`)."""
from __future__ import annotations

import argparse
import importlib
import math
import numbers
import sys
from pathlib import Path
from typing import Callable, NoReturn


def run_command(main: Callable[[], int] | str) -> NoReturn:
    """Exit with `main()`'s status (`python -m bench`, `python -m nsode` and their installed
    scripts); output piped into `head` and the like stops quietly, not with a traceback. Named as
    "module:function", `main` is imported here, so that Ctrl-C while its libraries load (torch,
    sympy: seconds) stops the command with one line too."""
    try:
        if isinstance(main, str):
            module, _, name = main.partition(":")
            main = getattr(importlib.import_module(module), name)
        sys.exit(main())
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)
    except KeyboardInterrupt:  # one the command did not answer itself
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def is_whole(value, low: int) -> bool:
    """A whole number (not a flag) >= low: a count given from Python rather than typed."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low  # numpy's too


def is_finite_number(value) -> bool:
    """A finite real number (not a flag): a level or a limit given from Python or read from JSON."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)  # numpy's too


def is_noise_level(value) -> bool:
    """A multiplicative noise level sigma in [0, 1) (`relative_noise`), given from Python or read from JSON."""
    return is_finite_number(value) and 0 <= value < 1


def close_matches(unknown: list[str], known) -> str:
    """" (did you mean ...?)" for names typed with a slip, else ""."""
    import difflib

    guesses = [match for name in unknown for match in difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)]
    return f" (did you mean {', '.join(dict.fromkeys(guesses))}?)" if guesses else ""


class Repeatable(argparse.Action):
    """A list option that may be given more than once, each time adding to it (`--noise 0
    --noise 0.01` is both levels, as `--noise 0 0.01` is); its default stands until the option is
    given. (argparse's own `extend` adds to the default, and `store` keeps only the last.)"""

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        kept = [] if before is None or before is self.default else list(before)
        setattr(namespace, self.dest, kept + list(values))


def nonnegative_number(text: str) -> float:
    """An argparse type: a finite number >= 0 (a noise level, a criterion cost)."""
    return _finite(text, lambda v: v >= 0, ">= 0")


def relative_noise(text: str) -> float:
    """An argparse type: a multiplicative noise level sigma in [0, 1), y (1 + sigma eps). At 1 or
    more the noise flips the sign of y at every other point or so: a user who typed 2 meant 2%."""
    try:
        return _finite(text, is_noise_level, "in [0, 1)")
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{err}: a relative standard deviation, 0.01 for 1%") from None


def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 (a time or memory limit)."""
    return _finite(text, lambda v: v > 0, "> 0")


def _finite(text: str, accept, bound: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and accept(value)):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number {bound}")
    return value


def share(text: str) -> float:
    """An argparse type: a number in [0, 1] (a fraction of examples)."""
    return _finite(text, lambda v: 0 <= v <= 1, "in [0, 1]")


def probability_below_one(text: str) -> float:
    """An argparse type: a number in [0, 1) (a dropout probability)."""
    return _finite(text, lambda v: 0 <= v < 1, "in [0, 1)")


def whole_number(low: int, high: int | None = None):
    """An argparse type: a whole number >= low (and <= high when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} must be at least {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value} must be at most {high}")
        return value
    return parse


def output_path(text: str) -> str:
    """An argparse type: where to write, not empty (an empty --out would write into the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: name a file or folder")
    return text


def existing_file(text: str) -> Path:
    """An argparse type: a file that exists (a table to read)."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return path


def existing_folder(text: str) -> Path:
    """An argparse type: a folder that exists (results or a run to read)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return path

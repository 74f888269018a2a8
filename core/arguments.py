"""Argument types shared by the command lines (`python -m bench`, `python -m nsode`): a bad
number is refused by argparse in one line that names the option."""
from __future__ import annotations

import argparse


def whole_number(low: int):
    """An argparse type: a whole number >= low."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {low}")
        return value
    return parse

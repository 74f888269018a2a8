"""The shared command-line argument types (odecore.arguments)."""
import argparse

import pytest

from odecore.arguments import is_noise_level, relative_noise


def test_a_relative_noise_level_of_one_or_more_is_refused():
    """At sigma = 1 the noise y (1 + sigma eps) flips the sign of y at every sixth point or so: a
    user who typed 1 meant 1%."""
    assert relative_noise("0.99") == 0.99 and relative_noise("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="in \\[0, 1\\): a relative standard deviation, 0.01 for 1%"):
        relative_noise("1")
    assert is_noise_level(0.5) and not is_noise_level(1.0) and not is_noise_level(True)

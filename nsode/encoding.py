"""IEEE-754 encoding of observations: each (t_i, y_i) becomes 128 values in {0, 1}.

The paper feeds the 64 bits of the double of t_i and of y_i through one linear layer instead of
an embedding, so that values spanning many orders of magnitude (and NaN or inf) need no scaling.
Bits are ordered most significant first (sign, 11 exponent bits, 52 mantissa bits).
"""
from __future__ import annotations

import numpy as np

BITS_PER_FLOAT = 64
BITS_PER_OBSERVATION = 2 * BITS_PER_FLOAT

_SHIFTS = np.arange(BITS_PER_FLOAT - 1, -1, -1, dtype=np.uint64)


def float_bits(x: np.ndarray) -> np.ndarray:
    """The 64 bits (as uint8, most significant first) of each float64 in `x`; shape x.shape + (64,)."""
    words = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    return ((words[..., None] >> _SHIFTS) & np.uint64(1)).astype(np.uint8)


def bits_to_float(bits: np.ndarray) -> np.ndarray:
    """Inverse of `float_bits`: exact for every double, NaN payloads, infinities and -0.0 included."""
    bits = np.asarray(bits).astype(np.uint64)
    words = np.bitwise_or.reduce(bits << _SHIFTS, axis=-1)
    return np.asarray(words, dtype=np.uint64).view(np.float64)


def encode_observations(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float32 array (n, 128): bits of t_i then bits of y_i, ready for the model's input layer."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError(f"t and y must be 1-D arrays of equal length (got {t.shape} and {y.shape})")
    return np.concatenate([float_bits(t), float_bits(y)], axis=-1).astype(np.float32)

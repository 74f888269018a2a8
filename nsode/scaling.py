"""Scale-invariant model inputs: shift and scale a trajectory by powers of two, and rewrite an
expression between the user's units and the model's.

With tau = (t - t_0) / a and u = y / s, the ODE y' = f(y) becomes du/dtau = g(u) with
g(u) = (a / s) f(s u), and back: f(y) = (s / a) g(y / s). Both transforms are exact in sympy.

Why powers of two: the model reads the IEEE-754 bits of each value, and multiplying a double by
2^k changes only its exponent bits, exactly. So a trajectory and any copy scaled by powers of two
in time and value give bit-identical model inputs, and any other scale lands within a factor
sqrt(2) of the reference: max |u| in [4/sqrt(2), 4 sqrt(2)), time span in [T/sqrt(2), sqrt(2) T). The reference
value 4 is about max |y| of the paper's training trajectories (y0 ~ U(-5, 5)), so most of them
stay unscaled and the paper's constant range (-10..10) still fits their targets.
Training applies the same transform to every example (a = 1 for data on [0, T]), so a user's
trajectory on [0, 50] with y near 300, or near 0.01, reads like one on [0, 2] with y near 1.

The paper's input path (raw t and y) stays the default of a model; `input_scaling: "pow2"` in its
config selects this one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy

from odecore.expressions import Y
from nsode.checkpoint_files import INPUT_SCALINGS as MODES  # one list: the checkpoint check needs no sympy

REFERENCE_SPAN = 2.0  # T of the training data: the time span the model is used to
REFERENCE_VALUE = 4.0  # about max |y| of a training trajectory (y0 ~ U(-5, 5)): most stay unscaled
RAW_RANGE = 3  # powers of two of max |y| around REFERENCE_VALUE that raw-input training data span (94%)


def _power_of_two(x: float) -> int:
    """k with 2^k nearest to x on a log scale (0 for zero or non-finite x)."""
    return int(round(math.log2(x))) if x > 0 and math.isfinite(x) else 0


def raw_range_text() -> str:
    """The raw-input training range in words, for the notes that say data lie outside it."""
    low, high = REFERENCE_VALUE / 2**RAW_RANGE, REFERENCE_VALUE * 2**RAW_RANGE
    return f"t in [0, {REFERENCE_SPAN:g}] with the largest |y| between {low:g} and {high:g}"


def in_raw_range(t: np.ndarray, y: np.ndarray) -> bool:
    """Whether a trajectory looks like the paper family's training data, which a raw-input model
    (the paper's t and y) reads best: times within [0, 2] spanning most of it (a span within a
    factor sqrt 2 of 2), max |y| within 2^RAW_RANGE of 4 (94% of the family's solutions,
    measured on 2,381 of cpu-s2032)."""
    t = np.asarray(t, float)
    scale = Scale.of(t, y)
    inside = t[0] >= 0 and t[-1] <= REFERENCE_SPAN * (1 + 1e-9)
    return inside and scale.time_exp == 0 and abs(scale.value_exp) <= RAW_RANGE


@dataclass(frozen=True)
class Scale:
    """tau = (t - t0) / 2^time_exp, u = y / 2^value_exp."""

    t0: float = 0.0
    time_exp: int = 0
    value_exp: int = 0

    @classmethod
    def of(cls, t: np.ndarray, y: np.ndarray) -> "Scale":
        """The scale that brings an observed trajectory to the training data's range."""
        t = np.asarray(t, float)
        return cls(float(t[0]), _power_of_two((t[-1] - t[0]) / REFERENCE_SPAN),
                   _power_of_two(float(np.max(np.abs(y))) / REFERENCE_VALUE))

    def apply(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tau, u); exact: only the exponent bits change, apart from the shift by t0."""
        return ((np.asarray(t, float) - self.t0) * 2.0 ** -self.time_exp,
                np.asarray(y, float) * 2.0 ** -self.value_exp)

    def to_original(self, g: sympy.Expr) -> sympy.Expr:
        """f(y) = (s / a) g(y / s): a right-hand side found in model units, in the user's units."""
        return self.from_model_variable(g.xreplace({Y: self.model_variable()}))

    def model_variable(self) -> sympy.Expr:
        """u = y / s in the user's units: a model expression built with it in place of y is g(y / s),
        and `from_model_variable` completes it to f(y), in one construction instead of two."""
        return _times(-self.value_exp, Y)

    def from_model_variable(self, g_of_u: sympy.Expr) -> sympy.Expr:
        """f(y) = (s / a) g(y / s) from g(y / s) (built with `model_variable`)."""
        return _snap_units(_times(self.value_exp - self.time_exp, g_of_u))

    def to_model(self, f: sympy.Expr) -> sympy.Expr:
        """g(u) = (a / s) f(s u): a right-hand side in the user's units, in model units."""
        return _rescale(f, self.time_exp - self.value_exp, self.value_exp)


def _rescale(expr: sympy.Expr, outer_exp: int, inner_exp: int) -> sympy.Expr:
    """2^outer * expr(2^inner * y), with the powers of two as floats: a float times 2^k is exact,
    and sympy folds them into the constants (c*(4.0*y)**2 -> 16.0*c*y**2). Zero exponents leave
    the expression untouched, so no spurious 1.0 factor appears."""
    return _snap_units(_times(outer_exp, expr.xreplace({Y: _times(inner_exp, Y)})))


def _times(exponent: int, expr: sympy.Expr) -> sympy.Expr:
    """2^exponent * expr, the power of two as a float; expr itself for a zero exponent."""
    return sympy.Float(2.0 ** exponent) * expr if exponent else expr


def _snap_units(expr: sympy.Expr) -> sympy.Expr:
    """A factor that became +-1 up to rounding (sqrt(8.0) * 0.3535...) is dropped, not printed as 1.0."""
    ones = {c: sympy.Integer(int(round(float(c)))) for c in expr.atoms(sympy.Float)
            if abs(abs(float(c)) - 1.0) < 1e-12}
    return expr.xreplace(ones) if ones else expr

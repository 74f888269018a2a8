"""Numeric and structural helpers for sympy expressions of the single variable y.

Shared by the data generator and the benchmark harness so that every part of the project
evaluates an expression the same way: real arithmetic only, and a domain error (log or sqrt of
a negative number, a fractional power of a negative base, overflow) is an error, never a
silent complex number.
"""
from __future__ import annotations

import math

import numpy as np
import sympy
from sympy.printing.pycode import PythonCodePrinter
from sympy.printing.str import StrPrinter

Y = sympy.Symbol("y", real=True)


def real_pow(base: float, exponent: float) -> float:
    """`base ** exponent` on the reals; raises ValueError where the result would be complex."""
    if base < 0 and exponent != int(exponent):
        raise ValueError("fractional power of a negative number")
    return base**exponent


class _RealPrinter(PythonCodePrinter):
    """Prints powers as calls to `real_pow`, so that generated code never yields complex numbers."""

    def _print_Pow(self, expr, rational=False):
        base, exponent = expr.as_base_exp()
        if exponent == sympy.S.Half:
            return f"math.sqrt({self._print(base)})"
        if exponent.is_Integer:  # integer powers are real for every base: keep Python's fast path
            return f"({self._print(base)})**({self._print(exponent)})"
        return f"real_pow({self._print(base)}, {self._print(exponent)})"


class ExactPrinter(StrPrinter):
    """sympy's str printer with floats at full precision (Python's shortest round-trip repr),
    so printed expressions read back bit for bit."""

    def _print_Float(self, expr):
        return repr(float(expr))


def number(value: float) -> sympy.Number:
    """Integer for integral values (so 3 and 3.0 are one constant), else a 53-bit Float."""
    if float(value).is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(float(value))


def compile_scalar(expr: sympy.Expr):
    """A fast float -> float callable for `expr` (for ODE solvers, which call it one value at a time).

    Uses the `math` module: about 10x cheaper per call than numpy on 1-element arrays (see NOTES).
    """
    return sympy.lambdify(
        [Y], _with_y(expr), modules=[{"real_pow": real_pow, "math": math}, "math"], printer=_RealPrinter
    )


def compile_vector(expr: sympy.Expr):
    """A numpy callable for `expr` on arrays; out-of-domain points give nan (no warnings)."""
    fn = sympy.lambdify([Y], _with_y(expr), modules="numpy")

    def evaluate(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(y), dtype=float)
        return np.broadcast_to(out, y.shape).copy()

    return evaluate


def compile_parametrised(expr: sympy.Expr, params: list[sympy.Symbol]):
    """A numpy callable f(y, p) for `expr` in y and the symbols `params`; nan out of domain.

    `p` is a 2-D array with one row per parameter, broadcasting against `y`, so that one
    compiled function evaluates many ODEs of one skeleton (different constants) at once.
    """
    fn = sympy.lambdify([Y, *params], _with_y(expr), modules="numpy")

    def evaluate(y: np.ndarray, p: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(y, *p), dtype=float)
        return np.broadcast_to(out, np.broadcast_shapes(y.shape, out.shape)).copy()

    return evaluate


def complexity(expr: sympy.Expr) -> int:
    """The paper's complexity: the number of operators, variables and constants in the tree.

    Counted on sympy's canonical tree, with an n-ary sum or product counted as the n - 1 binary
    operators it stands for (so `y + y**2` is 5: +, y, pow, y, 2). Subtraction is sympy's
    Add(a, Mul(-1, b)), so `-1` counts as a constant, as in the paper's simplified expressions.
    """
    if expr.is_Atom:
        return 1
    args = expr.args
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        # an n-ary node stands for n - 1 binary operators
        return (len(args) - 1) + sum(complexity(a) for a in args)
    return 1 + sum(complexity(a) for a in args)


def free_symbol_names(expr: sympy.Expr) -> set[str]:
    return {s.name for s in expr.free_symbols}


def _with_y(expr: sympy.Expr) -> sympy.Expr:
    """Rename any symbol called y (whatever its assumptions) to the canonical real `Y`."""
    subs = {s: Y for s in expr.free_symbols if s.name == "y" and s != Y}
    return expr.xreplace(subs) if subs else expr



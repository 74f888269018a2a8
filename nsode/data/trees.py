"""Random expressions: a unary-binary tree drawn uniformly, then decorated (paper, Section 3.1).

Phase 1 draws the tree shape uniformly among all unary-binary trees with 1..K internal nodes,
with the counting method of Lample & Charton (2019, "Deep learning for symbolic mathematics",
appendix C). Growing trees node by node with fixed probabilities would over-represent small
trees; counting D(e, n), the number of trees with e empty slots and n operators still to place,
gives every shape the same probability. We write it ourselves because no maintained library
samples these trees. Phase 2 decorates: operators by their configured weights, a leaf is `y`
with probability p_sym, else a constant (integer or real, 50/50 by default).

A decorated tree is a prefix list: operator names, "y", and numbers (int for integer constants).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy

from nsode.data.config import BINARY_OPS, Config
from odecore.expressions import Y, number
from nsode.data.tokens import SYMPY_OPS

UNARY, BINARY, LEAF = 1, 2, 0


@lru_cache(maxsize=None)
def count_trees(empty: int, ops: int) -> int:
    """D(e, n): unary-binary trees filling `empty` slots with exactly `ops` operators.

    D(0, n) = 0 for n > 0, D(e, 0) = 1, D(e, n) = D(e-1, n) + D(e, n-1) + D(e+1, n-1)
    (the first slot is a leaf, a unary node, or a binary node).
    """
    if ops == 0:
        return 1
    if empty == 0:
        return 0
    return count_trees(empty - 1, ops) + count_trees(empty, ops - 1) + count_trees(empty + 1, ops - 1)


def size_distribution(max_ops: int) -> np.ndarray:
    """P(n internal nodes), n = 0..max_ops, for a tree uniform among those with 1..max_ops nodes."""
    counts = np.array([0] + [count_trees(1, n) for n in range(1, max_ops + 1)], dtype=float)
    return counts / counts.sum()


def sample_shape(n_ops: int, rng: np.random.Generator) -> list[int]:
    """Arities in prefix order of a tree drawn uniformly among trees with `n_ops` operators."""
    shape, empty = [], 1
    for remaining in range(n_ops, 0, -1):
        # P(skip k slots as leaves, then place an operator of arity a) = D(e - k - 1 + a, n - 1) / D(e, n)
        weights = [count_trees(empty - k - 1 + a, remaining - 1) for k in range(empty) for a in (UNARY, BINARY)]
        total = count_trees(empty, remaining)
        choice = int(rng.choice(len(weights), p=np.array(weights, float) / total))
        k, arity = divmod(choice, 2)
        arity = UNARY if arity == 0 else BINARY
        shape += [LEAF] * k + [arity]
        empty += arity - k - 1
    return shape + [LEAF] * empty


def sample_constant(rng: np.random.Generator, config: Config, sign: int = 0) -> int | float:
    """A constant from p_const; `sign` (+1 or -1) restricts it to that sign, as resampling requires."""
    if rng.random() < config.p_int:
        lo, hi = config.int_range
        lo, hi = (max(lo, 1), hi) if sign > 0 else (lo, min(hi, -1)) if sign < 0 else (lo, hi)
        count = hi - lo + 1 - (lo <= 0 <= hi)  # the non-zero integers of [lo, hi], never listed (the range may be wide)
        if count > 0:
            value = lo + int(rng.integers(count))
            return value + 1 if lo <= 0 <= value else value  # skip 0
    lo, hi = config.real_range
    if sign > 0 and hi > 0:
        lo = max(lo, 0.0)
    elif sign < 0 and lo < 0:
        hi = min(hi, 0.0)
    value = float(rng.uniform(lo, hi))
    if sign:  # a range wholly on the other side of 0 gives its magnitudes (uniform(0, -5) draws negatives)
        value = sign * abs(value)
    return value if value != 0.0 else sample_constant(rng, config, sign)


def sample_expression(rng: np.random.Generator, config: Config) -> list:
    """A decorated random tree in prefix order (operator names, "y", int/float constants)."""
    n_ops = int(rng.choice(config.max_ops + 1, p=size_distribution(config.max_ops)))
    binary, binary_p = list(config.binary_ops), list(config.binary_ops.values())
    unary, unary_p = list(config.unary_ops), list(config.unary_ops.values())
    out = []
    for arity in sample_shape(n_ops, rng):
        if arity == BINARY:
            out.append(binary[int(rng.choice(len(binary), p=binary_p))])
        elif arity == UNARY:
            out.append(unary[int(rng.choice(len(unary), p=unary_p))])
        else:
            out.append("y" if rng.random() < config.p_sym else sample_constant(rng, config))
    return out


class InvalidTree(ValueError):
    """The tree has no real finite value as an expression (e.g. log of a negative constant)."""


MAX_EXPONENT = 1e5  # larger numeric exponents of y-subtrees make sympy compute huge exact powers
_FLOAT_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: math.pow(a, b),
    "sin": math.sin, "cos": math.cos, "exp": math.exp, "sqrt": math.sqrt, "log": math.log,
}


def _number_as_float(value):
    """A y-subtree that sympy reduced to a number (y - y, 0*y) as a float, so that what is built on
    it takes the floating-point path: sympy would evaluate exp(exp(exp(12.5 + y - y))) with
    arbitrary-precision floats (hours for one tree) where math.exp overflows at once."""
    if not isinstance(value, sympy.Number):
        return value
    try:
        number = float(value)  # a huge Integer overflows; a huge Float or nan reads as inf or nan
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InvalidTree(f"constant subexpression {value} is not a finite real")
    return number


def to_sympy(prefix: list) -> sympy.Expr:
    """sympy expression of a decorated tree; raises InvalidTree.

    Subtrees without `y` are evaluated in floating point first: sympy would otherwise compute
    e.g. 10**(9**10) exactly (hours, gigabytes) or keep exp(3) symbolic as a second constant.
    For the same reason a power of a `y` subtree with an exponent beyond MAX_EXPONENT is
    refused: (y/9)**((-9)**10) makes sympy expand 9**3486784401.
    """
    pos = 0

    def build():
        nonlocal pos
        item = prefix[pos]
        pos += 1
        if item == "y":
            return Y
        if not isinstance(item, str):
            return float(item)
        args = [_number_as_float(a) for a in (build() for _ in range(2 if item in BINARY_OPS else 1))]
        if all(isinstance(a, float) for a in args):
            try:
                value = _FLOAT_OPS[item](*args)
            except (ValueError, ZeroDivisionError, OverflowError):
                raise InvalidTree(f"constant subexpression {item}{tuple(args)} is not a finite real") from None
            if not math.isfinite(value):
                raise InvalidTree(f"constant subexpression {item}{tuple(args)} is not finite")
            return value
        if item == "pow" and isinstance(args[1], float) and abs(args[1]) > MAX_EXPONENT:
            raise InvalidTree(f"exponent {args[1]:g} is beyond {MAX_EXPONENT:g}")
        return SYMPY_OPS[item](*(number(a) if isinstance(a, float) else a for a in args))

    expr = build()
    if pos != len(prefix):
        raise InvalidTree("prefix list is not a single tree")
    return number(expr) if isinstance(expr, float) else expr

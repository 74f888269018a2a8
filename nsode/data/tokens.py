"""The vocabulary and the three forms of an expression: prefix tokens, sympy, infix text.

Vocabulary (36 tokens, ids in this order):
    <pad> <bos> <eos> | add sub mul div pow | neg sin cos exp sqrt log | y | -10 -9 ... 9 10
The paper reports 43 tokens without listing them; these are all the tokens it names (specials,
the 5 + 5 operators of the distribution, the unary minus it keeps, `y`, and the m = 21 grid
tokens of its two-hot constant encoding). Nothing else can occur in a target.

Prefix form: a list of operator names, "y" and Python floats (constants). A constant c in
[-10, 10] becomes two grid tokens with weights (`two_hot`); constants outside the grid cannot be
encoded, and the generator drops such expressions as outside the support (the paper's constants
are drawn from [-10, 10]; clipping would change the ODE).

The token order is a function of the expression's structure, not of its constant values:
the terms of a sum and the factors of a product are ordered by their skeletons (sympy's own
order compares coefficients, so `3*y + 5*sin(y)` and `7*y + 2*sin(y)` would differ). Sums use
`sub` for terms with a negative sign, products `div` for factors with negative exponents and
`neg` for a coefficient -1, so that `decode(encode(e)) == e` for every canonical expression
(see `nsode.data.simplify.canonical`).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import sympy

from nsode.data.config import BINARY_OPS, UNARY_OPS
from odecore.expressions import ExactPrinter, ExpressionError, Y, number, parse

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIALS = (PAD, BOS, EOS)
BINARY = BINARY_OPS
UNARY = ("neg", *UNARY_OPS)  # the unary minus appears after simplification
VARIABLES = ("y",)
GRID = tuple(float(v) for v in range(-10, 11))  # the paper's m = 21 equidistant grid tokens
GRID_TOKENS = tuple(f"{v:g}" for v in GRID)
TOKENS: tuple[str, ...] = (*SPECIALS, *BINARY, *UNARY, *VARIABLES, *GRID_TOKENS)
TOKEN_TO_ID: dict[str, int] = {tok: i for i, tok in enumerate(TOKENS)}
ID_TO_TOKEN: dict[int, str] = dict(enumerate(TOKENS))
GRID_IDS = tuple(TOKEN_TO_ID[t] for t in GRID_TOKENS)
CONSTANT = "c"  # placeholder of a constant in skeletons

_FUNCTIONS = {"sin": sympy.sin, "cos": sympy.cos, "exp": sympy.exp, "log": sympy.log}
SYMPY_OPS = {  # token -> the sympy operation it stands for
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a**b, "neg": lambda a: -a,
    "sqrt": sympy.sqrt, **_FUNCTIONS,
}


class EncodingError(ExpressionError):
    """The expression uses something the vocabulary cannot express; the message says what."""


# ---------------------------------------------------------------- sympy -> prefix

def encode(expr: sympy.Expr) -> list:
    """Prefix tokens of `expr`: operator names, "y", and floats for constants."""
    return _encode(expr)[0]


def skeleton(expr: sympy.Expr) -> str:
    """The skeleton: the expression with each constant replaced by `c` (its sign kept), as infix.

    Two expressions have the same skeleton exactly when they differ only in the values (not
    the signs) of their constants.
    """
    return prefix_to_infix(_encode(expr)[1])


def _encode(expr) -> tuple[list, list]:
    """(tokens, skeleton tokens): the skeleton has "c" / "-c" in place of each constant."""
    if expr.is_Symbol:
        if expr.name != "y":
            raise EncodingError(f"unknown symbol {expr}")
        return ["y"], ["y"]
    if expr.is_Number:
        if not (expr.is_real and expr.is_finite):
            raise EncodingError(f"constant {expr} is not a finite real number")
        value = float(expr)
        return [value], [CONSTANT if value > 0 else "-" + CONSTANT]
    if isinstance(expr, sympy.Add):
        return _encode_add(expr)
    if isinstance(expr, sympy.Mul):
        return _encode_mul(expr)
    if isinstance(expr, sympy.Pow):
        base, exponent = expr.args
        if exponent.is_Rational and exponent < 0:
            return _fold("div", [_ONE, _encode(sympy.Pow(base, -exponent))])
        if exponent == sympy.S.Half and exponent.is_Rational:
            return _unary("sqrt", _encode(base))
        return _fold("pow", [_encode(base), _encode(exponent)])
    for name, func in _FUNCTIONS.items():
        if isinstance(expr, func):
            return _unary(name, _encode(expr.args[0]))
    raise EncodingError(f"{type(expr).__name__} is not in the vocabulary ({expr})")


_ONE = ([1.0], [CONSTANT])


def _key(encoded) -> str:
    return " ".join(encoded[1])


def _unary(name: str, arg) -> tuple[list, list]:
    return [name, *arg[0]], [name, *arg[1]]


def _fold(name: str, items: list) -> tuple[list, list]:
    """Left fold of a binary operator: op(op(a, b), c)."""
    tokens, skel = items[0]
    for t, s in items[1:]:
        tokens, skel = [name, *tokens, *t], [name, *skel, *s]
    return tokens, skel


def _encode_add(expr) -> tuple[list, list]:
    terms = []
    for term in expr.args:
        negative = term.could_extract_minus_sign()
        terms.append((negative, _encode(-term if negative else term)))
    terms.sort(key=lambda item: (item[0], _key(item[1])))  # positive terms first, then by skeleton
    negative, acc = terms[0]
    if negative:
        acc = _unary("neg", acc)
    for negative, enc in terms[1:]:
        acc = _fold("sub" if negative else "add", [acc, enc])
    return acc


def _encode_mul(expr) -> tuple[list, list]:
    coeff, rest = expr.as_coeff_Mul()
    if coeff == -1:
        return _unary("neg", _encode(rest))
    numerator, denominator = [], []
    for factor in sympy.Mul.make_args(rest):
        base, exponent = factor.as_base_exp()
        if isinstance(factor, sympy.Pow) and exponent.is_Rational and exponent < 0:
            denominator.append(_encode(sympy.Pow(base, -exponent)))
        else:
            numerator.append(_encode(factor))
    numerator.sort(key=_key)
    denominator.sort(key=_key)
    if not numerator:
        num = _ONE if coeff == 1 else _encode(coeff)
        return _fold("div", [num, _fold("mul", denominator)]) if denominator else num
    rest = _fold("mul", numerator)
    if denominator:
        rest = _fold("div", [rest, _fold("mul", denominator)])
    # the coefficient multiplies the rest as a whole (mul c (f1 f2 ...)), never one factor first:
    # decoding c * f1 with f1 a sum, sympy would distribute c and give a different (equal) tree
    return rest if coeff == 1 else _fold("mul", [_encode(coeff), rest])


# ---------------------------------------------------------------- prefix -> sympy / infix

def decode(tokens: Sequence, variable: sympy.Expr = Y) -> sympy.Expr:
    """sympy expression of prefix tokens (names, and floats or numeric strings for constants).

    Integral constants become sympy Integers, others 53-bit Floats, as in `canonical` form.
    Each `y` token becomes `variable` (e.g. y / s, to write a scaled model's g(y / s) in one pass).
    Raises EncodingError for anything that is not one complete prefix tree.
    """
    pos = 0

    def build():
        nonlocal pos
        if pos >= len(tokens):
            raise EncodingError("incomplete prefix expression")
        tok = tokens[pos]
        pos += 1
        if tok == "y":
            return variable
        if tok in SYMPY_OPS:
            arity = 2 if tok in BINARY else 1
            return SYMPY_OPS[tok](*[build() for _ in range(arity)])
        return number(_as_float(tok))

    expr = build()
    if pos != len(tokens):
        raise EncodingError(f"{len(tokens) - pos} token(s) after a complete expression")
    return expr


def _as_float(tok) -> float:
    try:
        value = float(tok)
    except (TypeError, ValueError):
        raise EncodingError(f"unknown token {tok!r}") from None
    if not math.isfinite(value):
        raise EncodingError(f"constant {value} is not finite")
    return value


_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2, "neg": 3, "pow": 4}
_SYMBOL = {"add": " + ", "sub": " - ", "mul": "*", "div": "/", "pow": "**"}


def prefix_to_infix(tokens: Sequence) -> str:
    """Readable infix text of prefix tokens (used for skeletons; "c"/"-c" print as themselves)."""
    pos = 0

    def build() -> tuple[str, int]:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok in BINARY:
            (a, pa), (b, pb) = build(), build()
            p = _PRECEDENCE[tok]
            if pa < p or (tok == "pow" and pa <= p):
                a = f"({a})"
            if pb < p or (pb == p and tok in ("sub", "div")) or (tok == "pow" and pb < 5):
                b = f"({b})"
            return a + _SYMBOL[tok] + b, p
        if tok == "neg":
            a, pa = build()
            return ("-" + (a if pa > 3 else f"({a})")), 3
        if tok in SYMPY_OPS:
            return f"{tok}({build()[0]})", 5
        text = tok if isinstance(tok, str) else repr(float(tok))
        return text, (3 if text.startswith("-") else 5)

    return build()[0]


def to_infix(expr: sympy.Expr) -> str:
    """Python-syntax text of `expr` in y (+ - * / **, sin cos exp sqrt log), floats exact."""
    return ExactPrinter({"order": "none"}).doprint(expr)


def parse_infix(text: str) -> sympy.Expr:
    """sympy expression of infix text written by `to_infix`; only the vocabulary's operations.

    The core's whitelisting parser (`odecore.expressions.parse`), narrowed to y and the
    vocabulary's functions, with products kept as written (`flat_products`), so that the tree,
    and hence its tokens, is the one `to_infix` printed. Raises EncodingError.
    """
    try:
        return parse(text, functions=UNARY_OPS, names=VARIABLES, flat_products=True)
    except ExpressionError as err:
        raise EncodingError(str(err)) from None


# ---------------------------------------------------------------- two-hot constants and ids

def two_hot(c: float) -> tuple[int, float, int, float]:
    """Token ids and weights (i, alpha, j, beta), alpha + beta = 1, alpha x_i + beta x_j = c.

    x_i <= c < x_j = x_{i+1} (c = 10 uses the last pair with beta = 1). Raises EncodingError
    outside [-10, 10].
    """
    c = float(c)
    if not GRID[0] <= c <= GRID[-1]:
        raise EncodingError(f"constant {c:g} outside the grid [{GRID[0]:g}, {GRID[-1]:g}]")
    i = min(int(np.searchsorted(GRID, c, side="right")) - 1, len(GRID) - 2)
    beta = (c - GRID[i]) / (GRID[i + 1] - GRID[i])
    return GRID_IDS[i], 1.0 - beta, GRID_IDS[i + 1], beta


def from_two_hot(i: int, alpha: float, j: int, beta: float) -> float:
    """The constant alpha x_i + beta x_j of two grid token ids and their weights."""
    return alpha * float(ID_TO_TOKEN[i]) + beta * float(ID_TO_TOKEN[j])


def targets(tokens: Sequence, clip: bool = False) -> list[tuple[int, int, float, float]]:
    """Training targets of prefix tokens, then <eos>: rows (id_a, id_b, w_a, w_b).

    An operator or `y` is one-hot (id, id, 1, 0); a constant is its two-hot pair. A constant
    outside the grid raises EncodingError, or with `clip` becomes the grid's end (training on data
    whose constants span decades: the skeleton is what the model must get right; the search
    refits constants).
    """
    rows = []
    for tok in tokens:
        if isinstance(tok, str) and tok in TOKEN_TO_ID and tok not in GRID_TOKENS:
            k = TOKEN_TO_ID[tok]
            rows.append((k, k, 1.0, 0.0))
        else:
            value = _as_float(tok)
            i, a, j, b = two_hot(min(max(value, GRID[0]), GRID[-1]) if clip else value)
            rows.append((i, j, a, b))
    rows.append((TOKEN_TO_ID[EOS], TOKEN_TO_ID[EOS], 1.0, 0.0))
    return rows


def to_strings(tokens: Sequence) -> list[str]:
    """Prefix tokens as strings for storage: constants as exact decimal text (repr of the float)."""
    return [tok if isinstance(tok, str) else repr(float(tok)) for tok in tokens]


def from_strings(strings: Sequence[str]) -> list:
    """Inverse of `to_strings`: numbers back to floats."""
    return [s if s in TOKEN_TO_ID and s not in GRID_TOKENS else float(s) for s in strings]


def constants(tokens: Sequence) -> list[float]:
    """The constants of prefix tokens, in token order."""
    return [float(t) for t in tokens if not isinstance(t, str)]

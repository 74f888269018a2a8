"""Safe parsing of expression strings f(y) into sympy, without eval or sympify of raw text.

Predictions travel between processes and files as plain strings. They are parsed with Python's
`ast` and only a whitelist of node types is accepted: numbers, the variable `y`, the constants
`pi` and `E`, + - * / **, unary minus, and calls of known functions with
one argument. Everything else (attributes, names such as `__import__`, keywords, lambdas,
subscripts, strings) is refused with `ExpressionError`.
"""
from __future__ import annotations

import ast
import math

import sympy

from nsode.data.expressions import ExactPrinter, Y, complexity

FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp, "log": sympy.log,
    "sqrt": sympy.sqrt, "abs": sympy.Abs, "Abs": sympy.Abs, "sinh": sympy.sinh,
    "cosh": sympy.cosh, "tanh": sympy.tanh, "asin": sympy.asin, "acos": sympy.acos,
    "atan": sympy.atan,
}
NAMES = {"y": Y, "pi": sympy.pi, "E": sympy.E}
BINARY = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}
MAX_LENGTH = 10_000


class ExpressionError(ValueError):
    """The text is not an expression of y that this project accepts; the message says why."""


def parse(text: str) -> sympy.Expr:
    """sympy expression for `text`; raises ExpressionError for anything outside the whitelist."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"not a valid expression: {err.msg}") from None
    try:
        expr = _build(tree.body)
    except RecursionError:
        raise ExpressionError("expression nested too deeply") from None
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or expr.has(sympy.I):
        raise ExpressionError("expression is not real and finite")
    return expr


class _Printer(ExactPrinter):
    """NSODE's exact-float printer, plus abs() (user expressions may use it)."""

    def _print_Abs(self, expr):
        return f"abs({self._print(expr.args[0])})"


def to_string(expr: sympy.Expr) -> str:
    """String form of `expr` that `parse` reads back to the same value, floats bit for bit."""
    return _Printer({"order": "none"}).doprint(expr)


def expression_complexity(text_or_expr: str | sympy.Expr) -> int:
    expr = parse(text_or_expr) if isinstance(text_or_expr, str) else text_or_expr
    return complexity(expr)


def _build(node: ast.AST) -> sympy.Expr:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ExpressionError(f"constant {value!r} is not a real number")
        if isinstance(value, float) and not math.isfinite(value):
            raise ExpressionError("constant is not finite")
        return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)
    if isinstance(node, ast.Name):
        if node.id not in NAMES:
            raise ExpressionError(f"unknown name {node.id!r} (the only variable is y)")
        return NAMES[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        raise ExpressionError("'^' is not a power in Python syntax; write y**2")
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        return BINARY[type(node.op)](_build(node.left), _build(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _build(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            raise ExpressionError(f"function {ast.unparse(node.func)!r} is not allowed")
        if node.keywords or len(node.args) != 1:
            raise ExpressionError(f"{name} takes exactly one argument")
        return FUNCTIONS[name](_build(node.args[0]))
    raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")

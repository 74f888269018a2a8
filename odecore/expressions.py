"""Expressions f(y): the whitelist parser, the exact printer, compilation to fast real-valued
evaluators, and the paper's complexity. Shared by the harness, the baselines and NSODE, so that
every part reads, prints and evaluates an expression the same way: real arithmetic only, and a
domain error (log or sqrt of a negative number, a fractional power of a negative base,
overflow) is an error or nan, never a silent complex number.

Parsing: predictions travel between processes and files as plain strings. They are parsed with
Python's `ast` and only a whitelist of node types is accepted: numbers, the variable `y`, the
constants `pi` and `E`, + - * / **, unary minus, and calls of known functions with one
argument. Everything else (attributes, names such as `__import__`, keywords, lambdas,
subscripts, strings) is refused with `ExpressionError`. Nothing is ever evaluated as code.
"""
from __future__ import annotations

import ast
import math

import mpmath
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
    so printed expressions read back bit for bit; from 1e6 on in scientific notation (Python
    writes 5e11 as 500000000000.0)."""

    def _print_Float(self, expr):
        value = float(expr)
        text = repr(value)
        if abs(value) >= 1e6 and "e" not in text and math.isfinite(value):
            text = np.format_float_scientific(value, unique=True, trim="-")
        return text


def number(value: float) -> sympy.Number:
    """Integer for integral values (so 3 and 3.0 are one constant), else a 53-bit Float."""
    if float(value).is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(float(value))


def compile_scalar(expr: sympy.Expr, params: tuple[sympy.Symbol, ...] = ()):
    """A fast float -> float callable f(y, *params) for `expr` (for ODE solvers, which call it one
    value at a time); a fractional power of a negative base raises instead of going complex.

    Uses the `math` module: about 10x cheaper per call than numpy on 1-element arrays (see NOTES).
    """
    return sympy.lambdify(
        [Y, *params], _with_y(expr), modules=[{"real_pow": real_pow, "math": math}, "math"], printer=_RealPrinter
    )


def real_values(out) -> np.ndarray:
    """`out` as floats, nan where it is complex. A lambdified power of a negative constant to a
    fractional exponent is computed on Python floats, which go complex where numpy's give nan;
    casting would keep the real part ((-8)**(1/3) read as 1)."""
    out = np.asarray(out)
    if np.iscomplexobj(out):
        return np.where(out.imag == 0, out.real, np.nan)
    return out.astype(float, copy=False)


def compile_vector(expr: sympy.Expr):
    """A numpy callable for `expr` on arrays; out-of-domain points give nan (no warnings)."""
    fn = sympy.lambdify([Y], _with_y(expr), modules="numpy")

    def evaluate(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        with np.errstate(all="ignore"):
            out = real_values(fn(y))
        return np.broadcast_to(out, y.shape).copy()

    return evaluate


_NUMPY = {sympy.sin: np.sin, sympy.cos: np.cos, sympy.exp: np.exp, sympy.log: np.log}


def evaluate(expr: sympy.Expr, y: np.ndarray) -> np.ndarray:
    """f(y) on an array by walking the sympy tree with numpy ufuncs.

    About 100x cheaper than `sympy.lambdify` for one evaluation (no code generation), which is
    what ranking many candidates once each needs; real semantics as `compile_vector` (log or a
    fractional power of a negative number gives nan). Falls back to lambdify for other nodes.
    """
    if expr.is_Symbol:
        return y
    if expr.is_Number:
        return np.full_like(y, float(expr))
    if expr.is_Add or expr.is_Mul:
        parts = [evaluate(a, y) for a in expr.args]
        out = parts[0]
        for p in parts[1:]:
            out = out + p if expr.is_Add else out * p
        return out
    if expr.is_Pow:
        return np.power(evaluate(expr.args[0], y), evaluate(expr.args[1], y))
    if expr.func in _NUMPY:
        return _NUMPY[expr.func](evaluate(expr.args[0], y))
    return compile_vector(expr)(y)


def compile_parametrised(expr: sympy.Expr, params: list[sympy.Symbol]):
    """A numpy callable f(y, p) for `expr` in y and the symbols `params`; nan out of domain.

    `p` is a 2-D array with one row per parameter, broadcasting against `y`, so that one
    compiled function evaluates many ODEs of one skeleton (different constants) at once.
    """
    fn = sympy.lambdify([Y, *params], _with_y(expr), modules="numpy")

    def evaluate(y: np.ndarray, p: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        with np.errstate(all="ignore"):
            out = real_values(fn(y, *p))
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


def _transcendental(expr: sympy.Expr) -> bool:
    """A function application (sin, exp, log, ...) or a power whose exponent is not a number."""
    return isinstance(expr, sympy.Function) or (isinstance(expr, sympy.Pow) and not expr.exp.is_Number)


def nested_functions(expr: sympy.Expr, inside: bool = False) -> int:
    """How many transcendental nodes (`_transcendental`) lie inside another's argument:
    sin(cos(y)) and exp(exp(y)) have 1, (y**y)**sin(y) has 2, y*log(2/y) and exp(-y**2) none.
    Laws of science seldom nest them; curve fits of a short interval often do."""
    here = _transcendental(expr)
    own = int(inside and here)
    return own + sum(nested_functions(a, inside or here) for a in expr.args)


def _with_y(expr: sympy.Expr) -> sympy.Expr:
    """Rename any symbol called y (whatever its assumptions) to the canonical real `Y`."""
    subs = {s: Y for s in expr.free_symbols if s.name == "y" and s != Y}
    return expr.xreplace(subs) if subs else expr



FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp, "log": sympy.log,
    "sqrt": sympy.sqrt, "abs": sympy.Abs, "Abs": sympy.Abs, "sinh": sympy.sinh,
    "cosh": sympy.cosh, "tanh": sympy.tanh, "asin": sympy.asin, "acos": sympy.acos,
    "atan": sympy.atan,
}
NAMES = {"y": Y, "pi": sympy.pi, "E": sympy.E}
BINARY = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: _power(a, b),
}
OTHER_OPERATORS = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
                   ast.BitOr: "|", ast.BitAnd: "&"}  # Python's, named when refused
MAX_LENGTH = 10_000
MAX_DEPTH = 100  # sympy and Python's compiler recurse per level: far deeper than any law, far below their limits
MAX_DECADES = 300  # |log10| of the largest and smallest number written (floats end near 1e308)
MAX_BITS = math.ceil(MAX_DECADES * math.log2(10))  # of an exact number's numerator or denominator


class ExpressionError(ValueError):
    """The text is not an expression of y that this project accepts; the message says why."""


def parse(text: str, *, functions: tuple[str, ...] | None = None, names: tuple[str, ...] | None = None,
          flat_products: bool = False) -> sympy.Expr:
    """sympy expression for `text`; raises ExpressionError for anything outside the whitelist.

    `functions` and `names` narrow the whitelist to a subset of FUNCTIONS and NAMES (a model's
    vocabulary). With `flat_products` a chain a*b/c*d becomes one Mul of its factors (a divisor
    as a power -1, a unary minus as a factor -1): built pairwise, sympy would distribute a
    number over a sum on the way ((-2*(y + 1))*exp(y) -> (-2*y - 2)*exp(y)) and change the
    tree that a token sequence was printed from.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"an expression is text, not {type(text).__name__}")
    if not text.strip():
        raise ExpressionError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    source = text.strip().replace("\u2212", "-")  # a typeset minus, as pasted from a paper
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        if "=" in text:  # "y' = -0.5*y", as `nsode predict` prints a law, reads to Python as a broken string
            raise ExpressionError("'=' is not allowed: write only the right-hand side f(y) of y' = f(y) "
                                  "(for y' = -0.5*y: -0.5*y)") from None
        hint = "; write products with * (0.3*y, not 0.3y)" if "invalid decimal literal" in err.msg else ""
        raise ExpressionError(f"not a valid expression: {err.msg}{hint}") from None
    except RecursionError:
        raise ExpressionError("expression nested too deeply") from None
    _check_literals(tree, source)
    builder = _Builder(FUNCTIONS if functions is None else {k: FUNCTIONS[k] for k in functions},
                       NAMES if names is None else {k: NAMES[k] for k in names}, flat_products)
    try:
        expr = builder.build(tree.body)
    except RecursionError:
        raise ExpressionError("expression nested too deeply") from None
    if _depth(expr) > MAX_DEPTH:
        raise ExpressionError(f"expression nested more than {MAX_DEPTH} deep")
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or expr.has(sympy.I):
        raise ExpressionError("expression is not real and finite")
    if any(max(abs(n.p), n.q).bit_length() > MAX_BITS for n in expr.atoms(sympy.Rational)):
        raise ExpressionError(f"a number beyond 1e+-{MAX_DECADES} (or with more digits)")  # could not be printed back
    _check_constants(expr)
    return expr


def _check_literals(tree: ast.AST, source: str) -> None:
    """Refuses a number written below a float's range: Python reads the literal 1e-400 as 0.0, so
    1e-400*y would be read as 0, where 1e400 and 1e-200*1e-200 are refused."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is float and node.value == 0:
            written = ast.get_source_segment(source, node) or ""
            if any(digit in "123456789" for digit in written.lower().partition("e")[0]):
                raise ExpressionError(f"a number beyond a float's range ({written})")


def _check_constants(expr: sympy.Expr) -> None:
    """Refuses a constant part that is not a real number a float can hold: (-8)**(1/3) or acos(2)
    stay unevaluated, so sympy does not see their imaginary part, and numpy's evaluators would
    keep only their real part; 1e200*1e200 is a sympy Float that prints as inf."""
    for number in expr.atoms(sympy.Float):  # one a float reads as inf, or as 0 though it is not
        if math.isinf(float(number)) or (float(number) == 0 and not number.is_zero):
            raise ExpressionError("a number beyond a float's range")
    for part in expr.atoms(sympy.Pow, sympy.Function):
        if part.free_symbols:
            continue
        value = complex(part.evalf(20))
        if value.imag != 0:
            raise ExpressionError(f"{part} is not a real number")
        if not math.isfinite(value.real):
            raise ExpressionError(f"{part} is a number beyond a float's range")


def _depth(expr: sympy.Expr) -> int:
    """Levels of the expression tree, counted without recursion."""
    deepest, stack = 0, [(expr, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((arg, level + 1) for arg in node.args)
    return deepest


class _Printer(ExactPrinter):
    """NSODE's exact-float printer, plus abs() (user expressions may use it)."""

    def _print_Abs(self, expr):
        return f"abs({self._print(expr.args[0])})"


def to_string(expr: sympy.Expr) -> str:
    """String form of `expr` that `parse` reads back to the same value, floats bit for bit."""
    return _Printer({"order": "none"}).doprint(expr)


def rounded(expr: sympy.Expr, digits: int) -> str:
    """`to_string` of `expr` with each constant rounded to `digits` significant digits, for reading
    (`nsode predict`'s candidates and the harness's laws table write a law alike)."""
    return to_string(expr.xreplace({f: sympy.Float(float(f"{float(f):.{digits}g}")) for f in expr.atoms(sympy.Float)}))


class _Builder:
    """The whitelisting walk of a Python syntax tree into sympy (see `parse` for the options)."""

    def __init__(self, functions: dict, names: dict, flat_products: bool):
        self.functions, self.names, self.flat_products = functions, names, flat_products

    def build(self, node: ast.AST) -> sympy.Expr:
        if isinstance(node, ast.Constant):
            return _constant(node.value)
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                hint = "; Euler's number is E" if node.id == "e" else ""
                raise ExpressionError(f"unknown name {node.id!r} (the only variable is y{hint})")
            return self.names[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
            raise ExpressionError("'^' is not a power in Python syntax; write y**2")
        if self.flat_products and isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            return sympy.Mul(*self.factors(node))
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            return BINARY[type(node.op)](self.build(node.left), self.build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.build(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name not in self.functions:
                called = ast.unparse(node.func)
                hint = (" (a numpy scalar's repr: write its number with float())"
                        if called.startswith(("np.", "numpy.")) else "")
                raise ExpressionError(f"function {called!r} is not allowed{hint}")
            if node.keywords or len(node.args) != 1:
                raise ExpressionError(f"{name} takes exactly one argument")
            return self.functions[name](self.build(node.args[0]))
        if isinstance(node, ast.BinOp):
            raise ExpressionError(f"operator {OTHER_OPERATORS.get(type(node.op), type(node.op).__name__)!r} is not "
                                  "allowed; use + - * / **")
        if isinstance(node, ast.Tuple):
            raise ExpressionError("a comma is not allowed: write decimals with a point (1.5, not 1,5)")
        shown = ast.unparse(node)
        raise ExpressionError(f"{shown if len(shown) < 40 else shown[:40] + '...'!r} is not allowed in an expression: "
                              "use y, numbers, + - * / ** and functions such as exp(y)")

    def factors(self, node: ast.AST) -> list:
        """The factors of a chain of * and / (divisors as powers -1); a unary minus is a factor -1."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            right = self.factors(node.right)
            if isinstance(node.op, ast.Div):
                right = [sympy.Pow(sympy.Mul(*right), -1)]
            return self.factors(node.left) + right
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            return [sympy.S.NegativeOne, *self.factors(node.operand)]
        return [self.build(node)]


def _power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    """base**exponent, refusing a power of a constant beyond 1e+-300 before sympy evaluates it
    exactly (10**10**10, or sqrt(2)**10**300 = 2**(5*10**299), would never finish)."""
    if (exponent.is_Number and base.is_number and base != 0
            and abs(float(exponent)) * _decades(base) > MAX_DECADES):
        raise ExpressionError(f"a power of numbers beyond 1e+-{MAX_DECADES}")
    return base**exponent


def _decades(n: sympy.Expr) -> float:
    """|log10 |n|| of a constant, exact enough for integers and fractions too large for a float
    and for constant expressions (sqrt(2), exp(700)) beyond a float's range."""
    if n.is_Rational:
        return abs(math.log10(abs(int(n.p))) - math.log10(int(n.q)))
    try:
        return abs(float(mpmath.log10(abs(mpmath.mpf(n.evalf(15))))))
    except OverflowError:  # beyond mpmath's exponents too: exp(exp(exp(exp(10))))
        return math.inf
    except TypeError:  # not real (log(-2)): the check for real numbers names it
        return 0.0


def _constant(value) -> sympy.Number:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExpressionError(f"constant {value!r} is not a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError("constant is not finite")
    if isinstance(value, int) and value and math.log10(abs(value)) > MAX_DECADES:
        raise ExpressionError(f"constant beyond 1e{MAX_DECADES}")
    return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)

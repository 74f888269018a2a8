"""From a random tree to a canonical expression, its skeleton, and new constants for it.

Steps (paper, Section 3.1 and appendix A.1): sympy `simplify` under a time limit; a canonical
form (constant subexpressions folded to one number, non-integer rationals as floats, so that
every constant is one token); the support filter (drop constant f, operators or symbols outside
the distribution's support - the unary minus is kept - and constants outside the two-hot grid);
the skeleton; and resampling of constants that keeps the skeleton.
"""
from __future__ import annotations

import ctypes
import math
import multiprocessing
import signal
import threading
import time
from dataclasses import dataclass

import numpy as np
import sympy

from nsode.data import tokens as tok
from nsode.data import trees
from nsode.data.config import Config
from odecore.expressions import Y, complexity, number
from odecore.processes import WALL_FACTOR, Child, ChildDied, Deadline, die_with_parent


class Rejected(ValueError):
    """The expression is dropped; `reason` is a short label counted in the statistics."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


# ---------------------------------------------------------------- simplify under a time limit

def _serve(conn) -> None:
    """The simplifier child: sympy.simplify each expression it receives, until the pipe closes.
    Ctrl-C reaches the whole process group; the parent handles it and stops this child. A parent
    killed outright (SIGTERM, SIGKILL) stops nobody: the child dies with it (`die_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    while True:
        try:
            expr = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", sympy.simplify(expr)))
        except Exception as err:  # sympy has its own bugs (e.g. "Invalid NaN comparison" in exptrigsimp)
            conn.send(("error", f"{type(err).__name__}: {err}"))


_local = threading.local()  # one simplifier child per thread (Dask runs tasks in threads)


def _may_fork() -> bool:
    # daemonic processes (e.g. default Dask workers) may not start children
    return not multiprocessing.current_process().daemon


def simplify(expr: sympy.Expr, time_limit: float) -> sympy.Expr:
    """`sympy.simplify(expr)`, or Rejected after `time_limit` seconds of CPU time.

    CPU time of the simplifying process, not wall clock, so that whether an expression times out
    does not depend on how busy the machine is (the generator's output must not depend on it);
    WALL_FACTOR times the limit in wall clock is the safety net. The work runs in a warm child
    process that is killed at the limit (`odecore.processes.Child`); where children are not allowed it runs
    in this thread, interrupted between two bytecodes (`_simplify_in_thread`). No signals
    (SIGALRM works only in the main thread).
    """
    if not _may_fork():
        return _simplify_in_thread(expr, time_limit)
    worker = getattr(_local, "simplifier", None)
    if worker is None or not worker.alive:
        # a child, not a thread: sympy can spend minutes inside one C-level call (e.g. a modular
        # power on a huge integer during factorisation), which no in-process timeout interrupts;
        # fork is cheap (sympy is imported) and a replacement is needed only after a timeout
        worker = _local.simplifier = Child(_serve, start_method="fork", daemon=True)
    try:
        worker.send(expr)
        status, value = worker.receive(time_limit, cpu=True)
    except (Deadline, ChildDied):
        worker.close()
        _local.simplifier = None
        raise Rejected("timeout", f"simplify took more than {time_limit:g} s") from None
    if status == "error":
        raise Rejected("simplify error", value)
    return value


class _Timeout(BaseException):
    """Raised inside the simplifying thread; a BaseException so sympy's `except Exception` lets it pass."""


def _set_async_exc(thread_id: int, exc) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc) if exc is not None else None)


def _simplify_in_thread(expr: sympy.Expr, time_limit: float) -> sympy.Expr:
    """`simplify` without a child process: a watcher thread raises an exception inside the
    calling thread when its CPU time runs over. It cannot interrupt a long C-level call."""
    worker = threading.get_ident()
    clock = time.pthread_getcpuclockid(worker)
    cpu_start, wall_deadline = time.clock_gettime(clock), time.monotonic() + WALL_FACTOR * time_limit
    lock = threading.Lock()
    state = {"done": False, "fired": False}
    finished = threading.Event()

    def watch():
        while not finished.wait(min(0.02, time_limit / 4)):
            if time.clock_gettime(clock) - cpu_start > time_limit or time.monotonic() > wall_deadline:
                with lock:
                    if not state["done"]:
                        state["fired"] = True
                        _set_async_exc(worker, _Timeout)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result = None
    try:
        try:
            result = sympy.simplify(expr)
        finally:
            with lock:
                state["done"] = True
                if state["fired"]:
                    _set_async_exc(worker, None)  # withdraw an exception not yet delivered
            finished.set()
    except _Timeout:
        pass
    except Exception as err:
        if not state["fired"]:
            raise Rejected("simplify error", f"{type(err).__name__}: {err}") from None
    if state["fired"]:
        raise Rejected("timeout", f"simplify took more than {time_limit:g} s")
    return result


# ---------------------------------------------------------------- canonical form and support

def _structural_exponent(e: sympy.Expr) -> bool:
    """Exponents that are operators, not constants: -1 is `div`, 1/2 is `sqrt`, -1/2 both."""
    return e.is_Rational and e in (sympy.S.NegativeOne, sympy.S.Half, -sympy.S.Half)


def _fold(expr: sympy.Expr) -> sympy.Expr:
    if expr.is_Number:
        if not (expr.is_real and expr.is_finite):
            raise Rejected("not real", str(expr))
        return number(float(expr))
    if not expr.free_symbols:  # a constant subexpression: sqrt(2), exp(-3), pi, ...
        try:
            value = complex(expr.evalf())
        except (TypeError, ValueError):
            raise Rejected("not real", str(expr)) from None
        if value.imag != 0 or not math.isfinite(value.real):
            raise Rejected("not real", str(expr))
        return number(value.real)
    if isinstance(expr, sympy.Pow) and _structural_exponent(expr.exp):
        return sympy.Pow(_fold(expr.base), expr.exp)
    if not expr.args:
        return expr
    return expr.func(*(_fold(a) for a in expr.args))


def canonical(expr: sympy.Expr) -> sympy.Expr:
    """Canonical form: every constant one number (Integer if integral, else a 53-bit Float).

    Folding can make sympy regroup terms, so it is repeated until nothing changes.
    """
    for _ in range(5):
        folded = _fold(expr)
        if folded == expr:
            break
        expr = folded
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I):
        raise Rejected("not real", str(expr))
    return expr


def allowed_tokens(config: Config) -> frozenset[str]:
    """Operators that may appear after simplification: the configured ones and the unary minus.

    sympy writes a - b as a + (-1)*b and a / b as a * b**-1, so `sub` comes with `add` and
    `div` with `pow`.
    """
    ops = set(config.binary_ops) | set(config.unary_ops) | {"neg", "y"}
    if "add" in ops:
        ops.add("sub")
    if "pow" in ops:
        ops.add("div")
    return frozenset(ops)


def check_support(expr: sympy.Expr, config: Config) -> list:
    """Prefix tokens of `expr`, or Rejected if it is outside the distribution's support."""
    if Y not in expr.free_symbols:
        raise Rejected("constant")
    if expr.free_symbols != {Y}:
        raise Rejected("unsupported", f"symbols {expr.free_symbols}")
    try:
        prefix = tok.encode(expr)
    except tok.EncodingError as err:
        raise Rejected("unsupported", str(err)) from None
    names = {t for t in prefix if isinstance(t, str)}
    if not names <= allowed_tokens(config):
        raise Rejected("unsupported", ", ".join(sorted(names - allowed_tokens(config))))
    if any(abs(c) > tok.GRID[-1] for c in tok.constants(prefix)):
        raise Rejected("constant outside grid")
    return prefix


@dataclass(frozen=True)
class Candidate:
    """A simplified expression inside the support, with its skeleton."""
    expr: sympy.Expr
    skeleton: str
    complexity: int


def process(prefix: list, config: Config) -> Candidate:
    """Random tree -> simplified canonical expression in the support; raises Rejected."""
    try:
        expr = trees.to_sympy(prefix)
    except trees.InvalidTree as err:
        raise Rejected("not real", str(err)) from None
    if not isinstance(expr, sympy.Expr) or Y not in expr.free_symbols:
        raise Rejected("constant")
    expr = canonical(simplify(expr, config.simplify_time_limit))
    check_support(expr, config)
    return Candidate(expr, tok.skeleton(expr), complexity(expr))


# ---------------------------------------------------------------- constants of a skeleton

# roles of a constant in the canonical tree, for the resampling rules
TERM, COEFFICIENT, BASE, EXPONENT = "term", "coefficient", "base", "exponent"


def constant_slots(expr: sympy.Expr) -> list[tuple[float, str]]:
    """(value, role) of each constant, in a fixed traversal order of the tree.

    Not constants: the -1 of a unary minus (Mul(-1, x)) and the structural exponents of `div`
    and `sqrt`. Their roles decide the resampling rules (appendix A.1 of the paper).
    """
    out: list[tuple[float, str]] = []
    _walk(expr, lambda number, role: out.append((float(number), role)) or number)
    return out


def substitute(expr: sympy.Expr, values) -> sympy.Expr:
    """`expr` with its constants (in `constant_slots` order) replaced by `values`.

    `values` may hold numbers or sympy symbols (for a parametrised, compiled-once function).
    """
    it = iter(values)
    return _walk(expr, lambda number, role: next(it))


def _walk(expr, visit):
    """Rebuild expr, passing each constant with its role to `visit` (which returns its replacement)."""
    if isinstance(expr, sympy.Mul):
        args = [a if (a.is_Number and a == -1) else visit(_sym(a), COEFFICIENT) if a.is_Number
                else _walk(a, visit) for a in expr.args]
    elif isinstance(expr, sympy.Pow):
        base, exponent = expr.args
        base = visit(_sym(base), BASE) if base.is_Number else _walk(base, visit)
        if exponent.is_Number and not _structural_exponent(exponent):
            exponent = visit(_sym(exponent), EXPONENT)
        elif not exponent.is_Number:
            exponent = _walk(exponent, visit)
        args = [base, exponent]
    elif expr.is_Number:
        return visit(_sym(expr), TERM)
    elif not expr.args:
        return expr
    else:
        args = [visit(_sym(a), TERM) if a.is_Number else _walk(a, visit) for a in expr.args]
    return expr.func(*(_sym(a) for a in args))


def _sym(x):
    return number(x) if isinstance(x, (int, float)) else x


def rule_ok(value: float, original: float, role: str) -> bool:
    """The paper's rules: no 0; keep the sign; no base 1; no exponent +-1; no coefficient +-1.

    (No division by +-1 is the coefficient rule: in canonical form x / c is (1/c) * x.)
    """
    if value == 0 or np.sign(value) != np.sign(original):
        return False
    if role in (COEFFICIENT, EXPONENT) and abs(value) == 1:
        return False
    if role == EXPONENT and abs(value) == 0.5:  # would print and read back as sqrt
        return False
    return not (role == BASE and value == 1)


def resample_constants(expr: sympy.Expr, skeleton: str, rng: np.random.Generator, config: Config,
                       n: int | None = None, max_tries: int = 20) -> list[tuple[sympy.Expr, list[float]]]:
    """Up to `n` (default N_const) expressions with the skeleton of `expr` and distinct new constants.

    Returns (expression, values) pairs; `values` are in `constant_slots(expr)` order, the
    order of the symbols of `parametrised(expr)`.

    Each constant is drawn from the constant distribution with the original's sign until the
    rules hold; a set is kept only if sympy's evaluation leaves the skeleton unchanged (e.g.
    sqrt(y**c) with c = 2 would become Abs(y)). A skeleton without constants gives one ODE.
    """
    n = config.n_const if n is None else n
    slots = constant_slots(expr)
    if not slots:
        return [(expr, [])]

    def draw():
        values = []
        for original, role in slots:
            for _ in range(100):
                value = trees.sample_constant(rng, config, int(np.sign(original)))
                if rule_ok(value, original, role):
                    break
            values.append(value)
        return substitute(expr, values), values, None

    return [(new, [float(v) for v in values]) for new, values, _ in distinct_sets(draw, skeleton, n, max_tries * n)]


def distinct_sets(draw, skeleton: str, n: int, tries: int) -> list[tuple]:
    """Up to `n` draws (expression, values, extra) of `draw()` with distinct values whose
    expression keeps `skeleton` (values None: a failed draw); at most `tries` draws."""
    out, seen = [], set()
    for _ in range(tries):
        new, values, extra = draw()
        if values is None or tuple(values) in seen:
            continue
        seen.add(tuple(values))
        try:
            if tok.skeleton(new) != skeleton:
                continue
        except tok.EncodingError:
            continue
        out.append((new, values, extra))
        if len(out) == n:
            break
    return out


def parametrised(expr: sympy.Expr) -> tuple[sympy.Expr, list[sympy.Symbol]]:
    """`expr` with its constants replaced by symbols c0, c1, ... (to compile once per skeleton)."""
    symbols = [sympy.Symbol(f"c{i}", real=True) for i in range(len(constant_slots(expr)))]
    return substitute(expr, symbols), symbols

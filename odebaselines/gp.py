"""The shared core of the SRBench GP family (AFP, FE-AFP, EHC, EPLEX, GP-GOMEA) on DEAP.

One representation (DEAP `PrimitiveTree` over one primitive set), one numpy evaluator, one
conversion to our expression strings and one set of variation operators, so that the five
algorithms differ only in what the papers make them differ in: selection, population
management and local search. We write the evaluator ourselves instead of `gp.compile`
because `compile` goes through `eval` of a string for every program (tens of microseconds
each); a stack walk over the prefix list with numpy ufuncs on all points is several times
cheaper and never raises on invalid programs.

Protected operators follow ellyn and GP-GOMEA; `expression` writes each as the plain function
it equals wherever the protection does not trigger:
  div   a/b, and 1 where |b| < 1e-10            -> written `a/b`
  log   log|a|, and 0 where |a| < 1e-10         -> written `log(abs(a))`
  sqrt  sqrt|a|                                  -> written `sqrt(abs(a))` (exact)
  exp   exp(min(a, 50))                          -> written `exp(a)`
  square, cube                                   -> written `(a)**2`, `(a)**3`
so a written expression differs from the evolved program only at a pole of a division, at
log(0), or where exp's argument exceeds 50. Subtrees that are constant (no `y`, or one
finite value at every training point, such as exp(y) - exp(y)) are written as that number,
so a protected log(0) or x/0 inside the program never reaches sympy as an infinity.
"""
from __future__ import annotations

import copy
import functools
import math
import random
import time
from contextlib import contextmanager

import numpy as np
from deap import gp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

EXP_CLIP = 50.0  # exp's argument is clipped here: e^50 ~ 5e21 stays finite in squares
TINY = 1e-10  # protection threshold of div and log
BAD_ERROR = 1e30  # finite stand-in for an infinite case error (lexicase needs finite MADs)


def _div(a, b):
    b = np.asarray(b, dtype=float)
    safe = np.abs(b) >= TINY
    return np.where(safe, np.divide(a, np.where(safe, b, 1.0)), 1.0)


def _log(a):
    a = np.abs(np.asarray(a, dtype=float))
    return np.where(a >= TINY, np.log(np.where(a >= TINY, a, 1.0)), 0.0)


def _sqrt(a):
    return np.sqrt(np.abs(a))


def _exp(a):
    return np.exp(np.minimum(a, EXP_CLIP))


# name -> (numpy implementation, arity, how it is written in an expression string)
OPERATORS = {
    "add": (np.add, 2, "({0} + {1})"),
    "sub": (np.subtract, 2, "({0} - {1})"),
    "mul": (np.multiply, 2, "({0}*{1})"),
    "div": (_div, 2, "({0}/{1})"),
    "exp": (_exp, 1, "exp({0})"),
    "log": (_log, 1, "log(abs({0}))"),
    "sqrt": (_sqrt, 1, "sqrt(abs({0}))"),
    "sin": (np.sin, 1, "sin({0})"),
    "cos": (np.cos, 1, "cos({0})"),
    "square": (np.square, 1, "({0})**2"),
    "cube": (lambda a: a * a * a, 1, "({0})**3"),
}
# ellyn's op_list in SRBench ('+','-','*','/','exp','log','2','3','sqrt', with or without sin, cos)
ELLYN_FUNCTIONS = ("add", "sub", "mul", "div", "exp", "log", "square", "cube", "sqrt", "sin", "cos")
ELLYN_FUNCTIONS_NO_TRIG = ELLYN_FUNCTIONS[:-2]
# GP-GOMEA's SRBench sets '+_-_*_p/_plog_sqrt_sin_cos' and '+_-_*_p/'
GOMEA_FUNCTIONS = ("add", "sub", "mul", "div", "log", "sqrt", "sin", "cos")
GOMEA_FUNCTIONS_ARITHMETIC = ("add", "sub", "mul", "div")


def random_constant() -> float:
    """Ephemeral random constant, uniform on [-1, 1] (drawn from DEAP's `random` stream)."""
    return random.uniform(-1.0, 1.0)


@functools.lru_cache(maxsize=None)
def primitive_set(functions: tuple[str, ...]) -> gp.PrimitiveSet:
    """The DEAP primitive set over the variable `y`, the given functions and constants."""
    unknown = sorted(set(functions) - set(OPERATORS))
    if unknown:
        raise ValueError(f"unknown GP functions {unknown}; known: {sorted(OPERATORS)}")
    pset = gp.PrimitiveSet("Y", 1)
    pset.renameArguments(ARG0="y")
    for name in functions:
        pset.addPrimitive(OPERATORS[name][0], OPERATORS[name][1], name=name)
    pset.addEphemeralConstant("erc", random_constant)
    return pset


def variable_node(pset: gp.PrimitiveSet) -> gp.Terminal:
    """The leaf `y` of a primitive set."""
    return next(t for t in pset.terminals[pset.ret] if isinstance(t, gp.Terminal) and t.value == "y")


def is_constant(node) -> bool:
    return isinstance(node, gp.Terminal) and not isinstance(node.value, str)


def constant_node(value: float) -> gp.Terminal:
    """A constant leaf; its `value` is what the evaluator and `expression` read."""
    return gp.Terminal(float(value), False, object)


# ---------------------------------------------------------------- evaluation

def evaluate(program, y: np.ndarray, silenced: frozenset = frozenset()) -> np.ndarray:
    """Values of a prefix program at all points `y` (NaN/inf allowed, never raises).

    `silenced` holds positions of primitives that pass their first argument through
    unchanged (EHC's epigenetic markers switched off).
    """
    stack = []
    for position in range(len(program) - 1, -1, -1):
        node = program[position]
        if isinstance(node, gp.Terminal):
            stack.append(y if isinstance(node.value, str) else node.value)
            continue
        func, arity, _ = OPERATORS[node.name]
        args = [stack.pop() for _ in range(arity)]
        stack.append(args[0] if position in silenced else func(*args))
    return np.broadcast_to(np.asarray(stack[-1], dtype=float), y.shape)


@contextmanager
def quiet_numpy():
    with np.errstate(all="ignore"):
        yield


def mse(values: np.ndarray, target: np.ndarray) -> float:
    """Mean squared error; inf for any non-finite output (an invalid program)."""
    with np.errstate(all="ignore"):
        error = float(np.mean((values - target) ** 2))
    return error if math.isfinite(error) else math.inf


def linear_scaling(values: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """(a, b) minimising mean((a + b*values - target)^2) (Keijzer 2003), (mean, 0) if flat."""
    with np.errstate(all="ignore"):
        return _linear_scaling(values, target)


def _linear_scaling(values, target):
    centred = values - values.mean()
    var = float(np.dot(centred, centred))
    slope = float(np.dot(centred, target - target.mean()) / var) if var > 0 and math.isfinite(var) else 0.0
    intercept = float(target.mean() - slope * values.mean())
    if not (math.isfinite(slope) and math.isfinite(intercept)):
        return float(target.mean()), 0.0
    return intercept, slope


class Evaluator:
    """Counts evaluations (in full-data equivalents) and watches the deadline; every algorithm
    scores programs through it."""

    def __init__(self, y: np.ndarray, target: np.ndarray, max_time: float | None):
        self.y, self.target = y, target
        self.count = 0
        self.deadline = math.inf if max_time is None else time.perf_counter() + max_time

    def values(self, program, silenced=frozenset(), rows=None) -> np.ndarray:
        # an evaluation on a subset of points counts as that share of one (FE-AFP's predictors;
        # SRBench scaled FE-AFP's generations by n / 10 for the same reason)
        self.count += 1 if rows is None else len(rows) / len(self.y)
        y = self.y if rows is None else self.y[rows]
        with quiet_numpy():
            return evaluate(program, y, silenced)

    def error(self, program, silenced=frozenset(), rows=None) -> float:
        target = self.target if rows is None else self.target[rows]
        with quiet_numpy():
            return mse(self.values(program, silenced, rows), target)

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline


# ---------------------------------------------------------------- expression strings

def expression(program, scale: tuple[float, float] | None = None, points: np.ndarray | None = None) -> str:
    """The program as an expression string in `y` that `odecore.expressions.parse` reads.

    Constants are written at full precision (repr); `scale` = (a, b) writes a + b*f. Every
    subtree without `y` is written as its (protected) value, and so is every subtree that
    takes one finite value at all `points` (e.g. exp(y) - exp(y)): the protected program
    treats log(0) and x/0 as numbers, but sympy would read them as infinities.
    """
    points = np.ones(1) if points is None else np.asarray(points, dtype=float)
    stack = []  # (text, values at points, depends on y)
    with quiet_numpy():
        for position in range(len(program) - 1, -1, -1):
            node = program[position]
            if isinstance(node, gp.Terminal):
                if isinstance(node.value, str):
                    stack.append(("y", points, True))
                else:
                    stack.append((_number(node.value), np.full(len(points), float(node.value)), False))
                continue
            func, arity, template = OPERATORS[node.name]
            args = [stack.pop() for _ in range(arity)]
            values = np.broadcast_to(np.asarray(func(*(a[1] for a in args)), dtype=float), points.shape)
            depends = any(a[2] for a in args)
            text = template.format(*(a[0] for a in args))
            constant = np.all(np.isfinite(values)) and np.all(values == values[0])
            if constant and (not depends or len(points) > 1):
                text, depends = _number(values[0]), False
            stack.append((text, values, depends))
    text = stack[-1][0]
    if scale is not None:
        text = f"{_number(scale[0])} + {_number(scale[1])}*({text})"
    return text


def _number(value: float) -> str:
    value = float(value)
    if not math.isfinite(value):
        value = 0.0  # never written by a valid program; keeps the string parseable
    return repr(value) if value >= 0 else f"({value!r})"


# ---------------------------------------------------------------- variation

def random_tree(pset, min_height: int, max_height: int) -> gp.PrimitiveTree:
    return gp.PrimitiveTree(gp.genHalfAndHalf(pset, min_=min_height, max_=max_height))


def crossover(a: gp.PrimitiveTree, b: gp.PrimitiveTree, max_length: int) -> gp.PrimitiveTree:
    """Subtree crossover (one child); a child longer than max_length is replaced by parent a."""
    child, _ = gp.cxOnePoint(copy.deepcopy(a), copy.deepcopy(b))
    return child if len(child) <= max_length else copy.deepcopy(a)


def mutate(tree: gp.PrimitiveTree, pset, max_length: int) -> gp.PrimitiveTree:
    """Subtree mutation (new random subtree of height <= 2) or point mutation, half each."""
    child = copy.deepcopy(tree)
    if random.random() < 0.5:
        (child,) = gp.mutUniform(child, expr=functools.partial(gp.genGrow, min_=0, max_=2), pset=pset)
    else:
        (child,) = gp.mutNodeReplacement(child, pset=pset)
    return child if len(child) <= max_length else copy.deepcopy(tree)


def perturb_constants(tree: gp.PrimitiveTree, rng: np.random.Generator, scale: float = 0.1) -> gp.PrimitiveTree:
    """A copy with every constant c moved by N(0, (scale*(|c| + 0.1))^2): one step of parameter
    hill climbing in the manner of ellyn's pHC (its exact step distribution is not reproduced)."""
    child = gp.PrimitiveTree(list(tree))
    for i, node in enumerate(child):
        if is_constant(node):
            child[i] = constant_node(node.value + rng.normal(0.0, scale * (abs(node.value) + 0.1)))
    return child


def has_constants(tree) -> bool:
    return any(is_constant(node) for node in tree)


# ---------------------------------------------------------------- estimator plumbing

@contextmanager
def seeded_random(seed: int):
    """DEAP draws from the global `random` stream: seed it for the fit, then restore it."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


class GPRegressor(RegressorMixin, BaseEstimator):
    """Base of the five GP estimators: input checks, seeding, the fitted program and predict.

    Subclasses implement `_search(evaluator, pset, rng) -> (program, scale or None)`.
    X has one column (the state y); the target is dy/dt. After `fit`: `program_` (DEAP
    prefix list), `scale_` ((a, b) of linear scaling or None), `expression_` (string in y),
    `n_evaluations_`, `stopped_by_time_` (True when `max_time` ended the run before its counted
    budget did) and `training_error_` (MSE).
    """

    def _functions(self) -> tuple[str, ...]:
        return tuple(self.functions)

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != 1:
            raise ValueError(f"X must have shape (n, 1) with the state y as its column, got {X.shape}")
        target = np.asarray(y, dtype=float).ravel()
        if len(target) != len(X) or not (np.all(np.isfinite(X)) and np.all(np.isfinite(target))):
            raise ValueError("X and the target need the same length and finite values")
        seed = int(np.random.SeedSequence(self.random_state).generate_state(1)[0]) if self.random_state is not None else None
        rng = np.random.default_rng(seed)
        evaluator = Evaluator(X[:, 0].copy(), target, self.max_time)
        with seeded_random(seed if seed is not None else random.randrange(2**32)):
            program, scale = self._search(evaluator, primitive_set(self._functions()), rng)
        self.stopped_by_time_ = evaluator.out_of_time()
        self.program_, self.scale_ = program, scale
        self.expression_ = expression(program, scale, points=evaluator.y)
        self.n_evaluations_ = evaluator.count
        self.training_error_ = mse(self._raw_predict(X[:, 0]), target)
        return self

    def _raw_predict(self, y: np.ndarray) -> np.ndarray:
        with quiet_numpy():
            values = np.array(evaluate(self.program_, y), dtype=float)
            if self.scale_ is not None:
                values = self.scale_[0] + self.scale_[1] * values
        return values

    def predict(self, X):
        check_is_fitted(self, "program_")
        values = self._raw_predict(np.asarray(X, dtype=float)[:, 0])
        # GridSearchCV scoring needs finite numbers; a huge value keeps such a program last
        return np.nan_to_num(values, nan=BAD_ERROR, posinf=BAD_ERROR, neginf=-BAD_ERROR)

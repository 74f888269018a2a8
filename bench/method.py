"""The plugin interface every method implements, and the values that cross it.

A method sees only `Observations` (t, y) and a `Budget`; it returns a `Prediction` whose
expression is a string in the variable y. It never returns code, and it never sees the
ground truth: the worker process receives only the observations and the budget. The one door
to the truth is `Oracle`: a subclass gets the true expression through `receive_truth` before
each `run` (the `truth` method, a check of the harness); no other method is ever sent it. That is
what is sent, not a sandbox: a method's code runs with the machine's files (the datasets and their
cached truths) in reach, so a third-party method is read before its scores are trusted.
"""
from __future__ import annotations

import importlib
import inspect
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from odecore import protocol
from odecore.arguments import is_finite_number, is_whole  # methods' check_params import is_whole from here too
from odecore.trajectories import observed


class InvalidInput(ValueError):
    """Observations a method cannot be given; the message names the problem."""


class OutOfTime(RuntimeError):
    """Raised by a method whose budget ran out before it had any answer (every run it tried stopped
    at its share of the time limit): the row is a `timeout`, which a resume under a longer limit
    runs again, not an `error`."""


@dataclass(frozen=True)
class Observations:
    """One observed trajectory: strictly increasing finite times and finite values."""

    t: np.ndarray
    y: np.ndarray

    def __post_init__(self):
        try:
            t, y = observed(self.t, self.y)  # copies: freezing them leaves the caller's arrays writable
        except ValueError as err:
            raise InvalidInput(str(err)) from None
        t.setflags(write=False)
        y.setflags(write=False)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "y", y)

    def __reduce__(self):
        """Rebuilt by the constructor where it arrives (a worker process): unpickled arrays are writable."""
        return type(self), (self.t, self.y)


@dataclass(frozen=True)
class Budget:
    """What a method may spend on one trajectory. The runner enforces time_limit by killing."""

    time_limit: float = protocol.DEFAULT_TIME_LIMIT
    seed: int = 0

    def __post_init__(self):
        if not (is_finite_number(self.time_limit) and self.time_limit > 0):
            raise ValueError(f"Budget time_limit={self.time_limit!r}: expected a number of seconds > 0")
        if not is_whole(self.seed, 0):
            raise ValueError(f"Budget seed={self.seed!r}: expected a whole number >= 0")


@dataclass(frozen=True)
class Prediction:
    """A method's answer: f(y) as an expression string, optional ranked alternatives, metadata."""

    expression: str
    candidates: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        expression = self.expression
        if _is_sympy(expression) or (isinstance(expression, numbers.Real) and not isinstance(expression, bool)):
            object.__setattr__(self, "expression", str(expression))  # as candidates are written
        elif not isinstance(expression, str):  # found here, not after the fit as an invalid row
            raise TypeError(f"Prediction.expression must be an expression string such as '-0.5*y' (or a sympy "
                            f"expression), not {type(expression).__name__}")
        # one string is one candidate, not a candidate per character
        candidates = (self.candidates,) if isinstance(self.candidates, str) else self.candidates
        try:
            object.__setattr__(self, "candidates", tuple(str(c) for c in candidates))
        except TypeError:
            raise TypeError("Prediction.candidates must be a list of expression strings, "
                            f"not {type(self.candidates).__name__}") from None
        if not isinstance(self.metadata, Mapping):
            raise TypeError(f"Prediction.metadata must be a dict, not {type(self.metadata).__name__}")


def _is_sympy(value) -> bool:
    return type(value).__module__.split(".")[0] == "sympy"


@dataclass(frozen=True)
class Variant:
    """A named parameter set of a method class, listed and run like a method of its own
    (`nsode-eps+refine` is `NSODE(checkpoint="nsode-eps", beam=256, search=True)`). Its rows carry
    the variant's name; `version`, `description` and `time_limit` default to the class's."""

    params: dict[str, Any]
    description: str = ""
    version: str | None = None
    time_limit: float | None = None


class Method:
    """Base class of all methods. Subclasses set `name` and implement `run`.

    Like a scikit-learn estimator, the constructor only stores its arguments, each under its own
    name (so `get_params`/`set_params` and the command line's `NAME:key=value` see them);
    `setup` does one-off expensive work (imports, model loading) once per worker process; `run`
    does the fit. `variants` names parameter sets that the registry lists as methods of their own.
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    requires: ClassVar[tuple[str, ...]] = ()  # importable modules the method needs
    time_limit: ClassVar[float] = protocol.DEFAULT_TIME_LIMIT  # default hard deadline per task
    description: ClassVar[str] = ""
    # fits f to finite-difference derivatives (the paper's "FD methods"; reports compare them as a group)
    uses_finite_differences: ClassVar[bool] = False
    variants: ClassVar[dict[str, Variant]] = {}

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's named arguments (scikit-learn's rule: no *args or **kwargs)."""
        if cls.__init__ is Method.__init__:
            return []
        names = []
        for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must name its parameters (no *args or **kwargs)")
            names.append(parameter.name)
        return names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, as stored (scikit-learn's estimator API)."""
        names = self._param_names()
        hidden = [name for name in names if not hasattr(self, name)]
        if hidden:
            raise TypeError(f"{type(self).__name__}.__init__ must store each argument under its own name "
                            f"(self.{hidden[0]} = {hidden[0]}), as scikit-learn estimators do")
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: Any) -> "Method":
        unknown = set(params) - set(self._param_names())
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter(s) {', '.join(sorted(unknown))}")
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def check_params(self) -> None:
        """Raise ValueError naming a parameter whose value this method cannot use. The harness
        calls it once before a sweep, so a bad value fails in one line, not once per task. Here a
        value must be of its default's kind (a flag, a number, text, a sequence); a method with
        choices or ranges extends it (call super first)."""
        check_kinds(self, self.get_params())

    def unavailable_reason(self) -> str | None:
        """None when the method can run here, else one line saying why not. Called on an
        instance, so that a parameter (a checkpoint, a library) can decide."""
        for module in self.requires:
            try:
                importlib.import_module(module)
            except Exception as err:  # import errors of native libraries are not all ImportError
                return f"cannot import {module}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        return None

    def fingerprint(self) -> str:
        """What results depend on besides the code and the parameters (a checkpoint's weights),
        as a short digest that becomes part of the version ('' for none): a sweep then never
        takes a stored row of other weights for a current one. Called on an instance."""
        return ""

    def setup(self) -> None:
        """One-off work before the first task in a worker (loading a model, warming imports)."""

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        """Fit one trajectory (read-only arrays `observations.t`, strictly increasing, and
        `observations.y`) and return a `Prediction` whose `expression` is f(y) in Python syntax in
        `y`, numbers written as literals (`float(a)`, not a numpy scalar's repr); the harness parses
        it with a whitelist, never `eval`. To fail, raise: the task is recorded with the error's
        first line and the sweep goes on. No deadline of your own is needed: the runner kills the
        worker at `budget.time_limit` seconds and records a timeout. Seed any randomness with
        `budget.seed`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def check_kinds(method: Method, params: dict[str, Any]) -> None:
    """ValueError for the first of `params` whose value is not of its default's kind in `method`'s constructor."""
    defaults = {p.name: p.default for p in inspect.signature(type(method).__init__).parameters.values()}
    for name, value in params.items():
        expected = _kind(defaults.get(name))
        if expected and _kind(value) != expected:
            raise ValueError(f"{name}={value!r} is not {expected} (its default is {defaults[name]!r})")


def require(ok: bool, name: str, value, expected: str) -> None:
    """For `check_params`: ValueError `name=value: expected ...` unless `ok`."""
    if not ok:
        raise ValueError(f"{name}={value!r}: expected {expected}")


def are_whole(values, low: int) -> bool:
    """A non-empty sequence of whole numbers >= low."""
    return isinstance(values, (tuple, list)) and len(values) > 0 and all(is_whole(v, low) for v in values)


def are_numbers(values, low: float, empty: bool = False) -> bool:
    """A sequence (empty only if allowed) of finite numbers >= low."""
    return (isinstance(values, (tuple, list)) and (empty or len(values) > 0)
            and all(_kind(v) == "a number" and np.isfinite(v) and v >= low for v in values))


def _kind(value) -> str | None:
    """The kind of a parameter value, as `check_params` names it; None for a kind it leaves alone."""
    if isinstance(value, (bool, np.bool_)):
        return "a flag (True or False)"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (tuple, list)):
        return "a sequence"
    return None


class Oracle(Method):
    """A method allowed to see the ground truth (only the `truth` check of the harness).

    The runner sends the true expression (None for data without a known model) to a worker
    only for subclasses of this class, and the worker hands it over through `receive_truth`
    right before `run`. Every other method's job carries no truth at all.
    """

    truth_: str | None = None

    def receive_truth(self, expression: str | None) -> None:
        self.truth_ = expression

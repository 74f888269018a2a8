"""Solve y' = f(y) with LSODA under a step limit and a wall-clock limit, and check the solution.

`scipy.integrate.odeint` is LSODA behind a Fortran loop: about 7x faster here than
`solve_ivp(method="LSODA")` for scalar right-hand sides (see benchmarks/datagen.py). The wall-clock
limit is enforced inside the right-hand side (odeint propagates its exceptions), so a blowing-up
solve stops on time without signals or threads.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
from scipy.integrate import odeint

RTOL = ATOL = 1e-9
MXSTEP = 20_000


class SolveError(RuntimeError):
    """The ODE has no usable solution on the requested grid; the message says why."""


class _Deadline(Exception):
    pass


def solve(
    rhs: Callable[[float], float],
    y0: float,
    t: np.ndarray,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    mxstep: int = MXSTEP,
    time_limit: float | None = 5.0,
) -> np.ndarray:
    """Values of the solution at the times `t` (t[0] is the initial time); raises SolveError."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    calls = 0

    def f(y, _t):
        nonlocal calls
        calls += 1
        if deadline is not None and calls % 128 == 0 and time.perf_counter() > deadline:
            raise _Deadline
        return rhs(y[0])

    try:
        with np.errstate(all="ignore"):
            out, info = odeint(f, float(y0), np.asarray(t, float), rtol=rtol, atol=atol,
                               mxstep=mxstep, full_output=True)
    except _Deadline:
        raise SolveError(f"solver exceeded its {time_limit:g} s time limit") from None
    except (ArithmeticError, ValueError, TypeError) as err:
        raise SolveError(f"right-hand side not real-valued on the path ({err})") from None
    if info["message"] != "Integration successful.":
        raise SolveError(f"LSODA failed: {info['message'].strip()}")
    out = out[:, 0]
    if not np.all(np.isfinite(out)):
        raise SolveError("solution is not finite")
    return out


def fd_residual(rhs_vector: Callable[[np.ndarray], np.ndarray], t: np.ndarray, y: np.ndarray) -> float:
    """Max |dy/dt - f(y)| on an equidistant grid, dy/dt by 9th-order central finite differences.

    The 10-point-wide stencil (accuracy order 8 is the closest even order; 9 points each side
    would be order 18) is applied where it fits; that is all but 4 points at each end.
    """
    h = t[1] - t[0]
    # central 9-point stencil, 8th-order accurate first derivative
    c = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
    dy = np.convolve(y, c[::-1], mode="valid") / h
    f = rhs_vector(y[4:-4])
    res = np.abs(dy - f)
    return float(np.max(res)) if np.all(np.isfinite(res)) else float("inf")

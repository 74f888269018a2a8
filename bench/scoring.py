"""Scores of one prediction against the ground truth of one trajectory.

The predicted ODE is integrated from the true initial value with LSODA (protocol tolerances;
the absolute one relative to the largest |y| of the truth when that is below 1; a counted budget
of evaluations of f, so a score does not depend on how busy the machine is)
over [0, T_extra] and compared on the interpolation grid [0, T] and the extrapolation grid
[T, T_extra] with the noise-free truth. Norms are normalised per point: L1 is the mean absolute
difference, L-infinity the largest one, both in the units of y. A prediction that cannot be
parsed, or whose integration fails, gets no scores but a status and a reason; `report` then
counts its R^2 as -inf (see protocol.R2_FLOOR), its L1 and L-infinity as +inf and its isclose as 0
(`report.with_failure_policy`). A course that reaches the edge of its law's domain where the law
comes to rest stays there, as the truth's does (`odecore.solving.solve`, `rest_at_edge`). As in the paper,
which solves on [0, T] and on [T, T_extra] separately, a prediction that fails only after T keeps
its interpolation scores (status "diverged-extrap"): a blow-up at t = 3 says nothing about [0, 2].
Beside the trajectory's scores, `skeleton` says whether the law has the true law's form whatever
its constants (odecore.skeletons; 1 or 0, nan where no true law is known): the symbolic recovery that
symbolic-regression benchmarks report beside R^2; `report` counts a failed task's as 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.rows import EXTRAP_DIVERGED
from bench.tasks import Trajectory
from odecore import protocol
from odecore.expressions import ExpressionError, compile_scalar, complexity, parse
from odecore.metrics import METRICS, compare
from odecore.skeletons import same_skeleton
from odecore.solving import SolveError, relative_atol, solve


@dataclass(frozen=True)
class Scores:
    status: str  # "ok", "invalid" (not an expression of y), "diverged" (integration failed on [0, T])
    #              or "diverged-extrap" (failed after T only: interpolation scored, extrapolation failed)
    reason: str = ""
    complexity: float = np.nan
    skeleton: float = np.nan  # 1 where the law has the true law's form (odecore.skeletons), 0 where not; nan: no truth
    interpolation: dict | None = None  # metric -> value on [0, T]
    extrapolation: dict | None = None  # metric -> value on [T, T_extra] (None when unknown)

    def as_row(self) -> dict:
        row = {"score_status": self.status, "score_reason": self.reason, "complexity": self.complexity,
               "skeleton": self.skeleton}
        for part, values in (("interp", self.interpolation), ("extrap", self.extrapolation)):
            for metric in METRICS:
                row[f"{metric}_{part}"] = np.nan if values is None else values[metric]
        return row


def score(expression: str, trajectory: Trajectory) -> Scores:
    if not isinstance(trajectory, Trajectory):  # e.g. a (t, y) pair: the truth needs y0 and both grids
        raise TypeError(f"score needs a bench.tasks.Trajectory (the truth: y0 and both grids), "
                        f"not {type(trajectory).__name__}; bench.datasets.load gives them")
    try:
        expr = parse(expression)
    except ExpressionError as err:
        return Scores("invalid", str(err))
    extra = {s.name for s in expr.free_symbols} - {"y"}
    if extra:
        return Scores("invalid", f"unknown symbols {sorted(extra)}")
    law = {"complexity": complexity(expr), "skeleton": _form_found(expr, trajectory.expression)}
    has_extra = len(trajectory.t_extra) > 0
    t_all = np.concatenate([trajectory.t, trajectory.t_extra[1:]]) if has_extra else trajectory.t
    rhs = compile_scalar(expr)
    atol = relative_atol(protocol.ATOL, np.max(np.abs(trajectory.y)))  # data in tiny units keep their digits

    def solved(t):
        return solve(rhs, trajectory.y0, t, rtol=protocol.RTOL, atol=atol, mxstep=protocol.MXSTEP,
                     max_rhs_calls=protocol.SOLVE_MAX_RHS_CALLS, time_limit=protocol.SOLVE_TIME_LIMIT,
                     rest_at_edge=True)

    try:
        y_all = solved(t_all)
    except SolveError as err:
        if not has_extra:
            return Scores("diverged", str(err), **law)
        try:  # [0, T] on its own, as the paper solves it
            y_observed = solved(trajectory.t)
        except SolveError as early:
            return Scores("diverged", str(early), **law)
        return Scores(EXTRAP_DIVERGED, str(err), interpolation=compare(y_observed, trajectory.y), **law)
    n = len(trajectory.t)
    interpolation = compare(y_all[:n], trajectory.y)
    extrapolation = compare(y_all[n - 1:], trajectory.y_extra) if has_extra else None
    return Scores("ok", "", interpolation=interpolation, extrapolation=extrapolation, **law)


def _form_found(expr, truth: str | None) -> float:
    """1.0 where `expr` has the true law's skeleton, 0.0 where not, nan without a true law."""
    if not truth:
        return np.nan
    try:
        return float(same_skeleton(expr, parse(truth)))
    except ExpressionError:
        return np.nan

"""Solve many scalar ODEs at once for the training-data generator (`solve_batch`, `screen`).

One solution at a time is `odecore.solving.solve` (LSODA under a step and a wall-clock limit),
the project's single solver for everything else. The batched path (one LSODA run for all
solutions of a skeleton, after a cheap per-component screen) is about 13x faster per solution
(benchmarks/datagen.py).
"""
from __future__ import annotations

import time
import warnings
from typing import Callable

import numpy as np
from scipy.integrate import ODEintWarning, odeint

from odecore.protocol import ATOL, RTOL

BLOWUP = 1e9  # |y| or |f(y)| beyond this ends a solution of a batch (see solve_batch)
STEPS_PER_POINT = 200  # LSODA steps allowed between two output points before a solution is evicted


def solve_batch(
    rhs: Callable,
    y0: np.ndarray,
    t: np.ndarray,
    *,
    params: np.ndarray | None = None,
    screened: bool = True,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_rhs_calls: int = 20_000,
    time_limit: float | None = None,
    blowup: float = BLOWUP,
    steps_per_point: int = STEPS_PER_POINT,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve n independent scalar ODEs at once: (values [len(t), n], ok [n]).

    `rhs(y)` gives f at the n values y; with `params` [k, n] (e.g. the constants of each ODE of
    one skeleton, compiled once) it is `rhs(y, p)` with the columns p of the components evaluated.

    One LSODA run on the n-vector, so Python is entered once per step for all n solutions
    instead of once per step per solution (the right-hand side's call cost dominates, see
    NOTES). The Jacobian is declared diagonal (ml = mu = 0), and LSODA's error test uses the
    weighted max-norm, so every component meets rtol/atol as if it were solved alone.

    All components share LSODA's step size, so one hard component would slow down or stop the
    others. First (unless `screened` is False) `screen` drops the components that certainly blow
    up, cheaply and in parallel. Then three rules keep them apart, all deterministic:
    - a component whose value or derivative becomes non-finite (a domain error, e.g. log of a
      negative number) or exceeds `blowup` in magnitude is frozen (derivative 0) and not ok.
      A solution beyond 1e9 cannot pass the FD check anyway: LSODA's relative error 1e-9
      becomes an absolute FD residual of about 5e-9 |y| (measured: 2.6 at |y| = 4.9e8);
    - when LSODA needs more than `steps_per_point` steps between two output points, or more
      than ROUND_CALLS evaluations in one run, the components that force the small steps
      (within EVICT_FRACTION of the largest error-weighted second derivative) are evicted as
      not ok, and the others go on from the last output point. Such a solution varies on a time
      scale below the grid step, which the 9-point FD check cannot verify;
    - after `max_rhs_calls` evaluations of f in all, the components still running are not ok.
    `time_limit` (seconds for the whole batch) is a wall-clock safety net, with the same effect
    as the work bound.
    """
    y0, t = np.asarray(y0, float), np.asarray(t, float)
    if params is None:
        def f(y, idx):
            return rhs(y)
    else:
        params = np.asarray(params, float)

        def f(y, idx):
            return rhs(y, params[:, idx])

    limits = dict(rtol=rtol, atol=atol, max_rhs_calls=max_rhs_calls, time_limit=time_limit, blowup=blowup,
                  steps_per_point=steps_per_point)
    if not screened:
        return _solve_evicting(f, y0, t, **limits)
    keep = np.flatnonzero(~screen(f, y0, t[-1] - t[0], blowup=blowup))
    out = np.full((len(t), len(y0)), np.nan)
    ok = np.zeros(len(y0), dtype=bool)
    if len(keep):
        out[:, keep], ok[keep] = _solve_evicting(lambda y, idx: f(y, keep[idx]), y0[keep], t, **limits)
    return out, ok


def screen(
    rhs: Callable[[np.ndarray, np.ndarray], np.ndarray],
    y0: np.ndarray,
    t_end: float,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    blowup: float = BLOWUP,
    max_iterations: int = 400,
) -> np.ndarray:
    """Which of n scalar ODEs certainly have no solution on [0, t_end]: a bool array [n].

    A cheap first pass before LSODA. In one batch, LSODA's shared step size makes every
    finite-time blow-up cost the whole batch hundreds of steps, one blow-up after the other.
    Here each component has its own step size (Bogacki-Shampine 3(2), loose tolerances,
    numpy over the components still running), so blow-ups cost iterations in parallel, not in
    sequence. A component fails when its value or derivative exceeds `blowup` or its step
    size collapses (a singularity, or the edge of f's domain); a trial point outside the
    domain only shrinks the step. Components still running after `max_iterations` (stiff
    ones, for an explicit method) are not failed: LSODA decides. `rhs(y, idx)` evaluates f of
    the components `idx` at values y.
    """
    y = np.array(y0, dtype=float)
    n = len(y)
    failed = ~np.isfinite(y)
    active = np.flatnonzero(~failed)
    t = np.zeros(n)
    with np.errstate(all="ignore"):
        k1 = np.asarray(rhs(y[active], active), dtype=float)
        bad = ~np.isfinite(k1) | (np.abs(k1) > blowup)
        failed[active[bad]] = True
        active, k1 = active[~bad], k1[~bad]
        h = np.where(np.abs(k1) > 0, 0.01 * (np.abs(y[active]) + 1.0) / np.abs(k1), t_end)
        h = np.clip(h, 1e-6 * t_end, 0.1 * t_end)
        h_min = 1e-10 * t_end
        for _ in range(max_iterations):
            if not len(active):
                break
            ya = y[active]
            h = np.minimum(h, t_end - t[active])
            k2 = rhs(ya + 0.5 * h * k1, active)
            k3 = rhs(ya + 0.75 * h * k2, active)
            y_new = ya + h * (2 / 9 * k1 + 1 / 3 * k2 + 4 / 9 * k3)
            k4 = rhs(y_new, active)
            err = h * (-5 / 72 * k1 + 1 / 12 * k2 + 1 / 9 * k3 - 1 / 8 * k4)
            ratio = np.abs(err) / (atol + rtol * np.maximum(np.abs(ya), np.abs(y_new)))
            finite = np.isfinite(ratio) & np.isfinite(y_new) & np.isfinite(k4)
            accept = finite & (ratio <= 1.0)
            y[active[accept]] = y_new[accept]
            t[active[accept]] += h[accept]
            k1 = np.where(accept, k4, k1)
            h = h * np.where(finite, np.clip(0.9 * ratio ** (-1 / 3), 0.2, 5.0), 0.25)
            blown = accept & ((np.abs(y_new) > blowup) | (np.abs(k4) > blowup))
            stuck = h < h_min
            done = t[active] >= t_end * (1 - 1e-12)
            failed[active[blown | stuck]] = True
            keep = ~(blown | stuck | done)
            active, k1, h = active[keep], k1[keep], h[keep]
    return failed


ROUND_CALLS = 2_000  # evaluations of f per LSODA run before the slowest components are evicted
EVICT_FRACTION = 0.1  # an early-stopped run evicts the components within this factor of the largest curvature


def _solve_evicting(rhs, y0, t, *, rtol, atol, max_rhs_calls, time_limit, blowup, steps_per_point):
    """`solve_batch` for rhs(y, idx): f of the components `idx` (indices into y0) at values y.

    Runs LSODA from the last good output row on the components still alive, evicting after
    each run that stopped early (too many steps between two output points, or more than
    ROUND_CALLS evaluations: f then returns nan, which makes LSODA finish at once with nan
    rows) the components that limited its step size.
    """
    n = len(y0)
    out = np.full((len(t), n), np.nan)
    ok = np.isfinite(y0)
    alive = np.flatnonzero(ok)  # components still integrated
    out[0, alive] = y0[alive]
    start, calls = 0, 0  # grid row the current LSODA run starts from; f evaluations so far
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    while len(alive) and start < len(t) - 1:
        idx = alive
        dead = np.zeros(len(idx), dtype=bool)
        state = {"t": -np.inf, "dy": None, "curv": np.zeros(len(idx)), "t_max": t[start], "over": False,
                 "calls": 0, "budget": min(ROUND_CALLS, max_rhs_calls - calls)}

        def f(y, tt):
            nonlocal calls
            if state["over"]:
                return np.full(len(y), np.nan)
            calls += 1
            state["calls"] += 1
            if state["calls"] >= state["budget"] or (
                    deadline is not None and calls % 64 == 0 and time.perf_counter() > deadline):
                state["over"] = True
            dy = np.asarray(rhs(y, idx), dtype=float)
            bad = ~(np.isfinite(dy) & (np.abs(dy) <= blowup) & (np.abs(y) <= blowup))
            dead[bad] = True
            dy[dead] = 0.0
            if tt != state["t"] and state["dy"] is not None:  # error-weighted |y''|: what limits the step
                state["curv"] = np.abs(dy - state["dy"]) / (abs(tt - state["t"]) * (rtol * np.abs(y) + atol))
            state["t"], state["dy"], state["t_max"] = tt, dy.copy(), max(state["t_max"], tt)
            return dy

        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", ODEintWarning)
            sol, info = odeint(f, out[start, idx], t[start:], rtol=rtol, atol=atol, mxstep=steps_per_point,
                               full_output=True, ml=0, mu=0, tcrit=t[-1:])
        done, complete = _good_rows(sol, info, t[start:], state["t_max"])
        out[start:start + done + 1, idx] = sol[: done + 1]
        ok[idx[dead]] = False
        if complete:
            break
        if calls >= max_rhs_calls or (deadline is not None and time.perf_counter() > deadline):
            # the work bound or the wall-clock safety net: what is still running is not ok
            ok[idx] = False
            break
        curv = np.where(dead, 0.0, state["curv"])
        evict = (curv >= EVICT_FRACTION * curv.max()) if curv.max() > 0 else ~dead
        ok[idx[evict]] = False
        alive = idx[~dead & ~evict]
        start += done
    out[:, ~ok] = np.nan
    ok &= np.all(np.isfinite(out), axis=0)
    return out, ok


def _good_rows(sol: np.ndarray, info: dict, t_run: np.ndarray, t_max: float) -> tuple[int, bool]:
    """(index of the last good row of one LSODA run, whether the run reached the end of t_run)."""
    finished = info["message"] == "Integration successful."
    done = len(t_run) - 1 if finished else _finished_rows(sol, info, t_run, t_max)
    finite = np.all(np.isfinite(sol[: done + 1]), axis=1)
    if not finite.all():  # the nan rows after a run was stopped
        done = max(int(np.argmin(finite)) - 1, 0)
    return done, finished and done == len(t_run) - 1


def _finished_rows(sol: np.ndarray, info: dict, t: np.ndarray, t_max: float) -> int:
    """Index of the last output row LSODA certainly completed before it stopped (>= 0).

    Rows after the failure are uninitialised memory, so the count is bounded by the times f was
    evaluated at (LSODA never evaluates behind its last accepted step) and checked against the
    per-row diagnostics, which are valid only for completed rows.
    """
    k = max(int(np.searchsorted(t, t_max, side="left")) - 2, 0)
    tcur = info["tcur"]
    while k > 0 and not (np.isfinite(tcur[k - 1]) and t[k] <= tcur[k - 1] + 1e-12 * abs(t[-1])
                         and np.all(np.isfinite(sol[k]))):
        k -= 1
    return k

"""Training-data generation speed on one core: valid ODEs and solutions per second, where the time
goes, and the speed-up of the generator's batched LSODA path over a straightforward
`solve_ivp(method="LSODA")` loop (and a plain `odeint` loop), which must give the same solutions.

The issue's target: at least 20 valid ODEs (25 solutions each) per second per core, i.e. 500
solutions per second per core. Prints markdown tables.

    python benchmarks/datagen.py [--skeletons 40] [--seed 0] [--compare 6]
"""
from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from nsode.data import config as cfg
from nsode.data import generate, simplify
from nsode.data import tokens as tok
from odecore.arguments import whole_number
from odecore.expressions import compile_scalar, compile_vector
from odecore.solving import SolveError, fd_residual, solve


def find_skeletons(n: int, seed: int, config: cfg.Config, timer: Counter) -> list[generate.SkeletonRow]:
    """`generate.candidate_block` in block order with dedup, timing sampling and simplification apart."""
    rows, seen, block = [], set(generate.excluded_skeletons()), 0
    while len(rows) < n:
        found, _ = generate.candidate_block(block, seed, config, timer)
        for cand in found:
            if cand.skeleton not in seen and len(rows) < n:
                seen.add(cand.skeleton)
                rows.append(generate.SkeletonRow(len(rows), cand.skeleton, cand.expression, cand.complexity))
        block += 1
    return rows


def throughput(rows, seed: int, config: cfg.Config, timer: Counter) -> tuple[int, int]:
    odes = solutions = 0
    for row in rows:
        found, _, _ = generate.solve_skeleton(row, seed, config, timer=timer)
        odes += len({r["ode_id"] for r in found})
        solutions += len(found)
    return odes, solutions


def problems(row, seed: int, config: cfg.Config, n_const: int, n_iv: int):
    """The first n_const constant sets and n_iv initial values the generator draws for a skeleton."""
    rng = generate.rng_for(seed, generate.SOLUTIONS, row.index)
    expr = tok.parse_infix(row.expression)
    sets = simplify.resample_constants(expr, row.skeleton, rng, config)
    y0 = rng.uniform(*config.y0_range, size=(len(sets), config.n_iv))
    return expr, sets[:n_const], y0[:n_const, :n_iv]


def compare(rows, seed: int, config: cfg.Config, n_const: int = 5, n_iv: int = 5) -> pd.DataFrame:
    """Seconds and kept solutions of three solver paths on the same ODEs and initial values."""
    t = generate.ode_grid(config)
    n = config.grid
    seconds, kept, max_diff = Counter(), Counter(), 0.0
    for row in rows:
        expr, sets, y0 = problems(row, seed, config, n_const, n_iv)
        if not sets:
            continue
        # the generator's path
        start = time.perf_counter()
        y, ok, _, good = generate.solve_sets(expr, sets, y0, config)
        seconds["batched odeint (generator)"] += time.perf_counter() - start
        kept["batched odeint (generator)"] += int(good.sum())
        # one solve per solution, compiled once per ODE
        for name, one in (("odeint per solution", _odeint_one), ("solve_ivp LSODA per solution", _ivp_one)):
            start = time.perf_counter()
            for j, (ode, _) in enumerate(sets):
                scalar, vector = compile_scalar(ode), compile_vector(ode)
                for i, v in enumerate(y0[j]):
                    sol = one(scalar, v, t, config)
                    if sol is None or fd_residual(vector, t, sol, grid=n) > config.fd_tolerance:
                        continue
                    kept[name] += 1
                    col = j * y0.shape[1] + i
                    if name.startswith("solve_ivp") and good[col]:
                        max_diff = max(max_diff, float(np.max(np.abs(sol - y[:, col]) / (1 + np.abs(sol)))))
            seconds[name] += time.perf_counter() - start
    base = seconds["solve_ivp LSODA per solution"]
    table = pd.DataFrame({"path": list(seconds), "seconds": [seconds[k] for k in seconds],
                          "kept solutions": [kept[k] for k in seconds],
                          "speed-up over solve_ivp": [base / seconds[k] for k in seconds]})
    table.attrs["max_rel_diff"] = max_diff
    return table


class _Limit(Exception):
    pass


def _odeint_one(f, y0, t, config):
    try:
        return solve(f, y0, t, rtol=config.rtol, atol=config.atol, mxstep=config.max_rhs_calls,
                     time_limit=config.solve_time_limit)
    except SolveError:
        return None


def _ivp_one(f, y0, t, config):
    """The straightforward path: solve_ivp LSODA with dense output on the grid, same work bound."""
    calls, deadline = 0, time.perf_counter() + config.solve_time_limit

    def rhs(_t, y):
        nonlocal calls
        calls += 1
        if calls > config.max_rhs_calls or (calls % 128 == 0 and time.perf_counter() > deadline):
            raise _Limit
        return [f(y[0])]

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            sol = solve_ivp(rhs, (t[0], t[-1]), [y0], method="LSODA", t_eval=t, rtol=config.rtol, atol=config.atol)
    except (_Limit, ArithmeticError, ValueError, TypeError):
        return None
    if not sol.success or sol.y.shape[1] != len(t) or not np.all(np.isfinite(sol.y)):
        return None
    return sol.y[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skeletons", type=whole_number(1), default=40, help="skeletons to generate (default 40)")
    p.add_argument("--seed", type=whole_number(0), default=0)
    p.add_argument("--compare", type=whole_number(1), default=6, help="skeletons for the solver comparison (5 x 5 solutions each)")
    args = p.parse_args()
    config = cfg.default()
    timer = Counter()
    rows = find_skeletons(args.skeletons, args.seed, config, timer)
    odes, solutions = throughput(rows, args.seed, config, timer)
    total = sum(timer.values())
    print(f"## Generation on one core: {args.skeletons} skeletons, seed {args.seed}, default config\n")
    print(pd.DataFrame({"stage": list(timer), "seconds": [timer[k] for k in timer],
                        "share": [timer[k] / total for k in timer]}).to_markdown(index=False, floatfmt=".3f"))
    print(f"\nvalid ODEs: {odes} ({odes / total:.1f} per second per core); solutions: {solutions} "
          f"({solutions / total:.0f} per second per core, {solutions / odes:.1f} per ODE); "
          f"25-solution ODE equivalents: {solutions / 25 / total:.1f} per second per core "
          f"(target 20); a million ODEs: {1e6 / (odes / total) / 3600:.1f} core-hours\n")
    table = compare(rows[: args.compare], args.seed, config)
    print(f"## Solver paths on the first {args.compare} skeletons (5 constant sets x 5 y0 each)\n")
    if not table["kept solutions"].any():  # nothing solved: timings of nothing, a difference over nothing
        print(f"no path kept a solution on the first {args.compare} skeleton(s); give more with --compare")
        return
    print(table.to_markdown(index=False, floatfmt=".2f"))
    print(f"\nmax relative difference, generator vs solve_ivp, on solutions both keep: "
          f"{table.attrs['max_rel_diff']:.1e}")


if __name__ == "__main__":
    main()

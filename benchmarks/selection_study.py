"""Which rule picks the law rather than a curve fit of the observed interval? Collects, for
generated ODEs only (held-out skeletons of a science-generator data folder, and the simple ODEs of
nsode_quality.py; never the benchmark datasets), the search's best skeletons fitted both ways
(integral form; least squares on the trajectory) with each fit's criterion, stability verdict,
forecast error and R^2 against the truth on twice the observed span; then scores selection rules
offline on those records (seconds, so rules can be compared on hundreds of trajectories).

    python benchmarks/selection_study.py collect --data DATA_DIR --heldout 40 --simple 24 \\
        --noise 0.01 0.02 --out records.csv
    python benchmarks/selection_study.py rules records.csv
"""
from __future__ import annotations

import argparse
import sys
import math
import time

import numpy as np
import pandas as pd
import sympy

from odecore.arguments import existing_file, existing_folder, relative_noise, whole_number
from odecore.fitting import SOLVE_FAILURES, fit_integral, fit_trajectory, trajectory
from odecore.metrics import r2
from odecore.noise import noise_level
from odecore.stability import unstable_reason
from odecore.solving import solve
from nsode.search.choice import FORECAST_SHARE
from nsode.search.proposals import propose_with
from nsode.search.funnel import SEARCH_BRANCHES, shortlist, template_of
from nsode.search.settings import Settings

T_OBS, T_GRID = np.linspace(0, 2, 128), np.linspace(0, 4, 256)


def generated_cases(folder: str, limit: int, seed: int = 0):
    """(name, f) of the first ODE of each held-out skeleton of a data folder, with its y0."""
    from nsode.data import tokens
    from nsode.train.stream import stream_examples

    out, seen = [], set()
    for ex in stream_examples(folder, split="val"):
        if ex.skeleton not in seen:
            seen.add(ex.skeleton)
            out.append((f"heldout:{ex.expression}", tokens.parse_infix(ex.expression), float(ex.y[0])))
        if len(out) == limit:
            break
    return out


def simple_cases(count: int, seed: int = 11):
    """(name, f, y0) of nsode_quality.py's simple ODEs with random constants."""
    from nsode_quality import simple_laws  # this folder is on the path when run as a script
    from odecore.expressions import Y

    return [(f"simple:{name}", f(Y, a, b), y0) for name, f, a, b, y0 in simple_laws(count, seed)]


def observe(f: sympy.Expr, y0: float, sigma: float, rng) -> tuple[np.ndarray, np.ndarray] | None:
    """(truth on T_GRID, noisy observations on T_OBS) or None when the solution fails on [0, 4]."""
    from odecore.expressions import compile_scalar

    both = np.union1d(T_OBS, T_GRID)
    try:
        truth = solve(compile_scalar(f), y0, both)
    except Exception:  # SolveError, or a right-hand side that does not evaluate
        return None
    if not np.all(np.isfinite(truth)) or np.ptp(truth) < 1e-6 * (1 + np.max(np.abs(truth))):
        return None  # flat: nothing to identify
    noisy = truth[np.searchsorted(both, T_OBS)] * (1 + sigma * rng.normal(size=T_OBS.size))
    return truth[np.searchsorted(both, T_GRID)], noisy


def candidates(searcher, t, y, top_k: int, max_nfev: int, basis: int = 0) -> list[dict]:
    """The top_k skeletons by the cheap score and the skeletons on the front of size vs cheap
    score (`front`, ranked after them), each fitted on the integral form and then on the
    trajectory: one record per (skeleton, stage)."""
    sigma = noise_level(t, y)
    exprs = [e for e, _ in searcher.candidates(t, y)]
    skeletons = shortlist(propose_with(exprs, t, y, sigma, Settings(basis=basis)), Settings(top_k=top_k, pareto=True))
    cut = int(FORECAST_SHARE * len(y))
    out = []
    for rank, skeleton in enumerate(skeletons):
        template, start = template_of(skeleton)
        first = fit_integral(template, t, y, start)
        if not first.ok:
            continue
        exact = fit_trajectory(template, t, y, first.values, first.y0, max_nfev=max_nfev)
        part = fit_trajectory(template, t[:cut], y[:cut], first.values, first.y0, max_nfev=max_nfev)
        forecast = math.inf
        if part.ok:
            try:
                path = trajectory(template, part.values, part.y0, t)
                forecast = float(np.sum((path[cut:] - y[cut:]) ** 2)) / sigma**2
            except SOLVE_FAILURES:
                pass
        for stage, fit in (("integral", first), ("trajectory", exact)):
            if not fit.ok:
                continue
            try:
                path = trajectory(template, fit.values, fit.y0, t)
                rss = float(np.sum((path - y) ** 2)) / sigma**2
            except SOLVE_FAILURES:
                continue
            unsafe = unstable_reason(template, fit.values, fit.y0, t, sigma, y=y)
            expr = template.substitute(fit.values)
            out.append({"rank": rank, "front": rank >= top_k, "stage": stage, "k": len(fit.values) + 1, "rss": rss, "r2_obs": r2(path, y),
                        "unsafe": unsafe is not None, "forecast": forecast, "source": skeleton.source,
                        **term_sizes(expr, t, y),
                        "expr": str(expr), "values": fit.values, "y0": fit.y0,
                        "template": template})
    return out


def term_sizes(expr: sympy.Expr, t, y) -> dict:
    """The largest term of the fitted sum on the observations, in units of the data's natural
    rate max|y| / span (`term_scale`) and of the largest |f| (`cancellation`): a sum of huge
    cancelling terms (1661 sin(y) - 1659) reads far above 1 on both."""
    from odecore.expressions import evaluate
    from nsode.search.terms import split

    with np.errstate(all="ignore"):
        terms = np.array([c * np.broadcast_to(evaluate(rest, y), y.shape) for c, rest in split(expr)], float)
        biggest, total = float(np.max(np.abs(terms))), float(np.max(np.abs(terms.sum(axis=0))))
        rate = float(np.max(np.abs(y))) / float(t[-1] - t[0])
        return {"term_scale": biggest / rate if rate > 0 else math.inf,
                "cancellation": biggest / total if total > 0 else math.inf}


def truth_r2(record: dict, grid_truth: np.ndarray) -> float:
    """R^2 of the fitted law against the truth on [0, 4], from the true y0."""
    try:
        return r2(trajectory(record["template"], record["values"], float(grid_truth[0]), T_GRID), grid_truth)
    except SOLVE_FAILURES:
        return -math.inf


def collect(args) -> None:
    from nsode.predict import Predictor, default_checkpoint

    searcher = Predictor(default_checkpoint(args.variant), beam=args.beam, search=Settings(), branches=SEARCH_BRANCHES)
    if args.dataset:
        return evaluate_dataset(args, searcher)
    cases = (generated_cases(args.data, args.heldout) if args.data else []) + simple_cases(args.simple)
    rows = []
    for sigma in args.noise:
        rng = np.random.default_rng([args.seed, int(sigma * 1e4)])
        for case, (name, f, y0) in enumerate(cases):
            seen = observe(f, y0, sigma, rng)
            if seen is None:
                continue
            grid_truth, y = seen
            start = time.perf_counter()
            records = candidates(searcher, T_OBS, y, args.top_k, args.max_nfev, args.basis)
            for record in records:
                record["r2_truth"] = truth_r2(record, grid_truth)
                rows.append({"sigma": sigma, "case": case, "name": name, "truth": str(f),
                             **{k: v for k, v in record.items() if k not in ("values", "template", "y0")}})
            print(f"sigma {sigma:g} case {case} {name[:50]}: {len(records)} fits, {time.perf_counter() - start:.1f} s",
                  flush=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)


def evaluate_dataset(args, searcher) -> None:
    """Records for a benchmark dataset, scored by the harness (extrapolation R^2): for evaluating
    a rule chosen on generated ODEs, never for choosing one."""
    from bench import datasets
    from bench.scoring import score
    from bench.tasks import observe as observe_task
    from nsode.data.tokens import to_infix

    trajectories = datasets.load(args.dataset)
    if args.limit and len(trajectories) > args.limit:
        trajectories = [trajectories[i] for i in np.linspace(0, len(trajectories) - 1, args.limit).astype(int)]
    rows = []
    for sigma in args.noise:
        for case, tr in enumerate(trajectories):
            t, y = observe_task(tr, sigma, 128, seed=0)
            for record in candidates(searcher, t, y, args.top_k, args.max_nfev, args.basis):
                s = score(to_infix(record["template"].substitute(record["values"])), tr)
                ok = s.status == "ok" and s.extrapolation
                rows.append({"sigma": sigma, "case": case, "name": f"{args.dataset}:{tr.equation_id}",
                             "truth": tr.expression,
                             "r2_truth": s.extrapolation["r2"] if ok else -math.inf,
                             **{k: v for k, v in record.items() if k not in ("values", "template", "y0")}})
            print(f"sigma {sigma:g} {tr.equation_id}", flush=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="fit the search's candidates on generated ODEs and record them")
    c.add_argument("--data", type=existing_folder, default=None, help="data folder whose held-out skeletons to use")
    c.add_argument("--heldout", type=whole_number(0), default=40, help="held-out skeletons (one ODE each)")
    c.add_argument("--simple", type=whole_number(0), default=24, help="simple ODEs with random constants")
    c.add_argument("--noise", type=relative_noise, nargs="+", default=[0.01, 0.02])
    c.add_argument("--dataset", default=None,
                   help="instead: a benchmark dataset, for evaluation only (extrapolation R^2)")
    c.add_argument("--limit", type=whole_number(1), default=30, help="with --dataset: trajectories, evenly spread")
    c.add_argument("--variant", default="nsode-eps")
    c.add_argument("--beam", type=whole_number(1), default=256)
    c.add_argument("--top-k", type=whole_number(1), default=16)
    c.add_argument("--max-nfev", type=whole_number(1), default=40)
    c.add_argument("--basis", type=int, default=Settings.basis,
                   help="powers y, ..., y**BASIS recombined beside the beam's terms (default %(default)s)")
    c.add_argument("--seed", type=whole_number(0), default=0)
    c.add_argument("--out", required=True)
    r = sub.add_parser("rules", help="score selection rules on collected records")
    r.add_argument("records", type=existing_file, nargs="+", help="CSV files of `collect` (each file's cases kept apart)")
    args = p.parse_args()
    if args.command == "collect":
        collect(args)
    else:
        print_rules(pd.concat([pd.read_csv(f).assign(run=i) for i, f in enumerate(args.records)]))


RULES = {  # name: (refit, penalty multiplier of k log n, forecast window, relative RMSE window)
    "version 3: refit 4, BIC, forecast 5": (4, 1.0, 5.0, None),
    "refit 4, BIC": (4, 1.0, 0.0, None),
    "refit 16, BIC": (16, 1.0, 0.0, None),
    "refit 16, BIC, forecast 5": (16, 1.0, 5.0, None),
    "refit 16, BIC, forecast 10": (16, 1.0, 10.0, None),
    "refit 16, BIC, forecast 20": (16, 1.0, 20.0, None),
    "refit 16, 2 x BIC penalty, forecast 5": (16, 2.0, 5.0, None),
    "refit 16, 3 x BIC penalty, forecast 5": (16, 3.0, 5.0, None),
    "refit 16, 2 x BIC penalty, forecast 10": (16, 2.0, 10.0, None),
    "refit 16, fewest constants within 5% RMSE": (16, 1.0, 0.0, 0.05),
    "refit 16, fewest constants within 10% RMSE (proged)": (16, 1.0, 0.0, 0.10),
    "refit 4, fewest constants within 10% RMSE": (4, 1.0, 0.0, 0.10),
    "refit 16, forecast 5, + 1 per node": (16, 1.0, 5.0, None, 1.0),
    "version 4 (shipped at the time): refit 16, forecast 5, + 3 per node": (16, 1.0, 5.0, None, 3.0),
    "refit 16, forecast 10, + 3 per node": (16, 1.0, 10.0, None, 3.0),
    "refit 16, BIC, + 1 per node": (16, 1.0, 0.0, None, 1.0),
    "refit 16, half forecast 5": (16, 1.0, 5.0, None, 0.0, 0.5),
    "refit 16, half forecast 5, + 1 per node": (16, 1.0, 5.0, None, 1.0, 0.5),
    "version 3, cancellation <= 10": (4, 1.0, 5.0, None, 0.0, 1.0, 10.0),
    "version 3, cancellation <= 30": (4, 1.0, 5.0, None, 0.0, 1.0, 30.0),
    "version 3, cancellation <= 100": (4, 1.0, 5.0, None, 0.0, 1.0, 100.0),
    "refit 16, forecast 5, cancellation <= 30": (16, 1.0, 5.0, None, 0.0, 1.0, 30.0),
    "version 4, + 3 per function": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 3.0),
    "version 4, + 10 per function": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 10.0),
    "refit 16, forecast 5, + 5 per function": (16, 1.0, 5.0, None, 0.0, 1.0, math.inf, 5.0),
    "refit 16, forecast 10, + 3 per node, + 5 per function": (16, 1.0, 10.0, None, 3.0, 1.0, math.inf, 5.0),
    "version 4 + size front": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, True),
    "version 4 + size front, prior 1 per node": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, True, 1.0),
    "version 4 + size front, prior 2 per node": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, True, 2.0),
    "version 4 + size front, prior 3 per node": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, True, 3.0),
    "version 4, prior 1 per node": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, False, 1.0),
    "version 4, prior 2 per node": (16, 1.0, 5.0, None, 3.0, 1.0, math.inf, 0.0, False, 2.0),
    "size front, BIC, forecast 5, prior 2 per node": (16, 1.0, 5.0, None, 0.0, 1.0, math.inf, 0.0, True, 2.0),
    "size front, BIC, forecast 10, prior 2 per node": (16, 1.0, 10.0, None, 0.0, 1.0, math.inf, 0.0, True, 2.0),
}


def choose(case: pd.DataFrame, refit: int, penalty: float, window: float, relative: float | None,
           per_node: float = 0.0, forecast_weight: float = 1.0, cancellation: float = math.inf,
           per_function: float = 0.0, front: bool = False, prior: float = 0.0, n: int = 128):
    """The record a rule picks: the trajectory fit for the `refit` best skeletons and, with
    `front`, for the skeletons on the size front (the integral fit for the others or when it
    failed), safe ones first, then by the rule. `prior` charges criterion units per expression
    node everywhere (a prior over laws), `per_node` only inside the forecast window."""
    if "front" in case and not front:
        case = case[~case["front"].astype(bool)]
    refitted = case["rank"] < refit
    if front and "front" in case:
        refitted = refitted | case["front"].astype(bool)
    pick = case[(case["stage"] == "trajectory") & refitted]
    rest = case[(case["stage"] == "integral") & ~case["rank"].isin(pick["rank"])]
    pool = pd.concat([pick, rest])
    pool = pool.assign(ic=pool["rss"] + penalty * pool["k"] * math.log(n) + prior * pool["nodes"])
    safe = pool[~pool["unsafe"]]
    if "cancellation" in pool and (safe["cancellation"] <= cancellation).any():
        safe = safe[safe["cancellation"] <= cancellation]
    if safe.empty:
        return pool.sort_values(["ic", "k"]).iloc[0]
    if relative is not None:
        near = safe[safe["rss"] <= safe["rss"].min() * (1 + relative) ** 2]
        return near.sort_values(["k", "rss"]).iloc[0]
    best = safe["ic"].min()
    near = safe[safe["ic"] <= best + window]
    forecast = forecast_weight * near["forecast"] if window > 0 else 0.0
    score = near["ic"] + forecast + per_node * near["nodes"] + per_function * near["functions"]
    return near.assign(score=score).sort_values(["score", "k"]).iloc[0]


def _functions(expr: sympy.Expr) -> int:
    """Transcendental function nodes (sin, cos, exp, log, ...) and non-constant exponents."""
    return sum(isinstance(node, sympy.Function) or (node.is_Pow and not node.exp.is_Number)
               for node in sympy.preorder_traversal(expr))


def print_rules(records: pd.DataFrame) -> None:
    """Per noise level and case family: share recovered (R^2 > 0.99 against the truth on [0, 4]),
    share > 0.9 and median truth R^2 of each rule's picks; 'best in pool' is the upper bound."""
    from odecore.expressions import complexity, parse

    records = records.assign(family=records["name"].str.split(":").str[0],
                             nodes=[complexity(parse(e)) for e in records["expr"]],
                             functions=[_functions(parse(e)) for e in records["expr"]])
    print("| sigma | cases | rule | recovered (> 0.99) | > 0.9 | median R^2 on [0, 4] |")
    print("|---:|---|---|---:|---:|---:|")
    for (sigma, family), group in records.groupby(["sigma", "family"]):
        cases = list(group.groupby(["run", "case"]))
        ceiling = np.array([c["r2_truth"].max() for _, c in cases])
        print(f"| {sigma:g} | {family} ({len(cases)}) | best in pool | {np.mean(ceiling > 0.99):.0%} | "
              f"{np.mean(ceiling > 0.9):.0%} | {np.median(ceiling):.3f} |")
        for name, rule in RULES.items():
            got = np.array([choose(c, *rule)["r2_truth"] for _, c in cases])
            print(f"| {sigma:g} | {family} ({len(cases)}) | {name} | {np.mean(got > 0.99):.0%} | "
                  f"{np.mean(got > 0.9):.0%} | {np.median(got):.3f} |")
    generated = records[records["family"].isin(["heldout", "simple"])]
    if len(generated):
        cases = list(generated.groupby(["run", "sigma", "family", "case"]))
        print(f"\nall {len(cases)} generated trajectories with noise: recovered (> 0.99) / > 0.9, counts\n")
        for name, rule in RULES.items():
            got = np.array([choose(c, *rule)["r2_truth"] for _, c in cases])
            print(f"- {name}: {np.sum(got > 0.99)} / {np.sum(got > 0.9)}")



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

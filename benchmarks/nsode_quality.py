"""Median R^2 (interpolation and extrapolation) of shipped NSODE checkpoints on the benchmark
datasets, with the paper's selection and with the skeleton search (nsode/search/funnel.py), beside the
ProGED-style grammar baseline and the search fed by the grammar instead of (or besides) the model;
plus skeleton recall and exact-skeleton accuracy on held-out generated ODEs and recovery of
simple ODEs with random constants. Prints markdown tables.

Uses the harness's own tasks (bench.tasks.observe) and scoring (bench.scoring.score), so the
figures match `python -m bench run --methods nsode-eps ...`; this script is the quicker loop.

    python benchmarks/nsode_quality.py [--variants nsode-eps] [--datasets textbook classic]
        [--noise 0 0.01 0.02] [--n 128] [--beam 64] [--limit 20] [--heldout DATA_DIR] [--simple 24]
        [--simple-scales 1 100 0.01] [--simple-time-units 1 1000] [--generated DATA_DIR ...] [--scaled nsode-eps-scaled]
        [--rows paper search proged grammar+search union+search]
        [--search-beam 256] [--top-k 16]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sympy
import torch

from bench import datasets
from odebaselines import grammar
from bench.scoring import score
from bench.tasks import observe
from odecore.arguments import existing_folder, positive_number, relative_noise, whole_number
from odecore.expressions import Y, parse, to_string
from nsode.options import add_search_arguments, changed_flags, settings_from
from nsode.predict import Predictor, default_checkpoint
from nsode.search.proposals import propose
from nsode.search.funnel import SEARCH_BEAM, SEARCH_BRANCHES, search
from nsode.search.settings import Settings
from nsode.search.terms import skeleton_key
from odecore.noise import noise_level

LARGE = Path(__file__).parents[1] / "datasets" / "large.json"
ROWS = ("paper", "search", "proged", "grammar+search", "union+search")


def grammar_expressions(count: int, seed: int = 0) -> list[sympy.Expr]:
    """`count` distinct ProGED grammar skeletons with random constants in [0.5, 1.5] (a numeric
    instance of each, so that the search reads them as it reads the model's expressions)."""
    rng = np.random.default_rng(seed)
    out = []
    for skeleton in grammar.sample_skeletons(count, rng):
        values = rng.uniform(0.5, 1.5, len(skeleton.constants))
        out.append(skeleton.expr.xreplace({c: sympy.Float(v) for c, v in zip(skeleton.constants, values)}))
    return out


def runners(paper: Predictor, searcher: Predictor, settings: Settings, grammar_count: int) -> dict:
    """Each row of the tables as a function (t, y) -> predicted expression ('' when none)."""
    def proged(t, y):
        fits = [f for f in grammar.search(t, y, grammar_count, 4, seed=0) if f.rmse < float("inf")]
        return fits[0].expression if fits else ""

    def grammar_search(t, y):
        found, _ = search(grammar_expressions(grammar_count), t, y, settings)
        return _expression(found)

    def union_search(t, y):
        exprs = [e for e, _ in searcher.candidates(t, y)]
        found, _ = search(exprs, t, y, settings, extra=[("grammar", grammar_expressions(grammar_count))])
        return _expression(found)

    return {"paper": lambda t, y: paper.predict(t, y).expression,
            "search": lambda t, y: searcher.predict(t, y).expression,
            "proged": proged, "grammar+search": grammar_search, "union+search": union_search}


def _expression(found) -> str:
    from nsode.data.tokens import to_infix

    return to_infix(found[0].expr) if found and np.isfinite(found[0].r2) else ""


def dataset_table(run: dict, rows, names, noises, n, limit, log=None) -> None:
    """Median and share tables per dataset, sigma and row; `log` (see `case_logger`) receives one
    record per task (to see which trajectories a change wins or loses)."""
    print("| dataset | sigma | method | tasks | median R^2 interp | median R^2 extrap | interp > 0.9 | "
          "extrap > 0.9 | median s / task |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        trajectories = datasets.load(name)
        if limit and len(trajectories) > limit:  # evenly spread over the dataset's equations
            trajectories = [trajectories[i] for i in np.linspace(0, len(trajectories) - 1, limit).astype(int)]
        for sigma in noises:
            for row in rows:
                interp, extrap, secs, per_task = [], [], [], []
                for tr in trajectories:
                    t, y = observe(tr, sigma, n, seed=0)
                    start = time.perf_counter()
                    expression = run[row](t, y)
                    secs.append(time.perf_counter() - start)
                    s = score(expression, tr) if expression else None
                    ok = s is not None and s.status == "ok"
                    interp.append(s.interpolation["r2"] if ok else -np.inf)
                    extrap.append(s.extrapolation["r2"] if ok and s.extrapolation else -np.inf)
                    per_task.append({"dataset": name, "equation": tr.equation_id, "y0_index": tr.y0_index,
                                     "truth": tr.expression, "sigma": sigma, "row": row, "expression": expression,
                                     "r2_interp": interp[-1], "r2_extrap": extrap[-1],
                                     "seconds": secs[-1]})
                interp, extrap = np.array(interp), np.array(extrap)
                print(f"| {name} | {sigma:g} | {row} | {len(interp)} | {np.median(interp):.3f} | "
                      f"{np.median(extrap):.3f} | {np.mean(interp > 0.9):.0%} | {np.mean(extrap > 0.9):.0%} | "
                      f"{np.median(secs):.2f} |", flush=True)
                if log:
                    log(per_task)


def recall(searcher: Predictor, t, y, truth: sympy.Expr) -> tuple[bool, bool]:
    """Whether the true skeleton (as the search reads skeletons) is among the beam's unique
    skeletons, and among them plus the search's variants."""
    key = skeleton_key(truth)
    exprs = [e for e, _ in searcher.candidates(t, y)]
    sigma = noise_level(t, y)
    return key in propose(exprs, t, y, sigma, variants=False), key in propose(exprs, t, y, sigma)


def heldout_examples(folder: str, variant: str, limit: int) -> list[tuple[np.ndarray, np.ndarray, sympy.Expr]]:
    """(t, y, f) of the first ODE of each validation skeleton of a data folder, observed as the
    variant observes (seeded)."""
    from nsode.train.batching import observe as observe_variant
    from nsode.data import tokens
    from nsode.train.stream import stream_examples

    rng = np.random.default_rng(0)
    out, seen = [], set()
    for ex in stream_examples(folder, split="val"):
        if ex.skeleton not in seen:
            seen.add(ex.skeleton)
            out.append((*observe_variant(ex.t, ex.y, variant, rng), tokens.parse_infix(ex.expression)))
        if len(out) == limit:
            break
    return out


def skeleton_accuracy(paper: Predictor, searcher: Predictor, folder: str, variant: str, limit: int) -> None:
    """On held-out generated ODEs (one per validation skeleton): recall of the true skeleton in the
    beam (and with the search's variants), the paper selection's exact skeleton (the generator's
    definition: constants replaced by c, signs kept) and the search's (its own, sign-free)."""
    from nsode.data import tokens

    examples = heldout_examples(folder, variant, limit)
    counts = np.zeros(4)
    for t, y, truth in examples:
        counts[:2] += recall(searcher, t, y, truth)
        chosen = paper.predict(t, y).expression
        counts[2] += bool(chosen) and tokens.skeleton(tokens.parse_infix(chosen)) == tokens.skeleton(truth)
        chosen = searcher.predict(t, y).expression
        counts[3] += bool(chosen) and skeleton_key(tokens.parse_infix(chosen)) == skeleton_key(truth)
    share = counts / max(len(examples), 1)
    print(f"\nheld-out generated ODEs ({len(examples)}, one per validation skeleton of {folder}, {variant} "
          f"observations): true skeleton in the beam {share[0]:.0%}, with variants {share[1]:.0%}; "
          f"exact skeleton chosen: paper selection {share[2]:.0%}, search {share[3]:.0%}")


SIMPLE_FORMS = {  # textbook-sized ODEs f(y, a, b) with a in U(0.1, 2), b in U(0.5, 3)
    "-a*y": lambda y, a, b: -a * y,
    "b - a*y": lambda y, a, b: b - a * y,
    "a*y*(1 - y/(3*b))": lambda y, a, b: a * y * (1 - y / (3 * b)),
    "-a*y**3 (cubic decay)": lambda y, a, b: -a * y**3,
    "a*y*(1 - y/(3*b)) - 3*a*b/8 (harvesting, half the maximum yield)":
        lambda y, a, b: a * y * (1 - y / (3 * b)) - 3 * a * b / 8,
    "a - (a + b)*y/(1 + y) (saturating)": lambda y, a, b: a - (a + b) * y / (1 + y),
}
GROWTH_FORMS = {  # laws that are not numbers at y = 0 but tend to 0 there (the stability check's start at rest)
    "a*y*log(3*b/y) (Gompertz)": lambda y, a, b: a * y * _log(3 * b / y),
}
LAW_SETS = {"simple": SIMPLE_FORMS, "growth": GROWTH_FORMS}


def _log(x):
    """log of a number, an array or a sympy expression (the forms serve the solver and the truth)."""
    return sympy.log(x) if isinstance(x, sympy.Basic) else np.log(x)


SIMPLE_T, SIMPLE_GRID = np.linspace(0, 2, 128), np.linspace(0, 4, 256)


def simple_laws(count: int, seed: int = 11, forms: dict = SIMPLE_FORMS):
    """(name, f(y, a, b), a, b, y0) of `count` simple ODEs with random constants (y0 in U(1, 4)),
    the `forms` (default SIMPLE_FORMS) in turn."""
    forms = list(forms.items())
    rng = np.random.default_rng(seed)
    for k in range(count):
        a, b, y0 = rng.uniform(0.1, 2.0), rng.uniform(0.5, 3.0), rng.uniform(1.0, 4.0)
        yield (*forms[k % len(forms)], a, b, y0)


def simple_cases(count: int, sigma: float, seed: int = 11, scale: float = 1.0, rate: float = 1.0,
                 start: float = 1.0, forms: dict = SIMPLE_FORMS) -> list[tuple[np.ndarray, np.ndarray, sympy.Expr]]:
    """(truth on SIMPLE_GRID, noisy observations on SIMPLE_T, f) for `count` simple ODEs with
    random constants (y0 in U(1, 4)), the `forms` (default SIMPLE_FORMS) in turn; the same cases for
    every noise level (noise drawn from its own stream). `scale` s gives the same laws in other
    units of y: trajectories s y(t) of y' = s f(y / s) (values of 100s for s = 100). `rate` r
    runs them r times as fast, y' = r f(y): the observed span then holds r times as many time
    constants (a long record, such as decades of a population). `start` multiplies each y0 (0.1:
    growth from far below the equilibrium); a law whose solution then fails before t = 4 (the
    harvested logistic below its threshold collapses) is left out. GROWTH_FORMS as `forms` draws
    Gompertz growth."""
    from odecore.solving import SolveError, solve

    both = np.union1d(SIMPLE_T, SIMPLE_GRID)
    at_t, at_grid = np.searchsorted(both, SIMPLE_T), np.searchsorted(both, SIMPLE_GRID)
    noise_rng = np.random.default_rng(seed + 1)
    cases = []
    for _, f, a, b, y0 in simple_laws(count, seed, forms):
        try:
            truth = solve(lambda v: rate * f(v, a, b), start * y0, both)
        except SolveError:
            if start == 1.0:
                raise
            continue
        noisy = truth[at_t] * (1 + sigma * noise_rng.normal(size=SIMPLE_T.size))
        cases.append((scale * truth[at_grid], scale * noisy, scale * rate * f(Y / scale, a, b)))
    return cases


def recovery_r2(fit, cases, *, truth_refit: bool = False) -> np.ndarray:
    """R^2 against the truth on [0, 4] of the ODE `fit(t, y)` returns for each case (-inf: none);
    with `truth_refit`, of the true law refitted to the observations instead."""
    from odecore.expressions import parse  # the harness's parser: any method's output (e.g. abs)
    from nsode.select import exact_r2

    out = []
    for truth, y, f in cases:
        expression = refitted_truth(f, SIMPLE_T, y) if truth_refit else fit(SIMPLE_T, y)
        out.append(exact_r2(parse(expression), SIMPLE_GRID, truth) if expression else -np.inf)
    return np.array(out)


def refitted_truth(truth: sympy.Expr, t: np.ndarray, y: np.ndarray) -> str:
    """The true law with every number free, fitted by least squares on the trajectory (the
    search's fitter) from the true values: what a method that always picks the true skeleton
    gets. Its recovery rate is the ceiling row of the tables (the harness's `truth-refit` method;
    a reference, not a bound trajectory by trajectory)."""
    from odecore.expressions import to_string
    from odecore.fitting import refit_numbers

    fit = refit_numbers(truth, t, y)
    return to_string(fit[0]) if fit else ""


def simple_recovery(run: dict, rows, searcher: Predictor, count: int, noises, seed: int = 11,
                    scales=(1.0,), log=None, units=(1.0,)) -> None:
    """Whether the chosen ODE is the true one for simple ODEs with random constants, judged by its
    R^2 against the truth on [0, 4] from 128 points on [0, 2] (multiplicative noise sigma): a
    curve fit of [0, 2] rarely extrapolates to R^2 > 0.99. `scales` repeats the set with y in
    other units (x100: values in the hundreds), where a model trained on y near 1 is tested, and
    `units` with the times in other units (x1000: milliseconds for seconds; `in_time_unit`).
    Then the same counts law by law (all scales and units together): which laws the data pin down."""
    print(f"\nsimple ODEs ({count}: {'; '.join(SIMPLE_FORMS)}; random constants, n = 128 on [0, 2])\n")
    print(RECOVERY_HEADER)
    by_sigma = {}
    for sigma in noises:
        solved = [recovery_rows(run, rows, searcher, simple_cases(count, sigma, seed, scale=scale), sigma,
                                f"x{scale:g}" + (f", t x{unit:g}" if unit != 1 else ""), log, unit)
                  for scale in scales for unit in units]
        by_sigma[sigma] = {row: np.concatenate([s[row] for s in solved]) for row in solved[0]}
    forms = np.tile(np.arange(count) % len(SIMPLE_FORMS), len(scales) * len(units))
    print(f"\nrecovered by law (R^2 on [0, 4] > 0.99; scales {', '.join(f'x{s:g}' for s in scales)}, "
          f"time units {', '.join(f'x{u:g}' for u in units)} together)\n")
    print("| sigma | law | " + " | ".join(["true law, refitted (ceiling)", *rows]) + " |")
    print("|---:|---|" + "---:|" * (1 + len(rows)))
    for sigma, solved in by_sigma.items():
        for k, law in enumerate(SIMPLE_FORMS):
            cells = [f"{int(v[forms == k].sum())} of {int(np.sum(forms == k))}" for v in solved.values()]
            print(f"| {sigma:g} | {law} | " + " | ".join(cells) + " |")


def generated_recovery(run: dict, rows, searcher: Predictor, folders, count: int, noises, seed: int = 0,
                       log=None) -> None:
    """The same on the first ODE of each of `count` held-out skeletons of each data folder (the
    generator's own distributions, which no checkpoint trained on), from its stored y0; the noise
    draws of `selection_study.py collect --seed SEED`."""
    from selection_study import generated_cases

    print(f"\nheld-out generated ODEs (first ODE of each of {count} validation skeletons, n = 128 on [0, 2])\n")
    print(RECOVERY_HEADER)
    for folder in folders:
        laws = generated_cases(folder, count)
        for sigma in noises:
            cases = [(truth, y, f) for _, truth, y, f in generated_observations(laws, sigma, seed)]
            recovery_rows(run, rows, searcher, cases, sigma, f"{Path(folder).name} ({len(cases)})", log)


def generated_observations(laws, sigma: float, seed: int) -> list[tuple[str, np.ndarray, np.ndarray, sympy.Expr]]:
    """(name, truth on [0, 4], observations on [0, 2], f) of each (name, f, y0) of `laws` whose
    solution exists on [0, 4], with the noise draws of `selection_study.py collect --seed SEED`."""
    from selection_study import observe

    rng = np.random.default_rng([seed, int(sigma * 1e4)])
    return [(name, *seen, f) for name, f, y0 in laws if (seen := observe(f, y0, sigma, rng)) is not None]


RECOVERY_HEADER = ("| sigma | set | method | recovered (R^2 on [0, 4] > 0.99) | of those the ceiling recovers | "
                   "> 0.999 | median R^2 on [0, 4] | recovered only by this row / only by the first (sign test p) | "
                   "true skeleton in beam | with variants |\n"
                   "|---:|---|---|---:|---:|---:|---:|---|---:|---:|")


def in_time_unit(fit, unit: float):
    """`fit` (t, y) -> law, given the times in another unit (t * unit: x1000 reads seconds as
    milliseconds) and its law written back in the original one (times unit): whether a method's
    answer depends on the clock's unit."""
    if unit == 1:
        return fit

    def read(t, y):
        law = fit(unit * np.asarray(t), y)
        return to_string(sympy.Float(unit) * parse(law)) if law else law
    return read


def recovery_rows(run: dict, rows, searcher: Predictor, cases, sigma: float, name: str,
                  log=None, unit: float = 1.0) -> dict[str, np.ndarray]:
    """One table row per method on `cases` (truth on [0, 4], observations, f), after the ceiling:
    the true law itself refitted to the observations, what a method that always picks the true
    skeleton gets. Each row after the first is paired with the first, trajectory by trajectory.
    A row's misses among the ceiling's recoveries are the method's; the others are the data's
    (128 noisy points on [0, 2] that do not pin the law's course on [2, 4]). Returns which cases
    each row recovered, the ceiling first; `log` (see `case_logger`) receives each case's R^2. With
    a time `unit`, the methods read the times in that unit (`in_time_unit`)."""
    from scipy.stats import binomtest

    hits = np.array([recall(searcher, unit * SIMPLE_T, y, expr / unit) for _, y, expr in cases]).mean(axis=0)
    ceiling = recovery_r2(None, cases, truth_refit=True)
    reachable = ceiling > 0.99
    label = f"{sigma:g} | {name}"
    print(f"| {label} | true law, refitted (ceiling) | {int(reachable.sum())} of {len(cases)} "
          f"({np.mean(reachable):.0%}) | | {np.mean(ceiling > 0.999):.0%} | {np.median(ceiling):.3f} | | | |",
          flush=True)
    first, out = None, {"ceiling": reachable}

    def record(row: str, r2s: np.ndarray) -> None:
        if log:
            log([{"sigma": sigma, "set": name, "case": i, "truth": str(f), "row": row, "r2_0_4": r2,
                  "recovered": r2 > 0.99} for i, ((_, _, f), r2) in enumerate(zip(cases, r2s))])

    record("ceiling", ceiling)
    for row in rows:
        solved = out[row] = (r2s := recovery_r2(in_time_unit(run[row], unit), cases)) > 0.99
        record(row, r2s)
        if first is None:
            first, paired = solved, ""
        else:
            only, only_first = int(np.sum(solved & ~first)), int(np.sum(first & ~solved))
            p = binomtest(only, only + only_first).pvalue if only + only_first else 1.0
            paired = f"{only} / {only_first} (p {p:.2g})"
        print(f"| {label} | {row} | {int(solved.sum())} of {len(cases)} ({np.mean(solved):.0%}) | "
              f"{int(np.sum(solved & reachable))} of {int(reachable.sum())} | {np.mean(r2s > 0.999):.0%} | "
              f"{np.median(r2s):.3f} | {paired} | {hits[0]:.0%} | {hits[1]:.0%} |", flush=True)
    return out


def case_logger(path: str | None, variant: str):
    """Appends one CSV line per (trajectory, row) of the recovery sets to `path`, so that two runs
    (two checkpoints, two settings) on the same draw can be paired case by case; None without one."""
    if not path:
        return None

    def log(records: list[dict]) -> None:
        frame = pd.DataFrame(records).assign(variant=variant)
        frame.to_csv(path, mode="a", header=not Path(path).is_file(), index=False)

    return log


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", nargs="+", default=["nsode", "nsode-eps"])
    p.add_argument("--datasets", nargs="+", help="dataset names ('none': skip)", default=["textbook", "classic"] + (["large"] if LARGE.is_file() else []))
    p.add_argument("--noise", type=relative_noise, nargs="+", default=[0.0, 0.01, 0.02])
    p.add_argument("--n", type=whole_number(10), default=128)
    p.add_argument("--beam", type=whole_number(1), default=64, help="beam of the paper's selection")
    p.add_argument("--search-beam", type=whole_number(1), default=SEARCH_BEAM, help="beam of the search rows")
    p.add_argument("--branches", type=whole_number(0), default=SEARCH_BRANCHES,
                   help="constant intervals each hypothesis of the search beam may branch into (0: all, as the paper)")
    p.add_argument("--grammar-count", type=whole_number(1), default=64, help="skeletons sampled from the ProGED grammar")
    p.add_argument("--rows", nargs="+", choices=ROWS, default=["paper", "search"])
    p.add_argument("--limit", type=whole_number(1), default=None, help="trajectories per dataset, evenly spread (default: all)")
    p.add_argument("--heldout", type=existing_folder, default=None, help="data folder for skeleton recall and accuracy (its validation skeletons)")
    p.add_argument("--heldout-limit", type=whole_number(1), default=100, help="held-out ODEs to decode (one solution each)")
    p.add_argument("--simple", type=whole_number(0), default=24, help="simple ODEs with random constants to recover (0: skip)")
    p.add_argument("--simple-noise", type=relative_noise, nargs="+", default=[0.0, 0.01])
    p.add_argument("--simple-seed", type=whole_number(0), default=11, help="seed of the simple ODEs' constants (and, + 1, their noise)")
    p.add_argument("--simple-scales", type=positive_number, nargs="+", default=[1.0],
                   help="units of y for the simple ODEs (e.g. 1 100 0.01: the same laws with y x100 and x0.01)")
    p.add_argument("--simple-time-units", type=positive_number, nargs="+", default=[1.0], metavar="UNIT",
                   help="units of t for the simple ODEs (e.g. 1 1000 0.125: the same records with times x1000, "
                        "as milliseconds for seconds, and x1/8; each law found is written back in the original unit)")
    p.add_argument("--generated", nargs="*", type=existing_folder, default=[], metavar="DATA_DIR",
                   help="data folders whose held-out skeletons' ODEs to recover (first ODE of each)")
    p.add_argument("--generated-limit", type=whole_number(1), default=40, help="held-out skeletons per --generated folder")
    p.add_argument("--generated-noise", type=relative_noise, nargs="+", default=[0.01, 0.02])
    p.add_argument("--generated-seed", type=whole_number(0), default=0, help="seed of the held-out ODEs' noise draws")
    p.add_argument("--scaled", default=None, metavar="VARIANT",
                   help="the search rows route as the shipped nsode-eps+refine does: this scale-invariant "
                        "checkpoint (e.g. nsode-eps-scaled) reads trajectories outside the variant's training range")
    p.add_argument("--checkpoints", default=None, help="folder holding <variant>/ checkpoints (default: shipped)")
    p.add_argument("--threads", type=whole_number(1), default=1)
    p.add_argument("--tasks-csv", default=None, help="also write one line per (dataset task, row, variant) to this CSV")
    p.add_argument("--cases-csv", default=None,
                   help="also write one line per (trajectory, row) of the simple and generated sets to this CSV "
                        "(R^2 on [0, 4], recovered): pair two runs on the same draw case by case")
    add_search_arguments(p)
    args = p.parse_args()
    if args.datasets != ["none"]:
        from bench.datasets import DatasetError, resolve

        try:
            for name in args.datasets:  # before any table is printed
                resolve(name)
        except DatasetError as err:
            p.error(f"--datasets: {err}")
    torch.set_num_threads(args.threads)
    for path in (args.tasks_csv, args.cases_csv):  # written anew by each run, one part per variant
        if path:
            Path(path).unlink(missing_ok=True)
    settings = settings_from(args)

    def checkpoint(name: str) -> Path:
        return Path(args.checkpoints) / name if args.checkpoints else default_checkpoint(name)

    for variant in args.variants:
        print(f"\n## {variant} (paper beam {args.beam}, search beam {args.search_beam}, search settings: "
              f"{' '.join(changed_flags(args, values=True)) or 'the defaults'}, n = {args.n})\n")
        paper = Predictor(checkpoint(variant), beam=args.beam)
        scaled = checkpoint(args.scaled) if args.scaled else None
        searcher = Predictor(paper.model, beam=args.search_beam, search=settings, scaled=scaled,
                             branches=args.branches)
        run = runners(paper, searcher, settings, args.grammar_count)
        log = case_logger(args.cases_csv, variant)
        if args.datasets != ["none"]:
            dataset_table(run, args.rows, args.datasets, args.noise, args.n, args.limit,
                          case_logger(args.tasks_csv, variant))
        if args.heldout:
            skeleton_accuracy(paper, searcher, args.heldout, variant, args.heldout_limit)
        if args.generated:
            generated_recovery(run, args.rows, searcher, args.generated, args.generated_limit, args.generated_noise,
                               args.generated_seed, log)
        if args.simple:
            simple_recovery(run, args.rows, searcher, args.simple, args.simple_noise, args.simple_seed,
                            args.simple_scales, log, args.simple_time_units)



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

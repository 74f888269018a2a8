"""Median R^2 (interpolation and extrapolation) of shipped NSODE checkpoints on the benchmark
datasets, with and without constant refinement, plus exact-skeleton accuracy on held-out
generated ODEs and recovery of simple ODEs with random constants. Prints markdown tables.

Uses the harness's own tasks (bench.tasks.observe) and scoring (bench.scoring.score), so the
figures match `python -m bench run --methods nsode-eps ...`; this script is the quicker loop.

    python benchmarks/nsode_quality.py [--variants nsode-eps] [--datasets textbook classic]
        [--noise 0 0.01 0.02] [--n 128] [--beam 64] [--limit 20] [--heldout DATA_DIR] [--simple 24]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from bench import datasets
from bench.scoring import score
from bench.tasks import observe
from nsode.predict import Predictor, default_checkpoint

LARGE = Path(__file__).parents[1] / "datasets" / "large.json"


def dataset_table(pred: Predictor, names, noises, n, limit, refine_levels) -> None:
    print("| dataset | sigma | refine | tasks | median R^2 interp | median R^2 extrap | R^2 > 0.9 | s / task |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        trajectories = datasets.load(name)
        if limit and len(trajectories) > limit:  # evenly spread over the dataset's equations
            trajectories = [trajectories[i] for i in np.linspace(0, len(trajectories) - 1, limit).astype(int)]
        for sigma in noises:
            for refine in refine_levels:
                pred.refine = refine
                interp, extrap, secs = [], [], []
                for tr in trajectories:
                    t, y = observe(tr, sigma, n, seed=0)
                    start = time.perf_counter()
                    result = pred.predict(t, y)
                    secs.append(time.perf_counter() - start)
                    s = score(result.expression, tr) if result.expression else None
                    ok = s is not None and s.status == "ok"
                    interp.append(s.interpolation["r2"] if ok else -np.inf)
                    extrap.append(s.extrapolation["r2"] if ok and s.extrapolation else -np.inf)
                print(f"| {name} | {sigma:g} | {refine} | {len(interp)} | {np.median(interp):.3f} | "
                      f"{np.median(extrap):.3f} | {np.mean(np.array(interp) > 0.9):.2f} | {np.mean(secs):.2f} |",
                      flush=True)


def skeleton_accuracy(pred: Predictor, folder: str, variant: str, limit: int) -> None:
    """Share of held-out generated ODEs (validation skeletons) whose chosen ODE has the true skeleton
    (the generator's definition: constants replaced by c, signs kept)."""
    from nsode.batching import observe as observe_variant
    from nsode.data import tokens
    from nsode.stream import stream_examples

    def skeleton(text: str) -> str | None:
        try:
            return tokens.skeleton(tokens.parse_infix(text))
        except (tokens.EncodingError, ValueError):
            return None

    rng = np.random.default_rng(0)
    hits, total, r2s = 0, 0, []
    examples, seen = [], set()
    for ex in stream_examples(folder, split="val"):  # the first ODE of each held-out skeleton
        if ex.skeleton not in seen:
            seen.add(ex.skeleton)
            examples.append(ex)
        if len(examples) == limit:
            break
    for ex in examples:
        t, y = observe_variant(ex.t, ex.y, variant, rng)
        result = pred.predict(t, y)
        hits += bool(result.expression) and skeleton(result.expression) == skeleton(ex.expression)
        r2s.append(result.r2)
        total += 1
    print(f"\nexact skeleton on {total} held-out generated ODEs, one per validation skeleton ({variant} observations): "
          f"{hits / max(total, 1):.1%}; median R^2 on the observations {np.median(r2s):.3f}")


SIMPLE_FORMS = {  # textbook-sized ODEs: decay, relaxation to b, logistic growth to capacity 3b
    "-a*y": lambda y, a, b: -a * y,
    "b - a*y": lambda y, a, b: b - a * y,
    "a*y*(1 - y/(3*b))": lambda y, a, b: a * y * (1 - y / (3 * b)),
}


def simple_recovery(pred: Predictor, count: int, seed: int = 11) -> None:
    """Whether the chosen ODE is the true one for simple ODEs with random constants (a in U(0.1, 2),
    b in U(0.5, 3), y0 in U(1, 4)), judged by its R^2 against the truth on [0, 4] from a clean
    trajectory of 128 points on [0, 2]: a curve fit of [0, 2] rarely extrapolates to R^2 > 0.99."""
    from core.solving import solve
    from nsode.data.tokens import parse_infix
    from nsode.select import exact_r2

    rng = np.random.default_rng(seed)
    t, grid = np.linspace(0, 2, 128), np.linspace(0, 4, 256)
    both = np.union1d(t, grid)
    at_t, at_grid = np.searchsorted(both, t), np.searchsorted(both, grid)
    forms = list(SIMPLE_FORMS.values())
    r2s = []
    for k in range(count):
        a, b, y0 = rng.uniform(0.1, 2.0), rng.uniform(0.5, 3.0), rng.uniform(1.0, 4.0)
        f = forms[k % len(forms)]
        truth = solve(lambda y: f(y, a, b), y0, both)
        result = pred.predict(t, truth[at_t])
        r2s.append(exact_r2(parse_infix(result.expression), grid, truth[at_grid]) if result.expression else -np.inf)
    r2s = np.array(r2s)
    print(f"\nsimple ODEs ({count}: {', '.join(SIMPLE_FORMS)}; random constants, clean, n = 128 on [0, 2]): "
          f"R^2 on [0, 4] > 0.99 for {np.mean(r2s > 0.99):.0%}, > 0.999 for {np.mean(r2s > 0.999):.0%}; "
          f"median {np.median(r2s):.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", nargs="+", default=["nsode", "nsode-eps"])
    p.add_argument("--datasets", nargs="+", help="dataset names ('none': only the held-out ODEs)", default=["textbook", "classic"] + (["large"] if LARGE.is_file() else []))
    p.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.01, 0.02])
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--beam", type=int, default=64)
    p.add_argument("--limit", type=int, default=None, help="trajectories per dataset, evenly spread (default: all)")
    p.add_argument("--no-refine", action="store_true", help="skip the refined rows")
    p.add_argument("--heldout", default=None, help="data folder for exact-skeleton accuracy (its validation skeletons)")
    p.add_argument("--heldout-limit", type=int, default=100, help="held-out ODEs to decode (one solution each)")
    p.add_argument("--simple", type=int, default=24, help="simple ODEs with random constants to recover (0: skip)")
    p.add_argument("--checkpoints", default=None, help="folder holding <variant>/ checkpoints (default: shipped)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    for variant in args.variants:
        print(f"\n## {variant} (beam {args.beam}, n = {args.n})\n")
        folder = Path(args.checkpoints) / variant if args.checkpoints else default_checkpoint(variant)
        pred = Predictor(folder, beam=args.beam)
        if args.datasets != ["none"]:
            dataset_table(pred, args.datasets, args.noise, args.n, args.limit, [0] if args.no_refine else [0, 3])
        if args.heldout:
            pred.refine = 0
            skeleton_accuracy(pred, args.heldout, variant, args.heldout_limit)
        if args.simple:
            pred.refine = 0
            simple_recovery(pred, args.simple)


if __name__ == "__main__":
    main()

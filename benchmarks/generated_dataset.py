"""A harness dataset file of fresh generated laws, so that a search setting can be judged by the
harness itself (any n, noise level, sampling and scorer of `bench run`) on laws no benchmark
holds: the simple ODEs of nsode_quality.py (issue 16's forms, random constants) and the
science-family generator's held-out skeletons (the validation split's hash, never trained on),
each with its first constant set and initial value. A law the harness cannot solve on [0, 4]
is left out. Settings are compared as method parameters of one sweep:

    python benchmarks/generated_dataset.py --simple 48 --science 48 --seed 59 --out gen59.json
    python -m bench run --dataset gen59.json --noise 0.01 0.05 --n 128 1024 \\
        --methods truth-refit nsode-eps+refine nsode-eps+refine:basis=2 -j 2 --out results/gen59
    python -m bench compare results/gen59 --methods nsode-eps+refine:basis=2 nsode-eps+refine --by dataset noise n
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from odecore.arguments import whole_number
from odecore.files import why_unwritable

ROOT = Path(__file__).resolve().parents[1]
SCIENCE_CONFIG = ROOT / "nsode" / "checkpoints" / "data_science.yaml"
PAPER_CONFIG = ROOT / "nsode" / "checkpoints" / "data_cpu.yaml"  # the paper family, as the shipped readers saw it
VAL_PERCENT = 5  # the training split's held-out share (nsode.train.stream)
MAX_BLOCKS = 5000  # candidate blocks searched for held-out skeletons before giving up
CONSTANT_DRAWS = 7  # the spawn-key kind of the constants' streams, apart from the generator's own (0, 1)


def simple_equations(count: int, seed: int, starts: int = 1) -> list[dict]:
    """`count` simple laws with `starts` valid initial values each: nsode_quality.py's own, then
    draws from U(1, 4); a law with fewer valid starts is left out."""
    from odecore.expressions import to_string
    from odecore.solving import is_valid_initial_value
    from selection_study import simple_cases

    rng = np.random.default_rng([seed, 77])
    out = []
    for i, (name, f, y0) in enumerate(simple_cases(count, seed=seed)):
        text = to_string(f)
        more = rng.uniform(1.0, 4.0, size=4 * starts) if starts > 1 else []
        valid = [v for v in (float(y0), *map(float, more)) if is_valid_initial_value(text, v)][:starts]
        if len(valid) == starts:
            out.append({"id": f"simple-{i:02d}", "expression": text, "y0": valid, "source": name})
    return out


def science_equations(count: int, seed: int, starts: int = 1) -> list[dict]:
    """The first ODE (constant set and its first `starts` initial values) of each of the first `count`
    held-out skeletons the science-family generator finds with `seed` whose solutions the harness
    accepts from every one of those starts."""
    return held_out_equations(count, seed, starts, SCIENCE_CONFIG, "science")


def paper_equations(count: int, seed: int, starts: int = 1) -> list[dict]:
    """The same for the paper family's generator (random trees, as the raw reader was trained on)."""
    return held_out_equations(count, seed, starts, PAPER_CONFIG, "paper")


def held_out_equations(count: int, seed: int, starts: int, config_file: Path, kind: str) -> list[dict]:
    """The first ODE of each of the first `count` held-out skeletons that the generator of
    `config_file` finds with `seed`, named `kind`-NN."""
    if not count:  # the loop below stops at `count` laws found, so 0 would run through every block
        return []
    from odecore.expressions import to_string
    from odecore.solving import is_valid_initial_value
    from nsode.data import config as data_config, generate, tokens
    from nsode.train.stream import in_validation

    config = data_config.load(config_file)
    seen, out = set(), []
    for block in range(MAX_BLOCKS):
        for found in generate.candidate_block(block, seed, config)[0]:
            if found.skeleton in seen or not in_validation(generate.skeleton_id(found.skeleton), VAL_PERCENT):
                continue
            seen.add(found.skeleton)
            rng = generate.rng_for(seed, CONSTANT_DRAWS, len(seen))
            sets, y0 = generate.draw_sets(tokens.parse_infix(found.expression), found.skeleton, rng, config)
            if not sets:
                continue
            text = to_string(sets[0][0])
            y0s = [float(v) for v in y0[0, :starts]]
            if len(y0s) == starts and all(is_valid_initial_value(text, v) for v in y0s):
                out.append({"id": f"{kind}-{len(out):02d}", "expression": text, "y0": y0s,
                            "source": found.skeleton})
                if len(out) == count:
                    return out
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simple", type=whole_number(0), default=48, help="simple laws (default 48)")
    p.add_argument("--science", type=whole_number(0), default=48,
                   help="held-out science-family laws (default 48)")
    p.add_argument("--paper", type=whole_number(0), default=0,
                   help="held-out paper-family laws (random trees, as the raw reader was trained on; default 0)")
    p.add_argument("--seed", type=whole_number(0), default=0, help="draws the laws (default 0)")
    p.add_argument("--starts", type=whole_number(1), default=1,
                   help="initial values per law (default 1; several for benchmarks/joint_records.py)")
    p.add_argument("--name", default=None, help="the dataset's name (default: gen + the seed)")
    p.add_argument("--out", required=True, help="the dataset file to write (JSON)")
    args = p.parse_args(argv)
    from bench.datasets import FORMAT

    if not args.simple and not args.science and not args.paper:
        p.error("--simple, --science and --paper are all 0: no laws to write")
    why = why_unwritable(Path(args.out))
    if why:
        p.error(f"--out {args.out}: {why}")
    equations = (simple_equations(args.simple, args.seed, args.starts)
                 + science_equations(args.science, args.seed, args.starts)
                 + paper_equations(args.paper, args.seed, args.starts))
    name = args.name or f"gen{args.seed}"
    spec = {"format": FORMAT, "name": name, "version": "1",
            "description": f"Generated laws (benchmarks/generated_dataset.py, seed {args.seed}): {args.simple} "
                           f"simple ODEs, {args.science} held-out science-family and {args.paper} paper-family "
                           "skeletons asked for; "
                           "for judging settings, never a benchmark.",
            "equations": equations}
    Path(args.out).write_text(json.dumps(spec, indent=1) + "\n")
    counts = {kind: sum(e["id"].startswith(kind) for e in equations) for kind in ("simple", "science", "paper")}
    print(f"{args.out}: {counts['simple']} simple, {counts['science']} science-family and {counts['paper']} "
          "paper-family laws")
    return 0


if __name__ == "__main__":
    sys.exit(main())

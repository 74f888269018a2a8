"""One law read from several records (nsode.joint) against each record read alone, scored by the harness.

Each law's records are observed as `bench run` observes them (bench.tasks.observe: n points,
multiplicative noise sigma, the seed), searched alone by the shipped search, then read as one law
from the first R of them (`--records`, several values allowed). Every record is scored by the
harness's scorer (bench.scoring.score: from its true initial value, R^2 on [0, 2] and on [2, 4])
for its own pick and for the joint law. Laws: a dataset whose equations have several starts
(Classic has five), or generated laws with `--starts` initial values each: issue 16's simple ODEs
(nsode_quality.py's forms, random constants, starts in U(1, 4)) and the science-family generator's
held-out skeletons (generated_dataset.py, the generator's own starts).

    python benchmarks/joint_records.py --dataset classic --noise 0.01 0.02 --records 2 5 -j 2 --out classic.csv
    python benchmarks/joint_records.py --simple 48 --starts 3 --seed 77 --noise 0.01 0.02 -j 2 --out simple.csv

Science-family laws take minutes to find; write them once and read the file:

    python benchmarks/generated_dataset.py --simple 48 --science 48 --starts 3 --seed 80 --out gen80.json
    python benchmarks/joint_records.py --dataset gen80.json --seed 80 --records 3 --noise 0.01 0.02 -j 2

Short records (records of 8 points, which `nsode predict` refuses; docs/search.md, "Session 83"):

    python benchmarks/joint_records.py --dataset gen86.json --seed 86 --records 3 --n 8 --pooled-noise -j 2

Prints, per dataset, noise level and R: the records scored, how many have R^2 > 0.9 on [0, 2]
(interp) and on [2, 4] (extrap) and how many are recovered (both above 0.99), alone / joint,
and the median seconds per law (the joint read includes its records' own searches).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from odecore.arguments import nonnegative_number, whole_number
from odecore.files import why_unwritable

HERE = Path(__file__).resolve().parent
GOOD, RECOVERED = 0.9, 0.99
SHORTEST = 5  # observations per record this script reads at the least (the noise level reads 3 misses)


def generated_spec(simple: int, science: int, starts: int, seed: int) -> dict:
    """A harness dataset of `simple` simple laws and `science` held-out science-family laws with
    `starts` valid initial values each (generated_dataset.py)."""
    sys.path.insert(0, str(HERE))
    from bench.datasets import FORMAT
    from generated_dataset import science_equations, simple_equations

    equations = simple_equations(simple, seed, starts) + science_equations(science, seed, starts)
    return {"format": FORMAT, "name": f"joint-gen{seed}", "version": "1", "equations": equations}


def laws(args) -> list[tuple[str, list]]:
    """(law id, its trajectories in start order) of the dataset asked for."""
    from bench.datasets import load

    if args.simple or args.science:
        with tempfile.TemporaryDirectory() as folder:  # the truths are cached by the harness (datasets/cache)
            path = Path(folder) / "generated.json"
            path.write_text(json.dumps(generated_spec(args.simple, args.science, args.starts, args.seed)))
            trajectories = load(str(path))
    else:
        trajectories = load(args.dataset)
    grouped: dict[str, list] = {}
    for tr in trajectories:
        grouped.setdefault(tr.equation_id, []).append(tr)
    return [(law, sorted(trs, key=lambda tr: tr.y0_index)) for law, trs in grouped.items() if len(trs) > 1]


_PREDICTOR = None


def one_law(law: str, trajectories: list, noise: float, n: int, seed: int, reads: list[int],
            powers: int, shared_ranking: bool, second_look: str, pooled_noise: bool = False) -> list[dict]:
    """Rows (one per record and R) for one law at one noise level: its own pick and the joint law, scored."""
    global _PREDICTOR
    import torch

    from bench.scoring import score
    from bench.tasks import observe
    from nsode.joint import joint_choice
    from nsode.predict import Predictor

    torch.set_num_threads(1)
    if _PREDICTOR is None:
        _PREDICTOR = Predictor.searching()
    records = [observe(tr, noise, n, seed) for tr in trajectories[: max(reads)]]
    start = time.process_time()
    own = [_PREDICTOR.predict(t, y, min_points=SHORTEST) for t, y in records]
    alone = time.process_time() - start
    mine = [_scores(score(p.expression, tr)) if p.expression else (-np.inf, -np.inf)
            for p, tr in zip(own, trajectories)]  # each record's own pick, scored once for every R
    rows = []
    for r in reads:
        if r > len(records):
            continue
        start = time.process_time()
        joint = joint_choice(own[:r], records[:r], _PREDICTOR.search, powers=powers, shared_ranking=shared_ranking,
                             second_look=second_look, pooled_noise=pooled_noise)
        seconds = time.process_time() - start + alone * r / len(records)
        law_text = joint.expression
        for k in range(r):
            ours = _scores(score(law_text, trajectories[k])) if law_text else (-np.inf, -np.inf)
            rows.append({"law": law, "truth": trajectories[k].expression, "record": k, "noise": noise, "R": r,
                         "alone_interp": mine[k][0], "alone_extrap": mine[k][1], "joint_interp": ours[0],
                         "joint_extrap": ours[1], "alone": own[k].expression, "joint": law_text,
                         "seconds": seconds})
    return rows


def _scores(scores) -> tuple[float, float]:
    def value(part):
        return -np.inf if part is None or not np.isfinite(part["r2"]) else float(part["r2"])

    return value(scores.interpolation), value(scores.extrapolation)


def summary(rows) -> str:
    import pandas as pd

    d = pd.DataFrame(rows)
    for who in ("alone", "joint"):
        d[f"{who}_i"] = d[f"{who}_interp"] > GOOD
        d[f"{who}_x"] = d[f"{who}_extrap"] > GOOD
        d[f"{who}_r"] = (d[f"{who}_interp"] > RECOVERED) & (d[f"{who}_extrap"] > RECOVERED)
    out = ["| noise | R | records | interp > 0.9 alone / joint | extrap > 0.9 alone / joint | "
           "recovered alone / joint | median s per law (joint) |", "|---|---|---|---|---|---|---|"]
    for (noise, r), g in d.groupby(["noise", "R"]):
        seconds = g.groupby("law")["seconds"].first().median()
        out.append(f"| {noise:g} | {r} | {len(g)} | {g.alone_i.sum()} / {g.joint_i.sum()} | "
                   f"{g.alone_x.sum()} / {g.joint_x.sum()} | {g.alone_r.sum()} / {g.joint_r.sum()} | {seconds:.1f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="classic", help="a dataset whose laws have several starts (default classic)")
    p.add_argument("--simple", type=whole_number(0), default=0,
                   help="instead, N of issue 16's simple laws with --starts initial values each (0: the dataset)")
    p.add_argument("--science", type=whole_number(0), default=0,
                   help="and/or N held-out science-family laws with --starts initial values each")
    p.add_argument("--starts", type=whole_number(2), default=3, help="initial values per generated law (default 3)")
    p.add_argument("--seed", type=whole_number(0), default=0, help="draws the simple laws and the noise (default 0)")
    p.add_argument("--noise", type=nonnegative_number, nargs="+", default=[0.01], metavar="SIGMA",
                   help="noise levels (default 0.01)")
    p.add_argument("--n", type=whole_number(SHORTEST), default=128,
                   help=f"observations per record (default 128; {SHORTEST} or more: records under 10 points, which "
                        "nsode predict refuses, are read here for the study of short records)")
    p.add_argument("--records", type=whole_number(2), nargs="+", default=[2], metavar="R",
                   help="read the first R records of each law as one (default 2)")
    p.add_argument("--powers", type=whole_number(0), default=None,
                   help="the joint read's second look with powers y..y**N (default: nsode.joint.JOINT_POWERS; "
                        "0: none)")
    p.add_argument("--shared-ranking", action=argparse.BooleanOptionalAction, default=True,
                   help="also recombine the sums best by a joint integral-form fit with shared coefficients "
                        "(default; --no-shared-ranking: the summed ranking alone, as until session 79)")
    p.add_argument("--second-look", choices=("always", "missed"), default="always",
                   help="when the joint read looks again with powers of y: always (default), or only where its "
                        "pick misses a record (as until session 79)")
    p.add_argument("--pooled-noise", action="store_true",
                   help="read every record's noise from all of them together (odecore.noise.pooled_levels; measured "
                        "for short records and not kept: docs/search.md, 'Session 83')")
    p.add_argument("--laws", type=whole_number(1), default=None, help="the first N laws only")
    p.add_argument("-j", "--jobs", type=whole_number(1), default=1, help="worker processes (default 1)")
    p.add_argument("--out", type=Path, default=None, help="CSV of every record's scores")
    args = p.parse_args(argv)
    from joblib import Parallel, delayed
    from tqdm import tqdm
    import pandas as pd

    from bench.datasets import DatasetError
    from nsode.joint import JOINT_POWERS

    args.powers = JOINT_POWERS if args.powers is None else args.powers
    why = args.out and why_unwritable(args.out)
    if why:  # before the search, not after it
        p.error(f"--out {args.out}: {why}")
    try:
        chosen = laws(args)[: args.laws]
    except DatasetError as err:
        p.error(str(err))
    if not chosen:
        p.error(f"{args.dataset}: no law has two or more starts; give a dataset with several y0 per law "
                "(classic) or generated laws (--simple N, --science N)")
    fewest = min(len(trs) for _, trs in chosen)
    if max(args.records) > fewest:
        p.error(f"--records {max(args.records)}: a law here has only {fewest} starts to read jointly "
                "(give more --starts, or fewer records)")
    work = [(law, trs, noise) for noise in args.noise for law, trs in chosen]
    calls = (delayed(one_law)(law, trs, noise, args.n, args.seed, args.records, args.powers, args.shared_ranking,
                              args.second_look, args.pooled_noise)
             for law, trs, noise in work)
    rows = []
    for part in tqdm(Parallel(n_jobs=args.jobs, return_as="generator_unordered")(calls), total=len(work),
                     desc="laws", unit="law"):
        rows += part
    if args.out:
        pd.DataFrame(rows).to_csv(args.out, index=False)
    generated = f"{args.simple} simple and {args.science} science-family laws asked for, seed {args.seed}"
    print(f"{generated if args.simple or args.science else args.dataset}: "
          f"{len(chosen)} laws, n {args.n}, seed {args.seed}")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

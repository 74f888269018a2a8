"""python -m nsode.data {generate,stats,large}: NSODE's training data and the Large dataset.

  generate  random ODEs y' = f(y) and their solutions, written as parquet shards
            (deterministic for a seed, independent of -j, resumable: run the same command again)
  stats     counts, complexity histogram and operator frequencies of a generated folder
  large     the Large benchmark dataset (datasets/large.json) and the skeleton list that
            training excludes
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from odecore.arguments import output_path, run_command, whole_number
from odecore.cluster import scheduler_address
from odecore.processes import Terminated, terminated_as_interrupt


def _generate(args) -> int:
    from nsode.data import config as cfg
    from nsode.data import generate

    config = cfg.load(args.config)
    result = generate.generate(args.out, args.n_skeletons, args.seed, config, jobs=args.jobs,
                               scheduler=args.scheduler, progress=not args.quiet, solve=not args.skeletons_only,
                               solution_seed=args.solution_seed)
    if args.skeletons_only:
        solved = f"already solved into {result['shards']} shards" if result["shards"] else "not solved"
        print(f"{args.out}: {args.n_skeletons} skeletons listed in skeletons.parquet ({solved})")
        return 0
    drops = ", ".join(f"{k} {v}" for k, v in sorted(result["drops"].items())) or "none"
    print(f"{args.out}: {result['shards']} shards, {result['skeletons']} skeletons, {result['odes']} ODEs, "
          f"{result['solutions']} solutions (dropped solutions: {drops})")
    return 0


def _stats(args) -> int:
    from nsode.data import stats

    stats.report(Path(args.folder), plot=args.plot)
    return 0


def _large(args) -> int:
    from odecore import shipped
    from nsode.data import large

    if not shipped.CHECKOUT and not args.excluded:  # the default list lives inside the installed package
        print("error: this installed package's excluded-skeleton list, the one `generate` reads, lives inside "
              "site-packages and matches the shipped Large: run this command in a checkout of the project, or give "
              "--excluded FILE to write the new list elsewhere", file=sys.stderr)
        return 2
    large.main(out=Path(args.out) if args.out else large.DATASET_FILE, seed=args.seed,
               per_complexity=args.per_complexity, total=args.count,
               excluded_file=Path(args.excluded) if args.excluded else None, progress=not args.quiet)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nsode.data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="{generate,stats,large}")

    g = sub.add_parser("generate", help="generate training ODEs and solutions as parquet shards",
                       description="Sample N distinct skeletons (uniform random trees, simplified, filtered, "
                       "Large's skeletons excluded), N_const constant sets each, N_iv initial values each; solve "
                       "with LSODA on [0, T] and [T, T_extra]; keep solutions that pass the finite-difference "
                       "check; write DIR/shards/*.parquet (see nsode/data/shards.py for the columns). Running the "
                       "same command again resumes: finished shards are kept, the rest are (re)made; a larger "
                       "--n-skeletons extends the folder.")
    g.add_argument("--out", required=True, type=output_path, metavar="DIR",
                   help="output folder (created; resumed if it exists)")
    g.add_argument("--n-skeletons", type=int, required=True, metavar="N",
                   help="number of distinct skeletons drawn (one whose solutions all fail the checks is dropped)")
    g.add_argument("--seed", type=whole_number(0), required=True, metavar="S",
                   help="random seed: same seed, same data")
    g.add_argument("--solution-seed", type=whole_number(0), metavar="S",
                   help="seed of the constants and initial values drawn for each skeleton (default: --seed); a "
                   "copy of a folder's skeletons.parquet solved with another (same --seed and --config) gives new "
                   "solutions of the same skeletons without searching again")
    g.add_argument("-j", "--jobs", type=whole_number(1), default=1, metavar="J", help="worker processes (default 1)")
    g.add_argument("--config", metavar="FILE", help="YAML file (or a shipped one by name, e.g. data_cpu) overriding "
                   "keys of nsode/data/default.yaml "
                   "(max_ops, operator weights, p_sym, constants, n_const, n_iv, t_max, grid, limits, shard size: "
                   "the keys as that file names them)")
    g.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                   help="run the work units on this Dask scheduler (e.g. tcp://10.0.0.1:8786) instead of local "
                   "processes; workers must see DIR")
    g.add_argument("--skeletons-only", action="store_true", help="search and keep the skeleton list, solve "
                   "nothing: the costly half, done on a small machine and solved elsewhere by the same command")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    g.set_defaults(func=_generate)

    s = sub.add_parser("stats", help="counts, complexity histogram and operator frequencies of a folder",
                       description="Print tables of a generated folder (counts, drop reasons, complexity "
                       "histogram, operator and leaf frequencies) and write a plot.")
    s.add_argument("folder", metavar="DIR", help="a folder written by `generate`")
    s.add_argument("--plot", metavar="FILE.png", help="where to write the plot (default DIR/stats.png)")
    s.set_defaults(func=_stats)

    la = sub.add_parser("large", help="write the Large benchmark dataset and the excluded-skeleton list",
                        description="Draw ODEs from the training distribution with a seed of its own, one per "
                        "skeleton and at most --per-complexity per complexity, each with an initial value whose "
                        "solution passes the generator's checks; write them in the benchmark harness's "
                        "format, and store their skeletons in nsode/data/excluded_skeletons.yaml so that "
                        "`generate` never trains on them.")
    la.add_argument("--out", type=output_path, metavar="FILE",
                    help="default: the checkout's datasets/large.json, beside the skeleton list it is written with "
                    "(from any folder)")
    la.add_argument("--seed", type=whole_number(0), default=20230723, metavar="S",
                    help="default: 20230723 (not a training seed)")
    la.add_argument("--count", type=whole_number(1), default=162, metavar="N", help="number of ODEs (default 162)")
    la.add_argument("--per-complexity", type=whole_number(1), default=10, metavar="M",
                    help="at most M per complexity (default 10)")
    la.add_argument("--excluded", metavar="FILE", help="where to write the skeleton list "
                    "(default nsode/data/excluded_skeletons.yaml)")
    la.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    la.set_defaults(func=_large)
    return p


def main(argv=None) -> int:
    from nsode.data.config import ConfigError
    from nsode.data.generate import GenerateError
    from nsode.data.parallel import ClusterError
    from nsode.data.shards import ShardError

    args = parser().parse_args(argv)
    try:
        with terminated_as_interrupt():  # `timeout`, a scheduler: keep the finished work as on Ctrl-C
            return args.func(args)
    except (ConfigError, GenerateError, ClusterError, ShardError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # an --out that is a file, a folder that cannot be made or written
        print(f"error: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print("interrupted: run the same command again to resume (the skeleton search keeps the skeletons of its "
              "finished blocks, the solving stage each finished shard)", file=sys.stderr)
        return 143 if isinstance(err, Terminated) else 130


if __name__ == "__main__":
    run_command(main)

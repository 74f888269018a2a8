"""Two search settings, paired on the same beams: does a change to nsode/search.py recover more
laws? The beam (the model's seconds) is computed once per trajectory and cached; each setting
then runs only the search, trajectory by trajectory on the same candidates, so the comparison
is paired and a setting costs minutes, not the beam's hour. Generated ODEs only (the simple ODEs
of nsode_quality.py at three units of y, and the first ODE of held-out skeletons of data
folders); recovered = R^2 > 0.99 against the truth on [0, 4] from 128 points on [0, 2]
(`beams --points N`: N of them, evenly spaced).

    python benchmarks/search_ab.py beams --data DATA/cpu-s2032 DATA/science-s2041 --skeletons 0 40 \\
        --simple-seed 27 --noise-seed 17 --out dev.json
    python benchmarks/search_ab.py run dev.json --out dev-v11.csv
    python benchmarks/search_ab.py run dev.json --set multiplicity=1 --out dev-m1.csv
    python benchmarks/search_ab.py compare dev-v11.csv dev-m1.csv

A candidate scale-invariant checkpoint is judged the same way: `beams --scaled FOLDER` caches the
beams with it in the shipped one's place, and the two caches' `run`s are compared.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

from nsode.search import Settings
from nsode_quality import SIMPLE_GRID, SIMPLE_T, generated_observations, simple_cases
from selection_study import generated_cases

SIGMAS = (0.01, 0.02)
SCALES = (1.0, 100.0, 0.01)


def observed(points: int | None) -> np.ndarray:
    """Indices of the observations kept: all 128 of SIMPLE_T, or `points` evenly spaced among
    them, the first and last included (a draw with few observations)."""
    if not points or points >= len(SIMPLE_T):
        return np.arange(len(SIMPLE_T))
    return np.unique(np.linspace(0, len(SIMPLE_T) - 1, points).round().astype(int))


def cases(folders, skeletons: tuple[int, int], simple_seed: int, noise_seed: int, simple: int = 24,
          sigmas=SIGMAS):
    """(name, truth on [0, 4], observations on [0, 2]) of every trajectory of a draw."""
    out = []
    for sigma in sigmas:
        for scale in SCALES:
            for i, (truth, y, _) in enumerate(simple_cases(simple, sigma, simple_seed, scale=scale)):
                out.append((f"simple x{scale:g} s{sigma} #{i}", truth, y))
    for folder in folders:
        laws = generated_cases(folder, skeletons[1])[skeletons[0]:]
        for sigma in sigmas:
            out += [(f"{Path(folder).name} s{sigma} {name}", truth, y)
                    for name, truth, y, _ in generated_observations(laws, sigma, noise_seed)]
    return out


_PREDICTOR = None
_SCALED = None  # the scale-invariant reader's folder, when not the shipped one (a candidate being judged)
_READS = None  # observations the encoder is shown (Predictor's `reads`), when not the shipped choice


def _use_reader(folder: str | None, reads: int | None) -> None:
    global _SCALED, _READS
    _SCALED, _READS = folder, reads


def _beam(job) -> list[str]:
    """The shipped search's candidate expressions (routed as nsode-eps+refine routes), as infix."""
    global _PREDICTOR
    import torch

    from nsode import SCALED_CHECKPOINT, SEARCH_CHECKPOINT, default_checkpoint
    from nsode.data.tokens import to_infix
    from nsode.predict import Predictor
    from nsode.search import SEARCH_BEAM, SEARCH_BRANCHES

    if _PREDICTOR is None:
        torch.set_num_threads(1)
        _PREDICTOR = Predictor(default_checkpoint(SEARCH_CHECKPOINT), beam=SEARCH_BEAM, branches=SEARCH_BRANCHES,
                               scaled=Path(_SCALED) if _SCALED else default_checkpoint(SCALED_CHECKPOINT),
                               reads=_READS)
    t, y = job
    return [to_infix(e) for e, _ in _PREDICTOR.candidates(t, y)]


def _read(text: str):
    """A cached beam expression: in the model's vocabulary as printed (parse_infix keeps its
    tree), else by the harness's parser (the readers' back-transforms may write e.g. Abs)."""
    from core.expressions import parse
    from nsode.data.tokens import EncodingError, parse_infix

    try:
        return parse_infix(text)
    except EncodingError:
        return parse(text, flat_products=True)


def _search(job) -> tuple[str, str, float, float]:
    """(case, pick, R^2 against the truth on [0, 4], CPU seconds of the search) of one trajectory."""
    (name, truth, y), exprs, overrides, index = job
    from core.expressions import parse, to_string
    from nsode.search import search
    from nsode.select import exact_r2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        found, _ = search([_read(e) for e in exprs], SIMPLE_T[index], y[index], Settings(**overrides))
        took = time.process_time() - start
        pick = to_string(found[0].expr) if found and math.isfinite(found[0].r2) else ""
        quality = exact_r2(parse(pick), SIMPLE_GRID, truth) if pick else -math.inf
    return name, pick, quality, took


def setting(text: str) -> tuple[str, object]:
    """NAME=VALUE of nsode.search.Settings, the value typed as the field's default."""
    name, _, value = text.partition("=")
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    if name not in fields:
        raise argparse.ArgumentTypeError(f"no search setting {name!r}; one of {', '.join(fields)}")
    kind = type(fields[name])
    return name, (value.lower() in ("1", "true", "yes") if kind is bool else kind(value))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("beams", help="cache the beam of every trajectory of a draw")
    b.add_argument("--data", nargs="*", default=[], help="data folders whose held-out skeletons to draw")
    b.add_argument("--skeletons", type=int, nargs=2, default=(0, 40), metavar=("FIRST", "END"),
                   help="held-out skeletons FIRST..END-1 of each folder")
    b.add_argument("--simple", type=int, default=24, help="simple ODEs per noise level and unit of y")
    b.add_argument("--simple-seed", type=int, default=27)
    b.add_argument("--noise-seed", type=int, default=17, help="seed of the held-out ODEs' noise draws")
    b.add_argument("--sigmas", type=float, nargs="+", default=list(SIGMAS), help="noise levels of the draw")
    b.add_argument("--points", type=int, default=None,
                   help="observations kept of the 128 on [0, 2], evenly spaced (default: all)")
    b.add_argument("--scaled", metavar="FOLDER",
                   help="scale-invariant checkpoint that reads the routed trajectories (default: the shipped one)")
    b.add_argument("--reads", type=int, default=None, metavar="N",
                   help="show the encoder a view of exactly N observations (default: as given)")
    b.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="the search with some settings on a cached draw")
    r.add_argument("beams", type=Path)
    r.add_argument("--set", type=setting, nargs="*", default=[], metavar="NAME=VALUE",
                   help="nsode.search.Settings fields (default: the shipped search)")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare", help="recovered per set, paired, for two runs")
    c.add_argument("first", type=Path)
    c.add_argument("second", type=Path)
    for q in (b, r):
        q.add_argument("-j", "--jobs", type=int, default=2)
    args = p.parse_args()

    if args.command == "beams":
        draw = cases(args.data, tuple(args.skeletons), args.simple_seed, args.noise_seed, args.simple, args.sigmas)
        index = observed(args.points)
        with Pool(args.jobs, initializer=_use_reader, initargs=(args.scaled, args.reads)) as pool:
            beams = pool.map(_beam, [(SIMPLE_T[index], y[index]) for _, _, y in draw], chunksize=4)
        args.out.write_text(json.dumps({"draw": {"data": args.data, "skeletons": args.skeletons,
                                                 "simple": args.simple, "simple_seed": args.simple_seed,
                                                 "noise_seed": args.noise_seed, "sigmas": args.sigmas,
                                                 "scaled": args.scaled, "points": args.points,
                                                 "reads": args.reads},
                                        "beams": beams}))
        print(f"{len(beams)} trajectories -> {args.out}")
    elif args.command == "run":
        if not args.beams.is_file():
            raise SystemExit(f"error: {args.beams}: no such file (write one with `search_ab.py beams --out`)")
        cached = json.loads(args.beams.read_text())
        d = cached["draw"]
        draw = cases(d["data"], tuple(d["skeletons"]), d["simple_seed"], d["noise_seed"], d["simple"],
                     d.get("sigmas", SIGMAS))
        index = observed(d.get("points"))
        with Pool(args.jobs) as pool:
            rows = pool.map(_search, [(c, e, dict(args.set), index) for c, e in zip(draw, cached["beams"])],
                            chunksize=2)
        table = pd.DataFrame(rows, columns=["case", "pick", "r2", "cpu_s"])
        table.to_csv(args.out, index=False)
        print(f"recovered {int((table.r2 > 0.99).sum())} of {len(table)}, R^2 > 0.9 {int((table.r2 > 0.9).sum())}, "
              f"median search CPU {table.cpu_s.median():.2f} s -> {args.out}")
    else:
        a, z = (pd.read_csv(path) for path in (args.first, args.second))
        both = a.merge(z, on="case", suffixes=("_a", "_b"))
        both["set"] = both.case.str.split(" ").str[:2].str.join(" ")
        both["a"], both["b"] = both.r2_a > 0.99, both.r2_b > 0.99
        table = both.groupby("set").agg(trajectories=("a", "size"), first=("a", "sum"), second=("b", "sum"),
                                        cpu_first=("cpu_s_a", "median"), cpu_second=("cpu_s_b", "median"))
        print(table.round(2).to_string())
        fails = [int(np.isneginf(both[c]).sum()) for c in ("r2_a", "r2_b")]
        close = [int((both[c] > 0.9).sum()) for c in ("r2_a", "r2_b")]
        print(f"\nR^2 > 0.9: {close[0]} against {close[1]}; no solution from the true y0: {fails[0]} against {fails[1]}")
        print(f"all: {int(both.a.sum())} against {int(both.b.sum())} of {len(both)}; "
              f"picks changed {int((both.pick_a != both.pick_b).sum())}, recovered only by the first "
              f"{int((both.a & ~both.b).sum())}, only by the second {int((both.b & ~both.a).sum())}")


if __name__ == "__main__":
    main()

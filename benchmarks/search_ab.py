"""Two search settings, paired on the same beams: does a change to nsode/search/funnel.py recover more
laws? The beam (the model's seconds) is computed once per trajectory and cached; each setting
then runs only the search, trajectory by trajectory on the same candidates, so the comparison
is paired and a setting costs minutes, not the beam's hour. Generated ODEs only (the simple ODEs
of nsode_quality.py at three units of y, and the first ODE of held-out skeletons of data
folders); recovered = R^2 > 0.99 against the truth on [0, 4] from 128 points on [0, 2]
(`beams --points N`: N of them, evenly spaced). Long sparse records: `beams --rate R` runs the
simple laws R times as fast (R times as many time constants in view), `--start S` starts them
from S times their initial values (growth from far below the equilibrium).

    python benchmarks/search_ab.py beams --data DATA/cpu-s2032 DATA/science-s2041 --skeletons 0 40 \\
        --simple-seed 27 --noise-seed 17 --out dev.json
    python benchmarks/search_ab.py run dev.json --out dev-v11.csv
    python benchmarks/search_ab.py run dev.json --set multiplicity=1 --out dev-m1.csv
    python benchmarks/search_ab.py compare dev-v11.csv dev-m1.csv

Where the search loses a law among statistical ties, `window` records, per trajectory, every safe
fit within WIDE criterion units of the criterion's pick (its criterion, forecast error, size and
R^2 against the truth), and `ties` replays tie-break rules on those records in seconds, beside a
perfect tie-break (some tied fit recovers the law):

    python benchmarks/search_ab.py window dev.json --out dev-window.json
    python benchmarks/search_ab.py ties dev-window.json

A perfect tie-break often wins with a stand-in that happens to extrapolate. `bound` sets the
search against the true law instead: per trajectory, whether the law refitted (the ceiling)
recovers, and where the law fitted alone lies in criterion units above the best fit of the
window record; a law the search misses more than the tie window above the best fit is one the
data do not support, whatever the proposals:

    python benchmarks/search_ab.py bound dev-window.json dev.json

A candidate scale-invariant checkpoint is judged the same way: `beams --scaled FOLDER` caches the
beams with it in the shipped one's place, and the two caches' `run`s are compared.
"""
from __future__ import annotations

import argparse
import sys
import dataclasses
import json
import math
import time
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

from odecore.arguments import (existing_file, existing_folder, nonnegative_number, positive_number, relative_noise,
                            whole_number)
from nsode.search.choice import tie_cost
from nsode.options import setting_value
from nsode.search.settings import Settings
from nsode_quality import LAW_SETS, SIMPLE_GRID, SIMPLE_T, generated_observations, simple_cases
from selection_study import generated_cases

SIGMAS = (0.01, 0.02)
MEMBER_FIELDS = ("score", "forecast", "nodes", "nested", "constants", "expression", "r2")  # a `window` record's fit
SCALES = (1.0, 100.0, 0.01)


def observed(points: int | None) -> np.ndarray:
    """Indices of the observations kept: all 128 of SIMPLE_T, or `points` evenly spaced among
    them, the first and last included (a draw with few observations)."""
    if not points or points >= len(SIMPLE_T):
        return np.arange(len(SIMPLE_T))
    return np.unique(np.linspace(0, len(SIMPLE_T) - 1, points).round().astype(int))


def cases(folders, skeletons: tuple[int, int], simple_seed: int, noise_seed: int, simple: int = 24,
          sigmas=SIGMAS, rate: float = 1.0, start: float = 1.0, law_set: str = "simple"):
    """(name, truth on [0, 4], observations on [0, 2], f) of every trajectory of a draw (the
    simple ODEs, or the `law_set` of nsode_quality.LAW_SETS, run `rate` times as fast, from `start`
    times their initial values)."""
    out = []
    for sigma in sigmas:
        for scale in SCALES:
            for i, (truth, y, f) in enumerate(simple_cases(simple, sigma, simple_seed, scale=scale, rate=rate,
                                                                    start=start, forms=LAW_SETS[law_set])):
                out.append((f"simple x{scale:g} s{sigma} #{i}", truth, y, f))
    for folder in folders:
        laws = generated_cases(folder, skeletons[1])[skeletons[0]:]
        for sigma in sigmas:
            out += [(f"{Path(folder).name} s{sigma} {name}", truth, y, f)
                    for name, truth, y, f in generated_observations(laws, sigma, noise_seed)]
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
    from nsode.search.funnel import SEARCH_BEAM, SEARCH_BRANCHES

    if _PREDICTOR is None:
        torch.set_num_threads(1)
        _PREDICTOR = Predictor(default_checkpoint(SEARCH_CHECKPOINT), beam=SEARCH_BEAM, branches=SEARCH_BRANCHES,
                               scaled=Path(_SCALED) if _SCALED else default_checkpoint(SCALED_CHECKPOINT),
                               reads=_READS)
    t, y = job
    return [to_infix(e) for e, _ in _PREDICTOR.candidates(t, y)]


def _read(texts: list[str]) -> list:
    """The cached beam expressions: each in the model's vocabulary as printed (parse_infix keeps
    its tree), else by the harness's parser (the readers' back-transforms may write e.g. Abs);
    one neither reads (a back-transform's `inf`, a term the search would drop as not finite) is
    left out."""
    from odecore.expressions import ExpressionError, parse
    from nsode.data.tokens import EncodingError, parse_infix

    out = []
    for text in texts:
        try:
            out.append(parse_infix(text))
        except EncodingError:
            try:
                out.append(parse(text, flat_products=True))
            except ExpressionError:
                continue
    return out


def _recovery(text: str, truth: np.ndarray, part: slice | np.ndarray = slice(None)) -> float:
    """R^2 of the law written `text` against the truth on [0, 4], or on `part` of that grid alone,
    started from the truth there (-inf for no law)."""
    from odecore.expressions import parse
    from nsode.select import exact_r2

    return exact_r2(parse(text), SIMPLE_GRID[part], truth[part]) if text else -math.inf


def _extrapolation(text: str, truth: np.ndarray) -> float:
    """R^2 on (2, 4] alone (the harness's per-part rule: a decay's extrapolation is scored in its
    own, smaller units)."""
    return _recovery(text, truth, SIMPLE_GRID > SIMPLE_T[-1])


def _search(job) -> tuple[str, str, float, float, float, int]:
    """(case, pick, R^2 against the truth on [0, 4], CPU seconds of the search, R^2 on (2, 4],
    fits the safety check rejected) of one trajectory."""
    (name, truth, y, _), exprs, overrides, index = job
    from odecore.expressions import to_string
    from nsode.search.funnel import search

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        found, info = search(_read(exprs), SIMPLE_T[index], y[index], Settings(**overrides))
        took = time.process_time() - start
        pick = to_string(found[0].expr) if found and math.isfinite(found[0].r2) else ""
    return name, pick, _recovery(pick, truth), took, _extrapolation(pick, truth), info["rejected"]


def _window(job) -> dict:
    """One trajectory's search pick and its tie window widened to `wide` criterion units: each
    safe fit as MEMBER_FIELDS (its criterion with prior as "score", R^2 against the truth on
    [0, 4] as "r2"), the criterion's pick first."""
    (name, truth, y, _), exprs, overrides, index, wide = job
    from odecore.expressions import complexity, nested_functions, to_string
    from nsode.search.choice import forecast_error, rivals
    from nsode.search.funnel import search

    settings = Settings(**overrides)
    t = SIMPLE_T[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, info = search(_read(exprs), t, y[index], settings)
        ranked = sorted(found, key=lambda f: (f.score, f.constants))  # choose()'s order, before it moves the pick
        first = next((f for f in ranked if math.isfinite(f.r2) and f.rejected is None), None)  # every fit before it was checked
        members = []
        if first is not None:
            near = [first, *rivals(ranked, t, y[index], info["stability_sigma"], wide, pick=first, settings=settings)]
            for f in near:
                if math.isnan(f.forecast):  # those within the search's own window have theirs
                    f.forecast = forecast_error(f, t, y[index], info["noise_sigma"], settings)
                text = to_string(f.expr)
                members.append(dict(zip(MEMBER_FIELDS, (f.score, f.forecast, complexity(f.expr), nested_functions(f.expr),
                                                        f.constants, text, _recovery(text, truth)))))
    pick = to_string(found[0].expr) if found and math.isfinite(found[0].r2) else ""
    return {"case": name, "pick": pick, "r2": _recovery(pick, truth), "members": members}


ALONE = {"variants": False, "combine": 0, "steady": False, "snap": False, "snap_fitted": False, "per_capita": 0}


def _bound(job) -> dict:
    """One trajectory against its true law f: does the law refitted recover (the ceiling), and the
    criterion of f's skeleton fitted alone (the search's fitter, no other candidate) minus that of
    the best safe fit of the `window` record (inf where f's own fits are all unsafe)."""
    (name, truth, y, f), record, index = job
    from nsode.search.funnel import search
    from nsode_quality import refitted_truth

    t, y = SIMPLE_T[index], y[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ceiling = _recovery(refitted_truth(f, t, y), truth)
        found, _ = search([f], t, y, Settings(**ALONE))
    scores = [x.score for x in found if math.isfinite(x.score) and x.rejected is None]
    best = record["members"][0]["score"] if record["members"] else math.nan
    return {"case": name, "search": record["r2"] > 0.99, "ceiling": ceiling > 0.99,
            "gap": min(scores) - best if scores else math.inf}


def bound_table(rows: list[dict], window_units: float) -> pd.DataFrame:
    """Recovered by the search, by the ceiling and by either, per family and noise level, and the
    ceiling's recoveries the search misses split by where the law fitted alone lies: within the
    tie window of the best fit (a choice the data leave open) or above it (the data prefer others)."""
    table = pd.DataFrame(rows)
    parts = table.case.str.split(" ")
    table["set"] = parts.str[0] + " " + parts.map(lambda p: next(w for w in p[1:] if w.startswith("s")))
    only = table.ceiling & ~table.search
    table["ceiling only, law within window"] = only & (table.gap <= window_units)
    table["ceiling only, law above window"] = only & ~(table.gap <= window_units)
    table["either"] = table.search | table.ceiling
    columns = ["search", "ceiling", "either", "ceiling only, law within window", "ceiling only, law above window"]
    out = table.groupby("set")[columns].sum()
    out.insert(0, "trajectories", table.groupby("set").size())
    out.loc["all"] = out.sum()
    return out


def window(members: list[dict], settings: Settings) -> list[dict]:
    """The recorded fits within `settings.forecast` criterion units of the criterion's pick."""
    return [m for m in members if m["score"] <= members[0]["score"] + settings.forecast]


def tie_pick(members: list[dict], settings: Settings) -> dict:
    """The member a tie-break with `settings` picks (its window, forecast weight, node and nesting
    costs): the shipped rule of nsode.search.choice._best_forecast, replayed on recorded numbers."""
    return min(window(members, settings), key=lambda m: (
        tie_cost(m["score"], m["forecast"], m["nodes"], m["nested"], settings), m["constants"]))


TIE_RULES = {"shipped": {}, **{f"forecast weight {w:g}": {"forecast_weight": w} for w in (0.75, 0.5, 0.25, 0.0)},
             **{f"window {w:g}": {"forecast": w} for w in (3.0, 8.0, 12.0)},
             **{f"node cost {c:g}": {"node_cost": c} for c in (0.0, 1.0, 2.0, 4.0, 6.0)}}


def ties_table(records: dict[str, list[dict]]) -> pd.DataFrame:
    """Recovered (R^2 > 0.99 on [0, 4]) / R^2 > 0.9 per record file and family under each rule of
    TIE_RULES, and under a perfect tie-break (some fit of the shipped window recovers)."""
    rows = []
    for label, overrides in [*TIE_RULES.items(), ("perfect tie-break", None)]:
        settings = Settings(**(overrides or {}))
        for source, records_ in records.items():
            for r in records_:
                family = "simple" if r["case"].startswith("simple") else r["case"].split()[0]
                if not r["members"]:
                    quality = r["r2"]
                elif overrides is None:
                    quality = max(m["r2"] for m in window(r["members"], settings))
                else:
                    quality = tie_pick(r["members"], settings)["r2"]
                rows.append((label, source, family, quality > 0.99, quality > 0.9))
    table = pd.DataFrame(rows, columns=["rule", "records", "family", "recovered", "close"])
    out = table.pivot_table(index="rule", columns=["records", "family"], values="recovered", aggfunc="sum", sort=False)
    out[("all", "recovered")] = table.groupby("rule", sort=False).recovered.sum()
    out[("all", "R^2 > 0.9")] = table.groupby("rule", sort=False).close.sum()
    return out


def setting(text: str) -> tuple[str, object]:
    """NAME=VALUE of nsode.search.settings.Settings, the value typed as the field's default."""
    name, _, value = text.partition("=")
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    if name not in fields:
        raise argparse.ArgumentTypeError(f"no search setting {name!r}; one of {', '.join(fields)}")
    try:
        return name, setting_value(name, type(fields[name]), value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("beams", help="cache the beam of every trajectory of a draw")
    b.add_argument("--data", nargs="*", type=existing_folder, default=[], help="data folders whose held-out skeletons to draw")
    b.add_argument("--skeletons", type=int, nargs=2, default=(0, 40), metavar=("FIRST", "END"),
                   help="held-out skeletons FIRST..END-1 of each folder")
    b.add_argument("--simple", type=whole_number(0), default=24, help="simple ODEs per noise level and unit of y")
    b.add_argument("--simple-seed", type=whole_number(0), default=27)
    b.add_argument("--noise-seed", type=whole_number(0), default=17, help="seed of the held-out ODEs' noise draws")
    b.add_argument("--sigmas", type=relative_noise, nargs="+", default=list(SIGMAS), help="noise levels of the draw")
    b.add_argument("--points", type=whole_number(10), default=None,
                   help="observations kept of the 128 on [0, 2], evenly spaced (default: all)")
    b.add_argument("--rate", type=positive_number, default=1.0,
                   help="run the simple ODEs this many times as fast: long records over many time constants "
                        "(with --points, sparse ones; default 1)")
    b.add_argument("--start", type=positive_number, default=1.0,
                   help="start the simple ODEs from this many times their initial values (0.1: growth from far "
                        "below the equilibrium; laws that then fail before t = 4 are left out; default 1)")
    b.add_argument("--laws", choices=sorted(LAW_SETS), default="simple",
                   help="the laws of the simple draw: the simple ODEs, or growth (Gompertz; default simple)")
    b.add_argument("--scaled", metavar="FOLDER",
                   help="scale-invariant checkpoint that reads the routed trajectories (default: the shipped one)")
    b.add_argument("--reads", type=whole_number(1), default=None, metavar="N",
                   help="show the encoder a view of exactly N observations (default: as given)")
    b.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="the search with some settings on a cached draw")
    r.add_argument("beams", type=Path)
    r.add_argument("--set", type=setting, nargs="*", default=[], metavar="NAME=VALUE",
                   help="nsode.search.settings.Settings fields (default: the shipped search)")
    r.add_argument("--out", type=Path, required=True)
    w = sub.add_parser("window", help="record every fit within WIDE criterion units of the pick, per trajectory")
    w.add_argument("beams", type=Path)
    w.add_argument("--set", type=setting, nargs="*", default=[], metavar="NAME=VALUE",
                   help="nsode.search.settings.Settings fields (default: the shipped search)")
    w.add_argument("--wide", type=nonnegative_number, default=12.0, help="criterion units above the pick recorded (default 12)")
    w.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("ties", help="tie-break rules replayed on `window` records, beside a perfect tie-break")
    t.add_argument("records", type=existing_file, nargs="+")
    o = sub.add_parser("bound", help="the search against the true law refitted, per family, from `window` records")
    o.add_argument("records", type=existing_file, help="a `window` record file")
    o.add_argument("beams", type=existing_file, help="the cached draw it was recorded on")
    c = sub.add_parser("compare", help="recovered per set, paired, for two runs")
    c.add_argument("first", type=existing_file)
    c.add_argument("second", type=existing_file)
    for q in (b, r, w, o):
        q.add_argument("-j", "--jobs", type=whole_number(1), default=2)
    args = p.parse_args()

    if args.command == "beams":
        draw = cases(args.data, tuple(args.skeletons), args.simple_seed, args.noise_seed, args.simple, args.sigmas,
                     args.rate, args.start, args.laws)
        index = observed(args.points)
        with Pool(args.jobs, initializer=_use_reader, initargs=(args.scaled, args.reads)) as pool:
            beams = pool.map(_beam, [(SIMPLE_T[index], y[index]) for _, _, y, _ in draw], chunksize=4)
        args.out.write_text(json.dumps({"draw": {"data": [str(d) for d in args.data], "skeletons": args.skeletons,
                                                 "simple": args.simple, "simple_seed": args.simple_seed,
                                                 "noise_seed": args.noise_seed, "sigmas": args.sigmas,
                                                 "scaled": args.scaled, "points": args.points,
                                                 "reads": args.reads, "rate": args.rate,
                                                 "start": args.start, "laws": args.laws},
                                        "beams": beams}))
        print(f"{len(beams)} trajectories -> {args.out}")
    elif args.command in ("run", "window"):
        if not args.beams.is_file():
            raise SystemExit(f"error: {args.beams}: no such file (write one with `search_ab.py beams --out`)")
        cached = json.loads(args.beams.read_text())
        d = cached["draw"]
        draw = cases(d["data"], tuple(d["skeletons"]), d["simple_seed"], d["noise_seed"], d["simple"],
                     d.get("sigmas", SIGMAS), d.get("rate", 1.0), d.get("start", 1.0), d.get("laws", "simple"))
        if len(draw) != len(cached["beams"]):  # data folders named relative to another working directory
            raise SystemExit(f"error: {args.beams} caches {len(cached['beams'])} beams, but its draw now reads "
                             f"{len(draw)} trajectories (data folders {d['data']}: run from where the beams were made)")
        index = observed(d.get("points"))
        if args.command == "window":
            with Pool(args.jobs) as pool:
                records = pool.map(_window, [(c, e, dict(args.set), index, args.wide)
                                             for c, e in zip(draw, cached["beams"])], chunksize=2)
            args.out.write_text(json.dumps(records))
            print(f"recovered {sum(r['r2'] > 0.99 for r in records)} of {len(records)}, "
                  f"{sum(len(r['members']) for r in records)} tied fits recorded -> {args.out}")
            return
        with Pool(args.jobs) as pool:
            rows = pool.map(_search, [(c, e, dict(args.set), index) for c, e in zip(draw, cached["beams"])],
                            chunksize=2)
        table = pd.DataFrame(rows, columns=["case", "pick", "r2", "cpu_s", "r2_extrap", "rejected"])
        table.to_csv(args.out, index=False)
        print(f"recovered {int((table.r2 > 0.99).sum())} of {len(table)}, R^2 > 0.9 {int((table.r2 > 0.9).sum())}, "
              f"extrapolation R^2 > 0.9 {int((table.r2_extrap > 0.9).sum())}, "
              f"median search CPU {table.cpu_s.median():.2f} s -> {args.out}")
    elif args.command == "bound":
        missing = [str(path) for path in (args.records, args.beams) if not path.is_file()]
        if missing:
            raise SystemExit(f"error: no such file: {', '.join(missing)}")
        records, cached = json.loads(args.records.read_text()), json.loads(args.beams.read_text())
        d = cached["draw"]
        draw = cases(d["data"], tuple(d["skeletons"]), d["simple_seed"], d["noise_seed"], d["simple"],
                     d.get("sigmas", SIGMAS), d.get("rate", 1.0), d.get("start", 1.0), d.get("laws", "simple"))
        if [c[0] for c in draw] != [r["case"] for r in records]:
            raise SystemExit(f"error: {args.records} was not recorded on the draw of {args.beams}")
        with Pool(args.jobs) as pool:
            rows = pool.map(_bound, [(c, r, observed(d.get("points"))) for c, r in zip(draw, records)], chunksize=2)
        print(bound_table(rows, Settings().forecast).to_string())
    elif args.command == "ties":
        missing = [str(path) for path in args.records if not path.is_file()]
        if missing:
            raise SystemExit(f"error: no such file: {', '.join(missing)} (write one with `search_ab.py window --out`)")
        records = {path.stem: json.loads(path.read_text()) for path in args.records}
        with pd.option_context("display.width", 200, "display.max_columns", 50):
            print(ties_table(records).to_string())
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
        if {"r2_extrap_a", "r2_extrap_b"} <= set(both.columns):  # runs before session 57 lack it
            later = [int((both[c] > 0.9).sum()) for c in ("r2_extrap_a", "r2_extrap_b")]
            print(f"extrapolation R^2 > 0.9 on (2, 4]: {later[0]} against {later[1]}")
        if {"rejected_a", "rejected_b"} <= set(both.columns):  # runs before session 58 lack it
            print(f"fits the safety check rejected: {both.rejected_a.sum()} against {both.rejected_b.sum()} "
                  f"(in {(both.rejected_a > 0).sum()} against {(both.rejected_b > 0).sum()} trajectories)")
        print(f"all: {int(both.a.sum())} against {int(both.b.sum())} of {len(both)}; "
              f"picks changed {int((both.pick_a != both.pick_b).sum())}, recovered only by the first "
              f"{int((both.a & ~both.b).sum())}, only by the second {int((both.b & ~both.a).sum())}")



if __name__ == "__main__":
    from bench.datasets import DatasetError
    from nsode.checkpoint_files import CheckpointError

    try:
        main()
    except (DatasetError, CheckpointError) as err:  # a mistyped dataset name or checkpoint folder
        sys.exit(f"error: {err}")

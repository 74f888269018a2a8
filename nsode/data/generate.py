"""Skeletons -> ODEs -> solutions -> parquet shards: parallel, deterministic, resumable.

Two kinds of work unit, both pure functions of (seed, index, config):

1. `candidate_block(block)`: `candidates_per_block` random trees, simplified and filtered
   (`simplify.process`). The driver takes blocks in order and keeps the first occurrence of
   each new skeleton that is not in the Large dataset's list (`excluded_skeletons.yaml`), until
   it has N. Because blocks are consumed in order, the skeleton list does not depend on how many
   blocks were computed in parallel, and a run with a larger N extends a smaller one.
2. `solve_shard(shard)`: for each skeleton of the shard, N_const constant sets (`resample_constants`),
   N_iv initial values y0 ~ U(y0_range), one batched LSODA run on [0, T_extra] for all of them
   (`solve_sets`: the skeleton's f is compiled once with its constants as parameters),
   and the finite-difference check on both intervals. The worker writes the shard itself
   (extra shard first, then the solution shard, each write-then-rename), so a shard under its
   final name is complete, and resuming skips it.

Two families of right-hand sides, by the config key `family`: "paper" (the default: `trees.py`'s
random trees, constants resampled by `simplify.resample_constants`, y0 ~ U(y0_range)) and
"science" (`science.py`: sums of textbook terms, constants and y0 by physical role). They differ
only in `sample_expression` (work unit 1) and `draw_sets` (work unit 2); the rest is shared.

Every random stream comes from `np.random.SeedSequence(seed, spawn_key=(kind, index))`, so the
output depends on (seed, config, N) only: not on -j, the scheduler, or interruptions. The only
exception is the wall-clock safety nets (`simplify_time_limit`, `solve_time_limit`): on a badly
overloaded machine an expression at the edge of its limit may be dropped in one run and kept in
another. The deterministic work bound `max_rhs_calls` normally ends a hard solve first.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import yaml

from odecore.files import write_text_atomic
from nsode.data import science
from nsode.data import shards as store
from nsode.data import simplify
from nsode.data import tokens as tok
from nsode.data import trees
from nsode.data.config import Config
from nsode.data.parallel import Executor
from odecore import protocol
from odecore.expressions import compile_parametrised, complexity
from odecore.solving import fd_residuals
from nsode.data.solve import solve_batch

GENERATOR_VERSION = "nsode.data/3"
EXCLUDED_FILE = Path(__file__).with_name("excluded_skeletons.yaml")
CANDIDATES, SOLUTIONS = 0, 1  # first element of the SeedSequence spawn key, per kind of work unit
MAX_DRY_CANDIDATES = 20_000  # the skeleton search gives up after so many candidates without a new one
SAVE_SECONDS = 30.0  # the skeleton search saves its list at least this often


class GenerateError(ValueError):
    """A request the generator refuses (e.g. resuming a folder with another seed); one line."""


def rng_for(seed: int, kind: int, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(kind, index)))


def skeleton_id(skeleton: str) -> int:
    """Stable 63-bit id of a skeleton text (blake2b; Python's hash() changes per process)."""
    return int.from_bytes(hashlib.blake2b(skeleton.encode(), digest_size=8).digest(), "big") >> 1


def excluded_skeletons(path: Path | None = None) -> frozenset[str]:
    """Skeletons never used for training: those of the Large benchmark dataset (`large.py` writes them)."""
    path = EXCLUDED_FILE if path is None else Path(path)
    if not path.exists():
        return frozenset()
    return frozenset((yaml.safe_load(path.read_text()) or {}).get("skeletons") or [])


# ---------------------------------------------------------------- work unit 1: candidate skeletons

@dataclass(frozen=True)
class Found:
    """A candidate that passed simplification and the support filter."""
    skeleton: str
    expression: str  # tokens.to_infix of the simplified expression
    complexity: int


def candidate_block(block: int, seed: int, config: Config, timer: Counter | None = None) -> tuple[list[Found], Counter]:
    """The accepted candidates of one block, in sampling order, and the rejection counts.

    `timer`, if given, accumulates seconds per stage (sampling, simplify)."""
    clock = _Clock(timer)
    rng = rng_for(seed, CANDIDATES, block)
    found, rejected = [], Counter()
    for _ in range(config.candidates_per_block):
        prefix = (science if config.family == "science" else trees).sample_expression(rng, config)
        clock("sampling")
        try:
            cand = simplify.process(prefix, config)
        except simplify.Rejected as err:
            rejected[err.reason] += 1
            continue
        finally:
            clock("simplify")
        found.append(Found(cand.skeleton, tok.to_infix(cand.expr), cand.complexity))
    return found, rejected


# ---------------------------------------------------------------- work unit 2: solutions of a shard

@dataclass(frozen=True)
class SkeletonRow:
    index: int
    skeleton: str
    expression: str
    complexity: int


def ode_grid(config: Config) -> np.ndarray:
    """[0, T] and [T, T_extra] as one grid (T once), for one LSODA run over both intervals."""
    return protocol.truth_grid(config.t_max, config.t_extra, config.grid)


def quality_check(f, params: np.ndarray | None, t: np.ndarray, y: np.ndarray, ok: np.ndarray, tolerance: float,
                  grid: int) -> tuple[np.ndarray, np.ndarray]:
    """(residual, good) per column of y [len(t), n] on `ode_grid` (`grid` points per interval).

    f and params as in `solve.solve_batch`. residual: the max |FD derivative - f(y)| (9-point
    central differences, `solve.fd_residuals`) over both intervals, each checked on its own
    equidistant grid; good: solved and residual <= tolerance.
    """
    residual = np.full(y.shape[1], np.inf)
    if ok.any():
        rhs = f if params is None else (lambda v: f(v, params[:, ok]))
        residual[ok] = fd_residuals(rhs, t, y[:, ok], grid=grid)
    return residual, ok & (residual <= tolerance)


def solve_sets(expr, sets: list, y0: np.ndarray, config: Config,
               clock: Callable[[str], None] = lambda stage: None):
    """Every (constant set, initial value) of one skeleton in one batched LSODA run, then the FD
    check: (y [len(ode_grid), n], ok, residual, good), column j * n_iv + i for set j and y0[j, i].

    The skeleton's f is compiled once with its constants as parameters (`compile_parametrised`).
    `clock(stage)` marks the end of the "compile" and "solve" stages.
    """
    param_expr, symbols = simplify.parametrised(expr)
    f = compile_parametrised(param_expr, symbols)
    values = np.array([v for _, v in sets], dtype=float).T.reshape(len(symbols), len(sets))
    params = np.repeat(values, y0.shape[1], axis=1)
    t = ode_grid(config)
    clock("compile")
    y, ok = solve_batch(f, y0.ravel(), t, params=params, rtol=config.rtol, atol=config.atol,
                        max_rhs_calls=config.max_rhs_calls, time_limit=config.solve_time_limit * len(sets))
    clock("solve")
    residual, good = quality_check(f, params, t, y, ok, config.fd_tolerance, config.grid)
    return y, ok, residual, good


def solve_skeleton(row: SkeletonRow, seed: int, config: Config, timer: Counter | None = None):
    """All checked solutions of one skeleton: (row dicts without extra_row, extra row dicts, drop counts).

    The random stream is the skeleton's own, (seed, SOLUTIONS, row.index). `timer`, if given,
    accumulates seconds per stage (constants, compile, solve, check, rows).
    """
    clock = _Clock(timer)
    rng = rng_for(seed, SOLUTIONS, row.index)
    drops = Counter()
    expr = tok.parse_infix(row.expression)
    sets, y0 = draw_sets(expr, row.skeleton, rng, config)
    if simplify.constant_slots(expr):
        drops["constant sets missing"] += config.n_const - len(sets)
    clock("constants")
    if not sets:
        return [], [], drops
    y, ok, residual, good = solve_sets(expr, sets, y0, config, clock)
    drops["solve failed"] += int((~ok).sum())
    drops["fd check"] += int((ok & ~good).sum())
    clock("check")
    rows, extra = [], []
    n = config.grid
    for j, (ode, _) in enumerate(sets):
        keep = np.flatnonzero(good.reshape(len(sets), config.n_iv)[j])
        if not len(keep):
            continue
        prefix = tok.encode(ode)
        common = dict(
            ode_id=row.index * config.n_const + j, skeleton_index=row.index, skeleton=row.skeleton,
            skeleton_id=skeleton_id(row.skeleton), expression=tok.to_infix(ode), tokens=tok.to_strings(prefix),
            constants=tok.constants(prefix), complexity=complexity(ode))
        for i in keep:
            col = j * config.n_iv + i
            rows.append({**common, "y0_index": int(i), "y0": float(y0[j, i]), "y": y[:n, col].tolist(),
                         "fd_residual": float(residual[col])})
            extra.append({"ode_id": common["ode_id"], "y0_index": int(i), "y_extra": y[n - 1:, col].tolist()})
    clock("rows")
    return rows, extra, drops


def draw_sets(expr, skeleton: str, rng: np.random.Generator, config: Config) -> tuple[list, np.ndarray]:
    """The constant sets of a skeleton and their initial values [len(sets), n_iv], by family: the
    paper's resampling and y0 ~ U(y0_range), or the science family's constants by role (`science.draw_sets`)."""
    if config.family == "science":
        return science.draw_sets(expr, skeleton, rng, config)
    sets = simplify.resample_constants(expr, skeleton, rng, config)
    return sets, rng.uniform(*config.y0_range, size=(len(sets), config.n_iv))


class _Clock:
    """Adds the seconds since the previous call to timer[stage] (does nothing without a timer)."""

    def __init__(self, timer: Counter | None):
        self.timer, self.last = timer, time.perf_counter()

    def __call__(self, stage: str) -> None:
        if self.timer is not None:
            now = time.perf_counter()
            self.timer[stage] += now - self.last
            self.last = now


def solve_shard(folder: str, shard: int, skeletons: list[SkeletonRow], seed: int, config: Config) -> dict:
    """Solve and write one shard (extra file first, then the solution file); returns its counts."""
    rows, extra, drops = [], [], Counter()
    for row in skeletons:
        r, e, d = solve_skeleton(row, seed, config)
        for k, item in enumerate(r):
            item["extra_row"] = len(extra) + k
        rows += r
        extra += e
        drops += d
    counts = {"solutions": len(rows), "odes": len({r["ode_id"] for r in rows}),
              "skeletons": len({r["skeleton_index"] for r in rows}), "drops": dict(sorted(drops.items()))}
    meta = {b"skeletons": _range_text(skeletons).encode(), b"counts": json.dumps(counts).encode()}
    folder = Path(folder)
    path = folder / "shards" / store.shard_name(shard)
    store.write_table_atomic(pa.Table.from_pylist(extra, schema=store.EXTRA_SCHEMA), store.extra_path(path))
    table = pa.Table.from_pylist(rows, schema=store.SOLUTION_SCHEMA)
    store.write_table_atomic(table.replace_schema_metadata(meta), path)
    return counts


def _range_text(skeletons: list[SkeletonRow]) -> str:
    return f"{skeletons[0].index}:{skeletons[-1].index + 1}" if skeletons else "0:0"


# ---------------------------------------------------------------- the driver

def provenance(config: Config, seed: int, solution_seed: int | None = None) -> dict:
    excluded = excluded_skeletons()
    digest = hashlib.sha256("\n".join(sorted(excluded)).encode()).hexdigest()[:16]
    out = {**json.loads(config.to_json()), "generator_version": GENERATOR_VERSION, "seed": int(seed),
           "excluded_skeletons": len(excluded), "excluded_skeletons_sha256": digest}
    if solution_seed is not None and solution_seed != seed:  # recorded only where it differs
        out["solution_seed"] = int(solution_seed)
    return out


def _differing(have: dict, wanted: dict) -> list[str]:
    """The keys whose values differ between two provenance records, sorted."""
    return sorted(k for k in set(have) | set(wanted) if have.get(k) != wanted.get(k))


def prepare_folder(folder: Path, config: Config, seed: int, solution_seed: int | None = None) -> None:
    """Write config.json, or check that an existing one matches (else GenerateError)."""
    wanted = provenance(config, seed, solution_seed)
    file = folder / store.CONFIG_FILE
    if file.exists():
        try:
            have = json.loads(file.read_text())
        except json.JSONDecodeError:
            raise GenerateError(f"{file} is not valid JSON; use a new --out folder") from None
        if not isinstance(have, dict):
            raise GenerateError(f"{file} is not a generator's configuration (a JSON object); use a new --out folder")
        diff = _differing(have, wanted)
        if diff:
            raise GenerateError(f"{folder} was generated with different {', '.join(diff)}; "
                                "resume with the same --seed, --solution-seed and --config, or use a new --out folder")
    else:
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in (store.SKELETON_FILE, "shards", "extra")
                         and not p.name.startswith(".")) if folder.is_dir() else []
        if foreign:  # a skeleton list carried in is the generator's own; anything else is not
            raise GenerateError(f"{folder} holds files the generator did not write ({', '.join(foreign[:3])}) and no "
                                f"{store.CONFIG_FILE}: use a new or empty --out folder")
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(json.dumps(wanted, indent=1, sort_keys=True) + "\n", file)
    for stale in list(folder.glob("**/.*.tmp")):  # left by an interrupted run
        stale.unlink(missing_ok=True)


def find_skeletons(folder: Path, n: int, seed: int, config: Config, run: Callable, progress: bool,
                   workers: int = 1) -> list[SkeletonRow]:
    """The first n new skeletons in block order; kept in skeletons.parquet and extended on resume.

    The file's metadata records where the search stopped (block, and position among that
    block's accepted candidates) and the candidate counts so far, so that extending a list gives
    the same skeletons and counts as asking for the larger N at once, and the seed and config it
    was searched with, so that a list copied into a run with others is refused.
    """
    from tqdm.auto import tqdm

    file = folder / store.SKELETON_FILE
    records, search = _read_skeletons(file)
    origin = provenance(config, seed)  # what fixes the list: seed, config, generator, excluded skeletons
    if search.setdefault("origin", origin) != origin:  # lists written before the record was kept pass
        raise GenerateError(f"{file} was searched with different {', '.join(_differing(search['origin'], origin))}; "
                            "copy it only to a run with the same --seed and --config (a new --solution-seed "
                            "is fine), or use a new --out folder")
    if len(records) >= n:
        return [r for r, _ in records[:n]]
    counts = Counter(search["candidates"])
    seen = {r.skeleton for r, _ in records}
    excluded = excluded_skeletons()
    block, position = search["block"], search["position"]
    bar = tqdm(total=n, initial=len(records), desc="skeletons", unit="sk", disable=not progress)
    dry = 0  # candidates since the last new skeleton

    def state() -> tuple:
        """What a resumed search needs, taken where records, block, position and counts agree (between blocks)."""
        return len(records), {"block": block, "position": position, "candidates": dict(sorted(counts.items())),
                              "origin": origin}

    kept, last = state(), state()  # kept: as on disk; last: the newest consistent state
    saved = time.monotonic()
    try:
        while len(records) < n:
            if dry > MAX_DRY_CANDIDATES:
                bar.close()
                raise GenerateError(f"no new skeleton in the last {dry} candidates ({len(records)} found): the "
                                    f"distribution seems to have fewer than {n} skeletons; ask for fewer")
            # blocks per wave: one per worker at first, then what the rate so far says is needed
            # (a multiple of the workers, at most 8 each), so little work is done past N
            wave = workers
            if block > 0 and records:
                needed = math.ceil((n - len(records)) / (len(records) / block) * 1.1)
                wave = workers * max(1, min(8, math.ceil(needed / workers)))
            indices = range(block, block + wave)
            for b, (found, rejected) in zip(indices, run(candidate_block, [(b, seed, config) for b in indices])):
                if len(records) == n:  # the rest of the wave is not needed (but consumed: no cancelled tasks)
                    continue
                if position == 0:  # a block resumed part-way had its rejections counted already
                    counts += rejected
                    counts["in support"] += len(found)
                dry += config.candidates_per_block if position == 0 else 0
                for cand in found[position:]:
                    position += 1
                    if cand.skeleton in excluded:
                        counts["excluded (Large)"] += 1
                    elif cand.skeleton in seen:
                        counts["duplicate skeleton"] += 1
                    else:
                        seen.add(cand.skeleton)
                        records.append((SkeletonRow(len(records), cand.skeleton, cand.expression, cand.complexity), b))
                        dry = 0
                        bar.update()
                        if len(records) == n:
                            break
                block, position = (b, position) if position < len(found) else (b + 1, 0)
                last = state()
                if time.monotonic() - saved > SAVE_SECONDS:  # an interrupted search resumes from here, not from 0
                    _write_skeletons(file, records[:last[0]], last[1])
                    kept, saved = last, time.monotonic()
    except KeyboardInterrupt:  # keep what the finished blocks found, then stop as asked
        bar.close()  # the message that follows starts on a line of its own
        if last != kept:
            _write_skeletons(file, records[:last[0]], last[1])
        raise
    bar.close()
    _write_skeletons(file, records, state()[1])
    return [r for r, _ in records]


def _read_skeletons(file: Path) -> tuple[list[tuple[SkeletonRow, int]], dict]:
    """(skeleton rows with their block, search state) kept by an earlier run; none yet: empty."""
    if not file.exists():
        return [], {"block": 0, "position": 0, "candidates": {}}
    table = store.read_table(file)
    return ([(SkeletonRow(r["skeleton_index"], r["skeleton"], r["expression"], r["complexity"]), r["block"])
             for r in table.to_pylist()], json.loads(table.schema.metadata[b"search"]))


def _write_skeletons(file: Path, records: list, search: dict) -> None:
    table = pa.Table.from_pylist(
        [{"skeleton_index": r.index, "skeleton": r.skeleton, "skeleton_id": skeleton_id(r.skeleton),
          "expression": r.expression, "complexity": r.complexity, "block": b} for r, b in records],
        schema=store.SKELETON_SCHEMA)
    store.write_table_atomic(table.replace_schema_metadata({b"search": json.dumps(search).encode()}), file)


def _solved_end(folder: Path) -> int:
    """One past the last skeleton index that the folder's finished shards hold (0 for none)."""
    ends = [_shard_range(path).partition(":")[2] for path in store.shard_paths(folder)]
    return max((int(end) for end in ends if end.isdigit()), default=0)


def _shard_range(path: Path) -> str:
    """The skeleton range "start:end" a finished shard holds; "" for one that cannot be read (it is
    made again)."""
    try:
        return (store.read_schema(path).metadata or {}).get(b"skeletons", b"").decode()
    except store.ShardError:
        return ""


def shard_is_done(path: Path, expected: str) -> bool:
    if not (path.exists() and store.extra_path(path).exists()):
        return False
    return _shard_range(path) == expected


def generate(out: str | Path, n_skeletons: int, seed: int, config: Config, jobs: int = 1,
             scheduler: str | None = None, progress: bool = True, solve: bool = True,
             solution_seed: int | None = None) -> dict:
    """Generate (or resume) a training set in `out`; returns the totals over all its shards.

    solve=False stops after the skeleton list (skeletons.parquet), the costly half: a list searched
    on a small machine can be carried to a large one and solved there with the same command.
    `seed` fixes the skeleton list, `solution_seed` (default `seed`) the constants and initial
    values drawn for each skeleton: a copy of a list solved with another solution seed gives new
    solutions of the same laws, without searching again.
    """
    from tqdm.auto import tqdm

    if n_skeletons < 1:
        raise GenerateError("--n-skeletons must be at least 1")
    folder = Path(out)
    solution_seed = seed if solution_seed is None else solution_seed
    with Executor(jobs, scheduler) as run:  # a scheduler that cannot be reached stops before the folder is made
        prepare_folder(folder, config, seed, solution_seed)
        rows = find_skeletons(folder, n_skeletons, seed, config, run, progress, workers=16 if scheduler else jobs)
        if not solve:
            return totals(folder)
        solved = _solved_end(folder)
        if rows and solved > rows[-1].index + 1:  # re-solving the last shard short would drop the later ones
            raise GenerateError(f"{folder} already holds solved skeletons up to {solved}; --n-skeletons {n_skeletons} "
                                f"would drop some of them: give at least {solved}, or a new --out")
        size = config.skeletons_per_shard
        parts = [rows[k:k + size] for k in range(0, len(rows), size)]
        todo = [s for s, part in enumerate(parts)
                if not shard_is_done(folder / "shards" / store.shard_name(s), _range_text(part))]
        units = [(str(folder), s, parts[s], solution_seed, config) for s in todo]
        with tqdm(total=len(parts), initial=len(parts) - len(todo), desc="shards", unit="shard",
                  disable=not progress) as bar:  # closed on Ctrl-C too: the message starts on its own line
            for _ in run(solve_shard, units, ordered=False):
                bar.update()
    return totals(folder)


def totals(folder: Path) -> dict:
    """Counts summed over the finished shards (from their metadata, without reading the data)."""
    out = {"shards": 0, "skeletons": 0, "odes": 0, "solutions": 0, "drops": Counter()}
    for path in store.shard_paths(folder):
        counts = json.loads((store.read_schema(path).metadata or {}).get(b"counts", b"{}"))
        out["shards"] += 1
        for key in ("skeletons", "odes", "solutions"):
            out[key] += counts.get(key, 0)
        out["drops"] += Counter(counts.get("drops", {}))
    out["drops"] = dict(out["drops"])
    return out

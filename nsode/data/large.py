"""The Large benchmark dataset: 162 ODEs from the training distribution, with their own seed.

The paper's "Large" test set: ODEs drawn like training ODEs (same trees, simplification,
support filter, constant resampling), one per skeleton, at most 10 per complexity, each with a
new initial value y0 ~ U(y0_range) whose solution exists on [0, T_extra] and passes the
finite-difference check. Complexities are filled by rejection sampling: candidates are taken in
the generator's block order (`generate.candidate_block` with the Large seed) and one whose
complexity already has its 10 is skipped.

Two kinds of skeleton are *reserved*, never drawn for Large, because Large's skeletons are
excluded from training and a model that never saw them would fail where no one expects it to:
the elementary skeletons (complexity <= 3: y, c*y, -c*y, c + y, y**c, sqrt(y), log(y), ...)
and the skeletons of the curated benchmarks Textbook and Classic (e.g. -c - c*y).

Writes `datasets/large.json` in the benchmark harness's format (`bench.datasets`) and the list
of its skeletons to `excluded_skeletons.yaml`, which `generate` consults so that no training set
ever contains a Large skeleton.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from odecore import shipped, solving
from nsode.data import config as cfg
from nsode.data import generate, simplify
from nsode.data import tokens as tok
from odecore.expressions import compile_vector, complexity
from nsode.data.solve import solve_batch

DATASET_FILE = shipped.folder("datasets") / "large.json"
CURATED_FILES = [DATASET_FILE.with_name(name) for name in ("textbook.json", "classic.json")]
SEED = 20230723
ELEMENTARY_COMPLEXITY = 3  # skeletons this simple stay in training (see the module docstring)


def curated_skeletons(config: cfg.Config, files=CURATED_FILES) -> frozenset[str]:
    """Skeletons of the curated benchmarks' equations, simplified as the generator simplifies.

    Equations outside the training vocabulary (tan, pi) cannot be training skeletons anyway and
    are left out.
    """
    found = set()
    for file in files:
        for eq in json.loads(Path(file).read_text())["equations"]:
            try:
                expr = simplify.canonical(simplify.simplify(tok.parse_infix(eq["expression"]),
                                                            config.simplify_time_limit))
                found.add(tok.skeleton(expr))
            except (tok.EncodingError, simplify.Rejected, ValueError, TypeError):
                continue
    return frozenset(found)


def reserved(skeleton: str, skeleton_complexity: int, curated: frozenset[str]) -> bool:
    """Whether Large must leave this skeleton to training (module docstring)."""
    return skeleton_complexity <= ELEMENTARY_COMPLEXITY or skeleton in curated


def valid_initial_value(expr, y0: float, config: cfg.Config) -> bool:
    """The generator's checks for one solution (`solve.valid_initial_value`) with the config's
    grid, tolerances and time limit; one LSODA run over both intervals, as the harness computes
    ground truth."""
    return solving.valid_initial_value(expr, y0, generate.ode_grid(config), config.grid, rtol=config.rtol,
                                       atol=config.atol, fd_tolerance=config.fd_tolerance,
                                       time_limit=config.solve_time_limit)


def build(seed: int = SEED, total: int = 162, per_complexity: int = 10, config: cfg.Config | None = None,
          progress: bool = True) -> dict:
    """The dataset as the harness's JSON object (see bench/datasets.py)."""
    from tqdm.auto import tqdm

    config = cfg.default() if config is None else config
    equations, seen, per, counts, block = [], set(), Counter(), Counter(), 0
    curated = curated_skeletons(config)
    bar = tqdm(total=total, desc="Large", unit="ODE", disable=not progress)
    while len(equations) < total:
        found, rejected = generate.candidate_block(block, seed, config)
        counts += rejected
        for k, cand in enumerate(found):
            if cand.skeleton in seen:
                counts["duplicate skeleton"] += 1
                continue
            seen.add(cand.skeleton)  # one try per skeleton, so its first draw decides
            if reserved(cand.skeleton, cand.complexity, curated):
                counts["reserved (elementary or curated)"] += 1
                continue
            if per[cand.complexity] >= per_complexity:
                counts["complexity full"] += 1
                continue
            rng = generate.rng_for(seed, generate.SOLUTIONS, block * config.candidates_per_block + k)
            entry = _draw(cand, rng, config)
            if entry is None:
                counts["no valid constants or initial value"] += 1
            elif per[entry["complexity"]] >= per_complexity:
                counts["complexity full"] += 1
            else:
                per[entry["complexity"]] += 1
                equations.append({"id": f"large-{len(equations):03d}", **entry})
                bar.update()
                if len(equations) == total:
                    break
        block += 1
    bar.close()
    equations.sort(key=lambda eq: (eq["complexity"], eq["id"]))
    for i, eq in enumerate(equations):
        eq["id"] = f"large-{i:03d}"
    source = f"{generate.GENERATOR_VERSION}, seed {seed}"
    return {
        "format": "bench-dataset/1",
        "name": "large",
        "version": "1",
        "description": (
            f"{total} ODEs y' = f(y) drawn from NSODE's training distribution (nsode/data/default.yaml) "
            f"with a seed of their own: one per skeleton, at most {per_complexity} per complexity "
            "(rejection sampling), none elementary (complexity <= 3) or shared with Textbook or Classic, constants resampled as for training, one initial value "
            f"y0 ~ U({config.y0_range[0]:g}, {config.y0_range[1]:g}) whose solution exists on "
            f"[0, {config.t_extra:g}] and passes the generator's finite-difference check. Their skeletons "
            "are excluded from every training set (nsode/data/excluded_skeletons.yaml). "
            "Written by `python -m nsode.data large`."),
        "source": source,
        "generator": {"version": generate.GENERATOR_VERSION, "seed": seed, "total": total,
                      "per_complexity": per_complexity, "candidates": dict(sorted(counts.items())),
                      "blocks": block},
        "equations": equations,
    }


def _draw(cand: generate.Found, rng: np.random.Generator, config: cfg.Config) -> dict | None:
    """One ODE of the skeleton (new constants) with one valid initial value, or None.

    N_iv draws of y0 go through the training path (batched solve, FD check); the first that
    passes is confirmed with a plain LSODA solve, which is how the harness computes ground truth.
    """
    expr = tok.parse_infix(cand.expression)
    sets = simplify.resample_constants(expr, cand.skeleton, rng, config, n=1)
    if not sets:
        return None
    ode = sets[0][0]
    y0 = rng.uniform(*config.y0_range, size=config.n_iv)
    f = compile_vector(ode)
    t = generate.ode_grid(config)
    y, ok = solve_batch(f, y0, t, rtol=config.rtol, atol=config.atol, max_rhs_calls=config.max_rhs_calls,
                        time_limit=config.solve_time_limit)
    _, good = generate.quality_check(f, None, t, y, ok, config.fd_tolerance, config.grid)
    for i in np.flatnonzero(good):
        if valid_initial_value(ode, float(y0[i]), config):
            return {"expression": tok.to_infix(ode), "y0": [float(y0[i])], "complexity": complexity(ode),
                    "skeleton": cand.skeleton}
    return None


def write_excluded(spec: dict, path: Path | None = None, dataset: str = "datasets/large.json") -> None:
    header = ("# Skeletons of the Large benchmark dataset: never used for training.\n"
              "# Written by `python -m nsode.data large`; read by `python -m nsode.data generate`.\n")
    body = {"source": f"{dataset} ({spec['source']})",
            "skeletons": sorted(eq["skeleton"] for eq in spec["equations"])}
    path = generate.EXCLUDED_FILE if path is None else Path(path)
    path.write_text(header + yaml.safe_dump(body, sort_keys=False, width=200))


def main(out: Path = DATASET_FILE, seed: int = SEED, per_complexity: int = 10, total: int = 162,
         excluded_file: Path | None = None, progress: bool = True) -> dict:
    spec = build(seed=seed, total=total, per_complexity=per_complexity, progress=progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(spec, indent=1) + "\n")
    label = "datasets/large.json" if out.resolve() == DATASET_FILE.resolve() else str(out)  # as the list has it
    write_excluded(spec, excluded_file or generate.EXCLUDED_FILE, dataset=label)
    per = Counter(eq["complexity"] for eq in spec["equations"])
    print(f"{out}: {len(spec['equations'])} ODEs, complexities {dict(sorted(per.items()))}")
    print(f"excluded skeletons: {excluded_file or generate.EXCLUDED_FILE}")
    return spec

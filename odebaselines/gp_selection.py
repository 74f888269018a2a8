"""The selection rules of ellyn's configurations (`odebaselines.gp_ellyn`), as plain functions of
errors and ages: Schmidt & Lipson's Pareto tournament deletion over (age, error) for AFP and
its variants, and automatic epsilon-lexicase selection over per-point errors for EPLEX.
"""
from __future__ import annotations

import random

import numpy as np


def _dominates(a, b, key) -> bool:
    ea, eb = key(a), key(b)
    return a.age <= b.age and ea <= eb and (a.age < b.age or ea < eb)


def pareto_tournament_deletion(pool, size, rng, key):
    """Schmidt & Lipson's reduction: delete dominated members of random pairs until `size` remain."""
    pool = list(pool)
    misses = 0
    while len(pool) > size and misses < 20 * len(pool):
        i, j = rng.choice(len(pool), size=2, replace=False)
        a, b = pool[i], pool[j]
        if _dominates(a, b, key) or (a.age == b.age and key(a) == key(b) and len(a.tree) <= len(b.tree)):
            pool.pop(j)
        elif _dominates(b, a, key) or (a.age == b.age and key(a) == key(b)):
            pool.pop(i)
        else:
            misses += 1
            continue
        misses = 0
    if len(pool) > size:  # the non-dominated front itself is larger than the population
        pool.sort(key=lambda ind: (key(ind), ind.age))
        pool = pool[:size]
    return pool


def epsilon_lexicase(errors: np.ndarray, k: int) -> list[int]:
    """Indices of k parents by automatic epsilon-lexicase selection on an (individuals x cases)
    matrix of finite errors: exactly DEAP's `tools.selAutomaticEpsilonLexicase`, including its use
    of the `random` stream (so both pick the same parents), vectorised with numpy; DEAP's
    pure-Python loops take milliseconds per parent at population 1000.

    A converged population holds dozens of clones, and most steps then keep every candidate
    because all have the same error on the case. So once a step keeps them all, the cases on
    which they differ are listed and the others skipped without a look, until the next cut.
    """
    by_case = np.ascontiguousarray(errors.T)
    chosen = []
    for _ in range(k):
        candidates, varies = np.arange(len(errors)), None
        cases = list(range(errors.shape[1]))
        random.shuffle(cases)
        for case in cases:
            if len(candidates) == 1:
                break
            if varies is not None and not varies[case]:
                continue
            column = by_case[case, candidates]
            mad = _median(np.abs(column - _median(column)))
            kept = candidates[column <= column.min() + mad]
            if len(kept) < len(candidates):
                candidates, varies = kept, None
            elif varies is None:
                varies = (by_case[:, candidates] != by_case[:, candidates[:1]]).any(axis=1).tolist()
                if not any(varies):
                    break  # identical error rows: no later case can separate them (DEAP loops on)
        chosen.append(int(random.choice(list(candidates))))
    return chosen


def _median(values: np.ndarray) -> float:
    """np.median of a 1-D array, bit for bit, without its generic-axis overhead."""
    half = len(values) // 2
    if len(values) % 2:
        return np.partition(values, half)[half]
    part = np.partition(values, (half - 1, half))
    return (part[half - 1] + part[half]) / 2

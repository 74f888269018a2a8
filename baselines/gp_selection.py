"""The selection rules of ellyn's configurations (`baselines.gp_ellyn`), as plain functions of
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
    error matrix: exactly DEAP's `tools.selAutomaticEpsilonLexicase`, including its use of the
    `random` stream (so both pick the same parents), vectorised with numpy; DEAP's pure-Python
    loops take milliseconds per parent at population 1000.
    """
    chosen = []
    for _ in range(k):
        candidates = np.arange(len(errors))
        cases = list(range(errors.shape[1]))
        random.shuffle(cases)
        while cases and len(candidates) > 1:
            column = errors[candidates, cases.pop(0)]
            mad = _median(np.abs(column - _median(column)))
            kept = candidates[column <= column.min() + mad]
            if len(kept) == len(candidates) and (errors[kept] == errors[kept[0]]).all():
                break  # identical error rows: no later case can separate them (DEAP loops on)
            candidates = kept
        chosen.append(int(random.choice(list(candidates))))
    return chosen


def _median(values: np.ndarray) -> float:
    """np.median of a 1-D array, bit for bit, without its generic-axis overhead."""
    half = len(values) // 2
    if len(values) % 2:
        return np.partition(values, half)[half]
    part = np.partition(values, (half - 1, half))
    return (part[half - 1] + part[half]) / 2

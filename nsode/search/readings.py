"""Transformed readings: the proposer also reads log|y| or 1/y of a record, and each law it writes
for that record is written back as a law in y, to join the search's stage 1 beside the beam's own.

Why: some laws are simple in another variable. With z = log(s*y) (s the record's sign), Gompertz
growth y' = y*(a - b*log(y)) is the relaxation z' = a - b*z, and logistic growth the saturation
z' = r - (r/K)*exp(z); with z = 1/y, every law a*y + b*y**2 (logistic growth) is linear and a
harvested logistic -h + a*y + b*y**2 is the quadratic z' = h*z**2 - a*z - b. The model reads
relaxations well and writes the bracket of a growth law, or a quadratic with an offset, rarely, so
reading the record where the law is simple widens what it proposes without training. Written back: z' = g(z) is y' = y*g(log(s*y)) (log) or y' = -y**2*g(1/y) (reciprocal).
"""
from __future__ import annotations

import numpy as np
import sympy

from odecore.expressions import Y

KINDS = ("log", "reciprocal")
RECIPROCAL_RANGE = 1e3  # 1/y is read only where max|y| / min|y| stays below this (1/y of a record near 0 is noise)


def transformed(y: np.ndarray, kind: str) -> np.ndarray | None:
    """z = log|y| or 1/y of a record that keeps one sign (None where the reading does not apply)."""
    magnitude = np.abs(y)
    if not (np.all(y > 0) or np.all(y < 0)):
        return None
    if kind == "log":
        return np.log(magnitude)
    if kind == "reciprocal":
        return 1.0 / y if magnitude.max() <= RECIPROCAL_RANGE * magnitude.min() else None
    raise ValueError(f"kind={kind!r}: must be one of {', '.join(KINDS)}")


def written_back(g: sympy.Expr, kind: str, sign: int) -> sympy.Expr:
    """The law in y whose transformed record obeys z' = g(z), expanded (log: `sign` is the record's
    sign; exp(c*log(y)) is written y**c, as the beam writes powers)."""
    if kind == "reciprocal":
        return sympy.expand(-Y**2 * g.xreplace({Y: 1 / Y}))
    u = sympy.Symbol("u", positive=True)  # u = sign*y > 0, so that exp(c*log(u)) is u**c
    law = sympy.expand(sign * u * g.xreplace({Y: sympy.log(u)}))
    return law.xreplace({u: sign * Y})

"""The finite-difference method base of the GP family: the shared FD protocol plus a cooperative
time limit, and SRBench's hyperparameter grids.

`fd.grid_search` kills a run at its hard limit and scores it as failed. A GP run, unlike a
closed-form fit, always has a best program so far, so each regressor is told to stop by
itself (`max_time`) at COOPERATIVE_SHARE of the limit the protocol will enforce, and returns
that program instead of being killed.
"""
from __future__ import annotations

import math

from baselines import fd, gp

COOPERATIVE_SHARE = 0.8  # of the hard per-run limit: leaves time for the fork, the refit's expression and the reply
SRBENCH_EVALUATIONS = 500_000  # SRBench's budget for every method of the family

# SRBench's ellyn grids: populations 100/500/1000 with population x generations fixed (we fix
# the evaluations instead), op_list with and without sin/cos
ELLYN_GRID = {"population_size": [100, 500, 1000],
              "functions": [gp.ELLYN_FUNCTIONS_NO_TRIG, gp.ELLYN_FUNCTIONS]}
# SRBench's GP-GOMEA grid: template height 4/6, the two function sets, with linear scaling
# (SRBench also ran the full set without linear scaling; one dict grid cannot hold that subset)
GOMEA_GRID = {"initial_height": [4, 6],
              "functions": [gp.GOMEA_FUNCTIONS, gp.GOMEA_FUNCTIONS_ARITHMETIC]}


class GPFamilyMethod(fd.FiniteDifferenceMethod):
    """An FD method whose regressor gets `max_time` = `cooperative(time_limit)`, where
    `time_limit` is the hard per-run limit that `fd.FiniteDifferenceMethod.run` passes to
    `make_regressor` (the per-run limit capped at an equal share of the task's limit)."""

    requires = ("deap", "pynumdiff")


def cooperative(time_limit: float | None) -> float | None:
    """Seconds a GP run may take before it stops by itself: COOPERATIVE_SHARE of its hard limit."""
    return None if time_limit is None or math.isinf(time_limit) else COOPERATIVE_SHARE * time_limit

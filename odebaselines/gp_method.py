"""The finite-difference method base of the GP family: the shared FD protocol plus a counted
budget, a cooperative time limit, and SRBench's hyperparameter grids.

Each run stops after `evaluations` programs scored (SRBench: 500,000), so a result does not
depend on how busy the machine is. `--methods afp:evaluations=20000` is a smaller budget.

`fd.grid_search` kills a run at its hard limit and scores it as failed. A GP run, unlike a
closed-form fit, always has a best program so far, so each regressor is told to stop by
itself (`max_time`) at COOPERATIVE_SHARE of the limit the protocol will enforce, and returns
that program instead of being killed. That limit is a safety net: the rows count the runs it
ended (`runs_stopped_by_time` in the metadata).
"""
from __future__ import annotations

import math

from bench.method import is_whole, require
from odebaselines import fd, gp

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
    `make_regressor` (the per-run limit capped at an equal share of the task's limit), and
    `max_evaluations` = `evaluations`, the counted budget of one run."""

    requires = ("deap", "pynumdiff")

    def __init__(self, grid=None, run_time_limit=..., fd_degrees=None, fd_window=None,
                 evaluations: int = SRBENCH_EVALUATIONS):
        super().__init__(grid, run_time_limit, fd_degrees, fd_window)
        self.evaluations = evaluations

    def check_params(self) -> None:
        require(is_whole(self.evaluations, 1), "evaluations", self.evaluations, "a whole number >= 1")
        super().check_params()


def cooperative(time_limit: float | None) -> float | None:
    """Seconds a GP run may take before it stops by itself: COOPERATIVE_SHARE of its hard limit."""
    return None if time_limit is None or math.isinf(time_limit) else COOPERATIVE_SHARE * time_limit

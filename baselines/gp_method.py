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
from bench.method import Budget, Observations, Prediction

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
    """An FD method whose regressor gets `max_time` = a share of the protocol's per-run limit."""

    requires = ("deap", "pynumdiff")

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        self._task_time_limit = budget.time_limit
        return super().run(observations, budget)

    def fit_time_limit(self) -> float | None:
        """Seconds a regressor may run: as in `fd.grid_search`, the per-run limit capped at an
        equal share of the task's limit over all settings plus the refit, times COOPERATIVE_SHARE."""
        task = getattr(self, "_task_time_limit", None)
        seconds = fd.per_run_limit(self.grid, math.inf if self.run_time_limit is None else self.run_time_limit,
                                   task / len(self.fd_degrees) if task else None)
        return None if math.isinf(seconds) else COOPERATIVE_SHARE * seconds

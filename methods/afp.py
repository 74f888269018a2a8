"""AFP: age-fitness Pareto genetic programming (Schmidt & Lipson 2011), SRBench's ellyn
configuration, re-implemented on DEAP (`odebaselines.gp_ellyn.AFPRegressor`, whose docstring
lists the differences from ellyn), fitted to smoothed finite differences. Grid as SRBench:
population 100/500/1000 at 500,000 evaluations, with and without sin/cos."""
from odebaselines.gp_ellyn import AFPRegressor
from odebaselines.gp_method import ELLYN_GRID, GPFamilyMethod, cooperative


class AFP(GPFamilyMethod):
    name = "afp"
    version = "1"
    description = "age-fitness Pareto GP (Schmidt & Lipson 2011; SRBench's ellyn AFP) on DEAP, on FD derivatives"
    grid = ELLYN_GRID

    def make_regressor(self, seed, time_limit=None):
        return AFPRegressor(max_evaluations=self.evaluations, random_state=seed, max_time=cooperative(time_limit))

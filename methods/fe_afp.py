"""FE-AFP: age-fitness Pareto GP with co-evolved fitness predictors (Schmidt & Lipson 2008,
2011), SRBench's ellyn configuration (`EstimateFitness`, predictors of 10 points, 100
predictors, 10 trainers), re-implemented on DEAP (`odebaselines.gp_ellyn.FEAFPRegressor`,
whose docstring lists the differences), fitted to smoothed finite differences. Evaluations on
a predictor's 10 points count as 10/n of one, like SRBench's scaling of generations by n/10."""
from odebaselines.gp_ellyn import FEAFPRegressor
from odebaselines.gp_method import ELLYN_GRID, GPFamilyMethod, cooperative


class FEAFP(GPFamilyMethod):
    name = "fe_afp"
    version = "1"
    description = "AFP with co-evolved fitness predictors (Schmidt & Lipson; SRBench's ellyn FE-AFP) on DEAP, on FD derivatives"
    grid = ELLYN_GRID

    def make_regressor(self, seed, time_limit=None):
        return FEAFPRegressor(max_evaluations=self.evaluations, random_state=seed, max_time=cooperative(time_limit))

"""EPLEX: GP with epsilon-lexicase parent selection (La Cava, Spector & Danai 2016), SRBench's
ellyn configuration, re-implemented on DEAP (`odebaselines.gp_ellyn.EPLEXRegressor`, whose
docstring lists the differences; the selection rule is DEAP's `selAutomaticEpsilonLexicase`),
fitted to smoothed finite differences."""
from odebaselines.gp_ellyn import EPLEXRegressor
from odebaselines.gp_method import ELLYN_GRID, GPFamilyMethod, cooperative


class EPLEX(GPFamilyMethod):
    name = "eplex"
    version = "1"
    description = "epsilon-lexicase GP (La Cava et al. 2016; SRBench's ellyn EPLEX) on DEAP, on FD derivatives"
    grid = ELLYN_GRID

    def make_regressor(self, seed, time_limit=None):
        return EPLEXRegressor(max_evaluations=self.evaluations, random_state=seed, max_time=cooperative(time_limit))

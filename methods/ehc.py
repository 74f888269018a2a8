"""EHC: age-fitness Pareto GP with epigenetic hill climbing (La Cava, Spector & Danai 2015;
La Cava's thesis 2016), SRBench's ellyn configuration (3 epigenetic hill-climbing steps per
child, parameter hill climbing), re-implemented on DEAP (`odebaselines.gp_ellyn.EHCRegressor`,
whose docstring lists the differences), fitted to smoothed finite differences."""
from odebaselines.gp_ellyn import EHCRegressor
from odebaselines.gp_method import ELLYN_GRID, GPFamilyMethod, cooperative


class EHC(GPFamilyMethod):
    name = "ehc"
    version = "1"
    description = "AFP with epigenetic hill climbing (La Cava et al.; SRBench's ellyn EHC) on DEAP, on FD derivatives"
    grid = ELLYN_GRID

    def make_regressor(self, seed, time_limit=None):
        return EHCRegressor(max_evaluations=self.evaluations, random_state=seed, max_time=cooperative(time_limit))

"""GP-GOMEA: gene-pool optimal mixing with a linkage tree over fixed-shape trees (Virgolin et
al. 2017, 2021), SRBench's configuration (population 1000, 500,000 evaluations, linear
scaling), re-implemented on DEAP primitives (`odebaselines.gp_gomea.GPGOMEARegressor`,
whose docstring lists the differences from the C++ code), fitted to smoothed finite differences.
Grid: template height 4/6 x SRBench's two function sets."""
from odebaselines.gp_gomea import GPGOMEARegressor
from odebaselines.gp_method import GOMEA_GRID, GPFamilyMethod, cooperative


class GPGOMEA(GPFamilyMethod):
    name = "gpgomea"
    version = "1"
    description = "GP-GOMEA (Virgolin et al. 2017/2021; SRBench's settings) on DEAP primitives, on FD derivatives"
    grid = GOMEA_GRID

    def make_regressor(self, seed, time_limit=None):
        return GPGOMEARegressor(population_size=1000, max_evaluations=self.evaluations,
                                random_state=seed, max_time=cooperative(time_limit))

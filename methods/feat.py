"""FEAT (La Cava et al. 2019, `feat-ml`) on smoothed finite differences, with the SRBench grid
over (population, generations) in (100, 2500), (500, 500), (1000, 250). feat-ml does not
build on these machines (it needs Shogun and an older numpy): the method is then listed as
unavailable with that reason."""
from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import FEATAdapter


class FEAT(FiniteDifferenceMethod):
    name = "feat"
    version = "1"
    requires = ("feat", "pynumdiff")
    time_limit = 900.0
    description = "FEAT (feature engineering automation tool) on smoothed finite differences"
    grid = [{"pop_size": [100], "gens": [2500]}, {"pop_size": [500], "gens": [500]},
            {"pop_size": [1000], "gens": [250]}]

    def unavailable_reason(self):
        reason = super().unavailable_reason()
        if reason and "feat" in reason.split(":")[0]:
            return f"feat-ml is not installed (it does not build here: needs Shogun and numpy < 2); {reason}"
        return reason

    def make_regressor(self, seed, time_limit=None):
        return FEATAdapter(random_state=seed)

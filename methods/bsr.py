"""Bayesian symbolic regression (Jin et al. 2019) on smoothed finite differences, through
`autora-theorist-bsr`: 3 trees, 50 MCMC iterations, val 100 (`tree_num`, `itr_num`, `val` in
autora's names; SRBench's grid is larger: val and itr_num (100, 5000), (500, 1000) or (1000,
500), 3 or 6 trees). autora 1.0.0's sampler accepts no move (odebaselines.libraries.BSR_STUCK), so
its answers are linear fits on random trees; each row's warnings say so."""
from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import BSRRegressor
from odecore import protocol


class BSR(FiniteDifferenceMethod):
    name = "bsr"
    version = "1"
    requires = ("autora.theorist.bsr", "pynumdiff")
    time_limit = protocol.SEARCH_TIME_LIMIT
    description = ("Bayesian symbolic regression (autora-theorist-bsr) on smoothed finite differences; autora "
                   "1.0.0's sampler accepts no move: a linear fit on random trees")
    grid = {"tree_num": [3], "itr_num": [50], "val": [100]}

    def make_regressor(self, seed, time_limit=None):
        return BSRRegressor(random_state=seed)

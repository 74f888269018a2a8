"""Bayesian symbolic regression (Jin et al. 2019) on smoothed finite differences, through
`autora-theorist-bsr`. SRBench grid: 3 trees, 50 MCMC iterations, val 100 (`tree_num`,
`itr_num`, `val` in autora's names)."""
from baselines.fd import FiniteDifferenceMethod
from baselines.libraries import BSRRegressor
from core import protocol


class BSR(FiniteDifferenceMethod):
    name = "bsr"
    version = "1"
    requires = ("autora.theorist.bsr", "pynumdiff")
    time_limit = protocol.SEARCH_TIME_LIMIT
    description = "Bayesian symbolic regression (autora-theorist-bsr) on smoothed finite differences"
    grid = {"tree_num": [3], "itr_num": [50], "val": [100]}

    def make_regressor(self, seed, time_limit=None):
        return BSRRegressor(random_state=seed)

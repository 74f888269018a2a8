"""Operon (Burlacu et al. 2020, `pyoperon`): fast C++ GP with local search of the constants,
an extra modern peer the paper did not have. Grid after SRBench's Operon entry (population
500, length limit, nonlinear operators of the paper's set), on smoothed finite differences."""
from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import OperonRegressor
from odecore import protocol

SYMBOLS = "add,sub,mul,div,constant,variable,exp,log,sin,cos,sqrt,square"


class Operon(FiniteDifferenceMethod):
    name = "operon"
    version = "1"
    requires = ("pyoperon", "pynumdiff")
    time_limit = protocol.LONG_SEARCH_TIME_LIMIT
    description = "Operon GP (pyoperon) on smoothed finite differences"
    grid = {"max_length": [20, 50], "generations": [100]}

    def make_regressor(self, seed, time_limit=None):
        return OperonRegressor(allowed_symbols=SYMBOLS, population_size=500, pool_size=500,
                               optimizer_iterations=5, n_threads=1, random_state=seed)

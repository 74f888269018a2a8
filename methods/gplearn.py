"""gplearn's SymbolicRegressor (Koza-style GP in Python), an extra peer the paper did not
have, on smoothed finite differences (standardised, then scaled back). The grid varies the
parsimony pressure; protected division and logarithm are written as plain ones (see
odebaselines.libraries)."""
from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import GplearnRegressor
from odecore import protocol

FUNCTIONS = ("add", "sub", "mul", "div", "sin", "cos", "log", "sqrt", "neg")


class Gplearn(FiniteDifferenceMethod):
    name = "gplearn"
    version = "1"
    requires = ("gplearn", "pynumdiff")
    time_limit = protocol.LONG_SEARCH_TIME_LIMIT
    description = "gplearn SymbolicRegressor on smoothed finite differences"
    grid = {"parsimony_coefficient": [0.001, 0.01], "generations": [20]}

    def make_regressor(self, seed, time_limit=None):
        return GplearnRegressor(population_size=500, function_set=FUNCTIONS, const_range=(-2.0, 2.0),
                                init_depth=(2, 4), p_crossover=0.7, p_subtree_mutation=0.1, p_hoist_mutation=0.05,
                                p_point_mutation=0.1, metric="mse", n_jobs=1, random_state=seed)

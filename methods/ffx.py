"""FFX (Fast Function Extraction, McConaghy 2011) on smoothed finite differences.

FFX has no hyperparameters (SRBench's grid is empty), so the search is a single run that is
validated and refit. It runs in a child process's main thread, where its SIGALRM timer works
and its `sys.exit` on a failed ElasticNet fit is caught as a failed run. FFX itself rounds
its model's coefficients to 3 significant digits (ffx.core.models.FFXModel); the expression
keeps exactly the coefficients of FFX's model, which is what FFX predicts with; where no basis
helps, FFX's answer is a constant (its ConstantModel), and so is the law (version 2; version 1
failed the task reading it). Where the record or its derivative estimate has no spread at all (a
record at rest), FFX exits instead of answering; the answer is then that constant too (version 3).
"""
from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import FFXRegressor
from odecore import protocol


class FFX(FiniteDifferenceMethod):
    name = "ffx"
    version = "3"
    requires = ("ffx.core.bases", "ffx.core.constants", "pynumdiff")  # what the fit imports, not just the package
    time_limit = protocol.SEARCH_TIME_LIMIT
    description = "FFX (pathwise regularised regression over nonlinear bases) on smoothed finite differences"
    grid = {}

    def make_regressor(self, seed, time_limit=None):
        return FFXRegressor()

"""The oracles: they get the truth through the one documented door,
`bench.method.Oracle.receive_truth`.

`truth` returns the true expression. It pins down the harness itself: every task must score
R^2 = 1 up to solver tolerance, or the data, the integration or the scoring is wrong.
`truth-refit` knows the true skeleton but not its numbers: it refits them (and the initial value)
to the noisy observations with the project's fitter (odecore.fitting.refit_numbers). Its scores are
what a method that always finds the right skeleton gets at that noise level: where it misses, the
data leave the law's course open. It is a reference, not a bound task by task: a law with fewer
free numbers than the truth (an exponent kept fixed) can extrapolate better from noisy data.
"""
from bench import Budget, Observations, Prediction
from bench.method import Oracle


class Truth(Oracle):
    name = "truth"
    version = "1"
    time_limit = 30.0
    description = "oracle: the ground-truth expression (a check of the harness, not a method)"

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        if self.truth_ is None:
            raise ValueError("this task has no known true expression")
        return Prediction(self.truth_)


class TruthRefit(Truth):
    name = "truth-refit"
    version = "4"  # 2: the fitter's absolute tolerance follows |y0| below 1; 3: LSODA stops at the last time;
    #                4: the fitter's course rests at a domain's edge where the law comes to rest (odecore.fitting.trajectory)
    time_limit = 60.0
    description = "oracle skeleton: the true law with its numbers refitted to the noisy data (skeleton search's reference)"

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        from odecore.expressions import parse, to_string
        from odecore.fitting import refit_numbers

        truth = super().run(observations, budget).expression
        fit = refit_numbers(parse(truth), observations.t, observations.y)
        if fit is None:
            raise ValueError("the true law's numbers could not be fitted to these observations")
        return Prediction(to_string(fit[0]), metadata={"y0_fit": fit[1]})

"""The oracle: returns the true expression. It pins down the harness itself: every task must
score R^2 = 1 up to solver tolerance, or the data, the integration or the scoring is wrong."""
from bench import Budget, Method, Observations, Prediction


class Truth(Method):
    name = "truth"
    version = "1"
    oracle = True
    time_limit = 30.0
    description = "oracle: the ground-truth expression (a check of the harness, not a method)"

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        if observations.truth is None:
            raise ValueError("this task has no known true expression")
        return Prediction(observations.truth)

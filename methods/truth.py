"""The oracle: returns the true expression. It pins down the harness itself: every task must
score R^2 = 1 up to solver tolerance, or the data, the integration or the scoring is wrong.
It gets the truth through the one documented door, `bench.method.Oracle.receive_truth`."""
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

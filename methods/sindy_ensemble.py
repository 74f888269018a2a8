"""Ensemble SINDy (E-SINDy, Fasel et al. 2022): pysindy's `EnsembleOptimizer` bags STLSQ over
bootstrap resamples of the (y_i, dy_i) pairs; a library term is kept when its inclusion
probability (share of the `n_models` bagged models in which it is nonzero) is at least
`inclusion`, and the kept terms are refit by least squares on all points (E-SINDy's "library
bagging then refit"; the refit gives the coefficients the 2-digit accuracy the bagged medians lack).

Derivatives are the FD protocol's estimator (`odebaselines.fd.derivative`: local polynomial
fits in t, correct on irregular times) with two settings, `fd_settings` = (window, degree):
the protocol's (15, 3), accurate without noise, and (31, 2): at sigma = 0.02 the 15-point cubic
amplifies noise to derivative errors larger than the derivative itself. Library 1, y, ..., y^d.
Inclusion cut 0.6: above the bagging median, so a term must win a clear majority of the bags (E-SINDy's papers
use cuts between 0.5 and 0.9; higher cuts drop true small terms under noise). The library
degree d (from `degrees`: monomials up to y^5 are nearly collinear on one trajectory, so a
degree-5 library keeps spurious large terms that no threshold removes), the STLSQ threshold
(scale-free, see `odebaselines.sindy_family`; from `thresholds`) and the FD setting are chosen by the integrated
trajectory, as in sindy-weak: within `tolerance` of the best RMS trajectory error, fewest terms
wins.
"""
import warnings

import numpy as np

from bench import Budget, Method, Observations, Prediction
from bench.method import are_numbers, is_whole, require
from odebaselines import sindy_family as family
from odebaselines.fd import DEGREE, WINDOW, check_fd_settings, derivative


class SindyEnsemble(Method):
    name = "sindy-ensemble"
    version = "4"  # 3: the final least-squares refit normalises its columns (large units of y);
    #                4: candidates' trajectories rest at a domain's edge where the law does (odecore.fitting.trajectory)
    uses_finite_differences = True
    requires = ("pysindy", "pynumdiff", "scipy", "sympy")
    time_limit = 180.0
    description = "E-SINDy: bagged STLSQ (pysindy EnsembleOptimizer) on FD derivatives, terms kept by inclusion probability"

    def __init__(self, degrees=(1, 2, 3, 5), thresholds=(0.01, 0.05, 0.2), n_models=50, inclusion=0.6, alpha=1e-3,
                 tolerance=0.05, fd_settings=((WINDOW, DEGREE), (31, 2))):
        self.degrees, self.thresholds, self.n_models, self.inclusion = degrees, thresholds, n_models, inclusion
        self.alpha, self.tolerance, self.fd_settings = alpha, tolerance, fd_settings

    def check_params(self):
        super().check_params()
        family.check_grid(self)
        check_fd_settings(self.fd_settings)
        require(is_whole(self.n_models, 2), "n_models", self.n_models, "a whole number >= 2 (bagged models)")
        require(are_numbers((self.inclusion,), 0) and self.inclusion <= 1, "inclusion", self.inclusion,
                "a share in [0, 1]")

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        t, y = observations.t, observations.y
        terms = family.usable_terms(family.polynomial_terms(max(self.degrees)), y)
        names = family.library_names(terms)
        library = np.asarray(family.custom_library(terms).fit_transform(y[:, None]), dtype=float)
        fits = []
        for window, fd_degree in self.fd_settings:
            dy = derivative(t, y, window, fd_degree)
            for degree in self.degrees:
                columns = min(degree + 1, len(names))  # the degree-d library is the first d + 1 columns
                for threshold in self.thresholds:
                    probability = self._inclusion_probability(library[:, :columns], dy, threshold, budget.seed)
                    coef = family.least_squares_on(library[:, :columns], dy, probability >= self.inclusion)
                    fits.append(family.candidate(coef, names[:columns], t, y, degree=degree, threshold=threshold,
                                                 fd_setting=(window, fd_degree), inclusion=dict(zip(names, probability.tolist()))))
        ranked = family.most_parsimonious(family.unique(fits), self.tolerance, y)
        best = ranked[0]
        return Prediction(best.expression, candidates=tuple(c.expression for c in ranked[1:5]),
                          metadata={"best_params": {k: best.params[k] for k in ("degree", "threshold", "fd_setting")},
                                    "inclusion_probability": best.params["inclusion"], "trajectory_rss": best.rss})

    def _inclusion_probability(self, theta, dy, threshold, seed):
        """Share of bagged STLSQ models (bootstrap of the rows) in which each term is nonzero."""
        from pysindy import STLSQ, EnsembleOptimizer

        scale = float(np.linalg.norm(dy)) or 1.0  # scale-free threshold, as family.sparse_fit
        inner = STLSQ(threshold=threshold, alpha=self.alpha, normalize_columns=True)
        ensemble = EnsembleOptimizer(inner, bagging=True, n_models=int(self.n_models))
        with family.seeded(seed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ensemble.fit(theta, dy / scale)
        coefs = np.asarray(ensemble.coef_list, dtype=float).reshape(len(ensemble.coef_list), -1)
        return np.mean(coefs != 0.0, axis=0)

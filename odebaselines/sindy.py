"""SINDy's pieces for a scalar ODE: the candidate library and an STLSQ regressor that follows the
FD regressor contract of `odebaselines.fd` (X = y column, target dy/dt, `expression_`).

The library is the paper's: 1, y, ..., y^10 (pysindy's PolynomialLibrary(degree=10) with bias)
plus sin, cos, exp, sqrt and log of y. It is evaluated with numpy here rather than through
pysindy's library objects because the grid search fits 800 models on the same columns and
pysindy's per-call validation would dominate; the regression itself is pysindy's `STLSQ`.
"""
from __future__ import annotations

import numpy as np
from pysindy.optimizers import STLSQ
from sklearn.base import BaseEstimator, RegressorMixin

POLY_DEGREE = 10
FUNCTIONS = {"sin": np.sin, "cos": np.cos, "exp": np.exp, "sqrt": np.sqrt, "log": np.log}
LIBRARY = ("1",) + tuple("y" if k == 1 else f"y**{k}" for k in range(1, POLY_DEGREE + 1)) \
    + tuple(f"{name}(y)" for name in FUNCTIONS)


def features(y: np.ndarray, terms: tuple[str, ...] = LIBRARY) -> np.ndarray:
    """Columns of the library terms evaluated at y; nan/inf where a term is undefined or overflows."""
    y = np.asarray(y, dtype=float)
    columns = []
    with np.errstate(all="ignore"):
        for term in terms:
            if term == "1":
                columns.append(np.ones_like(y))
            elif term == "y":
                columns.append(y)
            elif term.startswith("y**"):
                columns.append(y ** int(term[3:]))
            else:
                columns.append(FUNCTIONS[term.split("(")[0]](y))
    return np.column_stack(columns)


def usable_terms(y: np.ndarray, terms: tuple[str, ...] = LIBRARY) -> tuple[str, ...]:
    """The library terms that are finite on every observed y (log or sqrt of negative values
    and overflowing exp or powers raise numerical errors and are dropped before fitting)."""
    finite = np.all(np.isfinite(features(y, terms)), axis=0)
    return tuple(term for term, ok in zip(terms, finite) if ok)


class SindyRegressor(BaseEstimator, RegressorMixin):
    """Sequentially thresholded least squares (pysindy STLSQ) on the library `terms`; terms that
    are not finite on the data given to `fit` are dropped first (`terms_` keeps the rest)."""

    def __init__(self, terms: tuple[str, ...] = LIBRARY, threshold: float = 0.1, alpha: float = 0.05,
                 max_iter: int = 20):
        self.terms = terms
        self.threshold = threshold
        self.alpha = alpha
        self.max_iter = max_iter

    def fit(self, X, y):
        self.terms_ = usable_terms(X[:, 0], self.terms)
        optimizer = STLSQ(threshold=self.threshold, alpha=self.alpha, max_iter=self.max_iter)
        optimizer.fit(features(X[:, 0], self.terms_), np.asarray(y, dtype=float))
        self.coef_ = np.asarray(optimizer.coef_, dtype=float).reshape(-1)
        self.expression_ = expression(self.coef_, self.terms_)
        return self

    def predict(self, X):
        """Only terms with a nonzero coefficient count: a dropped or zeroed term may be undefined here."""
        used = self.coef_ != 0.0
        with np.errstate(all="ignore"):
            return features(X[:, 0], tuple(np.array(self.terms_)[used])) @ self.coef_[used] if used.any() \
                else np.zeros(len(X))


def expression(coef: np.ndarray, terms: tuple[str, ...]) -> str:
    """sum coef_i * term_i with every coefficient at full precision ("0" when all are zero)."""
    parts = [repr(float(c)) if term == "1" else f"{float(c)!r}*{term}" for c, term in zip(coef, terms) if c != 0.0]
    return " + ".join(parts) if parts else "0"

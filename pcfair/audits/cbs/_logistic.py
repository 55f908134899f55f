"""Weighted L2-penalised logistic regression by Newton's method (numpy).

CBS fits two logistic regressions per scan and again on every permuted data set, always on
few features (one-hot covariates) and, after merging identical rows, few rows. A damped
Newton solver converges in a handful of iterations and is 10-100 times faster than a general
solver here. It minimises the objective of scikit-learn's ``LogisticRegression(C=C)``:

    0.5 * ||beta||^2 + C * sum_i w_i * (log(1 + exp(z_i)) - y_i * z_i),  z = X beta + b

with the intercept ``b`` unpenalised, and agrees with it to its tolerance (tested).
"""

from __future__ import annotations

import numpy as np

#: Newton iterations at most; the step size stops below this (in the coefficients).
MAX_ITER = 100
STEP_TOL = 1e-10


def _objective(xa, y, w, beta, lam, pen):
    z = xa @ beta
    return float(np.sum(w * (np.logaddexp(0.0, z) - y * z)) + 0.5 * lam * np.sum(pen * beta * beta))


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, weights: np.ndarray, C: float
) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of the weighted L2 logistic regression (see module docs).

    ``labels`` may be soft, in [0, 1]: the objective is the same expression. ``C = inf``
    fits without penalty; then a separable design makes the coefficients grow until the
    iteration limit, as any unpenalised solver would.
    """
    n, k = features.shape
    xa = np.hstack([features, np.ones((n, 1))])
    y = labels.astype(float)
    w = weights.astype(float)
    lam = 0.0 if np.isinf(C) else 1.0 / float(C)
    pen = np.ones(k + 1)
    pen[-1] = 0.0
    beta = np.zeros(k + 1)
    # start the intercept at the weighted base rate
    rate = np.clip(np.sum(w * y) / np.sum(w), 1e-6, 1 - 1e-6)
    beta[-1] = np.log(rate / (1 - rate))
    f = _objective(xa, y, w, beta, lam, pen)
    ridge = 1e-10 * max(1.0, float(np.sum(w)))
    for _ in range(MAX_ITER):
        z = xa @ beta
        s = 1.0 / (1.0 + np.exp(-z))
        grad = xa.T @ (w * (s - y)) + lam * pen * beta
        hess = (xa * (w * s * (1.0 - s))[:, None]).T @ xa
        hess[np.diag_indices_from(hess)] += lam * pen + ridge
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        if np.max(np.abs(step)) < STEP_TOL:  # converged: the last Newton step is exact
            beta = beta - step
            break
        slope = float(grad @ step)
        # near the optimum the decrease falls below the objective's rounding: allow for it,
        # or the line search would shrink a good Newton step to nothing and stop early
        slack = 1e-13 * max(1.0, abs(f))
        t = 1.0
        while True:
            cand = beta - t * step
            fc = _objective(xa, y, w, cand, lam, pen)
            if fc <= f - 1e-4 * t * slope + slack or t < 1e-12:
                break
            t *= 0.5
        beta, f = cand, fc
        if np.max(np.abs(t * step)) < STEP_TOL:
            break
    return beta[:-1], float(beta[-1])

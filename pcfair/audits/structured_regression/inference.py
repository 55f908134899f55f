"""Confidence intervals: Eq. 7 for the standard estimates and rBLPR for structured regression.

**Standard estimator (Eq. 7).** ``[Z_a + q_{alpha/2} sigmahat_a, Z_a + q_{1-alpha/2} sigmahat_a]``
with the pooled ``sigmahat_a`` of Eq. 6. The two alternatives of Appendix A, a normal interval
with the per-group bootstrap variance and the per-group bootstrap percentile interval, are
available for comparison (both under-cover on small groups).

**rBLPR** (residual-bootstrap lasso + partial ridge, Liu, Xu & Li 2020), as in the authors'
reference implementation (spec §3.2), weighted by ``sw_a`` on the groups with a defined ``Z_a``:

1. lasso at the selected penalty; ``S = {j : |theta_j| > 1e-6}`` (intercept always in);
2. Lasso+OLS: weighted least squares on the intercept and ``S`` gives ``zhat_OLS``;
3. partial ridge: ``min sum sw (Z - x.beta)^2 + alpha_r sum(sw) sum_{j not in S} beta_j^2`` gives
   ``zhat_LPR``, with ``alpha_r = 0.5 [sum sw sigma_a^2 / sum sw] / ||beta_near-OLS||^2``;
4. for ``b = 1..B``: ``Z* = zhat_OLS + eps*`` with Gaussian residuals ``eps*_a = sigma_a N(0, 1)``
   (or resampled standardised Lasso+OLS residuals), refit lasso and partial ridge on ``Z*``
   (new ``S*``), and keep the basic-bootstrap pivot ``zhat_LPR + zhat_OLS - z*_LPR``;
5. the interval is the ``(1-gamma)/2`` and ``(1+gamma)/2`` quantiles of the pivots.

The plain lasso residual-bootstrap percentile interval (``method="lasso_percentile"``) is kept
as the naive comparison the paper argues against: it ignores the lasso's bias and under-covers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from pcfair._clock import expired
from pcfair.errors import SpecError

from .fit import SELECTED_TOL, LassoSolver

CI_METHODS = ("rblpr", "lasso_percentile")
RESIDUALS = ("gaussian", "empirical")
STANDARD_CI_METHODS = ("normal", "bootstrap_normal", "percentile")
NEAR_OLS_RIDGE = 1e-6


def check_level(level: float) -> float:
    """Validate a confidence level in (0, 1)."""
    level = float(level)
    if not 0.0 < level < 1.0:
        raise SpecError(f"confidence level must be strictly between 0 and 1, got {level}")
    return level


def normal_intervals(center: np.ndarray, sd: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``center -/+ q_{(1+level)/2} * sd`` (Eq. 7 with ``sd = sigmahat_a``).

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = normal_intervals(np.array([0.5]), np.array([0.1]), 0.95)
    >>> round(float(hi[0] - lo[0]), 4)
    0.392
    """
    q = norm.ppf(0.5 + check_level(level) / 2.0)
    return center - q * sd, center + q * sd


def percentile_intervals(replicates: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles ``(1-level)/2`` and ``(1+level)/2`` of replicates (B, n) over defined values."""
    level = check_level(level)
    reps = np.asarray(replicates, dtype=float)
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    ok = np.isfinite(reps).sum(axis=0) > 0
    if ok.any():
        q = np.nanquantile(reps[:, ok], [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
        lo[ok], hi[ok] = q[0], q[1]
    return lo, hi


def _with_intercept(phi: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(phi.shape[0]), phi])


def weighted_lstsq(x: np.ndarray, z: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Minimum-norm weighted least squares ``argmin sum sw (z - x beta)^2``."""
    root = np.sqrt(sw)
    return np.linalg.lstsq(x * root[:, None], z * root, rcond=None)[0]


def partial_ridge(x: np.ndarray, z: np.ndarray, sw: np.ndarray, penalized: np.ndarray, alpha_r: float) -> np.ndarray:
    """``beta = pinv(alpha_r sum(sw) diag(penalized) + X'WX) X'Wz`` (X includes the intercept).

    Computed as the minimum-norm least-squares solution of the augmented system
    ``[sqrt(W) X; sqrt(alpha_r sum(sw)) I_penalized] beta = [sqrt(W) z; 0]``, which equals the
    pseudo-inverse formula (``A^+ = (A'A)^+ A'``) without forming the Gram matrix.
    """
    root = np.sqrt(sw)
    pen_idx = np.flatnonzero(penalized)
    ridge_rows = np.zeros((pen_idx.size, x.shape[1]))
    ridge_rows[np.arange(pen_idx.size), pen_idx] = np.sqrt(alpha_r * float(sw.sum()))
    a = np.vstack([x * root[:, None], ridge_rows])
    b = np.concatenate([z * root, np.zeros(pen_idx.size)])
    return np.linalg.lstsq(a, b, rcond=None)[0]


def ridge_strength(x: np.ndarray, z: np.ndarray, sw: np.ndarray, sigma2: np.ndarray) -> float:
    """The partial-ridge strength heuristic ``0.5 * mean_sw(sigma^2) / ||beta_near-OLS||^2``.

    If the near-OLS coefficients vanish (all ``Z_a`` equal), the ridge is made effectively
    infinite (1e12), which reduces the partial ridge to Lasso+OLS.
    """
    penal = np.ones(x.shape[1], dtype=bool)
    penal[0] = False
    beta = partial_ridge(x, z, sw, penal, NEAR_OLS_RIDGE)
    norm2 = float(np.sum(beta[1:] ** 2))
    noise = float(np.sum(sw * sigma2) / np.sum(sw))
    if norm2 <= 1e-24:
        return 1e12
    return 0.5 * noise / norm2


@dataclass
class RblprFit:
    """The rBLPR point estimates and bootstrap pivots on the groups with features.

    Attributes
    ----------
    selected : ndarray of bool
        Features selected by the lasso (intercept excluded).
    alpha_r : float
        Partial-ridge strength.
    z_ols, z_lpr : ndarray
        Lasso+OLS and LPR estimates of the predicted groups.
    pivots : ndarray
        Bootstrap values ``zhat_LPR + zhat_OLS - z*_LPR``, shape (B, n_predicted); fewer
        rows when a deadline stopped the bootstrap.
    """

    selected: np.ndarray
    alpha_r: float
    z_ols: np.ndarray
    z_lpr: np.ndarray
    pivots: np.ndarray


def rblpr(
    phi_fit: np.ndarray,
    z_fit: np.ndarray,
    sw_fit: np.ndarray,
    sigma2_fit: np.ndarray,
    phi_pred: np.ndarray,
    alpha: float,
    solver: LassoSolver,
    *,
    n_boot: int = 100,
    residuals: str = "gaussian",
    rng: np.random.Generator,
    deadline: float | None = None,
) -> RblprFit:
    """Run rBLPR (spec §3.2).

    Parameters
    ----------
    phi_fit, z_fit, sw_fit, sigma2_fit : ndarray
        Features, standard estimates, weights and model variances of the groups with a
        defined ``Z_a`` (the fitted groups).
    phi_pred : ndarray
        Features of the groups to predict (every group with rows).
    alpha : float
        The selected penalty (sklearn scale).
    solver : LassoSolver
    n_boot : int
        Number of bootstrap replicates B.
    residuals : {"gaussian", "empirical"}
        Parametric Gaussian residuals with the model variances (default), or resampled
        centred standardised Lasso+OLS residuals rescaled by ``sqrt(1/sw)`` (Liu et al.).
    rng : numpy.random.Generator
    deadline : float, optional
        A :func:`time.time` value checked before each replicate: the bootstrap stops there
        and keeps the replicates that finished.

    Returns
    -------
    RblprFit
    """
    if residuals not in RESIDUALS:
        raise SpecError(f"unknown residuals {residuals!r}: use one of {', '.join(RESIDUALS)}")
    if n_boot < 2:
        raise SpecError(f"B must be at least 2, got {n_boot}")
    x_fit = _with_intercept(phi_fit)
    x_pred = _with_intercept(phi_pred)
    alpha_r = ridge_strength(x_fit, z_fit, sw_fit, sigma2_fit)

    coef_hat = solver.fit(phi_fit, z_fit, sw_fit, alpha)[1]

    def lasso_support(z: np.ndarray) -> np.ndarray:
        _, coef = solver.fit(phi_fit, z, sw_fit, alpha, init=coef_hat)
        return np.abs(coef) > SELECTED_TOL

    def lpr(z: np.ndarray, selected: np.ndarray) -> np.ndarray:
        penalized = np.concatenate(([False], ~selected))
        return partial_ridge(x_fit, z, sw_fit, penalized, alpha_r)

    selected = np.abs(coef_hat) > SELECTED_TOL
    keep = np.concatenate(([True], selected))
    beta_ols = np.zeros(x_fit.shape[1])
    beta_ols[keep] = weighted_lstsq(x_fit[:, keep], z_fit, sw_fit)
    z_ols_fit = x_fit @ beta_ols
    z_ols = x_pred @ beta_ols
    z_lpr = x_pred @ lpr(z_fit, selected)
    sigma = np.sqrt(sigma2_fit)
    if residuals == "empirical":
        std_resid = (z_fit - z_ols_fit) * np.sqrt(sw_fit)
        std_resid = std_resid - std_resid.mean()
    pivots = np.empty((n_boot, phi_pred.shape[0]))
    done = n_boot
    for b in range(n_boot):
        if expired(deadline):
            done = b
            break
        if residuals == "gaussian":
            eps = sigma * rng.standard_normal(z_fit.shape[0])
        else:
            eps = rng.choice(std_resid, size=z_fit.shape[0], replace=True) / np.sqrt(sw_fit)
        z_star = z_ols_fit + eps
        beta_star = lpr(z_star, lasso_support(z_star))
        pivots[b] = z_lpr + z_ols - x_pred @ beta_star
    return RblprFit(selected=selected, alpha_r=alpha_r, z_ols=z_ols, z_lpr=z_lpr,
                    pivots=pivots[:done])


def lasso_percentile(
    phi_fit: np.ndarray,
    sw_fit: np.ndarray,
    sigma2_fit: np.ndarray,
    phi_pred: np.ndarray,
    mu_fit: np.ndarray,
    alpha: float,
    solver: LassoSolver,
    *,
    n_boot: int = 100,
    rng: np.random.Generator,
    deadline: float | None = None,
) -> np.ndarray:
    """Naive residual bootstrap of the lasso: refit on ``muhat + eps*``; returns (B, n_predicted)
    (fewer rows when ``deadline``, a :func:`time.time` value, stopped it).

    Percentiles of these replicates give the plain lasso-bootstrap interval, which ignores the
    lasso's shrinkage bias (the paper's motivation for rBLPR).
    """
    sigma = np.sqrt(sigma2_fit)
    coef_hat = solver.fit(phi_fit, mu_fit, sw_fit, alpha)[1]
    out = np.empty((n_boot, phi_pred.shape[0]))
    done = n_boot
    for b in range(n_boot):
        if expired(deadline):
            done = b
            break
        z_star = mu_fit + sigma * rng.standard_normal(mu_fit.shape[0])
        b0, coef = solver.fit(phi_fit, z_star, sw_fit, alpha, init=coef_hat)
        out[b] = b0 + phi_pred @ coef
    return out[:done]

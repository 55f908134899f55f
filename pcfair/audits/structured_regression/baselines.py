"""Baseline estimators of the group metrics (spec §5): pooled, James-Stein (Bock), empirical Bayes.

All take a per-group table with the group sizes ``n`` and standard estimates ``standard``
(e.g. :attr:`StructuredRegression.estimates_` or :func:`group_metric`) and the pooled variance
``sigma2`` of Eq. 6 (``sigma_a^2 = sigma2 / n_a``). Groups whose standard estimate is undefined
(or that are empty) get the estimator's central value (``muhat0`` for James-Stein, ``muhat``
for empirical Bayes), following the reference implementations, and ``|A|`` counts only the
groups with a defined estimate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcfair.errors import DataError


def _arrays(estimates: pd.DataFrame, n: str, standard: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    for col in (n, standard):
        if col not in estimates.columns:
            raise DataError(f"per-group table has no column {col!r} (columns: {list(estimates.columns)!r})")
    counts = estimates[n].to_numpy(dtype=float)
    z = estimates[standard].to_numpy(dtype=float)
    ok = np.isfinite(z) & (counts > 0)
    if not ok.any():
        raise DataError("no group has a defined standard estimate")
    return counts, z, ok


def _check_sigma2(sigma2: float) -> float:
    sigma2 = float(sigma2)
    if not np.isfinite(sigma2) or sigma2 < 0:
        raise DataError(f"sigma2 must be a finite non-negative variance, got {sigma2!r}")
    return sigma2


def pooled_estimate(estimates: pd.DataFrame, *, n: str = "n", standard: str = "standard") -> pd.DataFrame:
    """The pooled estimate ``muhat0 = sum_a n_a Z_a / sum_a n_a`` for every group.

    Parameters
    ----------
    estimates : pandas.DataFrame
        Per-group table with group sizes and standard estimates.
    n, standard : str
        Column names of the sizes and the standard estimates.

    Returns
    -------
    pandas.DataFrame
        ``estimates[[n, standard]]`` with a ``pooled`` column.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"n": [1, 3], "standard": [0.0, 1.0]})
    >>> pooled_estimate(t)["pooled"].tolist()
    [0.75, 0.75]
    """
    counts, z, ok = _arrays(estimates, n, standard)
    out = estimates[[n, standard]].copy()
    out["pooled"] = float(np.sum(counts[ok] * z[ok]) / np.sum(counts[ok]))
    return out


def james_stein_bock(
    estimates: pd.DataFrame, sigma2: float, *, n: str = "n", standard: str = "standard"
) -> pd.DataFrame:
    """Positive-part James-Stein estimates, Bock's (1975) variant for ``sigma_a^2 = sigma^2/n_a``.

    ``muhat^JS_a = muhat0 + (1 - (|A| - 3) sigma^2 / sum_a' n_a' (Z_a' - muhat0)^2)_+ (Z_a - muhat0)``
    with ``muhat0`` the pooled estimate and ``|A|`` the number of groups with a defined
    estimate (Feldman et al. 2012 use ``|A|`` rather than Bock's effective dimension). The
    shrinkage factor is also capped at 1, which only matters when ``|A| < 3``; when every
    ``Z_a`` equals ``muhat0`` the factor is 0. No confidence intervals (as in the paper).

    Parameters
    ----------
    estimates : pandas.DataFrame
        Per-group table with sizes and standard estimates.
    sigma2 : float
        Pooled per-row variance of Eq. 6.
    n, standard : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        ``estimates[[n, standard]]`` with a ``james_stein`` column; the shrinkage factor is in
        ``.attrs["shrinkage"]``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"n": [10] * 5, "standard": [0.1, 0.2, 0.3, 0.4, 0.5]})
    >>> james_stein_bock(t, sigma2=0.25)["james_stein"].round(3).tolist()
    [0.2, 0.25, 0.3, 0.35, 0.4]
    """
    sigma2 = _check_sigma2(sigma2)
    counts, z, ok = _arrays(estimates, n, standard)
    mu0 = float(np.sum(counts[ok] * z[ok]) / np.sum(counts[ok]))
    ss = float(np.sum(counts[ok] * (z[ok] - mu0) ** 2))
    n_groups = int(ok.sum())
    factor = float(np.clip(1.0 - (n_groups - 3) * sigma2 / ss, 0.0, 1.0)) if ss > 0 else 0.0
    out = estimates[[n, standard]].copy()
    out["james_stein"] = np.where(ok, mu0 + factor * (np.where(ok, z, mu0) - mu0), mu0)
    out.attrs["shrinkage"] = factor
    out.attrs["pooled"] = mu0
    return out


def empirical_bayes(
    estimates: pd.DataFrame, sigma2: float, *, n: str = "n", standard: str = "standard"
) -> pd.DataFrame:
    """Empirical-Bayes estimates under ``mu_a ~ N(mu, tau^2)``, ``Z_a ~ N(mu_a, sigma^2/n_a)``.

    With ``muhat0`` the pooled estimate and ``n = sum_a n_a`` (groups with a defined estimate):

    * ``tau^2 = ([sum_a n_a (Z_a - muhat0)^2 - (|A| - 1) sigma^2] / [n - sum_a n_a^2 / n])_+``
      (the main-text denominator; Appendix Eq. 13 has a typo);
    * ``muhat = sum_a Z_a / (tau^2 + sigma_a^2) / sum_a 1 / (tau^2 + sigma_a^2)``;
    * ``muhat^EB_a = muhat + tau^2 / (tau^2 + sigma_a^2) (Z_a - muhat)``, with posterior variance
      ``tau^2 sigma_a^2 / (tau^2 + sigma_a^2)`` (Eq. 9).

    When ``tau^2 = 0`` every group gets ``muhat = muhat0``. Groups without a defined estimate
    get ``muhat`` and the prior variance ``tau^2``.

    Parameters
    ----------
    estimates : pandas.DataFrame
        Per-group table with sizes and standard estimates.
    sigma2 : float
        Pooled per-row variance of Eq. 6.
    n, standard : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        ``estimates[[n, standard]]`` with columns ``empirical_bayes`` and ``eb_posterior_var``;
        ``.attrs`` holds ``tau2`` and ``mu``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"n": [10] * 4, "standard": [0.1, 0.2, 0.3, 0.4]})
    >>> empirical_bayes(t, sigma2=1.0)["empirical_bayes"].tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    sigma2 = _check_sigma2(sigma2)
    counts, z, ok = _arrays(estimates, n, standard)
    total = float(np.sum(counts[ok]))
    mu0 = float(np.sum(counts[ok] * z[ok]) / total)
    ss = float(np.sum(counts[ok] * (z[ok] - mu0) ** 2))
    denom = total - float(np.sum(counts[ok] ** 2)) / total
    n_groups = int(ok.sum())
    tau2 = max(0.0, (ss - (n_groups - 1) * sigma2) / denom) if denom > 0 else 0.0
    with np.errstate(divide="ignore"):
        sigma2_a = np.where(counts > 0, sigma2 / np.where(counts > 0, counts, 1.0), np.inf)
    total_var = tau2 + sigma2_a[ok]
    if tau2 == 0.0 or np.any(total_var == 0.0):
        mu = mu0 if tau2 == 0.0 else float(np.mean(z[ok][total_var == 0.0]))
    else:
        mu = float(np.sum(z[ok] / total_var) / np.sum(1.0 / total_var))
    eb = np.full(z.shape, mu)
    post = np.full(z.shape, tau2)
    if tau2 > 0.0:
        keep = tau2 / (tau2 + sigma2_a[ok])
        eb[ok] = mu + keep * (z[ok] - mu)
        post[ok] = tau2 * sigma2_a[ok] / (tau2 + sigma2_a[ok])
    else:
        post[ok] = 0.0
    out = estimates[[n, standard]].copy()
    out["empirical_bayes"] = eb
    out["eb_posterior_var"] = post
    out.attrs["tau2"] = tau2
    out.attrs["mu"] = mu
    return out

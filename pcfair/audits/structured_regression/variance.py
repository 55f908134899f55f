"""Variance of the standard estimates: stratified bootstrap and pooling (spec §2.4, Eq. 6).

The model assumes ``sigma_a^2 = sigma^2 / n_a``. ``sigma^2`` is estimated by pooling the
per-group bootstrap variances:

* ``"pooled"`` (the paper): ``sigma^2 = sum_a n_a * (n_a var_a) / sum_a n_a``;
* ``"pooled_dof"`` (reference implementations): ``sum_{n_a>1} n_a^2 var_a / sum_{n_a>1} (n_a - 1)``,
  which recovers the unbiased pooled ``s^2`` for means;
* ``"per_group"``: ``sigma_a^2 = var_a`` itself. A group whose bootstrap variance is 0 or
  undefined (a single row, all outcomes equal) would get infinite weight, so it falls back to
  the pooled ``sigma^2 / n_a`` (a pcfair choice; the paper does not use this variant).

For metrics with a conditional denominator (FNR, FPR, PPV, AUC) the group size ``n_a`` is still
the count of all rows of the group, as in the paper; this is a modelling choice.
"""

from __future__ import annotations

import numpy as np

from pcfair.errors import DataError, SpecError

VARIANCE_METHODS = ("pooled", "pooled_dof", "per_group")


def bootstrap_variance(replicates: np.ndarray) -> np.ndarray:
    """Per-group variance (ddof=1) of bootstrap replicates of shape (B, n_groups).

    Replicates where the metric is undefined (NaN) are left out; a group with fewer than two
    defined replicates gets NaN.

    Examples
    --------
    >>> import numpy as np
    >>> bootstrap_variance(np.array([[0.0, 1.0], [1.0, np.nan], [2.0, np.nan]]))
    array([ 1., nan])
    """
    reps = np.asarray(replicates, dtype=float)
    defined = ~np.isnan(reps)
    count = defined.sum(axis=0)
    filled = np.where(defined, reps, 0.0)
    mean = filled.sum(axis=0) / np.maximum(count, 1)
    ss = (np.where(defined, reps - mean, 0.0) ** 2).sum(axis=0)
    out = np.full(reps.shape[1], np.nan)
    ok = count >= 2
    out[ok] = ss[ok] / (count[ok] - 1)
    return out


def pooled_variance(n: np.ndarray, var_boot: np.ndarray, *, dof: bool = False) -> float:
    """Pooled per-row variance ``sigma^2`` of Eq. 6 from group sizes and bootstrap variances.

    Parameters
    ----------
    n : array of int, shape (n_groups,)
        Group sizes.
    var_boot : array of float, shape (n_groups,)
        Bootstrap variances of the standard estimates (NaN where undefined).
    dof : bool, default False
        Use the degrees-of-freedom corrected pooling of the reference implementations.

    Returns
    -------
    float

    Raises
    ------
    DataError
        If no group has a usable bootstrap variance.

    Examples
    --------
    >>> import numpy as np
    >>> pooled_variance(np.array([10, 30]), np.array([0.02, 0.005]))
    0.1625
    """
    n = np.asarray(n, dtype=float)
    v = np.asarray(var_boot, dtype=float)
    ok = np.isfinite(v) & (n > (1 if dof else 0))
    if not ok.any():
        raise DataError(
            "cannot pool the variance: no group has a defined bootstrap variance"
            + (" and more than one row" if dof else "")
        )
    num = float(np.sum(n[ok] ** 2 * v[ok]))
    den = float(np.sum(n[ok] - 1.0)) if dof else float(np.sum(n[ok]))
    if den <= 0:
        raise DataError("cannot pool the variance: the pooled degrees of freedom are zero")
    return num / den


def group_variances(n: np.ndarray, var_boot: np.ndarray, method: str = "pooled") -> tuple[np.ndarray, float]:
    """Model variances ``sigma_a^2`` of the standard estimates and the pooled ``sigma^2``.

    Returns ``(sigma2_a, sigma2)``. Empty groups get ``inf`` (weight 0).

    Examples
    --------
    >>> import numpy as np
    >>> s2a, s2 = group_variances(np.array([10, 40]), np.array([0.02, 0.005]))
    >>> s2a * np.array([10, 40])
    array([0.2, 0.2])
    """
    if method not in VARIANCE_METHODS:
        raise SpecError(f"unknown variance {method!r}: use one of {', '.join(VARIANCE_METHODS)}")
    n = np.asarray(n, dtype=float)
    sigma2 = pooled_variance(n, var_boot, dof=(method == "pooled_dof"))
    with np.errstate(divide="ignore"):
        pooled = np.where(n > 0, sigma2 / np.where(n > 0, n, 1.0), np.inf)
    if method != "per_group":
        return pooled, sigma2
    v = np.asarray(var_boot, dtype=float)
    usable = np.isfinite(v) & (v > 0) & (n > 0)
    return np.where(usable, v, pooled), sigma2

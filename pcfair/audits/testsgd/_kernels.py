"""Vectorized array kernels of the TestSGD port (no pandas, no validation).

* perturbation choices and their application (the tabular sampler's inner loop);
* per-group error margins for every sample count at once (Wald, Wilson, Clopper-Pearson);
* the first sample count that meets Algorithm 2's stopping rule, from cumulative hit counts.

The public modules validate their inputs and call these.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

INTERVALS = ("wald", "wilson", "clopper_pearson")


def perturbation_choices(
    u: np.ndarray, pool: np.ndarray, n_features: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seed rows, feature indices and directions (+-1) from uniforms ``u`` of shape (n, 3).

    Each sample uses its own row of three uniforms, so drawing n then m samples from one
    generator gives the same samples as drawing n + m at once.
    """
    seed_idx = np.minimum((u[:, 0] * pool.size).astype(np.int64), pool.size - 1)
    feature = np.minimum((u[:, 1] * n_features).astype(np.int64), n_features - 1)
    direction = np.where(u[:, 2] < 0.5, -1, 1).astype(np.int64)
    return pool[seed_idx], feature, direction


def apply_perturbation(
    values: np.ndarray,
    rows: np.ndarray,
    direction: np.ndarray,
    step: float,
    low: float,
    high: float,
    clip: bool,
) -> np.ndarray:
    """Add ``direction * step`` to ``values`` where ``rows`` is true; clip to [low, high]."""
    out = values.astype(float, copy=True)
    out[rows] = out[rows] + direction[rows] * step
    if clip:
        np.clip(out, low, high, out=out)
    return out


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile at ``confidence``, to two decimals (1.96 at 0.95).

    The paper uses the z-table value 1.96 (Table 2); two decimals reproduce it.
    """
    return round(float(stats.norm.ppf(0.5 + confidence / 2.0)), 2)


def margins(
    hits: np.ndarray, num: np.ndarray, *, interval: str, z: float, confidence: float
) -> np.ndarray:
    """Error margin of the estimate ``hits / num`` for each entry.

    ``"wald"`` is Eq. 7, ``z * sqrt(p (1 - p) / num)``. For the asymmetric ``"wilson"`` and
    ``"clopper_pearson"`` intervals the margin is the larger distance from the estimate to an
    end of the interval, so ``|p - p_true| <= margin`` whenever the interval covers.
    """
    hits = np.asarray(hits, dtype=float)
    num = np.asarray(num, dtype=float)
    p = hits / num
    if interval == "wald":
        return z * np.sqrt(p * (1.0 - p) / num)
    if interval == "wilson":
        z2 = z * z
        denom = 1.0 + z2 / num
        center = (p + z2 / (2.0 * num)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / num + z2 / (4.0 * num * num))
        return np.maximum(p - (center - half), (center + half) - p)
    if interval == "clopper_pearson":
        alpha = 1.0 - confidence
        with np.errstate(invalid="ignore"):
            lo = np.where(hits > 0, stats.beta.ppf(alpha / 2.0, hits, num - hits + 1.0), 0.0)
            hi = np.where(hits < num, stats.beta.ppf(1.0 - alpha / 2.0, hits + 1.0, num - hits), 1.0)
        return np.maximum(p - lo, hi - p)
    raise ValueError(f"interval={interval!r} is not one of {list(INTERVALS)}")


def first_stop(
    cum_group: np.ndarray,
    cum_rest: np.ndarray,
    lo: int,
    hi: int,
    *,
    error_thr: float,
    interval: str,
    z: float,
    confidence: float,
) -> int:
    """First sample count ``num`` in ``[lo, hi]`` whose total margin is <= ``error_thr``.

    ``cum_group[i]`` and ``cum_rest[i]`` are the numbers of favourable predictions among the
    first ``i + 1`` samples of each group. Returns 0 when no count in the range stops.
    """
    if hi < lo:
        return 0
    num = np.arange(lo, hi + 1)
    eps = margins(cum_group[lo - 1 : hi], num, interval=interval, z=z, confidence=confidence)
    eps = eps + margins(cum_rest[lo - 1 : hi], num, interval=interval, z=z, confidence=confidence)
    ok = np.flatnonzero(eps <= error_thr)
    return int(num[ok[0]]) if ok.size else 0

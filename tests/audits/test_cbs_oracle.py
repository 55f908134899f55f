"""Brute-force oracles for the Conditional Bias Scan, and their own sanity tests.

The oracles score subgroups by enumeration with an independent maximiser (scipy's bounded
scalar minimiser on log q, closed forms for the Gaussian), sharing no code with
``pcfair.audits.cbs._kernels``. Other ``test_cbs_*`` modules import them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

Q_BOUNDS = (1e-6, 1e6)


def bernoulli_F(event, expected, direction: str) -> tuple[float, float]:
    """max_q F(S | q) over the direction-restricted range, and the maximiser (oracle)."""
    event = np.asarray(event, float)
    p = np.clip(np.asarray(expected, float), 1e-6, 1 - 1e-6)
    if event.size == 0:
        return 0.0, 1.0
    y = event.sum()

    def neg(t):
        q = np.exp(t)
        return -(y * t - np.log1p((q - 1) * p).sum())

    lo, hi = (0.0, np.log(Q_BOUNDS[1])) if direction == "positive" else (np.log(Q_BOUNDS[0]), 0.0)
    res = minimize_scalar(neg, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    cands = [(-res.fun, np.exp(res.x)), (-neg(lo), np.exp(lo)), (-neg(hi), np.exp(hi))]
    best = max(cands, key=lambda c: c[0])
    return float(best[0]), float(best[1])


def gaussian_F(delta, sigma: float, direction: str) -> tuple[float, float]:
    """Closed-form max_mu F(S | mu) and maximiser (oracle)."""
    delta = np.asarray(delta, float)
    if delta.size == 0:
        return 0.0, 0.0
    mu = delta.mean()
    if (direction == "positive" and mu < 0) or (direction == "negative" and mu > 0):
        return 0.0, 0.0
    return float(delta.sum() ** 2 / (2 * sigma**2 * delta.size)), float(mu)


def nonempty_subsets(k: int):
    for r in range(1, k + 1):
        yield from itertools.combinations(range(k), r)


def subgroup_score(codes, event, expected, sub, arities, lam, kind, direction, sigma=1.0):
    """Penalised score of ``sub`` (tuple of value tuples, one per attribute)."""
    rows = np.ones(codes.shape[0], bool)
    listed = 0
    for j, vals in enumerate(sub):
        rows &= np.isin(codes[:, j], vals)
        if len(vals) < arities[j]:
            listed += len(vals)
    if kind == "bernoulli":
        F, _ = bernoulli_F(event[rows], expected[rows], direction)
    else:
        F, _ = gaussian_F(event[rows], sigma, direction)
    return F - lam * listed


def brute_force_step(codes, event, expected, fixed, j, arities, lam, kind, direction, sigma=1.0):
    """Best score over all values subsets of attribute j (penalty of j only), others fixed."""
    rows = np.ones(codes.shape[0], bool)
    for a, vals in enumerate(fixed):
        if a != j:
            rows &= np.isin(codes[:, a], vals)
    best = -np.inf
    for vals in nonempty_subsets(arities[j]):
        sel = rows & np.isin(codes[:, j], vals)
        if kind == "bernoulli":
            F, _ = bernoulli_F(event[sel], expected[sel], direction)
        else:
            F, _ = gaussian_F(event[sel], sigma, direction)
        pen = 0.0 if len(vals) == arities[j] else lam * len(vals)
        best = max(best, F - pen)
    return best


def brute_force_scan(codes, event, expected, arities, lam, kind, direction, sigma=1.0):
    """Maximum penalised score over every subgroup, and one maximiser."""
    best, arg = -np.inf, None
    for sub in itertools.product(*[list(nonempty_subsets(k)) for k in arities]):
        s = subgroup_score(codes, event, expected, sub, arities, lam, kind, direction, sigma)
        if s > best:
            best, arg = s, sub
    return best, arg


# ------------------------------------------------------------------ the oracles' own checks


def test_oracle_bernoulli_matches_closed_form_kl():
    F, q = bernoulli_F(np.r_[np.ones(70), np.zeros(30)], np.full(100, 0.5), "positive")
    kl = 0.7 * np.log(0.7 / 0.5) + 0.3 * np.log(0.3 / 0.5)
    assert F == pytest.approx(100 * kl, abs=1e-8)
    assert q == pytest.approx(7 / 3, abs=1e-6)


def test_oracle_bernoulli_wrong_direction_is_zero():
    F, q = bernoulli_F(np.r_[np.ones(70), np.zeros(30)], np.full(100, 0.5), "negative")
    assert F == pytest.approx(0.0, abs=1e-12)
    assert q == pytest.approx(1.0)


def test_oracle_brute_force_counts_every_subgroup():
    arities = [2, 3]
    n_sub = np.prod([2**k - 1 for k in arities])
    assert n_sub == 21
    assert len(list(itertools.product(*[list(nonempty_subsets(k)) for k in arities]))) == n_sub

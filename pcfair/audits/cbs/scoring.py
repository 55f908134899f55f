"""Score functions of the Conditional Bias Scan (paper Table 2, App. A.2.1).

Both scores are log-likelihood ratios ``F(S) = max_theta log Pr(D | H1(S, theta)) / Pr(D | H0)``
over the records of a subgroup ``S`` of the protected class:

* :class:`BernoulliScore`: the event I is binary and H1 multiplies the odds of Î by ``q``;
  used by separation for recommendations and by both sufficiency scans.
* :class:`GaussianLogitShiftScore`: the logit difference ``Δ = logit(I) - logit(Î)`` is
  ``N(0, sigma)`` under H0 and ``N(mu, sigma)`` under H1; used by separation for predictions.

The free parameter is restricted to the scanned direction: ``"positive"`` means I above Î
(q >= 1, mu >= 0), ``"negative"`` I below Î (q <= 1, mu <= 0). A score in the wrong direction is
0, so ``F(S) >= 0``. The kernels live in :mod:`pcfair.audits.cbs._kernels`.
"""

from __future__ import annotations

import numpy as np

from pcfair.audits.cbs import _kernels
from pcfair.audits.cbs.options import CBSOptionError, check_penalty, direction_sign
from pcfair.errors import DataError

__all__ = ["BernoulliScore", "GaussianLogitShiftScore", "Q_MIN", "Q_MAX", "CLIP"]

Q_MIN = _kernels.Q_MIN
Q_MAX = _kernels.Q_MAX
#: Probabilities are clipped to [CLIP, 1 - CLIP] before odds or logits are taken.
CLIP = 1e-6


def _as_vector(name: str, values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{name} contains NaN or infinite values")
    return arr


def _bernoulli_inputs(event, expected) -> tuple[float, np.ndarray, np.ndarray]:
    ev = _as_vector("event", event)
    ex = _as_vector("expected", expected)
    if ev.shape != ex.shape:
        raise DataError(f"event has {ev.size} values but expected has {ex.size}")
    if np.any((ev < 0) | (ev > 1)):
        raise DataError("event values of a Bernoulli score must lie in [0, 1]")
    if np.any((ex < 0) | (ex > 1)):
        raise DataError("expected values (Î) must be probabilities in [0, 1]")
    return float(ev.sum()), np.clip(ex, CLIP, 1.0 - CLIP), np.ones(ex.size)


class BernoulliScore:
    """Expectation-based Bernoulli score with a multiplicative odds shift ``q``.

    ``F(S | q) = (sum_S I) log q - sum_S log(1 - Î + q Î)``; ``F(S) = max_q F(S | q)`` with q in
    ``[Q_MIN, Q_MAX]`` on the side of 1 given by ``direction``.

    Parameters
    ----------
    direction : {"positive", "negative"}
        ``"positive"`` looks for I above Î (q > 1), ``"negative"`` for I below Î (q < 1).

    Notes
    -----
    Boxer, McFowland III and Neill, *Auditing Predictive Models for Intersectional Biases*,
    Table 2 and App. A.2.1. The maximiser is found by safeguarded Newton steps on ``log q``
    (the score is concave in ``log q``) to 1e-13, within the aif360 bounds [1e-6, 1e6].
    Î is clipped to ``[1e-6, 1 - 1e-6]``.

    Examples
    --------
    >>> import numpy as np
    >>> s = BernoulliScore("positive")
    >>> event, expected = np.r_[np.ones(70), np.zeros(30)], np.full(100, 0.5)
    >>> round(s.mle(event, expected), 6), round(s.score(event, expected), 6)
    (2.333333, 8.228288)
    """

    name = "bernoulli"
    parameter = "q"
    null_parameter = 1.0

    def __init__(self, direction: str = "positive"):
        self.direction = direction
        self.sign = direction_sign(direction)

    def __repr__(self) -> str:
        return f"BernoulliScore(direction={self.direction!r})"

    def mle(self, event, expected) -> float:
        """The q maximising ``F(S | q)`` in the scanned direction (1 when on the wrong side)."""
        ysum, p, w = _bernoulli_inputs(event, expected)
        return float(_kernels.bernoulli_constrained_mle(ysum, p, w, self.sign))

    def score(self, event, expected, q: float | None = None, penalty: float = 0.0) -> float:
        """``F(S | q) - penalty``; with ``q=None`` the maximised ``F(S) - penalty``."""
        ysum, p, w = _bernoulli_inputs(event, expected)
        lam = check_penalty(penalty)
        if q is None:
            q = _kernels.bernoulli_constrained_mle(ysum, p, w, self.sign)
        elif not (q > 0 and np.isfinite(q)):
            raise CBSOptionError(f"q={q!r} must be a finite positive number")
        return float(_kernels.bernoulli_llr(ysum, p, w, float(q)) - lam)

    def zeros(self, event, expected, penalty: float = 0.0) -> tuple[float, float] | None:
        """Zeros ``q_min < q̂ < q_max`` of ``F(S | q) - penalty``, or None when F(S) <= penalty.

        A zero beyond the bounds [1e-6, 1e6] is reported as the bound.
        """
        ysum, p, w = _bernoulli_inputs(event, expected)
        lam = check_penalty(penalty)
        q = _kernels.bernoulli_constrained_mle(ysum, p, w, self.sign)
        if _kernels.bernoulli_llr(ysum, p, w, q) - lam <= 0:
            return None
        lo, hi = _kernels.bernoulli_zeros(ysum, p, w, lam, q)
        return float(lo), float(hi)


class GaussianLogitShiftScore:
    """Gaussian mean-shift score on logit differences ``Δ = logit(I) - logit(Î)``.

    ``F(S | mu) = (2 mu sum_S Δ - |S| mu^2) / (2 sigma^2)``; the maximiser is ``mu = mean_S Δ``
    (0 when on the wrong side), giving ``F(S) = (sum_S Δ)^2 / (2 sigma^2 |S|)``.

    Parameters
    ----------
    direction : {"positive", "negative"}
        ``"positive"`` looks for predictions above expectation (mu > 0).
    sigma : float
        Standard deviation of Δ under the null. The paper does not fix it; the end-to-end scan
        uses the sample standard deviation of Δ over the protected class (pcfair decision).

    Notes
    -----
    Paper Table 2 (separation for predictions). Do not confuse it with aif360's ``Gaussian``
    scorer, which shifts a multiplicative mean and is a different statistic.

    Examples
    --------
    >>> s = GaussianLogitShiftScore("positive", sigma=0.5)
    >>> delta = [0.5, -0.1, 0.8]
    >>> round(s.mle(delta), 6), round(s.score(delta), 6)
    (0.4, 0.96)
    """

    name = "gaussian"
    parameter = "mu"
    null_parameter = 0.0

    def __init__(self, direction: str = "positive", sigma: float = 1.0):
        self.direction = direction
        self.sign = direction_sign(direction)
        try:
            sigma = float(sigma)
        except (TypeError, ValueError) as err:
            raise CBSOptionError(f"sigma={sigma!r} is not a number") from err
        if not (np.isfinite(sigma) and sigma > 0):
            raise CBSOptionError(f"sigma={sigma!r} must be a finite number > 0")
        self.sigma = sigma

    def __repr__(self) -> str:
        return f"GaussianLogitShiftScore(direction={self.direction!r}, sigma={self.sigma!r})"

    @staticmethod
    def logit_difference(event, expected) -> np.ndarray:
        """``logit(I) - logit(Î)`` with both clipped to ``[1e-6, 1 - 1e-6]``."""
        ev = np.clip(_as_vector("event", event), CLIP, 1 - CLIP)
        ex = np.clip(_as_vector("expected", expected), CLIP, 1 - CLIP)
        if ev.shape != ex.shape:
            raise DataError(f"event has {ev.size} values but expected has {ex.size}")
        return (np.log(ev) - np.log1p(-ev)) - (np.log(ex) - np.log1p(-ex))

    def mle(self, delta) -> float:
        """The mean shift maximising ``F(S | mu)`` in the scanned direction."""
        d = _as_vector("delta", delta)
        return float(_kernels.gaussian_constrained_mle(d.sum(), d.size, self.sign))

    def score(self, delta, mu: float | None = None, penalty: float = 0.0) -> float:
        """``F(S | mu) - penalty``; with ``mu=None`` the maximised ``F(S) - penalty``."""
        d = _as_vector("delta", delta)
        lam = check_penalty(penalty)
        if mu is None:
            mu = _kernels.gaussian_constrained_mle(d.sum(), d.size, self.sign)
        return float(_kernels.gaussian_llr(d.sum(), d.size, self.sigma, float(mu)) - lam)

    def zeros(self, delta, penalty: float = 0.0) -> tuple[float, float] | None:
        """Zeros ``(A ± sqrt(A^2 - 2 n sigma^2 penalty)) / n`` of ``F(S | mu) - penalty``.

        None when ``F(S) <= penalty`` (no mu gives a positive penalised score).
        """
        d = _as_vector("delta", delta)
        lam = check_penalty(penalty)
        mu = _kernels.gaussian_constrained_mle(d.sum(), d.size, self.sign)
        if _kernels.gaussian_llr(d.sum(), d.size, self.sigma, mu) - lam <= 0:
            return None
        lo, hi = _kernels.gaussian_zeros(d.sum(), d.size, self.sigma, lam)
        return float(lo), float(hi)

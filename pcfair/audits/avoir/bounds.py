"""Concentration inequalities for AVOIR's elementary claims.

An elementary claim ``(Ê, ε, δ)`` says that the running mean of a Bernoulli (or bounded) stream
stays within ``ε`` of the true mean with probability at least ``1 − δ``. AVOIR needs a pair of
functions: ``ε(δ, n)``, the half-width at failure probability ``δ`` after ``n`` observations, and
its inverse ``δ(ε, n)``. Both must be non-increasing in ``δ`` and in ``n`` (paper Appendix C).

The default is the adaptive Hoeffding inequality of Zhao, Zhou, Sabharwal and Ermon (NeurIPS 2016,
"Adaptive concentration inequalities for sequential decision problems"), the bound VeriFair uses::

    ε(δ, n) = sqrt((0.6·ln(log_1.1(n) + 1) + (5/9)·ln(24/δ)) / n)
    δ(ε, n) = min(1, 24·exp(−(9/5)·(n·ε² − 0.6·ln(log_1.1(n) + 1))))

It holds at every stopping time, hence uniformly over time, so a monitor may look after every
batch. The fixed-sample Hoeffding bound ``δ = 2·exp(−2nε²)`` is offered for comparison only: it is
*not* time-uniform and must not be used to stop a monitor adaptively.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from pcfair.errors import SpecError

__all__ = [
    "AdaptiveHoeffding",
    "BOUNDS",
    "ConcentrationBound",
    "Hoeffding",
    "adaptive_hoeffding_delta",
    "adaptive_hoeffding_epsilon",
    "get_bound",
]

_LN_1_1 = float(np.log(1.1))


@runtime_checkable
class ConcentrationBound(Protocol):
    """What AVOIR needs from a concentration inequality.

    Implementations work elementwise on numpy arrays of failure probabilities ``delta`` in
    ``[0, 1]`` and sample counts ``n >= 0`` for values in ``[0, 1]``; ``n == 0`` must give
    ``epsilon == inf`` and ``delta == 1``.

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import AdaptiveHoeffding, ConcentrationBound
    >>> isinstance(AdaptiveHoeffding(), ConcentrationBound)
    True
    """

    name: str
    time_uniform: bool

    def epsilon(self, delta, n):  # pragma: no cover - protocol
        """Half-width at failure probability ``delta`` after ``n`` observations."""

    def delta(self, epsilon, n):  # pragma: no cover - protocol
        """Failure probability of half-width ``epsilon`` after ``n`` observations (capped at 1)."""

    def depsilon_dlogdelta(self, delta, n):  # pragma: no cover - protocol
        """Derivative of ``epsilon`` with respect to ``ln(delta)`` (for the optimiser)."""


def _as_float(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


@dataclass(frozen=True)
class AdaptiveHoeffding:
    """Adaptive Hoeffding inequality (Zhao et al. 2016), AVOIR's and VeriFair's default bound.

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import AdaptiveHoeffding
    >>> bound = AdaptiveHoeffding()
    >>> round(float(bound.epsilon(0.05, 100)), 6)
    0.240184
    >>> round(float(bound.delta(bound.epsilon(0.05, 100), 100)), 6)
    0.05
    """

    name: str = "adaptive_hoeffding"
    time_uniform: bool = True

    @staticmethod
    def _log_term(n: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return 0.6 * np.log(np.log(np.maximum(n, 1.0)) / _LN_1_1 + 1.0)

    def epsilon(self, delta: ArrayLike, n: ArrayLike):
        """ε(δ, n); ``inf`` where ``n == 0`` or ``delta == 0``."""
        delta = _as_float(delta)
        n = _as_float(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = self._log_term(n) + (5.0 / 9.0) * np.log(24.0 / delta)
            eps = np.sqrt(a / n)
        eps = np.where((n <= 0) | (delta <= 0), np.inf, eps)
        return eps if eps.ndim else float(eps)

    def delta(self, epsilon: ArrayLike, n: ArrayLike):
        """δ(ε, n), capped at 1; ``1`` where ``n == 0``."""
        epsilon = _as_float(epsilon)
        n = _as_float(n)
        with np.errstate(over="ignore", invalid="ignore"):
            d = 24.0 * np.exp(-(9.0 / 5.0) * (n * epsilon**2 - self._log_term(n)))
        d = np.where((n <= 0) | ~np.isfinite(d), 1.0, np.minimum(d, 1.0))
        d = np.where(np.isinf(epsilon) & (n > 0), 0.0, d)
        return d if d.ndim else float(d)

    def depsilon_dlogdelta(self, delta: ArrayLike, n: ArrayLike):
        """dε/d(ln δ) = −(5/18) / (n·ε)."""
        eps = _as_float(self.epsilon(delta, n))
        n = _as_float(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = -(5.0 / 18.0) / (n * eps)
        out = np.where(np.isfinite(eps) & (n > 0), out, 0.0)
        return out if out.ndim else float(out)


@dataclass(frozen=True)
class Hoeffding:
    """Fixed-sample two-sided Hoeffding bound ``δ = 2·exp(−2nε²)``; for comparison only.

    It is valid at one sample size fixed in advance, not at a data-dependent stopping time, so
    a :class:`~pcfair.audits.avoir.Monitor` refuses it unless ``allow_fixed_n=True`` is given.

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import Hoeffding
    >>> f"{Hoeffding().delta(0.1, 600):.3e}"
    '1.229e-05'
    """

    name: str = "hoeffding"
    time_uniform: bool = False

    def epsilon(self, delta: ArrayLike, n: ArrayLike):
        """ε = sqrt(ln(2/δ) / (2n)); ``inf`` where ``n == 0`` or ``delta == 0``."""
        delta = _as_float(delta)
        n = _as_float(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.sqrt(np.log(2.0 / delta) / (2.0 * n))
        eps = np.where((n <= 0) | (delta <= 0), np.inf, np.where(delta >= 2.0, 0.0, eps))
        return eps if eps.ndim else float(eps)

    def delta(self, epsilon: ArrayLike, n: ArrayLike):
        """δ = min(1, 2·exp(−2nε²)); ``1`` where ``n == 0``."""
        epsilon = _as_float(epsilon)
        n = _as_float(n)
        with np.errstate(over="ignore", invalid="ignore"):
            d = np.minimum(2.0 * np.exp(-2.0 * n * epsilon**2), 1.0)
        d = np.where(n <= 0, 1.0, np.where(np.isnan(d), 0.0, d))
        return d if d.ndim else float(d)

    def depsilon_dlogdelta(self, delta: ArrayLike, n: ArrayLike):
        """dε/d(ln δ) = −1 / (4nε)."""
        eps = _as_float(self.epsilon(delta, n))
        n = _as_float(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = -1.0 / (4.0 * n * eps)
        out = np.where(np.isfinite(out), out, 0.0)
        return out if out.ndim else float(out)


#: Registry of the built-in bounds, by name.
BOUNDS: dict[str, ConcentrationBound] = {
    "adaptive_hoeffding": AdaptiveHoeffding(),
    "hoeffding": Hoeffding(),
}


def get_bound(bound: str | ConcentrationBound) -> ConcentrationBound:
    """Return a bound object from its registry name, or check and return a bound object.

    Parameters
    ----------
    bound : str or ConcentrationBound
        A key of :data:`BOUNDS` or an object with ``epsilon``, ``delta`` and
        ``depsilon_dlogdelta`` methods and ``name``/``time_uniform`` attributes.

    Returns
    -------
    ConcentrationBound

    Raises
    ------
    SpecError
        If the name is unknown or the object lacks the needed methods.

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import get_bound
    >>> get_bound("adaptive_hoeffding").time_uniform
    True
    """
    if isinstance(bound, str):
        try:
            return BOUNDS[bound]
        except KeyError:
            raise SpecError(
                f"unknown bound {bound!r}; choose one of {sorted(BOUNDS)}"
            ) from None
    for attr in ("epsilon", "delta", "depsilon_dlogdelta", "name", "time_uniform"):
        if not hasattr(bound, attr):
            raise SpecError(f"bound object {bound!r} lacks the attribute {attr!r}")
    return bound


def _check_delta(delta) -> np.ndarray:
    d = _as_float(delta)
    if np.any(~(d >= 0) | (d > 1)):
        raise SpecError(f"failure probability delta must lie in [0, 1], got {delta!r}")
    return d


def _check_n(n) -> np.ndarray:
    a = _as_float(n)
    if np.any(~(a >= 0)):
        raise SpecError(f"sample count n must be >= 0, got {n!r}")
    return a


def adaptive_hoeffding_epsilon(delta: ArrayLike, n: ArrayLike) -> float | np.ndarray:
    """Half-width ε(δ, n) of the adaptive Hoeffding bound, elementwise.

    Parameters
    ----------
    delta : float or array-like
        Failure probability in ``[0, 1]``.
    n : int or array-like
        Number of observations (``0`` gives ``inf``).

    Returns
    -------
    float or numpy.ndarray
        ``sqrt((0.6·ln(log_1.1(n) + 1) + (5/9)·ln(24/δ)) / n)``.

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import adaptive_hoeffding_epsilon
    >>> round(adaptive_hoeffding_epsilon(0.05, 1550), 7)
    0.0624473
    """
    return BOUNDS["adaptive_hoeffding"].epsilon(_check_delta(delta), _check_n(n))


def adaptive_hoeffding_delta(epsilon: ArrayLike, n: ArrayLike) -> float | np.ndarray:
    """Failure probability δ(ε, n) of the adaptive Hoeffding bound, capped at 1.

    Parameters
    ----------
    epsilon : float or array-like
        Half-width, ``>= 0``.
    n : int or array-like
        Number of observations (``0`` gives ``1``).

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> from pcfair.audits.avoir.bounds import adaptive_hoeffding_delta
    >>> round(adaptive_hoeffding_delta(0.1, 600), 5)
    0.04675
    """
    e = _as_float(epsilon)
    if np.any(~(e >= 0)):
        raise SpecError(f"half-width epsilon must be >= 0, got {epsilon!r}")
    return BOUNDS["adaptive_hoeffding"].delta(e, _check_n(n))

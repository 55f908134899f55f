"""Scoring patterns by marginal queries: ``Δ(x, y) = P(d | x, y) − P(d | y)``, ``P(x, y)`` and
the divergence score (``pc-certifier.md`` §2).

Numerics, shared by every engine:

- **Normalised quantities.** A circuit may carry any constant factor (a loaded model whose root
  weights do not sum to one, learned parameters before normalisation). Conditionals are taken
  as differences of log-marginals, which the factor cancels from, and probabilities are
  ``exp(log f(e) − log Z)``; nothing unnormalised is ever exponentiated, so a log-normaliser
  of 800 or −800 gives the answers of the normalised distribution.
- **The threshold.** A pattern discriminates when ``|Δ| > δ + THRESHOLD_ATOL``
  (:func:`discriminates`). Δ is a difference of two conditionals computed in floating point,
  so it carries rounding of a few units in the last place (more with huge log-normalisers,
  whose logs lose ``|log Z|·2⁻⁵²`` in absolute terms); the tolerance, 1e-12, keeps such a
  rounding error from turning ``|Δ| = δ`` exactly into a reported pattern, and is far below
  any threshold a user would state.
- **Undefined patterns.** ``P(x, y) = 0`` *in exact arithmetic* (a zero parameter on every
  path) makes a pattern undefined (never reported); definedness is read off ``log P(x, y) >
  −inf``, never off a linear ``P(x, y)`` that may merely underflow. A NaN score where
  ``P(x, y) > 0`` means the model's numbers are broken (NaN or +inf parameters):
  :class:`pcfair.errors.NumericalError`, never "no pattern".
- **Probabilities below the double range.** Every score here is a difference of log-marginals,
  exact at any magnitude; ``P(x, y)`` travels as its log too
  (:attr:`ScoredPattern.log_probability`), and its linear value (``probability``) is 0.0 below
  about 4.9e-324. Engines that work on linear tables (the lattice) score only patterns with
  ``P(x, y) ≥`` :data:`PROBABILITY_FLOOR` exactly, and say so where a model has smaller ones
  (:mod:`pcfair.patterns.lattice`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import NumericalError
from pcfair.inference.marginals import log_marginals
from pcfair.patterns._search_kernels import log_divergence_scores

__all__ = ["DivergenceMasses", "PARETO_RTOL", "PROBABILITY_FLOOR", "ScoredPattern",
           "THRESHOLD_ATOL", "discriminates", "divergence_scores", "log_normalizer", "log_support",
           "pattern_divergences", "pattern_evidence", "pattern_marginals"]

#: Absolute tolerance of the strict threshold: a pattern discriminates iff |Δ| > δ + this.
THRESHOLD_ATOL = 1e-12
#: Relative tolerance of ties in the strict Pareto filter (probabilities and scores).
PARETO_RTOL = 1e-9
#: Engines that sum linear probabilities score exactly the patterns with ``P(x, y)`` at least
#: this (see :mod:`pcfair.patterns.lattice` for the proof); on a model whose smallest positive
#: probability is below it (:func:`pcfair.inference.smallest.log_smallest_probability`) they
#: set the patterns below it aside and say so.
PROBABILITY_FLOOR = 1e-290


def log_support(min_support: float) -> float:
    """``log(min_support)`` (−inf for 0): the engines compare ``log P(x, y)`` with it, so that a
    pattern below the double range is set aside by its support, never mistaken for an
    undefined one.

    Examples
    --------
    >>> log_support(0.0), round(log_support(0.01), 4)
    (-inf, -4.6052)
    """
    return math.log(min_support) if min_support > 0 else -math.inf


def discriminates(abs_score, delta: float):
    """``|Δ| > δ`` with the documented rounding tolerance (:data:`THRESHOLD_ATOL`).

    Examples
    --------
    >>> bool(discriminates(0.12500000000000003, 0.125)), bool(discriminates(0.1251, 0.125))
    (False, True)
    """
    return abs_score > delta + THRESHOLD_ATOL


class ScoredPattern(NamedTuple):
    """One pattern as the engines pass it around: index-form ``x`` and ``y`` (``{variable:
    value index}``), its score Δ, ``P(x, y)`` (normalised; 0.0 where it underflows) and
    ``log P(x, y)`` (finite for every defined pattern, however small)."""

    x: dict
    y: dict
    score: float
    probability: float
    log_probability: float

    @classmethod
    def from_log(cls, x: dict, y: dict, score: float, log_probability: float
                 ) -> "ScoredPattern":
        """The pattern with ``probability = exp(log_probability)``.

        Examples
        --------
        >>> ScoredPattern.from_log({0: 1}, {}, 0.5, -800.0).probability
        0.0
        """
        lp = float(log_probability)
        return cls(x, y, float(score), math.exp(lp), lp)


@dataclass(frozen=True)
class PatternMarginals:
    """Per pattern, normalised: ``score`` Δ (NaN where ``x`` is empty or ``P(x, y) = 0``),
    ``p_xy`` = P(x, y), ``log_p_xy`` its log (−inf exactly where ``P(x, y) = 0`` in exact
    arithmetic; ``p_xy`` is 0.0 below the double range too), ``p_dxy`` = P(d, x, y) and
    ``p_y`` = P(y). For an empty ``x`` the probabilities are those of ``y`` alone
    (``p_xy = p_y``)."""

    score: np.ndarray
    p_xy: np.ndarray
    log_p_xy: np.ndarray
    p_dxy: np.ndarray
    p_y: np.ndarray


def pattern_evidence(num_variables: int, decision: int, favorable: int,
                     patterns: list[tuple[dict, dict]]) -> np.ndarray:
    """Evidence rows ``(d, x, y)``, ``(x, y)``, ``(d, y)``, ``(y)`` for each index-form pattern
    (four consecutive rows per pattern, −1 = missing).

    Examples
    --------
    >>> pattern_evidence(3, 0, 1, [({1: 0}, {2: 1})]).tolist()
    [[1, 0, 1], [-1, 0, 1], [1, -1, 1], [-1, -1, 1]]
    """
    rows = np.full((4 * len(patterns), num_variables), -1, np.int32)
    for i, (x, y) in enumerate(patterns):
        for v, val in x.items():
            rows[4 * i, v] = rows[4 * i + 1, v] = val
        for v, val in y.items():
            rows[4 * i: 4 * i + 4, v] = val
        rows[4 * i, decision] = rows[4 * i + 2, decision] = favorable
    return rows


def log_normalizer(log_z: float) -> float:
    """Check a circuit's ``log Z`` (the log-marginal of the empty evidence) and return it.

    Raises :class:`NumericalError` where it is not finite: a circuit of mass zero, or one
    whose parameters overflow.
    """
    if not np.isfinite(log_z):
        raise NumericalError(
            f"the circuit's total mass is {np.exp(log_z) if log_z == -np.inf else log_z} "
            f"(log Z = {log_z}): no distribution to score patterns of")
    return float(log_z)


def conditional_from_logs(log_joint: np.ndarray, log_evidence: np.ndarray) -> np.ndarray:
    """``P(a | e) = exp(log P(a, e) − log P(e))`` clipped to ``[0, 1]`` (rounding can put
    ``log P(a, e)`` a few ulps above ``log P(e)``); NaN where ``P(e) = 0``. Any common factor
    of the circuit cancels."""
    with np.errstate(invalid="ignore"):
        out = np.exp(np.minimum(log_joint - log_evidence, 0.0))
    return np.where(log_evidence > -np.inf, out, np.nan)


def pattern_marginals(circuit: Circuit, d: int, fav: int,
                      patterns: list[tuple[dict, dict]]) -> PatternMarginals:
    """Marginals of each ``(x, y)`` (index-form dicts) from one batched pass of four rows per
    pattern, ``(d, x, y)``, ``(x, y)``, ``(d, y)``, ``(y)``, plus one row for ``log Z``.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> m = pattern_marginals(pc, 0, 1, [({1: 1}, {}), ({}, {1: 0})])
    >>> m.score.round(4).tolist(), m.p_xy.round(2).tolist()
    ([0.1667, nan], [0.6, 0.4])
    """
    rows = pattern_evidence(circuit.num_variables, d, fav, patterns)
    rows = np.vstack([rows, np.full((1, circuit.num_variables), -1, np.int32)])
    logs = log_marginals(circuit, rows)
    log_z = log_normalizer(logs[-1])
    lp = logs[:-1].reshape(-1, 4)
    has_x = np.array([bool(x) for x, _ in patterns], bool)
    score = conditional_from_logs(lp[:, 0], lp[:, 1]) - conditional_from_logs(lp[:, 2], lp[:, 3])
    log_p_xy = lp[:, 1] - log_z
    p_dxy, p_y = (np.exp(lp[:, j] - log_z) for j in (0, 3))
    defined = has_x & (lp[:, 1] > -np.inf)
    if np.any(defined & np.isnan(score)):
        i = int(np.flatnonzero(defined & np.isnan(score))[0])
        raise NumericalError(f"pattern {patterns[i]} has P(x, y) > 0 but an undefined score "
                             f"(log-marginals {lp[i].tolist()}): the model's parameters are "
                             "not finite")
    score[~defined] = np.nan
    return PatternMarginals(score, np.exp(log_p_xy), log_p_xy, p_dxy, p_y)


@dataclass(frozen=True)
class DivergenceMasses:
    """The logs of the four masses the divergence needs, each computed directly (never as a
    difference): ``a1 = P(d, x, y)``, ``a0 = P(¬d, x, y)``, ``m1 = P(d, y, ¬x)``,
    ``m0 = P(¬d, y, ¬x)``, where ``¬x`` is "some variable of ``x`` takes another value";
    −inf exactly where a mass is 0, finite however small it is."""

    log_a1: np.ndarray
    log_a0: np.ndarray
    log_m1: np.ndarray
    log_m0: np.ndarray


def divergence_masses(circuit: Circuit, d: int, fav: int,
                      patterns: list[tuple[dict, dict]]) -> DivergenceMasses:
    """:class:`DivergenceMasses` of each index-form pattern by marginal queries.

    ``¬x`` is split into the disjoint events "``x_1..x_{i−1}`` hold and ``X_i`` takes another
    value ``k``", one marginal each, so a mass that is zero comes out exactly zero (a
    difference such as ``P(d, y) − P(d, x, y)`` would leave rounding residue, and at δ = 0 turn
    an infinite divergence into a finite one).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> m = divergence_masses(pc, 0, 1, [({1: 1}, {})])
    >>> [round(float(np.exp(v[0])), 2) for v in (m.log_a1, m.log_a0, m.log_m1, m.log_m0)]
    [0.4, 0.2, 0.1, 0.3]
    """
    n = circuit.num_variables
    card = circuit.variables.cardinalities
    rows, owner = [], []
    for i, (x, y) in enumerate(patterns):
        base = np.full(n, -1, np.int32)
        for v, val in y.items():
            base[v] = val
        inside = base.copy()
        for v, val in x.items():
            inside[v] = val
        rows.append(inside)
        owner.append(2 * i)  # a-masses
        prefix = base.copy()
        for v, val in sorted(x.items()):
            for k in range(int(card[v])):
                if k != val:
                    r = prefix.copy()
                    r[v] = k
                    rows.append(r)
                    owner.append(2 * i + 1)  # m-masses
            prefix[v] = val
    ev = np.array(rows, np.int32).reshape(-1, n)
    both = np.vstack([ev, ev, np.full((1, n), -1, np.int32)])
    both[: len(ev), d] = fav
    both[len(ev): 2 * len(ev), d] = 1 - fav
    logs = log_marginals(circuit, both)
    log_z = log_normalizer(logs[-1])
    owner_arr = np.array(owner, np.int64)
    sums = np.full((2, 2 * len(patterns)), -np.inf)  # log-sums of the disjoint events
    for side in (0, 1):  # side 0: d = fav, side 1: d = ¬fav
        np.logaddexp.at(sums[side], owner_arr,
                        logs[side * len(ev): (side + 1) * len(ev)] - log_z)
    return DivergenceMasses(sums[0, 0::2], sums[1, 0::2], sums[0, 1::2], sums[1, 1::2])


def divergence_scores(score: np.ndarray, masses: DivergenceMasses, delta: float) -> np.ndarray:
    """Divergence score (``pc-certifier.md`` §2): the smallest KL divergence from P to a
    distribution ``Q`` that agrees with P outside ``x y``, keeps ``P(x, y)``, and removes the
    pattern (``|Δ_Q| = δ``); 0 where the pattern does not discriminate (or is undefined).

    With ``q = P(d | x, y)``, ``ρ = P(x | y)`` and ``b̄ = P(d | y, ¬x)``, ``Δ = (1 − ρ)(q − b̄)``
    and ``Q`` moves ``q`` to ``q' = b̄ ± δ / (1 − ρ)``, i.e. in masses
    ``q' = (m1 ± δ·P(y)) / (m1 + m0)``, so that

        Div = P(x, y) · KL(Bernoulli(q) ‖ Bernoulli(q'))
            = a1·log(q / q') + a0·log((1 − q) / (1 − q')),

    the closed form ``a1·log(a1/(a1 + r)) + a0·log(a0/(a0 − r))`` of the spec with
    ``r = P(x, y)·(q' − q)``. It is evaluated from the masses' logs
    (:func:`pcfair.patterns._search_kernels.log_divergence_score`, the kernels' own): every
    ratio a difference of logs, so masses far below the range of doubles keep their
    precision; a term with ``a = 0`` is 0, and a term whose moved mass is zero or negative
    while ``a > 0`` is +inf (at δ = 0, when ``P(¬d, y, ¬x) = 0`` for Δ > 0, or
    ``P(d, y, ¬x) = 0`` for Δ < 0, no such ``Q`` exists).

    Examples
    --------
    >>> import numpy as np
    >>> m = DivergenceMasses(*np.log([[0.4], [0.2], [0.1], [0.3]]))
    >>> divergence_scores(np.array([0.1667]), m, 0.1).round(4).tolist()
    [0.034]
    """
    s = np.ascontiguousarray(score, float)
    out = np.zeros(len(s))
    logs = (np.ascontiguousarray(v, float) for v in (masses.log_a1, masses.log_a0,
                                                       masses.log_m1, masses.log_m0))
    log_divergence_scores(s, *logs, float(delta), out)
    return out


def pattern_divergences(circuit: Circuit, d: int, fav: int, patterns: list[tuple[dict, dict]],
                        score: np.ndarray, delta: float) -> np.ndarray:
    """Divergence of each index-form pattern given its score Δ: masses are queried
    (:func:`divergence_masses`) only for the patterns that discriminate; the others are 0.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> pats = [({1: 1}, {}), ({1: 0}, {})]
    >>> pattern_divergences(pc, 0, 1, pats, np.array([1 / 6, -0.25]), 0.2).round(4).tolist()
    [0.0, 0.0066]
    """
    score = np.asarray(score, float)
    out = np.zeros(len(patterns))
    hit = np.flatnonzero(discriminates(np.abs(np.nan_to_num(score)), delta))
    if len(hit):
        masses = divergence_masses(circuit, d, fav, [patterns[i] for i in hit])
        out[hit] = divergence_scores(score[hit], masses, delta)
    return out

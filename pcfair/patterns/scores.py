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
- **Undefined patterns.** ``P(x, y) = 0`` makes a pattern undefined (never reported). A NaN
  score where ``P(x, y) > 0`` means the model's numbers are broken (NaN or +inf parameters):
  :class:`pcfair.errors.NumericalError`, never "no pattern".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import NumericalError
from pcfair.inference.marginals import log_marginals

#: Absolute tolerance of the strict threshold: a pattern discriminates iff |Δ| > δ + this.
THRESHOLD_ATOL = 1e-12
#: Relative tolerance of ties in the strict Pareto filter (probabilities and scores).
PARETO_RTOL = 1e-9


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
    value index}``), its score Δ and ``P(x, y)`` (normalised)."""

    x: dict
    y: dict
    score: float
    probability: float


@dataclass(frozen=True)
class PatternMarginals:
    """Per pattern, normalised: ``score`` Δ (NaN where ``x`` is empty or ``P(x, y) = 0``),
    ``p_xy`` = P(x, y), ``p_dxy`` = P(d, x, y) and ``p_y`` = P(y). For an empty ``x`` the
    probabilities are those of ``y`` alone (``p_xy = p_y``)."""

    score: np.ndarray
    p_xy: np.ndarray
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
    p_dxy, p_xy, p_y = (np.exp(lp[:, j] - log_z) for j in (0, 1, 3))
    defined = has_x & (lp[:, 1] > -np.inf)
    if np.any(defined & np.isnan(score)):
        i = int(np.flatnonzero(defined & np.isnan(score))[0])
        raise NumericalError(f"pattern {patterns[i]} has P(x, y) > 0 but an undefined score "
                             f"(log-marginals {lp[i].tolist()}): the model's parameters are "
                             "not finite")
    score[~defined] = np.nan
    return PatternMarginals(score, p_xy, p_dxy, p_y)


@dataclass(frozen=True)
class DivergenceMasses:
    """The four masses the divergence needs, each computed directly (never as a difference):
    ``a1 = P(d, x, y)``, ``a0 = P(¬d, x, y)``, ``m1 = P(d, y, ¬x)``, ``m0 = P(¬d, y, ¬x)``,
    where ``¬x`` is "some variable of ``x`` takes another value"."""

    a1: np.ndarray
    a0: np.ndarray
    m1: np.ndarray
    m0: np.ndarray


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
    >>> [round(float(v[0]), 2) for v in (m.a1, m.a0, m.m1, m.m0)]
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
    sums = np.zeros((2, 2 * len(patterns)))
    for side in (0, 1):  # side 0: d = fav, side 1: d = ¬fav
        np.add.at(sums[side], owner_arr, np.exp(logs[side * len(ev): (side + 1) * len(ev)] - log_z))
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
    ``r = P(x, y)·(q' − q)``. Ratios are formed of like magnitudes (no products of tiny
    masses, which could underflow), a term with ``a = 0`` is 0, and a term whose moved mass is
    zero or negative while ``a > 0`` is +inf (at δ = 0, when ``P(¬d, y, ¬x) = 0`` for Δ > 0, or
    ``P(d, y, ¬x) = 0`` for Δ < 0, no such ``Q`` exists).

    Examples
    --------
    >>> import numpy as np
    >>> m = DivergenceMasses(np.array([0.4]), np.array([0.2]), np.array([0.1]), np.array([0.3]))
    >>> divergence_scores(np.array([0.1667]), m, 0.1).round(4).tolist()
    [0.034]
    """
    s = np.asarray(score, float)
    a1, a0, m1, m0 = (np.asarray(v, float) for v in (masses.a1, masses.a0, masses.m1, masses.m0))
    out = np.zeros(len(s))
    with np.errstate(invalid="ignore"):
        sign = np.where(s > 0, 1.0, -1.0)
        m = discriminates(np.abs(np.nan_to_num(s, nan=0.0)), delta)
    m &= (m1 + m0) > 0  # P(y, ¬x) = 0 gives Δ = 0: not a pattern, only rounding says so
    if not m.any():
        return out
    a1, a0, m1, m0, sign = a1[m], a0[m], m1[m], m0[m], sign[m]
    p_xy, rest = a1 + a0, m1 + m0
    p_y = p_xy + rest
    c1 = m1 + sign * delta * p_y  # mass of d outside x y that Q's q' corresponds to
    c0 = m0 - sign * delta * p_y
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = []
        for a, c in ((a1, c1), (a0, c0)):
            t = a * np.log((a / p_xy) / (c / rest))
            terms.append(np.where(a > 0, np.where(c > 0, t, np.inf), 0.0))
    out[m] = np.maximum(terms[0] + terms[1], 0.0)  # rounding can give -1e-17
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

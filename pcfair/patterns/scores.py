"""Scoring patterns by marginal queries: ``Δ(x, y) = P(d | x, y) − P(d | y)``, ``P(x, y)`` and
the divergence score (``pc-certifier.md`` §2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcfair.circuit.circuit import Circuit


@dataclass(frozen=True)
class PatternMarginals:
    """Per pattern: ``score`` Δ (NaN where ``x`` is empty or ``P(x, y) = 0``), ``p_xy``,
    ``p_dxy`` = P(d, x, y) and ``p_y``. For an empty ``x`` the probabilities are those of
    ``y`` alone (``p_xy = p_y``)."""

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


def pattern_marginals(circuit: Circuit, d: int, fav: int,
                      patterns: list[tuple[dict, dict]]) -> PatternMarginals:
    """Marginals of each ``(x, y)`` (index-form dicts) from one batched pass of four rows per
    pattern: ``(d, x, y)``, ``(x, y)``, ``(d, y)``, ``(y)``.

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
    has_x = np.array([bool(x) for x, _ in patterns], bool)
    p = np.exp(circuit.log_marginal(rows).reshape(-1, 4))
    with np.errstate(divide="ignore", invalid="ignore"):
        score = p[:, 0] / p[:, 1] - p[:, 2] / p[:, 3]
    score[~has_x | (p[:, 1] <= 0)] = np.nan
    return PatternMarginals(score, p[:, 1], p[:, 0], p[:, 3])


def score_patterns(circuit: Circuit, d: int, fav: int, patterns: list[tuple[dict, dict]]
                   ) -> list[tuple[float | None, float]]:
    """``(Δ, P(x, y))`` of each ``(x, y)`` with non-empty ``x``; ``Δ`` is None where
    ``P(x, y) = 0`` (the pattern is undefined).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> [(round(s, 4), round(p, 2)) for s, p in score_patterns(pc, 0, 1, [({1: 1}, {})])]
    [(0.1667, 0.6)]
    """
    m = pattern_marginals(circuit, d, fav, patterns)
    return [(None, 0.0) if np.isnan(s) else (float(s), float(p))
            for s, p in zip(m.score, m.p_xy)]


def divergence_scores(score: np.ndarray, p_dxy: np.ndarray, p_xy: np.ndarray,
                      p_y: np.ndarray, delta: float) -> np.ndarray:
    """Divergence score (``pc-certifier.md`` §2): the smallest KL divergence from P to a
    distribution that removes the pattern; 0 where ``|Δ| ≤ δ`` or undefined (NaN score).

    Examples
    --------
    >>> import numpy as np
    >>> divergence_scores(np.array([0.1667, 0.01]), np.array([0.4, 0.1]),
    ...                   np.array([0.6, 0.2]), np.array([1.0, 1.0]), 0.1).round(4).tolist()
    [0.034, 0.0]
    """
    s = np.nan_to_num(np.asarray(score, float), nan=0.0)
    a1 = np.asarray(p_dxy, float)
    pxy = np.asarray(p_xy, float)
    a0 = pxy - a1
    py = np.asarray(p_y, float)
    out = np.zeros(len(s))
    pos, neg = s > delta, s < -delta
    m = pos | neg
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = 1.0 / pxy[m] - 1.0 / py[m]
        target = np.where(pos[m], delta, -delta)
        r = (target - s[m]) / denom
        terms = []
        for a, moved in ((a1[m], a1[m] + r), (a0[m], a0[m] - r)):
            # moved <= 0 with a > 0: Q must empty a block P fills (δ = 0 and all of y's mass
            # of that decision lies in x y), so KL(P‖Q) is infinite
            t = np.where(moved > 0, a * np.log(a / moved), np.inf)
            terms.append(np.where(a > 0, t, 0.0))
    out[m] = np.maximum(terms[0] + terms[1], 0.0)  # rounding can give -1e-17
    return out

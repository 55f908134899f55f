"""Scoring patterns by marginal queries: ``Δ(x, y) = P(d | x, y) − P(d | y)`` and ``P(x, y)``."""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import Circuit


def score_patterns(circuit: Circuit, d: int, fav: int, patterns: list[tuple[dict, dict]]
                   ) -> list[tuple[float | None, float]]:
    """``(Δ, P(x, y))`` of each ``(x, y)`` (index-form dicts), from one batched marginal pass of
    four rows per pattern: ``(d, x, y)``, ``(x, y)``, ``(d, y)``, ``(y)``. ``Δ`` is None where
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
    rows = np.full((4 * len(patterns), circuit.num_variables), -1, np.int32)
    for i, (x, y) in enumerate(patterns):
        for v, val in x.items():
            rows[4 * i, v] = rows[4 * i + 1, v] = val
        for v, val in y.items():
            rows[4 * i: 4 * i + 4, v] = val
        rows[4 * i, d] = rows[4 * i + 2, d] = fav
    lp = circuit.log_marginal(rows).reshape(-1, 4)
    return [(None, 0.0) if b == -np.inf else
            (float(np.exp(a - b) - np.exp(c - e)), float(np.exp(b))) for a, b, c, e in lp]

"""The smallest positive probability a circuit gives: how far below the double range its
patterns can fall.

A discrimination pattern's ``P(x, y)`` is a sum of complete assignments' probabilities, so a
model whose every positive complete assignment has probability at least ``L`` has every
defined ``P(x, y) ≥ L``. Engines that add linear probabilities (the lattice) are exact when
``L`` lies in the normal range of doubles; :func:`log_smallest_probability` gives ``log L``
in one bottom-up pass, so they can tell, before they run, whether a model needs more than
that (:data:`pcfair.patterns.scores.PROBABILITY_FLOOR`).
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import derived
from pcfair.errors import NumericalError
from pcfair.inference import _marginal_kernels as K
from pcfair.inference.marginals import log_marginals

__all__ = ["log_smallest_probability"]


def log_smallest_probability(circuit: Circuit) -> float:
    """A lower bound ``log L`` on ``log P(z)`` over every complete assignment ``z`` with
    ``P(z) > 0`` (the circuit normalised), exact for deterministic circuits; cached on the
    circuit. ``+inf`` never occurs for a circuit with mass (:class:`NumericalError` for one
    without).

    Theorem. Let ``m(n)`` be computed bottom up: ``0`` for an indicator, the least finite
    log-parameter of a categorical leaf, the sum of the children's ``m`` for a product, and
    for a sum node the least ``log w_e + m(a_e) [+ m(b_e)]`` over its elements with
    ``w_e > 0`` (+inf for a node with none, and +inf propagates through sums of terms). Then
    every complete ``z`` with ``n(z) > 0`` has ``log n(z) ≥ m(n)``; with ``n`` the root,
    ``P(z) = root(z) / Z ≥ exp(m(root) − log Z)``.

    Proof, by induction over the nodes in topological order. An indicator with ``n(z) > 0``
    has ``n(z) = 1``. A leaf's value at ``z`` is one of its parameters, positive by
    assumption, hence at least the least finite one. A product with ``n(z) > 0`` has every
    factor positive, and ``log n(z) = Σ_c log c(z) ≥ Σ_c m(c)`` (no decomposability is used:
    it is a bound, tight when the factors' scopes are disjoint). A sum with
    ``n(z) = Σ_e w_e a_e(z) b_e(z) > 0`` has a positive term ``e``, so
    ``n(z) ≥ w_e a_e(z) b_e(z)``, whose log is at least ``log w_e + m(a_e) + m(b_e)`` by the
    induction hypothesis, hence at least the least such value over the positive elements. ∎

    For a deterministic circuit every positive ``n(z)`` is a single term, and the least is
    attained (each minimum is reached independently in disjoint scopes, for a decomposable
    one), so the bound is the true smallest probability; for a mixture it may be lower.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1, 2]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.5, 0.5, 0]), 0.9),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.2, 0.3, 0.5]), 0.1)]))
    >>> round(float(np.exp(log_smallest_probability(pc))), 6)   # P(d=0, s=0) = 0.1 · 0.2
    0.02
    """
    def compute() -> float:
        buf = np.empty(circuit.num_nodes)
        K.smallest_positive_kernel(circuit.kind, circuit.param_ptr, circuit.param_len,
                                   circuit.params, circuit.edge_ptr, circuit.edge_a,
                                   circuit.edge_b, circuit.edge_logw, buf)
        log_z = float(log_marginals(circuit, np.full((1, circuit.num_variables), -1,
                                                     np.int32))[0])
        low = float(buf[circuit.root])
        if not np.isfinite(log_z) or low == np.inf:
            raise NumericalError(f"the circuit has no mass (log Z = {log_z}): it gives no "
                                 "probability to any assignment")
        return low - log_z

    return derived(circuit, "smallest_probability", compute)

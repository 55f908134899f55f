"""Closed-form maximum-likelihood parameters from complete data, with a pseudocount.

:func:`fit_parameters` refits a deterministic circuit from its data flows
(:func:`pcfair.inference.flows.data_flows`); :func:`conditional_table` estimates the tables
of the tree learners (:mod:`pcfair.learn.clt`, :mod:`pcfair.learn.naive_bayes`). Both spread
the pseudocount ``α`` evenly over the ``K`` values (Juice's convention):
``(n_k + α/K) / (n + α)``.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, SUM, Circuit
from pcfair.inference.flows import data_flows


def fit_parameters(circuit: Circuit, codes: np.ndarray, pseudocount: float = 1.0) -> Circuit:
    """The same structure with maximum-likelihood parameters for complete data ``codes``.

    Exact for deterministic circuits: each row follows one path, so counts of rows through each
    element give the estimates ``(n_e + α/K) / (n + α)`` (``K`` elements of the node, or values
    of a leaf; a node no row reaches with ``α = 0`` gets uniform weights).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.5, 0.5]))
    >>> fitted = fit_parameters(pc, np.array([[1], [1], [0], [1]]), pseudocount=0.0)
    >>> float(fitted.probability({"x": 1}))
    0.75
    """
    elem, leaf, _ = data_flows(circuit, codes)
    logw = circuit.edge_logw.copy()
    for i in np.flatnonzero(circuit.kind == SUM):
        lo, hi = circuit.edge_ptr[i], circuit.edge_ptr[i + 1]
        logw[lo:hi] = _normalized_log(elem[lo:hi], pseudocount)
    params = circuit.params.copy()
    for i in np.flatnonzero(circuit.kind == CATEGORICAL):
        lo = circuit.param_ptr[i]
        hi = lo + circuit.param_len[i]
        params[lo:hi] = _normalized_log(leaf[lo:hi], pseudocount)
    return circuit.with_parameters(logw, params)


def _normalized_log(counts: np.ndarray, pseudocount: float) -> np.ndarray:
    k = len(counts)
    smoothed = counts + pseudocount / k
    total = smoothed.sum()
    if total <= 0:
        return np.full(k, -np.log(k))
    with np.errstate(divide="ignore"):
        return np.log(smoothed / total)


def conditional_table(codes: np.ndarray, cards: np.ndarray, v: int, u: int, d: int,
                      pseudocount: float) -> np.ndarray:
    """``θ[d_value, j, k] = P(v = k | u = j, D = d_value)`` with the pseudocount convention.

    For the root feature ``u`` is the decision itself (then ``j`` runs over D's values and only
    ``j == d_value`` is used). A context no row reaches with ``α = 0`` gets the uniform
    distribution.

    Examples
    --------
    >>> codes = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])  # columns: D, v
    >>> theta = conditional_table(codes, np.array([2, 2]), 1, 0, 0, pseudocount=0.0)
    >>> theta[0, 0].tolist(), theta[1, 1].tolist()  # P(v | D = 0), P(v | D = 1)
    ([0.5, 0.5], [0.0, 1.0])
    """
    kv, ku, kd = int(cards[v]), int(cards[u]), int(cards[d])
    flat = (codes[:, d].astype(np.int64) * ku + codes[:, u]) * kv + codes[:, v]
    counts = np.bincount(flat, minlength=kd * ku * kv).reshape(kd, ku, kv).astype(float)
    counts += pseudocount / kv
    totals = counts.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(totals > 0, counts / totals, 1.0 / kv)
    return theta

"""Closed-form maximum-likelihood parameters of deterministic circuits from complete data."""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, SUM, Circuit
from pcfair.learn import _flow_kernels as K


def data_flows(circuit: Circuit, codes: np.ndarray, weights: np.ndarray | None = None,
               target_edge: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of rows through every sum element and every categorical-leaf value, and the rows
    through ``target_edge`` (see :func:`pcfair.learn._flow_kernels.flows_kernel`)."""
    codes = np.ascontiguousarray(codes, np.int32)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, float)
    elem = np.zeros(len(circuit.edge_a))
    leaf = np.zeros(len(circuit.params))
    rows = np.zeros(len(codes), np.bool_)
    K.flows_kernel(circuit.kind, circuit.var, circuit.value, circuit.edge_ptr, circuit.edge_a,
                   circuit.edge_b, codes, w, elem, leaf, circuit.param_ptr, target_edge, rows)
    return elem, leaf, rows


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

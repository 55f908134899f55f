"""Data flows: how many complete rows pass through each parameter of a deterministic circuit.

In a smooth, decomposable, deterministic circuit each complete row follows one path: it passes
through one element of every sum node it reaches and one value of every categorical leaf it
reaches. The counts of rows through each entry, the *flows*, are the sufficient statistics of
the circuit's parameters: the learners' closed-form estimates
(:func:`pcfair.learn.parameters.fit_parameters`), the training counts a learned model carries
(:class:`pcfair.circuit.counts.ParameterCounts`, made by :func:`parameter_counts`) and the
parameter posterior drawn from them (:mod:`pcfair.inference.posterior`) all read them.
The kernel is :func:`pcfair.inference._flow_kernels.flows_kernel`.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.counts import ParameterCounts
from pcfair.errors import OptionError
from pcfair.inference import _flow_kernels as K

__all__ = ["data_flows", "parameter_counts"]


def data_flows(circuit: Circuit, codes: np.ndarray, weights: np.ndarray | None = None,
               target_edge: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of rows through every sum element and every categorical-leaf value, and the rows
    through ``target_edge``.

    Parameters
    ----------
    circuit : Circuit
        Deterministic (a row reaching a sum passes through its first supported element).
    codes : ndarray of int
        Complete rows of value codes, one column per variable.
    weights : ndarray of float, optional
        A weight per row (default: 1 each).
    target_edge : int, default -1
        A sum element whose rows are flagged (−1: none).

    Returns
    -------
    elements : ndarray of float64
        Weighted rows through each entry of ``circuit.edge_logw`` (product links hold 0).
    leaves : ndarray of float64
        Weighted rows through each entry of ``circuit.params``.
    rows : ndarray of bool
        Which rows pass through ``target_edge``.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.5, 0.5]))
    >>> elements, leaves, _ = data_flows(pc, np.array([[1], [1], [0]]))
    >>> leaves.tolist()
    [1.0, 2.0]
    """
    codes = np.ascontiguousarray(codes, np.int32)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, float)
    elem = np.zeros(len(circuit.edge_a))
    leaf = np.zeros(len(circuit.params))
    rows = np.zeros(len(codes), np.bool_)
    K.flows_kernel(circuit.kind, circuit.var, circuit.value, circuit.edge_ptr, circuit.edge_a,
                   circuit.edge_b, codes, w, elem, leaf, circuit.param_ptr, target_edge, rows)
    return elem, leaf, rows


def parameter_counts(circuit: Circuit, codes: np.ndarray, pseudocount: float = 1.0
                     ) -> ParameterCounts:
    """The training counts of ``circuit``: the flows of the complete rows ``codes``.

    Parameters
    ----------
    circuit : Circuit
        Deterministic.
    codes : ndarray of int
        Complete rows of value codes (rows × variables; no missing value).
    pseudocount : float, default 1.0
        The prior's pseudocount ``α``, recorded with the counts.

    Returns
    -------
    ParameterCounts

    Raises
    ------
    OptionError
        Where ``codes`` is not a complete table of codes, one column per variable.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.5, 0.5]))
    >>> c = parameter_counts(pc, np.array([[1], [1], [0]]), pseudocount=1.0)
    >>> c.leaves.tolist(), c.rows
    ([1.0, 2.0], 3)
    """
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != circuit.num_variables or (codes < 0).any():
        raise OptionError("counts need complete rows of codes, one column per variable")
    elem, leaf, _ = data_flows(circuit, codes)
    return ParameterCounts(elem, leaf, float(pseudocount), int(len(codes)))

"""Marginal and conditional probabilities by one bottom-up pass.

``log_marginals`` runs a numba kernel (rows split over all cores where rows × nodes reaches
:data:`._marginal_kernels.PARALLEL_MIN_WORK`, one thread below, with the same numbers) or, with
``backend="numpy"``, a per-node loop vectorised over the batch; both give the same numbers to
rounding.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.derived import derived
from pcfair.errors import EvidenceError, OptionError
from pcfair.inference import _marginal_kernels as K


def kernel_args(circuit: Circuit) -> tuple:
    """The flat arrays the marginal kernels take, in order (cached on the circuit)."""
    def args() -> tuple:
        deg = np.diff(circuit.edge_ptr)
        return (
            circuit.kind, circuit.var, circuit.value, circuit.param_ptr, circuit.params,
            circuit.leaf_lognorm, circuit.edge_ptr, circuit.edge_a, circuit.edge_b,
            circuit.edge_logw, int(deg.max()) if len(deg) else 0,
        )

    return derived(circuit, "kernel_args", args)


def log_marginals(circuit: Circuit, evidence: np.ndarray, *, backend: str = "numba") -> np.ndarray:
    """log P(e) for each row of an index-form evidence matrix (−1 = missing).

    Parameters
    ----------
    circuit : Circuit
    evidence : ndarray of int, shape (rows, num_variables)
    backend : {"numba", "numpy"}

    Returns
    -------
    ndarray of float64 with one log-probability per row.

    Examples
    --------
    >>> import numpy as np
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder(1)
    >>> pc = b.build(b.bernoulli("1", 0.3))
    >>> np.exp(log_marginals(pc, np.array([[1], [0], [-1]]))).round(3).tolist()
    [0.3, 0.7, 1.0]
    """
    ev = np.ascontiguousarray(evidence, dtype=np.int32)
    if ev.ndim != 2 or ev.shape[1] != circuit.num_variables:
        raise EvidenceError(
            f"evidence must have shape (rows, {circuit.num_variables}), got {ev.shape}"
        )
    if backend == "numba":
        out = np.empty(ev.shape[0])
        few = ev.shape[0] <= 2 * K._BLOCK or ev.shape[0] * circuit.num_nodes < K.PARALLEL_MIN_WORK
        kernel = K.log_marginals_serial if few else K.log_marginals_kernel
        kernel(*kernel_args(circuit), ev, out)
        return out
    if backend == "numpy":
        return _log_marginals_numpy(circuit, ev)
    raise OptionError(f"backend must be 'numba' or 'numpy', not {backend!r}")


def node_log_values(circuit: Circuit, evidence_row: np.ndarray) -> np.ndarray:
    """Every node's log-value under one evidence row (index form)."""
    buf = np.empty(circuit.num_nodes)
    K.node_values_kernel(*kernel_args(circuit), np.ascontiguousarray(evidence_row, np.int32), buf)
    return buf


def normalized(circuit: Circuit) -> Circuit:
    """The circuit of the normalised distribution ``f / Z``, normalised node by node.

    Each node's mass ``Z_n`` comes from one bottom-up pass; a sum element's weight becomes
    ``w · Z_prime · Z_sub / Z_n`` and a categorical leaf's parameters are divided by their
    sum. By induction every node then computes ``f_n / Z_n``, so the root computes the
    distribution, and every node's numbers stay on their own scale: a model whose root
    carries a factor ``e^800`` (or ``e^1e300``) gives the same circuit as the normalised one,
    which subtracting one global ``log Z`` from every log-marginal cannot guarantee once
    ``|log Z|`` is large. Nodes of mass zero keep zero weights. A circuit that is already
    normalised is returned as it is. Needs a smooth, decomposable circuit (its masses are
    then ``f_n`` of the empty evidence).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.sum([b.categorical("x", [2.0, 6.0])], weights=[1.0]))
    >>> pc = pc.with_parameters(pc.edge_logw + 800.0)  # a factor e^800 at the root
    >>> q = normalized(pc)
    >>> q.edge_logw.tolist(), np.exp(q.params).round(12).tolist()
    ([0.0], [0.25, 0.75])
    """
    val = node_log_values(circuit, np.full(circuit.num_variables, -1, np.int32))
    owner = np.repeat(np.arange(circuit.num_nodes), np.diff(circuit.edge_ptr))
    is_sum = circuit.kind[owner] == SUM
    sub = np.where(circuit.edge_b >= 0, val[np.maximum(circuit.edge_b, 0)], 0.0)
    with np.errstate(invalid="ignore"):
        logw = circuit.edge_logw + val[circuit.edge_a] + sub - val[owner]
    logw = np.where(is_sum, np.nan_to_num(logw, nan=-np.inf, posinf=np.inf, neginf=-np.inf),
                    circuit.edge_logw)
    leaf = np.repeat(np.where(circuit.kind == CATEGORICAL, circuit.leaf_lognorm, 0.0),
                     circuit.param_len)
    with np.errstate(invalid="ignore"):
        params = np.nan_to_num(circuit.params - leaf, nan=-np.inf, posinf=np.inf, neginf=-np.inf)
    if (np.allclose(logw[is_sum], circuit.edge_logw[is_sum], rtol=0, atol=1e-12)
            and np.allclose(params, circuit.params, rtol=0, atol=1e-12)):
        return circuit
    return circuit.with_parameters(logw, params)


def _log_marginals_numpy(circuit: Circuit, ev: np.ndarray, max_bytes: int = 1 << 28) -> np.ndarray:
    n = circuit.num_nodes
    chunk = max(1, min(len(ev), max_bytes // (8 * n)))
    out = np.empty(len(ev))
    for start in range(0, len(ev), chunk):
        out[start : start + chunk] = _numpy_chunk(circuit, ev[start : start + chunk])
    return out


def _numpy_chunk(c: Circuit, ev: np.ndarray) -> np.ndarray:
    vals = np.empty((c.num_nodes, len(ev)))
    lognorm = c.leaf_lognorm
    for i in range(c.num_nodes):
        k = c.kind[i]
        lo, hi = c.edge_ptr[i], c.edge_ptr[i + 1]
        if k == INDICATOR:
            x = ev[:, c.var[i]]
            vals[i] = np.where((x < 0) | (x == c.value[i]), 0.0, -np.inf)
        elif k == CATEGORICAL:
            x = ev[:, c.var[i]]
            p = c.params[c.param_ptr[i] : c.param_ptr[i] + c.param_len[i]]
            vals[i] = np.where(x < 0, lognorm[i], p[np.maximum(x, 0)])
        elif k == PRODUCT:
            vals[i] = vals[c.edge_a[lo:hi]].sum(axis=0)
        else:
            t = c.edge_logw[lo:hi, None] + vals[c.edge_a[lo:hi]]
            b = c.edge_b[lo:hi]
            has_b = b >= 0
            if has_b.any():
                t[has_b] += vals[b[has_b]]
            m = t.max(axis=0)
            finite = np.isfinite(m)
            safe = np.where(finite, m, 0.0)
            with np.errstate(divide="ignore"):
                vals[i] = np.where(finite, safe + np.log(np.exp(t - safe).sum(axis=0)), -np.inf)
    return vals[-1]


def conditional(circuit: Circuit, query, evidence=None):
    """P(query | evidence) by two marginal passes.

    ``query``/``evidence`` are mappings (a float is returned) or DataFrames/arrays with the same
    number of rows (an array is returned). A query that contradicts the evidence has probability
    0. Raises :class:`EvidenceError` where P(evidence) = 0.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.25, 0.75]))
    >>> round(conditional(pc, {"x": 1}), 12)
    0.75
    """
    single = isinstance(query, Mapping) and (evidence is None or isinstance(evidence, Mapping))
    q = circuit.evidence_matrix(query)
    e = circuit.evidence_matrix(evidence if evidence is not None else {})
    if len(e) == 1 and len(q) > 1:
        e = np.repeat(e, len(q), axis=0)
    if len(q) == 1 and len(e) > 1:
        q = np.repeat(q, len(e), axis=0)
    if len(q) != len(e):
        raise EvidenceError(f"query has {len(q)} rows but evidence has {len(e)}")
    conflict = np.any((q >= 0) & (e >= 0) & (q != e), axis=1)
    joint = np.where(e >= 0, e, q)
    log_e = log_marginals(circuit, e)
    if np.any(log_e == -np.inf):
        r = int(np.flatnonzero(log_e == -np.inf)[0])
        raise EvidenceError(
            f"the evidence has probability zero (row {r}: {circuit.variables.decode_row(e[r])}); "
            "the conditional is undefined"
        )
    out = np.exp(log_marginals(circuit, joint) - log_e)
    out[conflict] = 0.0
    return float(out[0]) if single else out

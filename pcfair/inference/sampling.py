"""Exact forward sampling from a circuit, optionally conditioned on evidence."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.circuit.circuit import Circuit
from pcfair.errors import EvidenceError, OptionError
from pcfair.inference import _sampling_kernels as K
from pcfair.inference.marginals import node_log_values


def sample_codes(circuit: Circuit, n: int, evidence=None, random_state=None) -> np.ndarray:
    """``n`` samples as an index-form int32 matrix (see :func:`sample`)."""
    if n < 0:
        raise OptionError("the number of samples must be non-negative")
    ev = circuit.evidence_matrix(evidence if evidence is not None else {})
    if len(ev) != 1:
        raise EvidenceError("sampling takes one evidence row")
    ev = ev[0]
    vals = node_log_values(circuit, ev)
    if vals[-1] == -np.inf:
        raise EvidenceError(f"cannot sample: the evidence {circuit.variables.decode_row(ev)} "
                            "has probability zero")
    seed = int(check_random_state(random_state).integers(0, 2**31 - 1))
    out = np.empty((n, circuit.num_variables), np.int32)
    K.sample_kernel(circuit.kind, circuit.var, circuit.value, circuit.param_ptr,
                    circuit.param_len, circuit.params, circuit.leaf_lognorm, circuit.edge_ptr,
                    circuit.edge_a, circuit.edge_b, circuit.edge_logw, vals, ev, seed, out)
    return out


def sample(circuit: Circuit, n: int, evidence: Mapping | None = None,
           random_state=None) -> pd.DataFrame:
    """Draw ``n`` exact samples from ``circuit``, conditioned on ``evidence``.

    Parameters
    ----------
    circuit : Circuit
        A smooth, decomposable circuit (the sampler is exact for those).
    n : int
        Number of samples.
    evidence : mapping, optional
        Observed values; sampled rows agree with them.
    random_state : None, int or numpy Generator

    Returns
    -------
    DataFrame with one column per variable holding value labels.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": ["a", "b"], "y": [0, 1]})
    >>> pc = b.build(b.product(b.categorical("x", [0.5, 0.5]), b.categorical("y", [0.0, 1.0])))
    >>> df = sample(pc, 4, {"x": "b"}, random_state=1)
    >>> df["x"].tolist(), df["y"].tolist()
    (['b', 'b', 'b', 'b'], [1, 1, 1, 1])
    """
    codes = sample_codes(circuit, n, evidence, random_state)
    cols = {}
    for v, name in enumerate(circuit.names):
        dom = np.asarray(circuit.variables.domains[v], dtype=object)
        col = codes[:, v]
        if np.all(col >= 0):
            # labels of one plain type keep their dtype (ints stay ints); mixed labels stay
            # objects
            kinds = {type(x) for x in dom}
            plain = len(kinds) == 1 and kinds <= {int, float, str, bool}
            cols[name] = dom[col].astype(type(dom[0])) if plain else dom[col]
        else:  # a variable outside the circuit's scope stays missing
            cols[name] = np.where(col >= 0, dom[np.maximum(col, 0)], None)
    return pd.DataFrame(cols)


def map_assignment(circuit: Circuit, evidence: Mapping | None = None) -> tuple[dict, float]:
    """The most probable completion of ``evidence`` by max-product, and its log-probability.

    Exact for deterministic circuits (max-product then equals the true MAP); for others it is
    the max-product approximation. Returns ``({name: label}, log p)``.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder(2)
    >>> a, na = b.literal("1"), b.literal("1", False)
    >>> root = b.decision([(a, b.bernoulli("2", 0.5), 0.6), (na, b.bernoulli("2", 0.9), 0.4)])
    >>> assignment, logp = map_assignment(b.build(root))
    >>> assignment, round(float(np.exp(logp)), 2)
    ({'1': 0, '2': 1}, 0.36)
    """
    ev = circuit.evidence_matrix(evidence if evidence is not None else {})[0]
    buf = np.empty(circuit.num_nodes)
    best = np.zeros(circuit.num_nodes, np.int64)
    out = np.empty(circuit.num_variables, np.int32)
    logp = K.map_kernel(circuit.kind, circuit.var, circuit.value, circuit.param_ptr,
                        circuit.param_len, circuit.params, circuit.edge_ptr, circuit.edge_a,
                        circuit.edge_b, circuit.edge_logw, ev, buf, best, out)
    if logp == -np.inf:
        raise EvidenceError("the evidence has probability zero")
    return circuit.variables.decode_row(out), float(logp)

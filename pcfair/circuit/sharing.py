"""Which nodes of a circuit are the same sub-circuit written twice.

Circuits compiled by other tools often repeat a sub-circuit instead of sharing it: a PSDD
compiled from a tree Bayesian network without memoisation holds one copy of a variable's
conditional below every path that reaches it (the German Chow-Liu tree written that way has
about 20 times the nodes of the shared form). Algorithms that read structure off node identity
(:class:`pcfair.patterns.bounds.TreeBound` recognises a tree model by it) ask
:func:`structural_ids` instead, so that the same distribution is recognised however it is
written.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, Circuit


def structural_ids(circuit: Circuit) -> np.ndarray:
    """One id per node such that two nodes share an id exactly when they are structurally
    identical: the same kind; for inputs the same variable and value, or the same parameters
    (bit for bit); for inner nodes the same sequence of elements, each with the same child ids
    and the same log-weight (bit for bit). Identical nodes compute the same function (by
    induction from the inputs), so the ids may stand for node identity wherever an algorithm
    only needs "the same sub-circuit". The id of a node is the index of the first node
    identical to it (circuits are stored children first, so one pass in index order suffices).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"a": [0, 1]})
    >>> pc = b.build(b.sum([b.indicator("a", 0), b.indicator("a", 1)], weights=[0.5, 0.5]))
    >>> structural_ids(pc).tolist() == list(range(pc.num_nodes))  # the builder shares already
    True
    """
    kind, var, value = circuit.kind, circuit.var, circuit.value
    ep, ea, eb, ew = circuit.edge_ptr, circuit.edge_a, circuit.edge_b, circuit.edge_logw
    ids = np.empty(len(kind), np.int64)
    first: dict[tuple, int] = {}
    for i in range(len(kind)):
        k = int(kind[i])
        if k == INDICATOR:
            key: tuple = (k, int(var[i]), int(value[i]))
        elif k == CATEGORICAL:
            lo = int(circuit.param_ptr[i])
            params = circuit.params[lo: lo + int(circuit.param_len[i])]
            key = (k, int(var[i]), params.tobytes())
        else:
            span = slice(int(ep[i]), int(ep[i + 1]))
            b = eb[span]
            key = (k, tuple(ids[ea[span]].tolist()),
                   tuple(np.where(b >= 0, ids[np.maximum(b, 0)], -1).tolist()),
                   ew[span].tobytes())
        ids[i] = first.setdefault(key, i)
    return ids

"""Naive Bayes ``P(D) Π_z P(z | D)`` as a deterministic, structured-decomposable circuit.

:func:`naive_bayes_circuit` lays the model out on the vtree ``(D, (z1, (z2, ...)))``;
:func:`pcfair.learn.clt.tree_model` estimates its tables from codes with the pseudocount
convention of :mod:`pcfair.learn.clt` (``(n + α/K) / (N + α)``), as a tree model whose every
feature hangs from the decision; ``learn_pc(..., structure="naive_bayes")`` and the fair
learner use it.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.builder import from_arrays
from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, SUM, Circuit
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.learn.parameters import conditional_table


def naive_bayes_circuit(variables: Variables, decision: int, prior: np.ndarray,
                        tables: dict[int, np.ndarray]) -> Circuit:
    """A naive Bayes model ``P(D) Π_z P(z | D)`` as a deterministic, structured-decomposable
    circuit on the vtree ``(D, (z1, (z2, ...)))``.

    ``tables[z][d_value]`` is the distribution of feature ``z`` given ``D = d_value``. Nodes are
    laid out without hash-consing, so every (feature, decision value) keeps its own leaf.

    Examples
    --------
    >>> v = Variables(["d", "a"], [(0, 1), (0, 1)])
    >>> nb = naive_bayes_circuit(v, 0, np.array([0.5, 0.5]),
    ...                          {1: np.array([[0.9, 0.1], [0.2, 0.8]])})
    >>> round(float(nb.conditional({"d": 1}, {"a": 1})), 4)
    0.8889
    """
    n = len(variables)
    feats = [v for v in range(n) if v != decision]
    kind: list[int] = []
    var: list[int] = []
    value: list[int] = []
    params: list = []
    edges: list = []

    def add(k: int, v: int = -1, val: int = -1, p=None, e=None) -> int:
        kind.append(k)
        var.append(v)
        value.append(val)
        params.append(p)
        edges.append(e)
        return len(kind) - 1

    with np.errstate(divide="ignore"):
        if not feats:
            add(CATEGORICAL, decision, p=list(np.log(prior)))
            return from_arrays(variables, kind, var, value, params, edges,
                               Vtree.from_nested(decision))
        elements = []
        for dv in range(len(prior)):
            chain = add(CATEGORICAL, feats[-1], p=list(np.log(tables[feats[-1]][dv])))
            for z in reversed(feats[:-1]):
                leaf = add(CATEGORICAL, z, p=list(np.log(tables[z][dv])))
                chain = add(SUM, e=[(leaf, chain, 0.0)])
            ind = add(INDICATOR, decision, dv)
            elements.append((ind, chain, float(np.log(prior[dv]))))
        add(SUM, e=elements)
    nested = feats[-1]
    for z in reversed(feats[:-1]):
        nested = (z, nested)
    return from_arrays(variables, kind, var, value, params, edges,
                       Vtree.from_nested((decision, nested)))


def _prior(codes: np.ndarray, cards: np.ndarray, d: int, weights: np.ndarray | None,
           pseudocount: float) -> np.ndarray:
    kd = int(cards[d])
    w = np.ones(len(codes)) if weights is None else weights
    counts = np.bincount(codes[:, d], weights=w, minlength=kd)
    return (counts + pseudocount / kd) / (counts.sum() + pseudocount)


def _nb_tables(codes: np.ndarray, cards: np.ndarray, d: int, feats, pseudocount: float,
               pooled=()) -> dict[int, np.ndarray]:
    """``P(z | D)`` per feature; features in ``pooled`` get ``P(z)`` for every ``D`` value."""
    const = np.column_stack([codes, np.zeros(len(codes), np.int32)])
    cards_c = np.append(cards, 1)
    c = codes.shape[1]
    out = {}
    for z in feats:
        if z in pooled:
            out[z] = np.repeat(conditional_table(const, cards_c, z, c, c, pseudocount)[:, 0],
                               int(cards[d]), axis=0)
        else:
            out[z] = conditional_table(codes, cards, z, d, d, pseudocount)[
                np.arange(int(cards[d])), np.arange(int(cards[d]))]
    return out

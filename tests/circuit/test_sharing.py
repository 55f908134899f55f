"""Structural identity of nodes (pcfair.circuit.sharing), and the tree bound's recognition of a
tree model whose sub-circuits are repeated instead of shared (as PSDD compilers write them)."""

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from pcfair.circuit import CircuitBuilder
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.sharing import structural_ids
from pcfair.inference.marginals import log_marginals
from pcfair.learn import learn_pc
from pcfair.patterns.bounds import TreeBound


def unshare(pc: Circuit) -> Circuit:
    """The same circuit with every shared node copied once per reference (a tree of nodes)."""
    kind, var, value, pptr, plen, params = [], [], [], [], [], []
    eptr, ea, eb, ew = [0], [], [], []

    def copy(i: int) -> int:
        kids = []
        for e in range(pc.edge_ptr[i], pc.edge_ptr[i + 1]):
            a = copy(int(pc.edge_a[e]))
            b = copy(int(pc.edge_b[e])) if pc.edge_b[e] >= 0 else -1
            kids.append((a, b, float(pc.edge_logw[e])))
        kind.append(int(pc.kind[i]))
        var.append(int(pc.var[i]))
        value.append(int(pc.value[i]))
        pptr.append(len(params))
        lo = int(pc.param_ptr[i])
        chunk = pc.params[lo: lo + int(pc.param_len[i])]
        params.extend(chunk.tolist())
        plen.append(len(chunk))
        for a, b, w in kids:
            ea.append(a)
            eb.append(b)
            ew.append(w)
        eptr.append(len(ea))
        return len(kind) - 1

    copy(pc.root)
    return Circuit(pc.variables, np.array(kind), np.array(var), np.array(value),
                   np.array(pptr), np.array(plen), np.array(params, float), np.array(eptr),
                   np.array(ea), np.array(eb), np.array(ew, float))


def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {"d": rng.integers(0, 2, 300)}
    for i in range(n):
        parent = cols[list(cols)[rng.integers(len(cols))]]
        cols[f"z{i}"] = np.where(rng.random(300) < 0.3, rng.integers(0, 3, 300), parent % 3)
    return pd.DataFrame(cols)


def test_a_built_circuit_is_already_shared():
    b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    leaf = b.categorical("b", [0.2, 0.8])
    root = b.sum([b.product(b.indicator("a", 0), leaf), b.product(b.indicator("a", 1), leaf)],
                 weights=[0.5, 0.5])
    pc = b.build(root)
    assert structural_ids(pc).tolist() == list(range(pc.num_nodes))


def test_copies_share_an_id_and_a_changed_weight_does_not():
    pc = learn_pc(_table(0, 4), "d")
    flat = unshare(pc)
    assert flat.num_nodes > pc.num_nodes
    ids = structural_ids(flat)
    assert len(set(ids.tolist())) == pc.num_nodes  # every copy found, nothing merged wrongly
    # one weight nudged by one ulp: that node (and its ancestors) is no longer a copy
    logw = flat.edge_logw.copy()
    e = int(flat.edge_ptr[flat.root])
    logw[e] = np.nextafter(logw[e], -np.inf)
    nudged = Circuit(flat.variables, flat.kind, flat.var, flat.value, flat.param_ptr,
                     flat.param_len, flat.params, flat.edge_ptr, flat.edge_a, flat.edge_b,
                     logw)
    assert structural_ids(nudged)[flat.root] == flat.root
    assert len(set(structural_ids(nudged).tolist())) == pc.num_nodes


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_the_tree_bound_recognises_a_tree_model_written_without_sharing(seed, n):
    pc = learn_pc(_table(seed, n), "d")
    flat = unshare(pc)
    ev = np.full((1, pc.num_variables), -1, np.int32)
    np.testing.assert_allclose(log_marginals(flat, ev), log_marginals(pc, ev), atol=1e-12)
    shared, copied = TreeBound.from_circuit(pc, 0, 1), TreeBound.from_circuit(flat, 0, 1)
    assert shared is not None and copied is not None
    np.testing.assert_array_equal(copied.parent, shared.parent)
    np.testing.assert_allclose(copied.lt1, shared.lt1, atol=1e-12)
    np.testing.assert_allclose(copied.lt0, shared.lt0, atol=1e-12)
    free = list(range(1, pc.num_variables))
    assert copied.node({}, {}, free, {1}).ub == shared.node({}, {}, free, {1}).ub

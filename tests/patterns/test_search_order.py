"""The search's variable orders (:func:`pcfair.patterns.search_types.search_order`): the tree
pre-order's structure, its refusals, and that every order gives the brute-force answers (the
order changes the pruning only) on random tree models with arities up to 10, zeros, 1e-12
parameters, ties and the decision deep in the network."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pcfair.errors import OptionError
from pcfair.patterns.bounds import TreeBound
from pcfair.patterns.search_types import ORDERINGS, SearchQuery, search_order, tree_preorder
from pcfair.patterns.tree_search import tree_search
from test_bounds import random_tan, tree_bn
from test_tree_search import brute, key


def random_forest(rng, n: int, d: int) -> np.ndarray:
    """A random forest over the features of ``n`` variables (``-1``: a child of ``d``)."""
    feats = [v for v in rng.permutation(n) if v != d]
    parent = np.full(n, -1, np.int64)
    for i, v in enumerate(feats):
        if i and rng.random() < 0.8:
            parent[v] = feats[rng.integers(i)]
    return parent


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 25))
def test_tree_preorder_keeps_subtrees_whole_and_sensitive_ones_first(seed, n):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(n))
    parent = random_forest(rng, n, d)
    feats = [v for v in range(n) if v != d]
    sens = [int(v) for v in rng.choice(feats, int(rng.integers(1, len(feats) + 1)),
                                      replace=False)]
    info = {v: float(rng.random()) for v in feats}
    order = tree_preorder(parent, d, sens, info)
    assert sorted(order) == feats
    pos = {v: i for i, v in enumerate(order)}

    def below(v):
        out, stack = set(), [c for c in feats if parent[c] == v]
        while stack:
            u = stack.pop()
            out.add(u)
            stack.extend(c for c in feats if parent[c] == u)
        return out

    for v in feats:
        sub = below(v)
        # a subtree is one block right after its root: every suffix of the order is a union
        # of whole subtrees, so undecided variables always hang below decided parents
        assert sorted(pos[u] for u in sub) == list(range(pos[v] + 1, pos[v] + 1 + len(sub)))
    for p in [-1] + feats:
        kids = sorted((c for c in feats if parent[c] == p), key=pos.get)
        holds = [bool(({c} | below(c)) & set(sens)) for c in kids]
        assert holds == sorted(holds, reverse=True)  # siblings holding x first


def test_search_order_choices_and_refusals():
    rng = np.random.default_rng(3)
    cards = [2, 3, 2, 4, 2, 3]
    pc = random_tan(rng, cards)
    sens = [2, 4]
    tb = TreeBound.from_circuit(pc, 0, 1)
    for ordering in ORDERINGS:
        order = search_order(pc, 0, 1, sens, ordering)
        assert sorted(order) == [1, 2, 3, 4, 5] and set(order[:2]) == set(sens)
    tree = search_order(pc, 0, 1, sens, "tree")
    assert search_order(pc, 0, 1, sens) == tree  # "auto" on a tree model
    info = dict(zip(range(1, 6), np.zeros(5)))
    rest = tree_preorder(tb.parent, 0, sens, info)
    assert tree[2:] == [v for v in rest if v not in sens]
    with pytest.raises(OptionError, match="ordering must be one of"):
        search_order(pc, 0, 1, sens, "random")
    from _pcgen import random_psdd

    other = random_psdd(np.random.default_rng(0), [2, 2, 2, 2])
    assert TreeBound.from_circuit(other, 0, 1) is None
    with pytest.raises(OptionError, match="tree ordering"):
        search_order(other, 0, 1, [1], "tree")
    assert search_order(other, 0, 1, [1]) == search_order(other, 0, 1, [1], "influence")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["tan", "root", "deep"]),
       st.integers(3, 5), st.booleans(), st.booleans(), st.sampled_from([0.0, 0.05, 0.2]))
def test_every_order_gives_the_brute_force_answers(seed, kind, n, zeros, tiny, delta):
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 11 if n <= 4 else 5, n - 1)]
    if kind == "tan":
        pc = random_tan(rng, cards, zeros, tiny, ties=bool(rng.random() < 0.3))
    else:
        pc, _ = tree_bn(rng, cards, kind, zeros, tiny)
    sens = sorted(int(v) for v in rng.choice(np.arange(1, n), int(rng.integers(1, n)),
                                              replace=False))
    want = brute(pc, sens, delta)
    tb = TreeBound.from_circuit(pc, 0, 1)
    best = sorted((abs(s) for s, _ in want.values()), reverse=True)[:3]
    for ordering in ("tree", "influence", "index"):
        order = search_order(pc, 0, 1, sens, ordering)
        got = tree_search(tb.fresh(), sens, SearchQuery(delta, order=order, mode="all"))
        assert got.complete and {key(p) for p in got.patterns} == set(want)
        cert = tree_search(tb.fresh(), sens, SearchQuery(delta, order=order, mode="first"))
        assert cert.complete and bool(cert.patterns) == bool(want)
        top = tree_search(tb.fresh(), sens, SearchQuery(delta, order=order, mode="topk", k=3))
        assert [abs(p.score) for p in top.patterns] == pytest.approx(best, abs=1e-9)


def test_the_order_is_computed_once_per_circuit_and_question(monkeypatch):
    """The engine table, the split search and the compiled searches ask for the order again;
    it is computed once (the circuit's derived cache), and a caller that changes the list it
    gets does not change the next caller's."""
    import pandas as pd

    from pcfair.learn import learn_pc
    from pcfair.patterns import search_types

    rng = np.random.default_rng(3)
    df = pd.DataFrame({f"v{i}": rng.integers(0, 2, 300) for i in range(5)})
    pc = learn_pc(df, "v0")
    calls = []
    real = search_types.decision_information
    monkeypatch.setattr(search_types, "decision_information",
                        lambda *a: calls.append(1) or real(*a))
    first = search_types.search_order(pc, 0, 1, [2, 1], "influence")
    first.reverse()
    again = search_types.search_order(pc, 0, 1, [1, 2], "influence")
    assert len(calls) == 1
    assert again == first[::-1] and again[:2] in ([1, 2], [2, 1])
    search_types.search_order(pc, 0, 1, [1, 2], "index")  # another question: computed
    search_types.search_order(pc, 0, 1, [1], "influence")
    assert len(calls) == 2  # "index" needs no information

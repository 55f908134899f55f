"""The decoupling path of tree models (pcfair.learn.decouple), against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _pattern_oracle import enumerate_patterns, joint_table
from _pcgen import param_drawer, random_tree
from pcfair.circuit.variables import Variables
from pcfair.errors import OptionError
from pcfair.learn.clt import TreeModel, TreeStructure
from pcfair.learn.decouple import (
    blend_tables,
    decoupled_circuit,
    decoupled_tables,
    tree_tables,
)


def random_tree_model(seed: int, naive_bayes: bool = False):
    """A random tree model: 3–5 variables, the decision anywhere in the index order, arities
    2–10 (joint below ~2,000 states), tables from the mixed drawer (zeros, 1e-12, ties), and a
    random non-empty set of sensitive features."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 6))
    d = int(rng.integers(n))
    cards = [2 if v == d else int(rng.choice([2, 2, 3, 4, 10])) for v in range(n)]
    while np.prod(cards) > 2000:
        big = int(np.argmax(cards))
        cards[big] = 2
    features = tuple(v for v in range(n) if v != d)
    if naive_bayes:
        parent = np.full(n, -1, np.int64)
        parent[list(features)] = d
    else:  # a tree over the features, its root under the decision
        local = random_tree(rng, len(features), int(rng.integers(len(features))))
        parent = np.array([-1] * n, np.int64)
        for i, p in enumerate(local):
            parent[features[i]] = d if p < 0 else features[p]
    draw = param_drawer(rng)
    tables = {}
    for v in features:
        u = int(parent[v])
        tables[v] = np.array([[draw(cards[v]) for _ in range(cards[u])] for _ in range(2)])
    variables = Variables([f"x{i}" for i in range(n)], [tuple(range(k)) for k in cards])
    model = TreeModel(variables, TreeStructure(d, features, parent, np.zeros((0, 0))),
                      naive_bayes=naive_bayes)
    prior = draw(2)
    k = int(rng.integers(1, len(features) + 1))
    sensitive = sorted(int(s) for s in rng.choice(features, size=k, replace=False))
    circuit = model.compile(prior, tables)
    return TreeModel(variables, model.tree, circuit, naive_bayes), prior, tables, sensitive


def _joint(circuit):
    return joint_table(circuit)[1]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_tree_tables_read_back_the_parameters(seed, naive_bayes):
    model, prior, tables, _ = random_tree_model(seed, naive_bayes)
    got_prior, got = tree_tables(model, model.circuit)
    np.testing.assert_allclose(got_prior, prior, atol=1e-12)
    assign, probs = joint_table(model.circuit)
    d = model.tree.decision
    for v, table in tables.items():
        u = int(model.tree.parent[v])
        for dv in range(2):
            for j in range(table.shape[1]):
                if u == d and j != dv:
                    continue  # a feature under the decision reads only j = dv
                ctx = (assign[:, d] == dv) & (assign[:, u] == j)
                if probs[ctx].sum() > 0:  # a zero-probability context carries nothing
                    np.testing.assert_allclose(got[v][dv, j], table[dv, j], rtol=1e-9,
                                               atol=1e-12)
    # the round trip gives the same distribution
    np.testing.assert_allclose(_joint(model.compile(got_prior, got)), probs, rtol=1e-9,
                               atol=1e-300)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_the_decoupled_model_has_no_pattern(seed, naive_bayes):
    """The theorem of the module docstring, by brute force over every pattern."""
    model, _, _, sensitive = random_tree_model(seed, naive_bayes)
    fair = decoupled_circuit(model, model.circuit, sensitive, 1.0)
    cards = list(model.variables.cardinalities)
    found = enumerate_patterns(fair, cards, model.tree.decision, sensitive, delta=0.5)
    worst = max((r.abs_delta for r in found), default=0.0)
    assert worst < 1e-9, worst
    # and the path starts at the model itself
    same = decoupled_circuit(model, model.circuit, sensitive, 0.0)
    np.testing.assert_allclose(_joint(same), _joint(model.circuit), rtol=1e-9, atol=1e-300)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_decoupling_keeps_the_marginals_it_names(seed):
    """P(s) of a sensitive variable under a non-sensitive parent, and P(v | d) of a
    non-sensitive child of a sensitive variable, are those of the model."""
    model, _, _, sensitive = random_tree_model(seed)
    fair = decoupled_circuit(model, model.circuit, sensitive, 1.0)
    a0, p0 = joint_table(model.circuit)
    a1, p1 = joint_table(fair)
    d = model.tree.decision
    for v in model.tree.features:
        u = int(model.tree.parent[v])
        k = model.variables.cardinalities[v]
        if v in sensitive and u not in sensitive:
            m0 = [p0[a0[:, v] == i].sum() for i in range(k)]
            m1 = [p1[a1[:, v] == i].sum() for i in range(k)]
            np.testing.assert_allclose(m1, m0, atol=1e-12)
        if v not in sensitive and u in sensitive:
            for dv in range(2):
                m0 = [p0[(a0[:, v] == i) & (a0[:, d] == dv)].sum() for i in range(k)]
                m1 = [p1[(a1[:, v] == i) & (a1[:, d] == dv)].sum() for i in range(k)]
                np.testing.assert_allclose(np.array(m1) * sum(m0), np.array(m0) * sum(m1),
                                           atol=1e-12)


def test_keeping_the_child_tables_leaves_patterns():
    """Mutation: decoupling only the sensitive variable's own table is not enough when a
    non-sensitive child depends on it (s → v, v informative about d given s)."""
    variables = Variables(["d", "s", "v"], [(0, 1)] * 3)
    parent = np.array([-1, 0, 1])
    model = TreeModel(variables, TreeStructure(0, (1, 2), parent, np.zeros((0, 0))))
    tables = {1: np.array([[[0.7, 0.3]] * 2, [[0.4, 0.6]] * 2]),
              2: np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.6, 0.4]]])}
    model = TreeModel(variables, model.tree, model.compile(np.array([0.5, 0.5]), tables))
    prior, got = tree_tables(model, model.circuit)
    target = decoupled_tables(model, model.circuit, [1], got)
    half = {**got, 1: target[1]}  # the child's table kept
    partial = model.compile(prior, half)
    found = enumerate_patterns(partial, [2, 2, 2], 0, [1], delta=0.5)
    assert max(r.abs_delta for r in found) > 0.1
    full = model.compile(prior, blend_tables(got, target, 1.0))
    assert max(r.abs_delta for r in enumerate_patterns(full, [2, 2, 2], 0, [1], delta=0.5)) < 1e-12


def test_bad_arguments():
    model, _, tables, sensitive = random_tree_model(0)
    with pytest.raises(OptionError, match="blend weight"):
        blend_tables(tables, tables, 1.5)
    with pytest.raises(OptionError, match="not features"):
        decoupled_tables(model, model.circuit, [model.tree.decision], tables)

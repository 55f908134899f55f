import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree

import pcfair
from pcfair.inference import conditional_bounds
from pcfair.learn import learn_pc, mutual_information
from pcfair.learn.clt import learn_tree
from pcfair.tables.data import encode_frame
from pcfair.learn.parameters import conditional_table
from conftest import requires_data


def random_frame(seed, n=300, cards=(2, 3, 2, 3, 2)):
    rng = np.random.default_rng(seed)
    cols = {"d": rng.integers(0, 2, n)}
    prev = cols["d"]
    for i, k in enumerate(cards):
        noise = rng.integers(0, k, n)
        cols[f"f{i}"] = np.where(rng.random(n) < 0.6, prev % k, noise)
        prev = cols[f"f{i}"]
    return pd.DataFrame(cols)


def bn_log_likelihood(df, decision, pseudocount):
    """log-likelihood of the rows under the tree BN, computed directly from counts."""
    codes, variables = encode_frame(df)
    cards = variables.cardinalities
    d = variables.index(decision)
    tree = learn_tree(codes, cards, d, pseudocount)
    kd = cards[d]
    prior = (np.bincount(codes[:, d], minlength=kd) + pseudocount / kd) / (len(codes) + pseudocount)
    ll = np.log(prior[codes[:, d]])
    for v in tree.features:
        u = int(tree.parent[v])
        theta = conditional_table(codes, cards, v, u, d, pseudocount)
        ll += np.log(theta[codes[:, d], codes[:, u], codes[:, v]])
    return ll


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5, 1.0]))
def test_circuit_likelihood_equals_the_bayesian_network(seed, alpha):
    df = random_frame(seed)
    pc = learn_pc(df, "d", pseudocount=alpha)
    np.testing.assert_allclose(pc.log_marginal(df), bn_log_likelihood(df, "d", alpha),
                               rtol=1e-10, atol=1e-10)
    rep = pc.properties()
    assert rep.smooth and rep.decomposable and rep.normalized
    assert rep.deterministic is True and rep.structured_decomposable is True
    assert rep.vtree.to_nested()[0] == pc.variables.index("d")  # D decides at the root


def test_mle_equals_empirical_counts_without_pseudocount():
    df = random_frame(3, n=500)
    pc = learn_pc(df, "d", pseudocount=0.0)
    assert pc.probability({"d": 1}) == pytest.approx((df.d == 1).mean(), rel=1e-12)
    codes, variables = encode_frame(df)
    tree = learn_tree(codes, variables.cardinalities, 0, 0.0)
    for v in tree.features:
        name, u = variables.names[v], variables.names[int(tree.parent[v])]
        for dv, uj in itertools.product([0, 1], sorted(df[u].unique())):
            rows = df[(df.d == dv) & (df[u] == uj)]
            if len(rows) == 0:
                continue
            for k in sorted(df[name].unique()):
                want = (rows[name] == k).mean()
                got = pc.conditional({name: k}, {"d": dv, u: uj}) if u != "d" else \
                    pc.conditional({name: k}, {"d": dv})
                assert got == pytest.approx(want, abs=1e-12)


def test_tree_is_a_maximum_spanning_tree():
    df = random_frame(11, n=800, cards=(2, 3, 2, 3, 2, 2))
    codes, variables = encode_frame(df)
    cards = variables.cardinalities
    tree = learn_tree(codes, cards, 0, 1.0)
    mi = mutual_information(codes[:, 1:], cards[1:], 1.0)
    ours = sum(mi[v - 1, int(tree.parent[v]) - 1] for v in tree.features if tree.parent[v] != 0)
    # scipy's minimum spanning tree on (c - MI); explicit zeros would be missing edges
    c = mi.max() + 1.0
    dense = np.triu(c - mi, 1)
    want = (c * (len(mi) - 1)) - minimum_spanning_tree(dense).sum()
    assert ours == pytest.approx(want, rel=1e-12)
    g = nx.Graph()
    for i, j in itertools.combinations(range(len(mi)), 2):
        g.add_edge(i, j, weight=mi[i, j])
    nx_weight = nx.maximum_spanning_tree(g).size(weight="weight")
    assert ours == pytest.approx(nx_weight, rel=1e-12)


def _prufer_trees(m):
    """Every labelled tree on ``m`` nodes, as edge lists (Prüfer sequences)."""
    for seq in itertools.product(range(m), repeat=m - 2):
        yield list(nx.from_prufer_sequence(list(seq)).edges()) if m > 2 else [(0, 1)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_tree_with_features_last_is_the_best_of_its_shape(seed):
    """``learn_tree(..., last=L)``: no other feature hangs below one of L, and its total
    mutual information is the largest over every tree of that shape (brute force over all
    labelled trees on up to 6 features: the others must induce a connected subtree)."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 7))
    df = random_frame(seed, n=200, cards=tuple(int(k) for k in rng.integers(2, 4, m)))
    codes, variables = encode_frame(df)
    cards = variables.cardinalities
    k = int(rng.integers(1, m + 1))
    last = sorted(int(v) + 1 for v in rng.choice(m, size=k, replace=False))
    tree = learn_tree(codes, cards, 0, 1.0, last=last)
    mi = tree.mutual_information
    parent = tree.parent
    assert sum(parent[v] == 0 for v in tree.features) == 1  # one root feature
    for v in tree.features:
        if v not in last and parent[v] != 0:
            assert parent[v] not in last
    ours = sum(mi[v - 1, parent[v] - 1] for v in tree.features if parent[v] != 0)
    first = [i for i in range(m) if i + 1 not in last]
    best = -1.0
    for edges in _prufer_trees(m):
        if first and not nx.is_connected(nx.Graph(edges).subgraph(first)) and len(first) > 1:
            continue
        best = max(best, sum(mi[i, j] for i, j in edges))
    assert ours == pytest.approx(best, rel=1e-12, abs=1e-15)


def test_bad_input():
    df = random_frame(0)
    with pytest.raises(pcfair.DataError, match="decision column 'zz'"):
        learn_pc(df, "zz")
    holes = df.astype(float)
    holes.iloc[3, 2] = np.nan
    with pytest.raises(pcfair.DataError, match="missing values"):
        learn_pc(holes, "d")
    with pytest.raises(ValueError, match="structure"):
        learn_pc(df, "d", structure="magic")


@requires_data()
def test_compas_end_to_end_bounds_match_brute_force():
    """circuit-layer.md §9.9: CLT PSDD rooted at D on COMPAS; Lemma 2 bounds vs brute force."""
    ds = pcfair.datasets.load_binarized("compas")
    pc = learn_pc(ds.frame, ds.target)
    others = [c for c in ds.frame.columns if c != ds.target]
    xs = np.array(list(itertools.product([0, 1], repeat=len(others))))
    df = pd.DataFrame(xs, columns=others)
    q = df.assign(**{ds.target: 1})
    p_all = pc.conditional(q[[ds.target]], df)
    r = conditional_bounds(pc, ds.target)
    assert r.exact
    assert r.max == pytest.approx(p_all.max(), abs=1e-12)
    assert r.min == pytest.approx(p_all.min(), abs=1e-12)
    # with evidence on two sensitive variables
    ev = {"Sex_": 1, "Age": 0}
    mask = (df["Sex_"] == 1) & (df["Age"] == 0)
    r = conditional_bounds(pc, ds.target, ev)
    assert r.max == pytest.approx(p_all[mask].max(), abs=1e-12)
    assert r.min == pytest.approx(p_all[mask].min(), abs=1e-12)


def test_cli_learn(tmp_path, capsys):
    from pcfair.cli import main

    df = random_frame(5)
    df.to_csv(tmp_path / "data.csv", index=False)
    assert main(["learn", str(tmp_path / "data.csv"), "--decision", "d",
                 "--out", str(tmp_path / "m.json")]) == 0
    assert "train log-likelihood" in capsys.readouterr().out
    pc = pcfair.load(tmp_path / "m.json")
    np.testing.assert_allclose(pc.log_marginal(df), learn_pc(df, "d").log_marginal(df))
    binary = df.assign(**{c: df[c] % 2 for c in df.columns})
    binary.to_csv(tmp_path / "b.csv", index=False)
    assert main(["learn", str(tmp_path / "b.csv"), "--decision", "d",
                 "--out", str(tmp_path / "b.psdd")]) == 0
    assert (tmp_path / "b.vtree").exists()
    assert main(["learn", str(tmp_path / "b.csv"), "--decision", "nope",
                 "--out", str(tmp_path / "x.json")]) == 2


# --- continuous columns, bins, naive Bayes ------------------------------------------------------

from pcfair.errors import DataError  # noqa: E402
from pcfair.tables.data import (  # noqa: E402
    MAX_NUMERIC_VALUES,
    apply_bins,
    bin_columns,
    continuous_columns,
    interval_labels,
)


def continuous_frame(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    income = rng.lognormal(10, 0.8, n)
    d = (income * (age / 50) + rng.normal(0, 5000, n) > 20000).astype(int)
    return pd.DataFrame({"age": age, "income": income, "k": rng.integers(0, 3, n), "d": d})


def test_threshold_is_more_than_20_distinct_numeric_values():
    df = pd.DataFrame({"twenty": np.arange(200) % 20, "twentyone": np.arange(200) % 21,
                       "text": [f"v{i}" for i in range(200)], "flag": np.arange(200) % 2 == 0,
                       "floats": np.linspace(0, 1, 200)})
    assert MAX_NUMERIC_VALUES == 20
    assert continuous_columns(df) == {"twentyone": 21, "floats": 200}
    assert continuous_columns(df, exclude=["floats"]) == {"twentyone": 21}


@pytest.mark.parametrize("structure", ["clt", "strudel", "naive_bayes"])
def test_continuous_column_is_a_clear_error(structure):
    df = continuous_frame()
    with pytest.raises(DataError) as info:
        learn_pc(df, "d", structure=structure)
    msg = str(info.value)
    assert "'age' (72 distinct values)" in msg and "'income' (2,000 distinct values)" in msg
    assert "'k'" not in msg and "bins=N" in msg and "--bins N" in msg


def test_continuous_decision_is_refused_even_with_bins():
    df = continuous_frame()
    with pytest.raises(DataError, match="decision column 'income' is numeric with 2,000"):
        learn_pc(df, "income", bins=4)


def test_bins_make_interval_labels_in_order():
    df = continuous_frame()
    pc = learn_pc(df, "d", bins=4)
    age = pc.variables.domains[pc.variables.index("age")]
    assert len(age) == 4 and age[0].startswith("[18, ") and age[-1].endswith(", 89]")
    assert all(a.endswith(")") for a in age[:-1])
    binned, edges = bin_columns(df, 4, exclude=["d"])
    assert set(edges) == {"age", "income"}  # k has 3 values: kept as it is
    assert pc.variables.domains[pc.variables.index("k")] == (0, 1, 2)
    # quantile bins: about a quarter of the rows each, and the lower edge is in its bin
    counts = binned["income"].value_counts(sort=False).to_numpy()
    assert counts.sum() == len(df) and counts.min() >= 0.24 * len(df)
    lo = edges["income"][1]
    assert apply_bins(pd.DataFrame({"income": [lo]}), edges)["income"][0] == \
        binned["income"].cat.categories[1]
    # the model holds the data binned the same way; a small model
    assert np.isfinite(pc.log_marginal(binned)).all()
    assert pc.num_nodes < 100
    # the decision is never binned; mapping bins choose columns
    _, only = bin_columns(df, {"k": 2})
    assert list(only) == ["k"]
    with pytest.raises(DataError, match="decision and cannot be binned"):
        bin_columns(df, {"d": 2}, exclude=["d"])
    with pytest.raises(DataError, match="positive integer"):
        learn_pc(df, "d", bins=0)


def test_interval_labels_tell_close_edges_apart():
    assert interval_labels([0.1234561, 0.1234562, 1]) == [
        "[0.1234561, 0.1234562)", "[0.1234562, 1]"]
    assert interval_labels([5, 5]) == ["[5, 5]"]


def test_categorical_column_keeps_its_category_order():
    df = pd.DataFrame({"d": [0, 1, 1, 0], "s": pd.Categorical(["lo", "hi", "hi", "lo"],
                                                              categories=["lo", "mid", "hi"])})
    pc = learn_pc(df, "d")
    assert pc.variables.domains[1] == ("lo", "mid", "hi")


def test_naive_bayes_structure_matches_counts():
    df = random_frame(5, n=400)
    pc = learn_pc(df, "d", structure="naive_bayes", pseudocount=0.0)
    rep = pc.properties()
    assert rep.deterministic and rep.structured_decomposable and rep.normalized
    for f in ("f0", "f3"):
        for dv in (0, 1):
            rows = df[df["d"] == dv]
            want = (rows[f] == 1).mean()
            assert pc.conditional({f: 1}, {"d": dv}) == pytest.approx(want, abs=1e-12)


def test_strudel_progress_bar(capsys):
    learn_pc(random_frame(1), "d", structure="strudel", random_state=0, progress=True,
             max_splits=3)
    assert "strudel splits" in capsys.readouterr().err
    learn_pc(random_frame(1), "d", structure="strudel", random_state=0, max_splits=3)
    assert capsys.readouterr().err == ""  # stderr is not a terminal here


@pytest.mark.parametrize("module", ["pcfair.tables.data", "pcfair.learn.naive_bayes"])
def test_module_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0

"""The compiled naive-Bayes branch and bound (:mod:`pcfair.patterns.naive_bayes_search`) against
the Python search with the naive-Bayes bound (same tree, same answers, same node counts) and
against the dense lattice engine, on random naive Bayes models: arities 2-4, 3-7 features, 1-3
sensitive, with Dirichlet, dyadic (exact ties) and near-deterministic (1e-12) parameters."""

import time

import numpy as np
import pytest

import pandas as pd

import pcfair
from conftest import SHARED_DATA, requires_data
from pcfair.circuit import CircuitBuilder
from pcfair.errors import SpecError
from pcfair.patterns import find_patterns
from pcfair.patterns._arguments import Problem
from pcfair.patterns.naive_bayes_search import (NaiveBayesTables, nb_search,
                                                search_naive_bayes)
from pcfair.patterns.scores import pattern_divergences
from pcfair.patterns.bounds import NaiveBayesBound
from pcfair.patterns.search import search
from pcfair.patterns.search_types import SearchOptions, SearchQuery, search_order

NB_OPTIONS = SearchOptions(naive_bayes_bound=True, seed_runs=0, compiled=False)
TOL = 1e-9


def _table(rng: np.random.Generator, c: int, style: str) -> np.ndarray:
    if style == "dyadic":  # multiples of 1/8: many exactly equal scores
        parts = np.sort(rng.choice(np.arange(1, 8), size=c - 1, replace=False))
        return np.diff(np.concatenate([[0], parts, [8]])) / 8.0
    p = rng.dirichlet(np.ones(c))
    if style == "tiny":  # a near-deterministic value
        p[rng.integers(c)] = 1e-12
        p /= p.sum()
    return p


def naive_bayes(seed: int, cards: list[int], style: str = "dirichlet") -> pcfair.Circuit:
    """P(x0) Π P(xi | x0) over x0 (the binary class) and features x1.. of arities ``cards``."""
    rng = np.random.default_rng(seed)
    cards = [2] + list(cards)
    b = CircuitBuilder({f"x{i}": list(range(c)) for i, c in enumerate(cards)})
    prior = [0.25, 0.75] if style == "dyadic" else list(rng.dirichlet([4.0, 4.0]))
    elems = []
    for dv in range(2):
        feats = [b.categorical(f"x{i}", _table(rng, c, style)) for i, c in enumerate(cards) if i]
        elems.append((b.indicator("x0", dv), b.product(feats), prior[dv]))
    return b.build(b.decision(elems))


def random_case(seed: int, max_features: int = 7, max_card: int = 4):
    rng = np.random.default_rng(10_000 + seed)
    n_feat = int(rng.integers(3, max_features + 1))
    cards = [int(c) for c in rng.integers(2, max_card + 1, n_feat)]
    n_sens = int(rng.integers(1, min(3, n_feat) + 1))
    style = ("dirichlet", "dyadic", "tiny")[seed % 3]
    pc = naive_bayes(seed, cards, style)
    sens = sorted(int(v) for v in rng.choice(np.arange(1, n_feat + 1), n_sens, replace=False))
    return pc, sens


def key(p) -> tuple:
    return tuple(sorted(p.x.items())), tuple(sorted(p.y.items()))


def dense_keys(patterns, pc) -> dict:
    """Index-form key → Pattern for the dense engine's (name-form) patterns."""
    idx = pc.variables
    return {(tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in p.x.items())),
             tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in p.y.items()))): p
            for p in patterns}


def run_nb(pc, sens, delta, best_first=True, **kw):
    nb = NaiveBayesTables.from_circuit(pc, 0, 1)
    assert nb is not None
    order = kw.pop("order", None) or search_order(pc, 0, 1, sens)
    query = SearchQuery(delta, order=order, progress=False,
                        options=SearchOptions(best_first=best_first), **kw)
    return nb_search(nb, pc.variables.cardinalities, 0, 1, sens, query)


def check_topk(got_items, got_vals, want_vals, want_by_key, tie_tol=TOL):
    """Same k-th values; every pattern above the k-th value in both; tied ones real."""
    np.testing.assert_allclose(got_vals, want_vals, atol=1e-9, rtol=1e-9)
    for it, v in zip(got_items, got_vals):
        assert key(it) in want_by_key  # a real pattern ...
        assert want_by_key[key(it)] == pytest.approx(v, abs=1e-9, rel=1e-9)  # ... of that value


@pytest.mark.parametrize("seed", range(12))
def test_matches_the_python_search(seed):
    """Same patterns and, on the same tree, the same node/prune/bound counts as ``search``."""
    pc, sens = random_case(seed, max_features=5, max_card=3)
    order = search_order(pc, 0, 1, sens)
    for delta in (0.0, 0.02, 0.1):
        ref = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="all", order=order,
                                                          options=NB_OPTIONS))
        got = run_nb(pc, sens, delta, mode="all")
        assert got.complete
        assert {key(p) for p in got.patterns} == {key(p) for p in ref.patterns}
        want = {key(p): p for p in ref.patterns}
        for p in got.patterns:
            assert p.score == pytest.approx(want[key(p)].score, abs=1e-12)
            assert p.probability == pytest.approx(want[key(p)].probability, rel=1e-9, abs=1e-15)
        assert (got.nodes, got.pruned, got.bounds) == (ref.nodes, ref.pruned, ref.bounds)
        assert got.best == pytest.approx(ref.best, abs=1e-12)
        assert got.order == ref.order

        first = run_nb(pc, sens, delta, mode="first")
        ref_first = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="first", order=order,
                                                                options=NB_OPTIONS))
        assert first.complete and len(first.patterns) == len(ref_first.patterns) <= 1
        if first.patterns:
            assert key(first.patterns[0]) == key(ref_first.patterns[0])
            assert first.nodes == ref_first.nodes

        ranks = ("discrimination", "divergence")
        for rank in ranks:
            for k in (1, 5):
                ref_k = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="topk", k=k,
                                                                    rank_by=rank, order=order,
                                                                    options=NB_OPTIONS))
                got_k = run_nb(pc, sens, delta, mode="topk", k=k, rank_by=rank)
                assert got_k.complete
                if rank == "discrimination":
                    vals = [abs(p.score) for p in got_k.patterns]
                    ref_vals = [abs(p.score) for p in ref_k.patterns]
                    by_key = {key(p): abs(p.score) for p in ref.patterns}
                else:
                    vals = list(pattern_divergences(pc, 0, 1, [p[:2] for p in got_k.patterns],
                                                    np.array([p.score for p in got_k.patterns]),
                                                    delta))
                    ref_vals = list(pattern_divergences(
                        pc, 0, 1, [p[:2] for p in ref_k.patterns],
                        np.array([p.score for p in ref_k.patterns]), delta))
                    allv = pattern_divergences(pc, 0, 1, [p[:2] for p in ref.patterns],
                                               np.array([p.score for p in ref.patterns]), delta)
                    by_key = {key(p): v for p, v in zip(ref.patterns, allv)}
                check_topk(got_k.patterns, vals, ref_vals, by_key)
            # children in generation order: the very same tree (best first breaks
            # rounding-level ties between children in its own way)
            plain = run_nb(pc, sens, delta, mode="topk", k=5, rank_by=rank, best_first=False)
            ref_plain = search(Problem(pc, 0, 1, sens),
                               SearchQuery(delta, mode="topk", k=5, rank_by=rank, order=order,
                                           options=SearchOptions(seed_runs=0, best_first=False,
                                                                 compiled=False)))
            assert (plain.nodes, plain.pruned, plain.bounds) == \
                (ref_plain.nodes, ref_plain.pruned, ref_plain.bounds)


@pytest.mark.parametrize("seed", range(12, 26))
def test_matches_the_dense_engine(seed):
    """Every pattern, top-k by both rankings and certification, against the lattice."""
    pc, sens = random_case(seed)
    names = [pc.names[v] for v in sens]
    for delta in (0.0, 0.01, 0.05, 0.2):
        dense = find_patterns(pc, "x0", names, delta, kind="all", engine="lattice")
        want = dense_keys(dense, pc)
        got = run_nb(pc, sens, delta, mode="all")
        assert got.complete and {key(p) for p in got.patterns} == set(want), delta
        for p in got.patterns[:200]:
            assert p.score == pytest.approx(want[key(p)].score, abs=1e-9)
            assert p.probability == pytest.approx(want[key(p)].probability, rel=1e-7, abs=1e-15)
        cert = run_nb(pc, sens, delta, mode="first")
        assert cert.complete and bool(cert.patterns) == bool(want)
        if cert.patterns:
            assert key(cert.patterns[0]) in want
        for rank in ("discrimination", "divergence"):
            k = 7
            ref = find_patterns(pc, "x0", names, delta, kind="topk", k=k, rank_by=rank,
                                engine="lattice")
            got_k = run_nb(pc, sens, delta, mode="topk", k=k, rank_by=rank)
            assert got_k.complete and len(got_k.patterns) == len(ref.patterns)
            if rank == "discrimination":
                vals = [abs(p.score) for p in got_k.patterns]
                check_topk(got_k.patterns, vals, [p.abs_score for p in ref],
                           {kk: p.abs_score for kk, p in want.items()})
            else:
                vals = pattern_divergences(pc, 0, 1, [p[:2] for p in got_k.patterns],
                                           np.array([p.score for p in got_k.patterns]), delta)
                check_topk(got_k.patterns, list(vals), [p.divergence for p in ref],
                           {kk: p.divergence for kk, p in want.items()})


def test_min_support_matches_the_python_search():
    pc, sens = random_case(4, max_features=5, max_card=3)
    order = search_order(pc, 0, 1, sens)
    for mode in ("all", "topk"):
        ref = search(Problem(pc, 0, 1, sens), SearchQuery(0.01, mode=mode, k=4, order=order,
                                                          options=NB_OPTIONS, min_support=0.02))
        got = run_nb(pc, sens, 0.01, mode=mode, k=4, min_support=0.02)
        assert all(p.probability >= 0.02 for p in got.patterns)
        if mode == "all":
            assert {key(p) for p in got.patterns} == {key(p) for p in ref.patterns}
            assert (got.nodes, got.pruned) == (ref.nodes, ref.pruned)
        else:
            np.testing.assert_allclose([abs(p.score) for p in got.patterns],
                                       [abs(p.score) for p in ref.patterns], atol=1e-12)


def test_deadline_marks_the_run_incomplete_and_misuse_is_refused():
    pc, sens = random_case(5)
    got = run_nb(pc, sens, 0.0, mode="all", deadline=time.time() - 1)
    assert not got.complete
    nb = NaiveBayesTables.from_circuit(pc, 0, 1)
    cards = pc.variables.cardinalities
    with pytest.raises(TypeError, match="NaiveBayesTables"):
        nb_search(NaiveBayesBound.from_circuit(pc, 0, 1), cards, 0, 1, sens, SearchQuery(0.1))
    with pytest.raises(ValueError, match="modes"):
        nb_search(nb, cards, 0, 1, sens, SearchQuery(0.1, mode="pareto"))
    rest = [v for v in range(1, len(cards)) if v not in sens]
    with pytest.raises(ValueError, match="sensitive"):
        nb_search(nb, cards, 0, 1, sens, SearchQuery(0.1, order=rest + sens))


def test_search_naive_bayes_applies_only_to_naive_bayes():
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({f"x{i}": rng.integers(0, 2, n) for i in range(4)})
    df["x1"] = (df["x0"] ^ (rng.random(n) < 0.2)).astype(int)
    df["x2"] = (df["x1"] ^ (rng.random(n) < 0.2)).astype(int)
    clt = pcfair.learn_pc(df, "x0")
    with pytest.raises(SpecError, match="naive Bayes"):
        search_naive_bayes(Problem(clt, 0, 1, [1]), SearchQuery(0.05))
    nb = pcfair.learn_pc(df, "x0", structure="naive_bayes")
    res = search_naive_bayes(Problem(nb, 0, 1, [1]), SearchQuery(0.0, mode="topk", k=3))
    ref = search(Problem(nb, 0, 1, [1]), SearchQuery(0.0, mode="topk", k=3, options=NB_OPTIONS))
    np.testing.assert_allclose([abs(p.score) for p in res.patterns],
                               [abs(p.score) for p in ref.patterns], atol=1e-12)
    with pytest.raises(SpecError, match="'pareto'"):
        search_naive_bayes(Problem(nb, 0, 1, [1]), SearchQuery(0.0, mode="pareto"))
    with pytest.raises(SpecError, match="turn off"):
        search_naive_bayes(Problem(nb, 0, 1, [1]),
                           SearchQuery(0.0, options=SearchOptions(naive_bayes_bound=False)))


@requires_data()
def test_german_naive_bayes_top1_is_learnfairnbs():
    """The maximum-likelihood German naive Bayes (LearnFairNB's model): top-1 |Δ| 0.41162,
    complete in well under a second (LearnFairNB's miner: 73.1 M nodes)."""
    df = pd.read_csv(SHARED_DATA / "german_binerized.csv")
    pc = pcfair.learn_pc(df, "loan_status", structure="naive_bayes", pseudocount=0.0)
    d = pc.names.index("loan_status")
    sens = [pc.names.index(s) for s in ("age", "foreign_worker", "sex", "marital_status")]
    res = search_naive_bayes(Problem(pc, d, 1, sens),
                             SearchQuery(0.0, mode="topk", k=1).within(60))
    assert res.complete and abs(res.patterns[0].score) == pytest.approx(0.41162, abs=5e-6)
    assert res.nodes < 5_000_000
    top1 = abs(res.patterns[0].score)
    cert = search_naive_bayes(Problem(pc, d, 1, sens),
                              SearchQuery(top1 + 0.005, mode="first").within(60))
    assert cert.complete and not cert.patterns
    witness = search_naive_bayes(Problem(pc, d, 1, sens),
                                 SearchQuery(top1 - 0.005, mode="first").within(60))
    assert witness.patterns and abs(witness.patterns[0].score) > top1 - 0.005

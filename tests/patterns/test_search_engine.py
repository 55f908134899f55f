"""The branch-and-bound engine against the brute-force oracle and the dense engine: every kind,
both rankings, with the paper's search and with each improvement."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings, strategies as st

import pcfair
import pcfair.datasets
import _pattern_oracle as oracle
from _pcgen import random_psdd
from conftest import requires_data
from pcfair.circuit import CircuitBuilder
from pcfair.errors import SpecError
from pcfair.patterns import certify, find_patterns
from pcfair.patterns.search_types import PAPER, SearchOptions, search_order

OPTIONS = [PAPER, SearchOptions(), SearchOptions(ordering="index"),
           SearchOptions(share_bounds=False), SearchOptions(best_first=False)]


def naive_bayes(rng: np.random.Generator, cards: list[int]) -> pcfair.Circuit:
    """A random naive Bayes over x0 (the class) and features x1..: P(x0) Π P(xi | x0)."""
    b = CircuitBuilder({f"x{i}": list(range(c)) for i, c in enumerate(cards)})
    elems = []
    for dv in range(cards[0]):
        feats = [b.categorical(f"x{i}", rng.dirichlet(np.ones(c)))
                 for i, c in enumerate(cards) if i]
        elems.append((b.indicator("x0", dv), b.product(feats), 1.0 / cards[0]))
    return b.build(b.decision(elems))


def learned_clt(seed: int, cards: list[int]) -> pcfair.Circuit:
    """A Chow-Liu tree learned on random correlated data (x0 the decision)."""
    rng = np.random.default_rng(seed)
    n = 300
    latent = rng.integers(0, 2, n)
    cols = {f"x{i}": np.where(rng.random(n) < 0.7, latent % c, rng.integers(0, c, n))
            for i, c in enumerate(cards)}
    return pcfair.learn_pc(pd.DataFrame(cols), "x0", pseudocount=1.0)


def model(kind: str, seed: int, cards: list[int]) -> pcfair.Circuit:
    rng = np.random.default_rng(seed)
    if kind == "nb":
        return naive_bayes(rng, [2] + cards)
    if kind == "clt":
        return learned_clt(seed, [2] + cards)
    return random_psdd(rng, [2] + cards, zeros=bool(seed % 2), shared_primes=bool(seed % 3 == 1))


def keys(patterns, pc) -> set:
    idx = pc.variables
    return {(tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in p.x.items())),
             tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in p.y.items())))
            for p in patterns}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["psdd", "nb", "clt"]), st.integers(0, 2**32 - 1),
       st.lists(st.integers(2, 3), min_size=1, max_size=4), st.integers(1, 3),
       st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.2]), st.sampled_from(range(len(OPTIONS))))
def test_search_matches_brute_force(kind, seed, feature_cards, n_sens, delta, opt):
    pc = model(kind, seed, feature_cards)
    cards = list(pc.variables.cardinalities)
    sens = list(range(1, 1 + min(n_sens, len(feature_cards))))
    records = oracle.enumerate_patterns(pc, cards, 0, sens, favorable=1, delta=delta)
    assume(oracle.well_separated(records, delta))
    names = [pc.names[v] for v in sens]
    options = OPTIONS[opt]
    sigma = oracle.discrimination_patterns(records, delta)
    want = {"all": sigma, "maximal": oracle.maximal(records, delta, cards),
            "pareto": oracle.pareto(records, delta, cards, tol=1e-10)}
    for kind_, recs in want.items():
        got = find_patterns(pc, "x0", names, delta, kind=kind_, engine="search",
                            search_options=options)
        assert got.complete and got.engine == "search"
        assert keys(got, pc) == {r.key for r in recs}, kind_  # no missed pattern, ever
        by_key = {r.key: r for r in recs}
        for p, kk in zip(got, [next(iter(keys([p], pc))) for p in got]):
            assert p.score == pytest.approx(by_key[kk].delta, abs=1e-9)
            assert p.probability == pytest.approx(by_key[kk].probability, abs=1e-12)
            if delta > 0:
                assert p.divergence == pytest.approx(by_key[kk].divergence, abs=1e-9)
    ranks = ("discrimination", "divergence") if delta > 0 else ("discrimination",)
    for rank in ranks:
        got = find_patterns(pc, "x0", names, delta, kind="topk", k=4, rank_by=rank,
                            engine="search", search_options=options)
        ref = oracle.top_k(records, delta, 4, rank_by=rank)
        attr = "abs_score" if rank == "discrimination" else "divergence"
        rattr = "abs_delta" if rank == "discrimination" else "divergence"
        np.testing.assert_allclose([getattr(p, attr) for p in got],
                                   [getattr(r, rattr) for r in ref], atol=1e-9)
    cert = certify(pc, "x0", names, delta, engine="search", search_options=options)
    assert cert.complete and cert.fair == (len(sigma) == 0)


def test_minimal_needs_the_dense_engine():
    pc = model("psdd", 4, [2, 2])
    with pytest.raises(pcfair.SpecError, match="lattice"):
        find_patterns(pc, "x0", ["x1"], 0.05, kind="minimal", engine="search")


def test_order_puts_sensitive_first_by_information():
    pc = model("clt", 2, [2, 2, 3, 2])
    order = search_order(pc, 0, 1, [3, 1], "influence")
    assert sorted(order[:2]) == [1, 3] and sorted(order[2:]) == [2, 4]
    assert search_order(pc, 0, 1, [3, 1], "index") == [1, 3, 2, 4]
    with pytest.raises(ValueError, match="ordering"):
        search_order(pc, 0, 1, [1], "random")


def test_improvements_visit_fewer_nodes_on_a_learned_model():
    """Same answers, fewer nodes than the paper's search on a model with structure to use."""
    pc = model("clt", 11, [2, 2, 2, 2, 2, 2])
    names = ["x1", "x2"]
    paper = find_patterns(pc, "x0", names, 0.01, kind="topk", k=5, engine="search",
                          search_options=PAPER)
    ours = find_patterns(pc, "x0", names, 0.01, kind="topk", k=5, engine="search")
    np.testing.assert_allclose([p.abs_score for p in ours], [p.abs_score for p in paper],
                               atol=1e-12)
    assert ours.stats["bound_evaluations"] < paper.stats["bound_evaluations"]


@requires_data()
def test_search_reproduces_the_compas_census():
    ds = pcfair.datasets.load_binarized("compas")
    pc = pcfair.learn_pc(ds.frame, ds.target)
    for kind, want in (("all", 1164), ("maximal", 0), ("pareto", 26)):
        got = find_patterns(pc, ds.target, ds.sensitive, 0.1, kind=kind, engine="search",
                            count_only=True)
        assert got.complete and got.count == want, kind
    dense = find_patterns(pc, ds.target, ds.sensitive, 0.05, kind="topk", k=10,
                          rank_by="divergence", engine="lattice")
    found = find_patterns(pc, ds.target, ds.sensitive, 0.05, kind="topk", k=10,
                          rank_by="divergence", engine="search")
    np.testing.assert_allclose([p.divergence for p in found], [p.divergence for p in dense],
                               rtol=1e-9)
    maximal = find_patterns(pc, ds.target, ds.sensitive, 0.05, kind="maximal", engine="search")
    assert maximal.count == 74


def test_two_processes_give_the_serial_answers():
    pc = model("clt", 5, [2, 2, 3, 2, 2])
    names = ["x1", "x2", "x3"]
    serial = find_patterns(pc, "x0", names, 0.02, engine="search")
    split = find_patterns(pc, "x0", names, 0.02, engine="search", n_jobs=2)
    assert split.complete and keys(split, pc) == keys(serial, pc)
    top = find_patterns(pc, "x0", names, 0.02, kind="topk", k=5, rank_by="divergence",
                        engine="search", n_jobs=2)
    ref = find_patterns(pc, "x0", names, 0.02, kind="topk", k=5, rank_by="divergence",
                        engine="lattice")
    np.testing.assert_allclose([p.divergence for p in top], [p.divergence for p in ref],
                               atol=1e-12)
    # each worker walks the nodes above the split, then only its own subtrees
    assert split.stats["nodes"] < 2 * serial.stats["nodes"]


def test_engines_match_an_independent_enumeration_on_the_shipped_compas_model():
    """The shipped COMPAS CLT (no ../shared needed): counts, summaries and top-k of both exact
    engines against the brute-force oracle's enumeration of all 14,688 patterns."""
    from pathlib import Path

    pc = pcfair.load(Path(__file__).resolve().parents[2] / "circuits" / "compas_clt.json")
    target = "ScoreText_"
    names = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
    d = pc.variables.index(target)
    sens = [pc.variables.index(s) for s in names]
    cards = list(pc.variables.cardinalities)
    delta = 0.1
    records = oracle.enumerate_patterns(pc, cards, d, sens, favorable=1, delta=delta)
    assert oracle.well_separated(records, delta)
    want = {"all": oracle.discrimination_patterns(records, delta),
            "maximal": oracle.maximal(records, delta, cards),
            "minimal": oracle.minimal(records, delta, cards),
            "pareto": oracle.pareto(records, delta, cards, tol=1e-10)}
    for engine in ("lattice", "search"):
        for kind, recs in want.items():
            if engine == "search" and kind == "minimal":
                continue
            got = find_patterns(pc, target, names, delta, kind=kind, engine=engine)
            assert got.complete and keys(got, pc) == {r.key for r in recs}, (engine, kind)
        for rank in ("discrimination", "divergence"):
            got = find_patterns(pc, target, names, delta, kind="topk", k=10, rank_by=rank,
                                engine=engine)
            ref = oracle.top_k(records, delta, 10, rank_by=rank)
            attr = "abs_score" if rank == "discrimination" else "divergence"
            rattr = "abs_delta" if rank == "discrimination" else "divergence"
            np.testing.assert_allclose([getattr(p, attr) for p in got],
                                       [getattr(r, rattr) for r in ref], atol=1e-12)
    assert len(want["all"]) == 1161 and len(want["pareto"]) > 0


def test_naive_bayes_bound_is_recognised_sound_and_tighter():
    from pcfair.patterns.bounds import NaiveBayesBound

    rng = np.random.default_rng(3)
    nb = naive_bayes(rng, [2, 2, 3, 2, 2, 2])
    assert NaiveBayesBound.from_circuit(nb, 0, 1) is not None
    assert NaiveBayesBound.from_circuit(model("clt", 3, [2, 2, 2]), 0, 1) is None
    assert NaiveBayesBound.from_circuit(model("psdd", 3, [2, 2, 2]), 0, 1) is None
    names = ["x1", "x2"]
    with_nb = find_patterns(nb, "x0", names, 0.01, kind="topk", k=3, engine="search")
    without = find_patterns(nb, "x0", names, 0.01, kind="topk", k=3, engine="search",
                            search_options=SearchOptions(naive_bayes_bound=False,
                                                         bound="quotient"))
    np.testing.assert_allclose([p.abs_score for p in with_nb], [p.abs_score for p in without],
                               atol=1e-12)
    assert with_nb.stats["nodes"] < without.stats["nodes"]
    # the bound at the root covers every pattern's score (brute force)
    cards = list(nb.variables.cardinalities)
    records = oracle.enumerate_patterns(nb, cards, 0, [1, 2], favorable=1, delta=0.0)
    bound = NaiveBayesBound.from_circuit(nb, 0, 1)
    box = bound.ranges({}, {}, [1, 2, 3, 4, 5], {1, 2})
    assert max(abs(r.delta) for r in records) <= NaiveBayesBound.bound(*box) + 1e-12


def test_engine_table_runs_every_exact_engine_by_name():
    from pcfair.errors import OptionError

    pc = model("clt", 4, [2, 2, 2])
    want = find_patterns(pc, "x0", ["x1"], 0.01, kind="topk", k=3, engine="lattice")
    for name, family, concrete in (("lattice", "lattice", "lattice"),
                                   ("dense", "lattice", "lattice"),
                                   ("search", "search", "tree_search"),
                                   ("tree_search", "search", "tree_search"),
                                   ("python_search", "search", "python_search")):
        ps = find_patterns(pc, "x0", ["x1"], 0.01, kind="topk", k=3, engine=name)
        cert = certify(pc, "x0", ["x1"], 0.01, engine=name)
        assert ps.engine == cert.engine == family and ps.complete
        assert ps.stats["engine"] == cert.stats["engine"] == concrete
        assert [p.text() for p in ps] == [p.text() for p in want]
    with pytest.raises(OptionError, match="'auto', 'lattice', 'search'"):
        certify(pc, "x0", ["x1"], 0.01, engine="latice")
    with pytest.raises(SpecError, match="naive_bayes_search"):
        certify(pc, "x0", ["x1"], 0.01, engine="naive_bayes_search")
    with pytest.raises(OptionError, match="answers"):
        find_patterns(pc, "x0", ["x1"], 0.01, kind="pareto", engine="tree_search")


@pytest.mark.parametrize("n_features,structure", [(12, "naive_bayes"), (21, "clt"),
                                                  (21, "naive_bayes")])
def test_auto_says_which_engine_and_why(n_features, structure):
    """``auto`` records its choice with every estimate, and the choice obeys the documented
    rules (a search answering at a glance; a quick lattice at once; else a search that
    finishes its probe; else the lattice within the budget)."""
    from pcfair.patterns.engines import GLANCE_SECONDS, QUICK_SECONDS

    rng = np.random.default_rng(n_features)
    df = pd.DataFrame(rng.integers(0, 2, (300, n_features + 1)),
                      columns=[f"v{i}" for i in range(n_features + 1)])
    pc = pcfair.learn_pc(df, "v0", structure=structure)
    cert = certify(pc, "v0", ["v1", "v2", "v3", "v4"], 0.3)
    choice = cert.stats["choice"]
    lattice = choice["estimates"]["lattice"]
    assert lattice["applies"]
    if lattice["seconds"] is None:  # the search answered at a glance, before any estimate
        assert "before any estimate" in choice["reason"]
        assert choice["estimates"][choice["engine"]]["seconds"] <= GLANCE_SECONDS + 0.5
    elif lattice["seconds"] <= QUICK_SECONDS:
        assert choice["engine"] == "lattice" and "at once" in choice["reason"]
    else:
        searched = [e for n, e in choice["estimates"].items() if n != "lattice"]
        assert searched and (choice["engine"] != "lattice") == (searched[0]["seconds"]
                                                               is not None)
    assert cert.stats["engine"] == choice["engine"] and cert.fair is not None


# --- the census through the engine table ----------------------------------------------------

CENSUS_DELTAS = (0.0, 0.02, 0.05, 0.1)
CENSUS_COLUMNS = ["patterns", "pareto", "top1_abs_score", "top3_abs_score", "top1_divergence",
                  "top3_divergence"]


@pytest.mark.parametrize("kind,seed", [("clt", 3), ("nb", 5), ("psdd", 2)])
def test_census_answers_by_the_search_where_the_lattice_cannot_hold_the_model(kind, seed):
    """``pattern_census`` with a chunk budget the lattice cannot meet answers by the search
    (``engine="auto"``), with the lattice's counts, top-k and Pareto columns; the maximal
    counts where the search gives them, the minimal ones (the lattice's only) None."""
    pc = model(kind, seed, [2, 3, 2])
    args = (pc, "x0", ["x1", "x2"])
    lattice = pcfair.pattern_census(*args, deltas=CENSUS_DELTAS, ks=(1, 3))
    with pytest.raises(pcfair.LatticeTooLarge):
        pcfair.pattern_census(*args, deltas=CENSUS_DELTAS, ks=(1, 3), engine="lattice",
                              max_bytes=1_000)
    for engine in ("auto", "search"):
        search = pcfair.pattern_census(*args, deltas=CENSUS_DELTAS, ks=(1, 3), engine=engine,
                                       max_bytes=1_000)
        assert search.attrs["engine"] != "lattice" and lattice.attrs["engine"] == "lattice"
        assert search["complete"].all() and lattice["complete"].all()
        assert search["delta"].tolist() == list(CENSUS_DELTAS)
        assert search["patterns"].tolist() == lattice["patterns"].tolist()
        assert search["set_aside"].tolist() == lattice["set_aside"].tolist()
        pd.testing.assert_frame_equal(search[CENSUS_COLUMNS], lattice[CENSUS_COLUMNS],
                                      check_dtype=False, atol=1e-9, rtol=1e-7)
        assert search["minimal"].isna().all()
        assert search["maximal"].tolist() == lattice["maximal"].tolist()


def test_census_by_a_search_stopped_by_its_time_limit_is_incomplete():
    """A census whose searches stop at the deadline says ``complete=False`` on every row it
    could not finish, and never counts more patterns than there are."""
    pc = learned_clt(1, [2] + [4] * 12)  # about 10^9 patterns: far more than 0.05 s lists
    census = pcfair.pattern_census(pc, "x0", ["x1", "x2"], deltas=(0.0, 0.1), ks=(1,),
                                   engine="search", time_limit=0.05)
    assert not census["complete"].any()
    assert census["patterns"].iloc[0] >= census["patterns"].iloc[1]

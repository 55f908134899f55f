"""The dense engine against the independent brute-force oracle (tests/_pattern_oracle.py)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import pcfair
import pcfair.datasets
import pcfair.patterns
import _pattern_oracle as oracle
from _pcgen import random_mixture, random_psdd
from conftest import requires_shared
from pcfair.patterns import certify, find_patterns


def _key(x, y, circuit):
    idx = circuit.variables
    xs = tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in x.items()))
    ys = tuple(sorted((idx.index(k), idx.value_index(k, v)) for k, v in y.items()))
    return xs, ys


def _model(seed, cards):
    rng = np.random.default_rng(seed)
    cards = [2] + cards  # x0 is the decision
    if seed % 3 == 0:
        return random_mixture(rng, cards, components=3)  # not deterministic: dense still works
    return random_psdd(rng, cards, zeros=bool(seed % 2), shared_primes=bool(seed % 5 == 1))


def _dominated(p, q, tol=1e-10):
    """q beats p in Definition 5's sense, with ties decided up to ``tol`` (floating point
    separates patterns that tie mathematically by a few ulps)."""
    return q.abs_delta >= p.abs_delta - tol and q.probability >= p.probability - tol


def _check_pareto(pc, names, delta, sigma):
    """The engine's strict Pareto front, checked by its definition on the oracle's Σ: members
    are dominated by no other pattern, and every other pattern is dominated."""
    front = {_key(p.x, p.y, pc) for p in find_patterns(pc, "x0", names, delta, kind="pareto")}
    assert front <= {r.key for r in sigma}
    for r in sigma:
        beaten = any(_dominated(r, q) for q in sigma if q.key != r.key)
        assert (r.key in front) == (not beaten), r.key


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=4),
       st.integers(1, 3), st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.2]))
def test_dense_engine_matches_brute_force(seed, feature_cards, n_sens, delta):
    pc = _model(seed, feature_cards)
    cards = list(pc.variables.cardinalities)
    sens = list(range(1, 1 + min(n_sens, len(feature_cards))))
    records = oracle.enumerate_patterns(pc, cards, 0, sens, favorable=1, delta=delta)
    # membership of Σ is decided by rounding when some |Δ| is within 1e-9 of δ (e.g. Δ that is
    # mathematically 0 at δ = 0): engines may then differ legitimately
    assume(oracle.well_separated(records, delta))
    names = [pc.names[v] for v in sens]
    want = {
        "all": oracle.discrimination_patterns(records, delta),
        "maximal": oracle.maximal(records, delta, cards),
        "minimal": oracle.minimal(records, delta, cards),
    }
    _check_pareto(pc, names, delta, want["all"])
    for kind, recs in want.items():
        got = find_patterns(pc, "x0", names, delta, kind=kind)
        assert got.complete and got.count == len(recs) == len(got.patterns), kind
        got_keys = {_key(p.x, p.y, pc): p for p in got}
        want_keys = {r.key: r for r in recs}
        assert set(got_keys) == set(want_keys), kind
        for k, p in got_keys.items():
            r = want_keys[k]
            assert p.score == pytest.approx(r.delta, abs=1e-9)
            assert p.probability == pytest.approx(r.probability, abs=1e-12)
            if delta > 0:
                # (at δ = 0 the closed form is ill-conditioned: removing a pattern may need a
                # block emptied, an infinite KL that rounding turns into arbitrary values)
                assert p.divergence == pytest.approx(r.divergence, abs=1e-9)
    # top-k by either ranking: the same scores as the oracle's top-k
    for rank in ("discrimination", "divergence") if delta > 0 else ("discrimination",):
        got = find_patterns(pc, "x0", names, delta, kind="topk", k=5, rank_by=rank)
        ref = oracle.top_k(records, delta, 5, rank_by=rank)
        attr = (lambda p: p.abs_score) if rank == "discrimination" else (lambda p: p.divergence)
        rattr = (lambda r: r.abs_delta) if rank == "discrimination" else (lambda r: r.divergence)
        np.testing.assert_allclose([attr(p) for p in got], [rattr(r) for r in ref], atol=1e-9)
    # certification agrees with the existence of a pattern; "fair" only when none exists
    cert = certify(pc, "x0", names, delta, exact_max=True)
    assert cert.complete and cert.fair == (len(want["all"]) == 0)
    defined = [abs(r.delta) for r in records]
    assert cert.max_abs_score == pytest.approx(max(defined) if defined else 0.0, abs=1e-9)


def test_counts_match_the_lattice_formula():
    rng = np.random.default_rng(0)
    pc = random_psdd(rng, [2, 3, 2, 2], zeros=False)
    cards = list(pc.variables.cardinalities)
    ps = find_patterns(pc, "x0", ["x1", "x2"], 0.0, count_only=True)
    assert ps.stats["defined_patterns"] + 0 <= oracle.count_patterns(cards, 0, [1, 2])
    records = oracle.enumerate_patterns(pc, cards, 0, [1, 2])
    assert ps.stats["defined_patterns"] == len(records)


def test_bad_arguments():
    rng = np.random.default_rng(1)
    pc = random_psdd(rng, [2, 2, 2])
    with pytest.raises(pcfair.VariableError):
        find_patterns(pc, "x0", ["nope"], 0.1)
    with pytest.raises(pcfair.VariableError):
        find_patterns(pc, "x0", ["x0"], 0.1)
    with pytest.raises(ValueError, match="kind"):
        find_patterns(pc, "x0", ["x1"], 0.1, kind="weird")
    with pytest.raises(ValueError, match="sample_patterns"):
        certify(pc, "x0", ["x1"], 0.1, engine="sample")
    with pytest.raises(pcfair.patterns.LatticeTooLarge):
        find_patterns(pc, "x0", ["x1"], 0.1, engine="lattice", max_bytes=10)
    # "auto" falls back to the search engine when the lattice does not fit
    assert find_patterns(pc, "x0", ["x1"], 0.1, max_bytes=10).engine == "search"


def test_cli_certify_and_patterns(tmp_path, capsys):
    import json

    from pcfair.cli import main

    rng = np.random.default_rng(7)
    pc = random_psdd(rng, [2, 2, 3, 2], zeros=False)
    pcfair.save(pc, tmp_path / "m.json")
    model = str(tmp_path / "m.json")
    cert = certify(pc, "x0", ["x1", "x2"], 0.05)
    rc = main(["certify", model, "--decision", "x0", "--sensitive", "x1,x2", "--delta", "0.05",
               "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == (0 if cert.fair else 1) and data["fair"] == cert.fair and data["complete"]
    for key in ("fair", "complete", "delta", "engine", "witness", "max_abs_score", "stats"):
        assert key in data
    high = main(["certify", model, "--decision", "x0", "--sensitive", "x1,x2", "--delta",
                 str(cert.max_abs_score + 1e-6)])
    assert high == 0 and "FAIR" in capsys.readouterr().out
    rc = main(["patterns", model, "--decision", "x0", "--sensitive", "x1,x2", "--delta", "0.01",
               "--kind", "topk", "--k", "3", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["kind"] == "topk" and len(data["patterns"]) <= 3
    for p in data["patterns"]:
        assert set(p) >= {"x", "y", "score", "abs_score", "probability", "divergence"}
    assert main(["patterns", model, "--decision", "x0", "--sensitive", "x1", "--delta", "0.01",
                 "--count"]) == 0
    assert int(capsys.readouterr().out) == find_patterns(pc, "x0", ["x1"], 0.01).count
    assert main(["certify", model, "--decision", "x0", "--sensitive", "nope", "--delta",
                 "0.1"]) == 2
    assert main(["certify", model, "--decision", "x0", "--sensitive", "x1", "--delta",
                 "1.5"]) == 2  # out of range: a clear message, no traceback
    assert "delta" in capsys.readouterr().err
    # the search engine's summaries, and the sampling miner (never complete: exit 3)
    assert main(["patterns", model, "--decision", "x0", "--sensitive", "x1,x2", "--delta",
                 "0.01", "--engine", "search", "--kind", "pareto", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    dense = find_patterns(pc, "x0", ["x1", "x2"], 0.01, kind="pareto")
    assert data["engine"] == "search" and data["count"] == dense.count
    assert main(["patterns", model, "--decision", "x0", "--sensitive", "x1,x2", "--delta",
                 "0.01", "--engine", "sample", "--runs", "20", "--seed", "1", "--format",
                 "json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "sample" and not data["complete"] and data["count"] > 0


@requires_shared
def test_compas_clt_reproduces_the_papers_reference_figures():
    """pc-certifier.md §3: the paper's COMPAS model has 7,445 / 2,388 / 1,164 patterns at
    δ = 0.01 / 0.05 / 0.1, 170 / 74 / 0 maximal, 103 / 10 / 1 minimal and top-1 |Δ| 0.2236.
    The CLT learned on the full binarized table reproduces them; strict Pareto gives
    45 / 36 / 26 (the paper's 38 / 28 keep probability ties, see the spec)."""
    from pcfair.patterns import pattern_census

    ds = pcfair.datasets.load_binarized("compas")
    pc = pcfair.learn_pc(ds.frame, ds.target)
    census = pattern_census(pc, ds.target, ds.sensitive, ks=(1,))
    assert census["patterns"].tolist() == [7445, 2388, 1164]
    assert census["maximal"].tolist() == [170, 74, 0]
    assert census["minimal"].tolist() == [103, 10, 1]
    assert census["pareto"].tolist() == [45, 36, 26]
    assert census["top1_abs_score"].round(4).tolist() == [0.2236] * 3


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=4),
       st.integers(1, 3), st.sampled_from([0.02, 0.05, 0.1, 0.2, 0.4]))
def test_search_engine_agrees_with_dense(seed, feature_cards, n_sens, delta):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, [2] + feature_cards, zeros=bool(seed % 2),
                     shared_primes=bool(seed % 3 == 1))
    names = [f"x{v}" for v in range(1, 1 + min(n_sens, len(feature_cards)))]
    dense = find_patterns(pc, "x0", names, delta, engine="lattice")
    found = find_patterns(pc, "x0", names, delta, engine="search")
    assert found.complete
    key = lambda ps: {(tuple(sorted(p.x.items())), tuple(sorted(p.y.items()))) for p in ps}
    assert key(found) == key(dense)  # no missed pattern, no spurious one
    top_d = find_patterns(pc, "x0", names, delta, kind="topk", k=4, engine="lattice")
    top_s = find_patterns(pc, "x0", names, delta, kind="topk", k=4, engine="search")
    np.testing.assert_allclose([p.abs_score for p in top_s], [p.abs_score for p in top_d],
                               atol=1e-9)
    c_d = certify(pc, "x0", names, delta, engine="lattice")
    c_s = certify(pc, "x0", names, delta, engine="search")
    assert c_s.fair == c_d.fair and c_s.complete
    if c_s.witness is not None:
        assert c_s.witness.abs_score > delta


def test_search_time_limit_is_incomplete_and_never_fair():
    rng = np.random.default_rng(3)
    pc = random_psdd(rng, [2, 3, 3, 2, 3, 2], zeros=False)
    cert = certify(pc, "x0", ["x1", "x2"], 0.99, engine="search", time_limit=0.0)
    assert cert.fair is None and not cert.complete
    ps = find_patterns(pc, "x0", ["x1", "x2"], 0.0, engine="search", time_limit=0.0)
    assert not ps.complete


def test_search_refuses_non_deterministic_circuits():
    mix = random_mixture(np.random.default_rng(0), [2, 2, 2])
    with pytest.raises(pcfair.StructureError, match="deterministic"):
        certify(mix, "x0", ["x1"], 0.1, engine="search")
    assert certify(mix, "x0", ["x1"], 0.1, engine="lattice").complete

"""The compiled tree search (:mod:`pcfair.patterns.tree_search`) against the Python search with
the tree bound (same tree, same answers, same node counts), against a brute-force enumeration
of the joint table, and on its edges: random Chow-Liu-shaped circuits and tree Bayesian networks
with the decision at the root or deep inside, zero, 1e-12 and tied parameters, a shifted root
(a huge log-normaliser), deadlines and refusals."""

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _pcgen import random_psdd, shift_root_logw
from pcfair.errors import OptionError, SpecError
from pcfair.patterns._arguments import Problem, Request
from pcfair.patterns.bounds import TreeBound
from pcfair.patterns.engines import search_engine
from pcfair.patterns.scores import pattern_divergences
from pcfair.patterns.search import search
from pcfair.patterns.search_types import SearchOptions, SearchQuery, search_order
from pcfair.patterns.tree_search import search_tree, tree_search
from test_bounds import joint_table, random_tan, tree_bn

PY = SearchOptions(bound="tree", seed_runs=0, compiled=False)


def key(p) -> tuple:
    return tuple(sorted(p.x.items())), tuple(sorted(p.y.items()))


def model(seed: int, kind: str, n: int, zeros=False, tiny=False, ties=False):
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    if kind == "tan":
        pc = random_tan(rng, cards, zeros, tiny, ties)
    else:
        pc, _ = tree_bn(rng, cards, kind, zeros, tiny)
    sens = sorted(int(v) for v in rng.choice(np.arange(1, n), max(1, (n - 1) // 2),
                                              replace=False))
    return pc, sens


def run(pc, sens, delta, fav=1, *, best_first=True, ladder=True, plateau=True, x_first=False,
        **kw):
    tb = TreeBound.from_circuit(pc, 0, fav)
    assert tb is not None
    order = kw.pop("order", None) or search_order(pc, 0, fav, sens)
    query = SearchQuery(delta, order=order, progress=False,
                        options=SearchOptions(best_first=best_first), **kw)
    return tree_search(tb, sens, query, ladder=ladder, plateau=plateau, x_first=x_first)


def brute(pc, sens, delta, fav=1):
    """Every pattern with |Δ| > δ, by enumeration of the normalised joint table:
    key → (score, P(x, y), divergence masses (a1, a0, m1, m0))."""
    joint = joint_table(pc)
    n = joint.ndim
    feats = list(range(1, n))
    out = {}
    opts = [[("e", 0)] + [("y", k) for k in range(joint.shape[v])]
            + ([("x", k) for k in range(joint.shape[v])] if v in sens else []) for v in feats]

    def mass(ev):
        return float(joint[tuple(ev.get(v, slice(None)) for v in range(n))].sum())

    for choice in itertools.product(*opts):
        x = {v: k for v, (w, k) in zip(feats, choice) if w == "x"}
        y = {v: k for v, (w, k) in zip(feats, choice) if w == "y"}
        p_xy = mass({**x, **y})
        if not x or p_xy <= 0:
            continue
        score = mass({**x, **y, 0: fav}) / p_xy - mass({**y, 0: fav}) / mass(y)
        if abs(score) > delta + 1e-12:
            out[(tuple(sorted(x.items())), tuple(sorted(y.items())))] = (score, p_xy)
    return out


CASES = [(seed, kind, n, z, t, ties)
         for seed, (kind, n, z, t, ties) in enumerate(
             [("tan", 4, False, False, False), ("tan", 5, True, False, True),
              ("tan", 6, False, True, False), ("root", 5, False, False, False),
              ("deep", 5, True, False, False), ("deep", 6, False, True, False),
              ("tan", 5, True, True, True), ("deep", 4, False, False, False)])]


@pytest.mark.parametrize("seed,kind,n,zeros,tiny,ties", CASES)
def test_matches_the_python_search(seed, kind, n, zeros, tiny, ties):
    """Same patterns, scores, probabilities and node/prune/bound counts as ``search`` with the
    tree bound, in every mode; top-k by both rankings with the same values."""
    pc, sens = model(seed, kind, n, zeros, tiny, ties)
    order = search_order(pc, 0, 1, sens)
    for delta in (0.0, 0.02, 0.1):
        ref = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="all", order=order,
                                                          options=PY))
        got = run(pc, sens, delta, mode="all")
        assert got.complete and got.compiled and not ref.compiled
        assert {key(p) for p in got.patterns} == {key(p) for p in ref.patterns}
        want = {key(p): p for p in ref.patterns}
        for p in got.patterns:
            assert p.score == pytest.approx(want[key(p)].score, abs=1e-12)
            assert p.probability == pytest.approx(want[key(p)].probability, rel=1e-9, abs=1e-15)
        assert (got.nodes, got.pruned, got.bounds) == (ref.nodes, ref.pruned, ref.bounds)
        assert got.best == pytest.approx(ref.best, abs=1e-12)

        first = run(pc, sens, delta, mode="first", plateau=False)  # the same walk
        ref_first = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="first", order=order,
                                                                options=PY))
        assert first.complete and len(first.patterns) == len(ref_first.patterns) <= 1
        if first.patterns:
            assert key(first.patterns[0]) == key(ref_first.patterns[0])
            assert first.nodes == ref_first.nodes

        for rank in ("discrimination", "divergence"):
            for k in (1, 5):
                ref_k = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="topk", k=k,
                                                                    rank_by=rank, order=order,
                                                                    options=PY))
                got_k = run(pc, sens, delta, mode="topk", k=k, rank_by=rank)
                assert got_k.complete and len(got_k.patterns) == len(ref_k.patterns)
                if rank == "discrimination":
                    vals = [abs(p.score) for p in got_k.patterns]
                    ref_vals = [abs(p.score) for p in ref_k.patterns]
                else:
                    vals = pattern_divergences(pc, 0, 1, [p[:2] for p in got_k.patterns],
                                               np.array([p.score for p in got_k.patterns]),
                                               delta)
                    ref_vals = pattern_divergences(pc, 0, 1, [p[:2] for p in ref_k.patterns],
                                                   np.array([p.score for p in ref_k.patterns]),
                                                   delta)
                np.testing.assert_allclose(vals, ref_vals, rtol=1e-9, atol=1e-12)
                for p in got_k.patterns:
                    assert key(p) in {key(q) for q in ref.patterns} or delta > 0 and \
                        abs(p.score) <= delta + 1e-12
            # the same walk as the Python search, node for node (no ladder before it)
            plain = run(pc, sens, delta, mode="topk", k=5, rank_by=rank, best_first=False,
                        ladder=False, plateau=False)
            plain_options = SearchOptions(bound="tree", seed_runs=0, best_first=False,
                                          compiled=False)
            ref_plain = search(Problem(pc, 0, 1, sens), SearchQuery(delta, mode="topk", k=5,
                                                                    rank_by=rank, order=order,
                                                                    options=plain_options))
            assert (plain.nodes, plain.pruned, plain.bounds) == \
                (ref_plain.nodes, ref_plain.pruned, ref_plain.bounds)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["tan", "root", "deep"]),
       st.integers(3, 6), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([0.0, 0.01, 0.1, 0.3]), st.sampled_from([0, 1]))
def test_against_brute_force(seed, kind, n, zeros, tiny, ties, delta, fav):
    """Every pattern (key, score, probability) and certification against the joint table."""
    pc, sens = model(seed, kind, n, zeros, tiny, ties)
    want = brute(pc, sens, delta, fav)
    for x_first in (False, True):  # one tree order, or each node's x subtrees first
        got = run(pc, sens, delta, fav, mode="all", x_first=x_first)
        assert got.complete and {key(p) for p in got.patterns} == set(want)
        for p in got.patterns:
            score, prob = want[key(p)]
            assert p.score == pytest.approx(score, abs=1e-9)
            assert p.probability == pytest.approx(prob, rel=1e-7, abs=1e-15)
        cert = run(pc, sens, delta, fav, mode="first", x_first=x_first)
        assert cert.complete and bool(cert.patterns) == bool(want)
        if cert.patterns:
            assert key(cert.patterns[0]) in want
        top = run(pc, sens, delta, fav, mode="topk", k=3, x_first=x_first)
        assert [abs(p.score) for p in top.patterns] == pytest.approx(
            sorted((abs(s) for s, _ in want.values()), reverse=True)[:3], abs=1e-9)
        for p in top.patterns:
            assert p.score == pytest.approx(want[key(p)][0], abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["tan", "root", "deep"]),
       st.integers(3, 6), st.booleans(), st.booleans(), st.sampled_from([0.0, 0.05]),
       st.sampled_from([0.0, 0.01]), st.sampled_from([1, 3, 10]), st.booleans(),
       st.booleans())
def test_the_ladder_gives_the_top_k_of_brute_force(seed, kind, n, zeros, ties, delta,
                                                    support, k, step_cut, seeded):
    """Top-k by |Δ| with the ladder (first-witness runs, then the top-k search above the
    k-th witness; the top-k search's first try is given no time, so the ladder always runs)
    against brute force and against the top-k search alone, with ``δ`` and
    ``min_support``; ``step_cut`` gives every ladder run no time (the ladder ends, cut, and
    the top-k search does all the work); ``seeded`` lets the first try finish but reports it
    cut, so the ladder climbs from its patterns."""
    import pcfair.patterns.tree_search as TS

    original = TS._tree_search
    calls = []

    def first_try_cut(tb, sens, query, **kw):
        res = original(tb, sens, query, **kw)
        if query.mode == "topk" and not calls:
            calls.append(1)
            res.complete = False  # its patterns are real ones: the ladder starts from them
        return res

    pc, sens = model(seed, kind, n, zeros, False, ties)
    want = sorted((abs(sc) for sc, p in brute(pc, sens, delta).values() if p >= support),
                  reverse=True)[:k]
    old = TS.LADDER_STEP_SECONDS, TS.LADDER_AFTER_SECONDS
    TS.LADDER_STEP_SECONDS = 0.0 if step_cut else old[0]
    TS.LADDER_AFTER_SECONDS = 1.0 if seeded else 0.0
    TS._tree_search = first_try_cut if seeded else original
    try:
        got = run(pc, sens, delta, mode="topk", k=k, min_support=support)
    finally:
        TS.LADDER_STEP_SECONDS, TS.LADDER_AFTER_SECONDS = old
        TS._tree_search = original
    alone = run(pc, sens, delta, mode="topk", k=k, min_support=support, ladder=False)
    assert got.complete and alone.complete
    assert [abs(p.score) for p in got.patterns] == pytest.approx(want, abs=1e-9)
    assert [abs(p.score) for p in alone.patterns] == pytest.approx(want, abs=1e-9)
    assert got.best >= (want[0] if want else 0.0) - 1e-9  # the largest |Δ| seen, any support


def test_a_ladder_cut_short_keeps_its_witnesses(monkeypatch):
    """When the top-k search after the ladder is cut by the deadline, the result is
    incomplete and still holds the ladder's witnesses (the best patterns it found)."""
    import pcfair.patterns.tree_search as TS

    pc, sens = model(2, "tan", 6)
    full = run(pc, sens, 0.0, mode="topk", k=3, ladder=False)
    original = TS._tree_search

    def cut_top_k(tb, sens, query, **kw):
        if query.mode == "topk":
            query = query.but(deadline=time.time() - 1)  # no time left for the top-k search
        return original(tb, sens, query, **kw)

    monkeypatch.setattr(TS, "_tree_search", cut_top_k)
    got = run(pc, sens, 0.0, mode="topk", k=3)  # both top-k tries cut: the ladder's answer
    assert not got.complete and got.patterns
    assert abs(got.patterns[0].score) == pytest.approx(abs(full.patterns[0].score), abs=1e-12)


def test_a_huge_log_normaliser_changes_nothing():
    pc, sens = model(11, "tan", 6, tiny=True)
    ref = run(pc, sens, 0.01, mode="all")
    for c in (800.0, -800.0, 5000.0):
        got = run(shift_root_logw(pc, c), sens, 0.01, mode="all")
        assert {key(p) for p in got.patterns} == {key(p) for p in ref.patterns}
        want = {key(p): p for p in ref.patterns}
        for p in got.patterns:
            assert p.score == pytest.approx(want[key(p)].score, abs=1e-12)
            assert p.probability == pytest.approx(want[key(p)].probability, rel=1e-9)


def test_long_chains_do_not_underflow():
    """A 200-feature chain with 1e-12 parameters: products of evidence far below 1e-300 are
    rescaled, so a fully observed pattern keeps a finite, positive probability ratio."""
    rng = np.random.default_rng(5)
    from pcfair.learn.clt import TreeStructure, compile_tree
    from test_bounds import _rows, _variables

    n = 201
    cards = [2] * n
    parent = np.array([-1, 0] + list(range(1, n - 1)), np.int64)
    tables = {v: _rows(rng, (2, 2, 2), False, True) for v in range(1, n)}
    pc = compile_tree(_variables(cards), TreeStructure(0, tuple(range(1, n)), parent,
                                                      np.zeros((n - 1, n - 1))),
                      np.array([0.5, 0.5]), tables)
    tb = TreeBound.from_circuit(pc, 0, 1)
    from pcfair.patterns import _tree_search_kernels as K

    obs = np.array([-1] + [int(v) for v in rng.integers(0, 2, n - 1)], np.int64)
    out = np.zeros(2)
    K.log_masses(obs, tb.kernel_model(), np.zeros((tb.slots, 2)), np.zeros(n, np.bool_), out,
                 tb.linear)
    rows = np.vstack([obs, obs])
    rows[:, 0] = [1, 0]
    want = pc.log_marginal(rows.astype(np.int32)) - pc.log_marginal(
        np.full((1, n), -1, np.int32))[0]
    assert np.all(want < -700)  # beyond exp's range: the rescaling is exercised
    np.testing.assert_allclose(out, want, rtol=1e-10)


def test_deadline_min_support_and_refusals():
    pc, sens = model(3, "tan", 6)
    got = run(pc, sens, 0.0, mode="all", deadline=time.time() - 1)
    assert not got.complete
    ref = search(Problem(pc, 0, 1, sens), SearchQuery(0.01, mode="all", options=PY,
                                                      min_support=0.05))
    sup = run(pc, sens, 0.01, mode="all", min_support=0.05)
    assert {key(p) for p in sup.patterns} == {key(p) for p in ref.patterns}
    assert all(p.probability >= 0.05 for p in sup.patterns)
    tb = TreeBound.from_circuit(pc, 0, 1)
    order = search_order(pc, 0, 1, sens)
    with pytest.raises(OptionError, match="modes"):
        tree_search(tb, sens, SearchQuery(0.1, order=order, mode="pareto"))
    with pytest.raises(OptionError, match="sensitive"):
        tree_search(tb, sens, SearchQuery(0.1, order=[v for v in order if v not in sens] + sens))
    with pytest.raises(OptionError, match="sensitive"):
        tree_search(tb, [0], SearchQuery(0.1, order=order))
    # not a tree model, or another bound forced: a SpecError (the table's adapter asks first,
    # and the Python search answers)
    psdd = random_psdd(np.random.default_rng(0), [2, 2, 2, 2])
    if TreeBound.from_circuit(psdd, 0, 1) is None:
        with pytest.raises(SpecError, match="tree model"):
            search_tree(Problem(psdd, 0, 1, [1]), SearchQuery(0.05))
    with pytest.raises(SpecError, match="'quotient'"):
        search_tree(Problem(pc, 0, 1, sens), SearchQuery(0.05,
                                                         options=SearchOptions(bound="quotient")))
    with pytest.raises(SpecError, match="'pareto'"):
        search_tree(Problem(pc, 0, 1, sens), SearchQuery(0.05, mode="pareto"))
    res = search_tree(Problem(pc, 0, 1, sens), SearchQuery(0.05, mode="topk", k=3))
    assert res.compiled and res.bound == "tree"
    # the engine table runs it for engine="search"
    problem = Problem(pc, 0, 1, sorted(sens))
    assert search_engine(problem, Request("topk", 0.05))[0] == "tree_search"
    assert search_engine(problem, Request("topk", 0.05, search_options=PY))[0] == \
        "python_search"


@pytest.mark.parametrize("split", [1, 2, 3])
@pytest.mark.parametrize("x_first", [False, True])
def test_shares_are_disjoint_and_cover_the_tree(split, x_first):
    """Three shares (as :func:`parallel_search` runs them) merge to the serial answer."""
    from pcfair.patterns.parallel import merge_patterns

    pc, sens = model(7, "deep", 6, ties=True)
    for mode, k in (("all", 1), ("topk", 4)):
        serial = run(pc, sens, 0.01, mode=mode, k=k, x_first=x_first)
        parts = [run(pc, sens, 0.01, mode=mode, k=k, partition=(w, 3, split),
                     x_first=x_first) for w in range(3)]
        assert all(p.complete for p in parts)
        merged = merge_patterns(Problem(pc, 0, 1, sens), SearchQuery(0.01, mode=mode, k=k), parts)
        if mode == "all":
            assert {key(p) for p in merged} == {key(p) for p in serial.patterns}
            # each pattern below the split is found by exactly one share
            found = [key(p) for part in parts for p in part.patterns]
            deep = [q for q in found if len(q[0]) + len(q[1]) > split]
            assert len(deep) == len(set(deep))
        else:
            np.testing.assert_allclose([abs(p.score) for p in merged],
                                       [abs(p.score) for p in serial.patterns], atol=1e-12)


def test_the_plateau_solver_gives_the_answers_of_brute_force():
    """Modes ``first`` and top-k by |Δ| with the plateau solver (which answers whole subtrees
    by sorting) against brute force on random models (with ``min_support`` too, where the
    walk runs alone); the solver must have answered some subtrees, and the walk without it
    gives the same answers."""
    solved = 0
    for seed in range(40):
        kind = ("tan", "root", "deep")[seed % 3]
        pc, sens = model(seed, kind, 4 + seed % 4, zeros=seed % 5 == 0, tiny=seed % 7 == 0,
                         ties=seed % 4 == 0)
        for delta, support in ((0.0, 0.0), (0.02, 0.0), (0.0, 0.01), (0.1, 0.0)):
            want = brute(pc, sens, delta)
            best = sorted((abs(sc) for sc, p in want.values() if p >= support), reverse=True)
            for k in (1, 3, 10):
                got = run(pc, sens, delta, mode="topk", k=k, min_support=support,
                          ladder=False, x_first=seed % 2 == 0)
                walk = run(pc, sens, delta, mode="topk", k=k, min_support=support,
                           ladder=False, plateau=False)
                assert got.complete and walk.complete
                assert [abs(p.score) for p in got.patterns] == pytest.approx(best[:k],
                                                                            abs=1e-9)
                assert [abs(p.score) for p in walk.patterns] == pytest.approx(best[:k],
                                                                             abs=1e-9)
                for p in got.patterns:  # real patterns, scored as the brute force scores
                    score, prob = want[key(p)]
                    assert p.score == pytest.approx(score, abs=1e-9)
                    assert p.probability == pytest.approx(prob, rel=1e-7, abs=1e-15)
                solved += got.solved
            if delta > 0:  # a heap that never fills: every pattern above δ, as "all" finds
                every = run(pc, sens, delta, mode="topk", k=len(want) + 5,
                            min_support=support, ladder=False)
                assert {key(p) for p in every.patterns} == {
                    q for q, (_, p) in want.items() if p >= support}
                solved += every.solved
            for d in (delta, *best[:3]):  # at the largest |Δ|: the plateau's own threshold
                cert = run(pc, sens, d, mode="first", min_support=support)
                assert cert.complete
                assert bool(cert.patterns) == any(b > d + 1e-12 for b in best)
                if cert.patterns:
                    assert abs(cert.patterns[0].score) > d
                    assert key(cert.patterns[0]) in want
                solved += cert.solved
    assert solved > 0


def test_plateau_window_is_where_the_shift_exceeds_the_threshold():
    """:func:`_window` against a fine grid: inside, ``|σ(L + D) − σ(L)| > t``; outside, not."""
    from pcfair.patterns._plateau_kernels import _window

    rng = np.random.default_rng(0)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for _ in range(200):
        dlt = float(rng.choice([-1, 1]) * rng.exponential(3.0))
        thr = float(rng.uniform(0, 1))
        lo, hi = _window(thr, dlt)
        grid = np.linspace(-40, 40, 200001)
        inside = np.abs(sig(grid + dlt) - sig(grid)) > thr
        if lo > hi:
            assert not inside.any()
            continue
        got = (grid > lo) & (grid < hi)
        near = (np.abs(grid - lo) < 1e-3) | (np.abs(grid - hi) < 1e-3)
        assert np.array_equal(got[~near], inside[~near])

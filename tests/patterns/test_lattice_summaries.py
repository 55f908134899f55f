"""Maximal and minimal patterns from the lattice engine's bitmap: the closure passes of
:func:`pcfair.patterns.summaries.extension_summaries` against their definitions on arbitrary
bitmaps, and the same summaries whatever the split of the lattice or the processes."""

from __future__ import annotations

import itertools
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.errors import SummariesOmittedWarning
import _pattern_oracle as oracle
from _pcgen import random_psdd
from pcfair.patterns._arguments import Problem, resolve_problem
from pcfair.patterns.summaries import extension_summaries, summary_word
from pcfair.patterns.lattice import (
    LatticeQuery,
    ScanRun,
    make_plan,
    scan,
    summary_counts,
    summary_patterns,
)

ROOT = Path(__file__).resolve().parents[2]


def brute_summaries(states: np.ndarray, cards: list[int], member: np.ndarray,
                    defined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal and minimal masks straight from ``pc-certifier.md`` §3, quantifying over every
    pair of points (the order of the test oracle's ``_extension_matrix``)."""
    ext = oracle._extension_matrix(states, states)  # ext[i, j]: j ⊒ i (or j = i)
    np.fill_diagonal(ext, False)                      # strict extensions
    complete = np.all(states > 0, axis=1)
    has_x = np.any(states > np.array(cards)[None, :], axis=1)
    maximal = member & ~complete & ~(ext & member[None, :]).any(axis=1)
    up = member & ~(ext & defined[None, :] & ~member[None, :]).any(axis=1)
    # a valid contraction c of p: p ⊒ c strictly, x_c non-empty, with up(c)
    minimal = up & ~(ext.T & (up & has_x)[None, :]).any(axis=1)
    return maximal, minimal


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.tuples(st.integers(1, 3), st.booleans()),
                                           min_size=1, max_size=4), st.integers(1, 5))
def test_closure_passes_match_the_definitions(seed, axes, n_deltas):
    """Arbitrary Σ_d (nested or not) inside a defined set closed under valid contraction, as
    the engine's is (a contraction of a defined pattern has at least its probability)."""
    rng = np.random.default_rng(seed)
    cards = [k for k, _ in axes]
    shape = tuple(2 * k + 1 if sens else k + 1 for k, sens in axes)
    states = np.array(list(itertools.product(*[range(n) for n in shape])), np.int32)
    has_x = np.any(states > np.array(cards)[None, :], axis=1)
    # defined: below some "possible" complete assignment, and with a non-empty x
    complete = np.flatnonzero(np.all(states > 0, axis=1))
    possible = complete[rng.random(len(complete)) < rng.uniform(0.2, 1.0)]
    below = oracle._extension_matrix(states, states[possible]).any(axis=1)
    defined = below & has_x
    member = defined[:, None] & (rng.random((len(states), n_deltas)) < rng.uniform(0.2, 0.9))
    words = np.zeros(len(states), summary_word(n_deltas))
    for d in range(n_deltas):
        words |= (member[:, d].astype(words.dtype) << d)
    words |= defined.astype(words.dtype) << n_deltas
    for d in range(n_deltas):
        want_max, want_min = brute_summaries(states, cards, member[:, d], defined)
        got = extension_summaries(words.copy(), shape, tuple(cards), n_deltas, collect=d)
        assert got["maximal"][0][d] == want_max.sum()
        assert got["maximal"][1].tolist() == np.flatnonzero(want_max).tolist()
        assert got["minimal"][0][d] == want_min.sum()
        assert got["minimal"][1].tolist() == np.flatnonzero(want_min).tolist()


def _model(seed: int, cards: list[int]):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, [2] + cards, zeros=bool(seed % 2))
    return tuple(resolve_problem(pc, "x0", [f"x{i}" for i in range(1, 3)], 1))


QUERY = LatticeQuery(deltas=(0.0, 0.03, 0.1), summaries=True)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=3, max_size=5))
def test_chunk_splits_give_the_same_bitmap_and_summaries(seed, cards):
    pc, d, fav, sens = _model(seed, cards)
    runs = [scan(Problem(pc, d, fav, sens), QUERY, ScanRun(min_chunks=m)) for m in (1, 3, 9)]
    assert len({r.stats["chunks"] for r in runs}) > 1
    bitmaps = [r.bits.copy() for r in runs]
    counts = [summary_counts(r) for r in runs]
    for b, c in zip(bitmaps[1:], counts[1:]):
        np.testing.assert_array_equal(b, bitmaps[0])
        for kind in ("maximal", "minimal"):
            assert c[kind].tolist() == counts[0][kind].tolist()


def test_processes_give_the_same_summaries_and_scores():
    pc, d, fav, sens = _model(8, [2, 3, 2, 2])
    names = [pc.names[v] for v in sens]
    with ProcessPoolExecutor(2) as pool:
        serial = scan(Problem(pc, d, fav, sens), QUERY)
        two = scan(Problem(pc, d, fav, sens), QUERY, ScanRun(executor=pool))
        assert two.stats["chunks"] > 1
        np.testing.assert_array_equal(two.bits, serial.bits)
        query = LatticeQuery(deltas=(0.03,), summaries=True)  # this model has both kinds there
        for kind in ("maximal", "minimal"):
            a = summary_patterns(pc, scan(Problem(pc, d, fav, sens), query), kind, query)
            two = scan(Problem(pc, d, fav, sens), query, ScanRun(executor=pool))
            b = summary_patterns(pc, two, kind, query, executor=pool)
            assert a[0].tolist() == b[0].tolist() and len(a[0]) > 0
            np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-15)
            assert np.all(np.abs(b[1]) > query.deltas[0] + 1e-12)
        census = [pcfair.pattern_census(pc, pc.names[d], names, deltas=(0.02, 0.1), ks=(1,),
                                        executor=ex) for ex in (None, pool)]
    for col in ("maximal", "minimal"):
        assert census[0][col].tolist() == census[1][col].tolist()
        assert all(v is not None for v in census[1][col])


def test_too_many_thresholds_or_too_little_memory():
    pc, d, fav, sens = _model(3, [2, 2, 2])
    deltas = tuple(np.linspace(0.0, 0.3, 16))
    with pytest.raises(pcfair.patterns.LatticeTooLarge, match="at most 15 thresholds"):
        scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=deltas, summaries=True))
    names = [pc.names[v] for v in sens]
    with pytest.warns(SummariesOmittedWarning, match="more than 15 thresholds"):
        census = pcfair.pattern_census(pc, pc.names[d], names, deltas=deltas, ks=(1,))
    assert census["maximal"].isna().all() and (census["patterns"] >= 0).all()
    fit = pcfair.pattern_census(pc, pc.names[d], names, deltas=deltas[:15], ks=(1,))
    assert fit["maximal"].notna().all()
    with pytest.raises(pcfair.patterns.LatticeTooLarge, match="bitmap"):
        scan(Problem(pc, d, fav, sens), QUERY,
             ScanRun(max_bytes=10, plan=make_plan(pc, d, fav, sens)))


def test_a_census_over_the_budget_says_what_it_left_out():
    """The shipped Adult CLT (12.3 M points: a 12 MB bitmap) under an 8 MiB budget: the
    census warns with the bitmap's size, leaves maximal/minimal None, keeps the rest exact."""
    pc = pcfair.load(Path(__file__).resolve().parents[2] / "circuits" / "adult_clt.json")
    args = (pc, "target", ["marital-status", "race", "sex", "native-country"])
    with pytest.warns(SummariesOmittedWarning, match="12,301,875 points.* needs 12 MiB"):
        small = pcfair.pattern_census(*args, ks=(1, 10), max_bytes=8 << 20)
    full = pcfair.pattern_census(*args, ks=(1, 10))
    assert small["maximal"].isna().all() and full["maximal"].notna().all()
    assert small[["patterns", "pareto"]].equals(full[["patterns", "pareto"]])
    for col in ("top10_abs_score", "top10_divergence"):  # chunks sum in another order: ulps
        np.testing.assert_allclose(small[col], full[col], rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=2, max_size=4),
       st.sampled_from([0.0, 0.02, 0.05]), st.sampled_from([0.01, 0.03, 0.1]))
def test_summaries_with_min_support_match_the_oracle(seed, cards, delta, support):
    """Patterns with ``P(x, y) < min_support`` are treated as undefined by the summaries."""
    import dataclasses

    from hypothesis import assume

    pc, d, fav, sens = _model(seed, cards)
    arrays = oracle.pattern_arrays(pc, list(pc.variables.cardinalities), d, sens, fav)
    p_xy = np.asarray(arrays.p_xy, np.float64)
    assume(np.all(np.abs(p_xy - support) > 1e-9))  # support decided by rounding otherwise
    arrays = dataclasses.replace(arrays, defined=arrays.defined & (p_xy >= support))
    clear, border = oracle.threshold_bands(arrays, delta)
    assume(not border.any())
    masks = oracle.summary_masks(arrays, clear)
    names = [pc.names[v] for v in sens]
    for kind in ("maximal", "minimal"):
        got = pcfair.find_patterns(pc, pc.names[d], names, delta, kind=kind, engine="lattice",
                                   min_support=support)
        keys = {(tuple(sorted((int(k[1:]), int(v)) for k, v in p.x.items())),
                 tuple(sorted((int(k[1:]), int(v)) for k, v in p.y.items()))) for p in got}
        assert keys == {arrays.keys[i] for i in np.flatnonzero(masks[kind])}, kind
        assert all(abs(p.score) > delta + 1e-12 for p in got)


def test_a_time_limit_gives_incomplete_summaries():
    pc = pcfair.load(ROOT / "circuits" / "compas_clt.json")
    sens = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
    for budget in (5 << 20, 1 << 30):  # several chunks, one chunk
        ps = pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, kind="minimal", engine="lattice",
                                  time_limit=1e-9, max_bytes=budget)
        assert not ps.complete

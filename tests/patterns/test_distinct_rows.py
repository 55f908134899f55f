"""``find_patterns(..., kind="topk", data=, distinct_rows=True)``: a top-k of which no two
patterns match the same rows of the table (rephrasings such as ``s=1 | a=0`` and
``s=1 | a=0, b=1`` where the table has ``b = a`` are merged into the higher-ranked one), and
:func:`pcfair.patterns.support.distinct_by_rows` under it."""

from __future__ import annotations

import functools
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.errors import OptionError
from pcfair.learn import learn_pc
from pcfair.patterns import api
from pcfair.patterns.api import Pattern
from pcfair.patterns.support import distinct_by_rows

D, S = "d", ["s", "g"]


def _table(seed: int, n: int = 300) -> pd.DataFrame:
    """A table where ``b`` repeats ``a`` and ``e`` is ``1 - c``: every pattern with ``a``
    has a rephrasing with ``b`` (and ``c`` with ``e``) that matches the same rows."""
    rng = np.random.default_rng(seed)
    s, g, a, c = (rng.integers(0, 2, n) for _ in range(4))
    d = (rng.random(n) < 0.2 + 0.3 * s * a + 0.2 * c + 0.2 * g * (1 - c)).astype(int)
    return pd.DataFrame({"d": d, "s": s, "g": g, "a": a, "b": a, "c": c, "e": 1 - c})


@functools.lru_cache(maxsize=None)
def _model():
    return learn_pc(_table(1), D)


def _rows(pattern, table: pd.DataFrame) -> frozenset:
    """The rows of ``table`` matching ``x ∪ y``, row by row (not through pcfair)."""
    match = np.ones(len(table), bool)
    for name, value in {**pattern.x, **pattern.y}.items():
        match &= (table[name] == value).to_numpy()
    return frozenset(np.flatnonzero(match).tolist())


def _ranked(patterns, rank_by: str) -> list:
    key = (lambda p: -p.divergence) if rank_by == "divergence" else (lambda p: -p.abs_score)
    return sorted(patterns, key=key)


def _brute_force(patterns, table: pd.DataFrame, k: int) -> list:
    kept, seen = [], set()
    for p in patterns:
        rows = _rows(p, table)
        if rows and rows in seen:
            continue
        seen.add(rows)
        kept.append(p)
    return kept[:k]


def _check_merging(kept, ranked, table: pd.DataFrame) -> int:
    """Kept patterns match pairwise-distinct rows (none merged among those matching no row);
    every pattern left out before the last kept one matches the rows of a kept pattern ranked
    above it. Returns how many were left out."""
    kept_rows = [_rows(p, table) for p in kept]
    described = [r for r in kept_rows if r]
    assert len(described) == len(set(described))
    texts = {p.text() for p in kept}
    last = max(i for i, p in enumerate(ranked) if p.text() in texts) if kept else -1
    above, left_out = set(), 0
    for p in ranked[:last + 1]:
        rows = _rows(p, table)
        if p.text() in texts:
            above.add(rows)
        else:
            assert rows and rows in above, p.text()
            left_out += 1
    return left_out


@pytest.mark.parametrize("engine", ["lattice", "search"])
@pytest.mark.parametrize("rank_by", ["discrimination", "divergence"])
@pytest.mark.parametrize("k, support", [(1, 0.0), (10, 0.0), (10, 0.01), (40, 0.01)])
def test_the_top_k_is_the_brute_force_dedup_of_every_pattern(engine, rank_by, k, support):
    pc, table = _model(), _table(1)
    every = pcfair.find_patterns(pc, D, S, 0.02, kind="all", engine="lattice",
                                 min_support=support)
    ranked = _ranked(every.patterns, rank_by)
    expected = _brute_force(ranked, table, k)
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=k, rank_by=rank_by,
                               engine=engine, data=table, distinct_rows=True,
                               min_support=support)
    assert top.complete and top.count == len(top) == len(expected) == k
    value = (lambda p: p.divergence) if rank_by == "divergence" else (lambda p: p.abs_score)
    assert [value(p) for p in top] == pytest.approx([value(p) for p in expected], abs=1e-12)
    assert sorted(map(sorted, (_rows(p, table) for p in top))) == \
        sorted(map(sorted, (_rows(p, table) for p in expected)))
    assert [p.rows for p in top] == [len(_rows(p, table)) for p in top]
    assert _check_merging(top.patterns, ranked, table) == top.stats["distinct_rows"]["merged"]


def test_rephrasings_are_merged_into_the_higher_ranked_one():
    pc, table = _model(), _table(1)
    plain = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=10, data=table,
                                 min_support=0.01)
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=10, data=table,
                               min_support=0.01, distinct_rows=True)
    plain_rows = [_rows(p, table) for p in plain]
    assert len(set(plain_rows)) < len(plain_rows)          # the issue: the same people twice
    assert len({_rows(p, table) for p in top}) == len(top) == 10
    assert top[0] == plain[0]
    assert top.stats["distinct_rows"]["merged"] > 0
    assert "distinct_rows" not in plain.stats


def test_patterns_matching_no_row_are_never_merged():
    pc, table = _model(), _table(1)
    every = _ranked(pcfair.find_patterns(pc, D, S, 0.02, kind="all").patterns,
                    "discrimination")
    empty = [p for p in every if not _rows(p, table)]
    assert len(empty) > 1
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=len(every), data=table,
                               distinct_rows=True)
    assert [p.text() for p in top if p.rows == 0] == [p.text() for p in empty]
    assert len(top) == len(_brute_force(every, table, len(every))) < len(every)


def test_the_list_grows_until_k_are_distinct_or_none_are_left():
    pc, table = _model(), _table(1)
    every = pcfair.find_patterns(pc, D, S, 0.02, kind="all", min_support=0.01)
    distinct = len({_rows(p, table) for p in every})
    assert distinct < every.count
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=distinct, data=table,
                               min_support=0.01, distinct_rows=True)
    assert len(top) == distinct and top.complete
    assert top.stats["distinct_rows"]["rounds"] > 1
    more = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=distinct + 5, data=table,
                                min_support=0.01, distinct_rows=True)
    assert len(more) == distinct and more.complete                 # the list ran out
    assert more.stats["distinct_rows"]["fetched"] == every.count
    assert more.stats["distinct_rows"]["merged"] == every.count - distinct


def test_one_deadline_covers_every_round(monkeypatch):
    pc, table = _model(), _table(1)
    answer = api.engines.answer

    def slow(problem, request):
        res = answer(problem, request)
        time.sleep(0.4)
        return res

    monkeypatch.setattr(api.engines, "answer", slow)
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=30, data=table,
                               min_support=0.01, distinct_rows=True, time_limit=0.3)
    assert not top.complete
    assert top.stats["distinct_rows"]["rounds"] == 1
    assert len({_rows(p, table) for p in top}) == len(top) < 30


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 25), st.sampled_from([0.0, 0.01]),
       st.sampled_from(["discrimination", "divergence"]))
def test_any_table_gives_distinct_rows_and_merges_only_rephrasings(seed, k, support, rank_by):
    pc = _model()
    table = _table(seed, n=int(np.random.default_rng(seed).integers(0, 60)))
    every = pcfair.find_patterns(pc, D, S, 0.02, kind="all", min_support=support)
    ranked = _ranked(every.patterns, rank_by)
    top = pcfair.find_patterns(pc, D, S, 0.02, kind="topk", k=k, rank_by=rank_by,
                               data=table, min_support=support, distinct_rows=True)
    assert len(top) == len(_brute_force(ranked, table, k))
    assert _check_merging(top.patterns, ranked, table) == top.stats["distinct_rows"]["merged"]


def _pattern(y: dict, score: float) -> Pattern:
    return Pattern(x={"s": 1}, y=y, score=score, probability=0.1, divergence=0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, None]), st.sampled_from([0, 1]),
                          st.sampled_from([0, 1])), max_size=12),
       st.lists(st.fixed_dictionaries({}, optional={"a": st.sampled_from([0, 1]),
                                                    "b": st.sampled_from([0, 1])}),
                max_size=9),
       st.one_of(st.none(), st.integers(1, 6)))
def test_distinct_by_rows_keeps_the_first_of_each_row_set(cells, ys, k):
    b = CircuitBuilder({"s": [0, 1], "a": [0, 1], "b": [0, 1]})
    pc = b.build(b.product(*(b.categorical(v, [0.5, 0.5]) for v in ("s", "a", "b"))))
    table = pd.DataFrame(cells, columns=["s", "a", "b"])
    patterns = [_pattern(y, 1 - i / 10) for i, y in enumerate(ys)]
    kept, merged = distinct_by_rows(pc, patterns, table, k)
    seen, expected, dropped = set(), [], 0
    for p in patterns:
        if k is not None and len(expected) == k:
            break
        rows = _rows(p, table)
        if rows and rows in seen:
            dropped += 1
            continue
        seen.add(rows)
        expected.append(p)
    assert (kept, merged) == (expected, dropped)


def test_distinct_rows_needs_a_table_and_a_top_k():
    pc, table = _model(), _table(1)
    with pytest.raises(OptionError, match="needs data="):
        pcfair.find_patterns(pc, D, S, 0.02, kind="topk", distinct_rows=True)
    with pytest.raises(OptionError, match="kind='topk', not 'all'"):
        pcfair.find_patterns(pc, D, S, 0.02, data=table, distinct_rows=True)
    with pytest.raises(OptionError, match="count_only"):
        pcfair.find_patterns(pc, D, S, 0.02, kind="topk", data=table, count_only=True,
                             distinct_rows=True)

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pcfair.patterns import find_patterns, sample_patterns
from _pcgen import random_mixture, random_psdd


def _keys(ps):
    return {(tuple(sorted(p.x.items())), tuple(sorted(p.y.items()))): p for p in ps}


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_sampled_patterns_are_real_patterns(seed, memo):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, [2, 2, 3, 2], zeros=False) if seed % 2 else \
        random_mixture(rng, [2, 2, 3, 2])  # sampling needs marginals only
    dense = _keys(find_patterns(pc, "x0", ["x1", "x2"], 0.05, engine="lattice"))
    sampled = sample_patterns(pc, "x0", ["x1", "x2"], 0.05, runs=30, memo=memo,
                              random_state=seed)
    assert not sampled.complete  # sampling never certifies
    got = _keys(sampled)
    assert set(got) <= set(dense)  # no spurious pattern
    for k, p in got.items():
        assert p.score == pytest.approx(dense[k].score, abs=1e-12)
    if dense:  # the best pattern found is on the way to the true best
        assert sampled.stats["explored"] > 0


def test_enough_runs_find_every_pattern_of_a_small_model():
    pc = random_psdd(np.random.default_rng(4), [2, 2, 2], zeros=False)
    dense = _keys(find_patterns(pc, "x0", ["x1"], 0.01, engine="lattice"))
    sampled = _keys(sample_patterns(pc, "x0", ["x1"], 0.01, runs=300, random_state=0))
    assert set(sampled) == set(dense)


def test_reproducible_and_needs_a_budget():
    pc = random_psdd(np.random.default_rng(5), [2, 3, 2, 2], zeros=False)
    a = sample_patterns(pc, "x0", ["x1", "x2"], 0.02, runs=20, random_state=9)
    b = sample_patterns(pc, "x0", ["x1", "x2"], 0.02, runs=20, random_state=9)
    assert [p.text() for p in a] == [p.text() for p in b]
    with pytest.raises(ValueError, match="runs"):
        sample_patterns(pc, "x0", ["x1"], 0.02)
    top = sample_patterns(pc, "x0", ["x1", "x2"], 0.02, kind="topk", k=3, runs=20,
                          random_state=1)
    assert len(top) <= 3 and [p.abs_score for p in top] == sorted(
        (p.abs_score for p in top), reverse=True)
    front = sample_patterns(pc, "x0", ["x1", "x2"], 0.02, kind="pareto", runs=20,
                            random_state=1)
    for p in front:  # no other sampled pattern beats a front member on both
        assert not any(q.abs_score >= p.abs_score and q.probability >= p.probability
                       and q is not p for q in front)


def test_search_progress_counter_only_when_asked(capsys):
    from pcfair.patterns import certify

    pc = random_psdd(np.random.default_rng(2), [2, 2, 3, 2], zeros=False)
    certify(pc, "x0", ["x1", "x2"], 0.99, engine="search", progress=False)
    assert capsys.readouterr().err == ""
    certify(pc, "x0", ["x1", "x2"], 0.99, engine="search", progress=True)
    assert "branch and bound" in capsys.readouterr().err


def test_top_level_names():
    import pcfair
    import pcfair.patterns as P

    for name in ("certify", "find_patterns", "sample_patterns", "pattern_census",
                 "fairness_metrics"):
        assert getattr(pcfair, name) is getattr(P, name)

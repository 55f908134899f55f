import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder
from _pcgen import joint_table, random_mixture, random_psdd


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=4))
def test_sample_frequencies_match_probabilities(seed, cards):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, cards) if seed % 2 else random_mixture(rng, cards)
    xs, p = joint_table(pc)
    n = 20000
    codes = pc.sample(n, random_state=seed).to_numpy(dtype=int)
    index = {tuple(x): i for i, x in enumerate(xs)}
    counts = np.bincount([index[tuple(r)] for r in codes], minlength=len(xs))
    # every sample has positive probability, and frequencies are within 5 standard errors
    assert np.all(p[counts > 0] > 0)
    se = np.sqrt(p * (1 - p) / n) + 1e-12
    assert np.all(np.abs(counts / n - p) <= 5 * se + 1e-3)


def test_conditional_sampling_and_reproducibility():
    rng = np.random.default_rng(1)
    pc = random_psdd(rng, [2, 3, 2])
    xs, p = joint_table(pc)
    e = {"x1": 2}
    mask = xs[:, 1] == 2
    df = pc.sample(20000, e, random_state=7)
    assert (df["x1"] == 2).all()
    cond = p[mask] / p[mask].sum()
    freq = df.groupby(["x0", "x2"]).size().reindex(
        [tuple(x[[0, 2]]) for x in xs[mask]], fill_value=0).to_numpy() / len(df)
    assert np.all(np.abs(freq - cond) < 0.02)
    assert pc.sample(50, e, random_state=3).equals(pc.sample(50, e, random_state=3))


def test_sampling_zero_probability_evidence_raises():
    b = CircuitBuilder({"x": [0, 1]})
    pc = b.build(b.categorical("x", [1.0, 0.0]))
    with pytest.raises(pcfair.EvidenceError):
        pc.sample(3, {"x": 1})


def test_map_regression_max_product_not_max_marginal():
    """circuit-layer.md §9.4: the top-down max-marginal pass would pick a = 1."""
    b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    root = b.decision([(b.indicator("a", 1), b.categorical("b", [0.5, 0.5]), 0.6),
                       (b.indicator("a", 0), b.categorical("b", [0.1, 0.9]), 0.4)])
    assignment, logp = b.build(root).map()
    assert assignment == {"a": 0, "b": 1}
    assert np.exp(logp) == pytest.approx(0.36)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=5))
def test_map_matches_brute_force_on_deterministic_circuits(seed, cards):
    pc = random_psdd(np.random.default_rng(seed), cards)
    xs, p = joint_table(pc)
    assignment, logp = pc.map()
    assert np.exp(logp) == pytest.approx(p.max(), rel=1e-9)
    assert pc.probability(assignment) == pytest.approx(p.max(), rel=1e-9)

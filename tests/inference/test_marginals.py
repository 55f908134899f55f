import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder
from _pcgen import all_assignments, brute_marginal, joint_table, random_mixture, random_psdd


def naive_bayes():
    """The Juice README example (circuit-layer.md §9.3)."""
    b = CircuitBuilder({"rain": [0, 1], "rainbow": [0, 1], "wet": [0, 1]})
    root = b.decision([
        (b.indicator("rain", 1), b.product(b.bernoulli("rainbow", 0.7), b.bernoulli("wet", 0.9)), 0.4),
        (b.indicator("rain", 0), b.product(b.bernoulli("rainbow", 0.2), b.bernoulli("wet", 0.3)), 0.6),
    ])
    return b.build(root)


def test_naive_bayes_golden_values():
    pc = naive_bayes()
    assert pc.probability({"rain": 1, "rainbow": 1, "wet": 1}) == pytest.approx(0.252, rel=1e-12)
    assert pc.probability({"rain": 1, "rainbow": 0, "wet": 0}) == pytest.approx(0.012, rel=1e-12)
    assert pc.probability({"rainbow": 1}) == pytest.approx(0.40, rel=1e-12)
    assert pc.conditional({"rain": 1}, {"rainbow": 1, "wet": 1}) == pytest.approx(0.875, rel=1e-12)


def test_spn_golden_values():
    """The SPFlow README example (circuit-layer.md §9.5)."""
    b = CircuitBuilder(3)
    v0, v1, v2 = "1", "2", "3"
    left = b.product(
        b.categorical(v0, [0.2, 0.8]),
        b.sum([b.product(b.categorical(v1, [0.3, 0.7]), b.categorical(v2, [0.4, 0.6])),
               b.product(b.categorical(v1, [0.5, 0.5]), b.categorical(v2, [0.6, 0.4]))],
              [0.3, 0.7]),
    )
    right = b.product(b.categorical(v0, [0.2, 0.8]), b.categorical(v1, [0.3, 0.7]),
                      b.categorical(v2, [0.4, 0.6]))
    pc = b.build(b.sum([left, right], [0.4, 0.6]))
    assert pc.log_marginal({v0: 1, v1: 0, v2: 1})[0] == pytest.approx(-1.90730501, abs=1e-8)
    assert pc.log_marginal({v1: 0, v2: 1})[0] == pytest.approx(-1.68416146, abs=1e-8)


def test_evidence_forms_agree():
    pc = naive_bayes()
    df = pd.DataFrame({"rain": [1, np.nan, 0], "wet": [1, 1, np.nan]})
    arr = np.array([[1, -1, 1], [-1, -1, 1], [0, -1, -1]])
    dicts = [{"rain": 1, "wet": 1}, {"wet": 1}, {"rain": 0}]
    a, b_, c = pc.log_marginal(df), pc.log_marginal(arr), pc.log_marginal(dicts)
    np.testing.assert_allclose(a, b_)
    np.testing.assert_allclose(a, c)


def test_unknown_variable_and_value_are_clear_errors():
    pc = naive_bayes()
    with pytest.raises(pcfair.VariableError, match="unknown variable 'snow'"):
        pc.log_marginal({"snow": 1})
    with pytest.raises(pcfair.VariableError, match="unknown value"):
        pc.log_marginal({"rain": "maybe"})
    with pytest.raises(pcfair.VariableError, match="out of range"):
        pc.log_marginal(np.array([[2, 0, 0]]))


def test_zero_probability_evidence_is_an_error():
    b = CircuitBuilder({"x": [0, 1], "y": [0, 1]})
    pc = b.build(b.product(b.categorical("x", [1.0, 0.0]), b.categorical("y", [0.5, 0.5])))
    with pytest.raises(pcfair.EvidenceError, match="probability zero"):
        pc.conditional({"y": 1}, {"x": 1})
    assert pc.conditional({"x": 1}, {"x": 0}) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=6))
def test_marginals_and_conditionals_match_brute_force(seed, cards):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, cards) if seed % 3 else random_mixture(rng, cards)
    xs, p = joint_table(pc)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    ev = np.where(rng.random((20, len(cards))) < 0.4, -1, xs[rng.integers(len(xs), size=20)])
    got = np.exp(pc.log_marginal(ev))
    want = np.array([brute_marginal(xs, p, e) for e in ev])
    np.testing.assert_allclose(got, want, atol=1e-12, rtol=1e-9)
    np.testing.assert_allclose(pc.log_marginal(ev, backend="numpy"), pc.log_marginal(ev),
                               atol=1e-12)
    # a conditional: first variable's value given the rest of the row
    for e in ev[:5]:
        e = e.copy()
        q = np.full_like(e, -1)
        q[0], e[0] = (e[0] if e[0] >= 0 else 0), -1
        pe = brute_marginal(xs, p, e)
        if pe == 0:
            continue
        joint = np.where(e >= 0, e, q)
        want = brute_marginal(xs, p, joint) / pe
        got = pc.conditional(pd.DataFrame([q], columns=pc.names).replace(-1, np.nan),
                             pd.DataFrame([e], columns=pc.names).replace(-1, np.nan))
        assert got[0] == pytest.approx(want, abs=1e-10)


def test_large_batch_uses_all_rows():
    pc = naive_bayes()
    xs = all_assignments([2, 2, 2])
    big = np.tile(xs, (1000, 1))
    out = pc.log_marginal(big)
    np.testing.assert_allclose(np.exp(out).reshape(1000, 8).sum(axis=1), 1.0)

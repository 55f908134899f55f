"""Unit tests of ``pcfair.audits.cbs.scoring`` (spec cbs.md section 7, tests 1-7)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cbs_oracle import bernoulli_F

from pcfair.audits.cbs import CBSOptionError
from pcfair.audits.cbs.scoring import BernoulliScore, GaussianLogitShiftScore
from pcfair.audits.cbs.search import score_subgroup
from pcfair.errors import DataError

TOL = 1e-5


# ------------------------------------------------------------------ test 1: constant expectations
def test_bernoulli_constant_expectation_matches_kl_closed_form():
    event = np.r_[np.ones(70), np.zeros(30)]
    expected = np.full(100, 0.5)
    s = BernoulliScore("positive")
    assert s.mle(event, expected) == pytest.approx(7 / 3, abs=TOL)
    kl = 0.7 * np.log(0.7 / 0.5) + 0.3 * np.log(0.3 / 0.5)
    assert s.score(event, expected) == pytest.approx(8.228288, abs=TOL)
    assert s.score(event, expected) == pytest.approx(100 * kl, abs=1e-9)


def test_bernoulli_zeros_with_and_without_penalty():
    event = np.r_[np.ones(70), np.zeros(30)]
    expected = np.full(100, 0.5)
    s = BernoulliScore("positive")
    lo, hi = s.zeros(event, expected, penalty=1.0)
    assert lo == pytest.approx(1.053026, abs=TOL)
    assert hi == pytest.approx(5.676034, abs=TOL)
    lo0, hi0 = s.zeros(event, expected, penalty=0.0)
    assert lo0 == pytest.approx(1.0, abs=TOL)
    assert hi0 == pytest.approx(6.056135, abs=TOL)
    for q in (lo, hi):
        assert s.score(event, expected, q=q) - 1.0 == pytest.approx(0.0, abs=1e-9)


def test_closed_form_odds_ratio_for_constant_expectation():
    rng = np.random.default_rng(3)
    p, n = 0.3, 400
    event = (rng.random(n) < 0.45).astype(float)
    r = event.mean()
    q = BernoulliScore("positive").mle(event, np.full(n, p))
    assert q == pytest.approx((r / (1 - r)) / (p / (1 - p)), rel=1e-9)


# ------------------------------------------------------------------ tests 2-3: mixed expectations
def test_bernoulli_mixed_expectations():
    s = BernoulliScore("positive")
    event, expected = [1, 0, 1, 1], [0.2, 0.4, 0.6, 0.8]
    assert s.mle(event, expected) == pytest.approx(3.840947, abs=TOL)
    assert s.score(event, expected) == pytest.approx(0.647548, abs=TOL)


EXPECTED_10 = np.r_[np.arange(1, 10) / 10, 0.5]


def test_bernoulli_ten_records_positive_direction():
    event = [0, 1, 1, 0, 1, 1, 1, 1, 1, 1]
    s = BernoulliScore("positive")
    assert s.mle(event, EXPECTED_10) == pytest.approx(5.956499, abs=TOL)
    assert s.score(event, EXPECTED_10) == pytest.approx(2.510511, abs=TOL)


def test_bernoulli_ten_records_negative_direction_and_wrong_direction():
    event = [0, 0, 0, 0, 1, 0, 1, 1, 0, 0]
    neg = BernoulliScore("negative")
    assert neg.mle(event, EXPECTED_10) == pytest.approx(0.330957, abs=TOL)
    assert neg.score(event, EXPECTED_10) == pytest.approx(1.078393, abs=TOL)
    pos = BernoulliScore("positive")
    assert pos.score(event, EXPECTED_10) == 0.0
    assert pos.mle(event, EXPECTED_10) == 1.0
    assert pos.zeros(event, EXPECTED_10) is None


# ------------------------------------------------------------------ test 4: invariants
probs = st.floats(0.01, 0.99)


@st.composite
def bernoulli_data(draw):
    n = draw(st.integers(1, 40))
    expected = np.array(draw(st.lists(probs, min_size=n, max_size=n)))
    event = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=float)
    return event, expected


@settings(max_examples=60, deadline=None, derandomize=True)
@given(bernoulli_data(), st.sampled_from(["positive", "negative"]))
def test_bernoulli_score_is_zero_at_q1_nonnegative_and_matches_oracle(data, direction):
    event, expected = data
    s = BernoulliScore(direction)
    assert s.score(event, expected, q=1.0) == pytest.approx(0.0, abs=1e-12)
    F = s.score(event, expected)
    assert F >= 0.0
    oracle, _ = bernoulli_F(event, expected, direction)
    assert F == pytest.approx(oracle, abs=1e-6)


@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_bernoulli_edge_cases_are_finite(direction):
    p = np.linspace(0.1, 0.9, 9)
    s = BernoulliScore(direction)
    for event in (np.ones(9), np.zeros(9)):
        F, q = s.score(event, p), s.mle(event, p)
        assert np.isfinite(F) and np.isfinite(q)
    assert BernoulliScore("positive").score(np.ones(9), p) == pytest.approx(
        -np.log(p).sum(), abs=1e-4
    )
    assert BernoulliScore("negative").score(np.zeros(9), p) == pytest.approx(
        -np.log1p(-p).sum(), abs=1e-4
    )
    # expectations of exactly 0 or 1 are clipped, never NaN
    assert np.isfinite(s.score([1, 0, 1], [0.0, 1.0, 0.5]))


def test_empty_subgroup_scores_zero():
    assert BernoulliScore().score([], []) == 0.0
    assert GaussianLogitShiftScore(sigma=1.0).score([]) == 0.0


# ------------------------------------------------------------------ test 5: symmetry
@settings(max_examples=60, deadline=None, derandomize=True)
@given(bernoulli_data())
def test_bernoulli_flip_symmetry(data):
    event, expected = data
    pos, neg = BernoulliScore("positive"), BernoulliScore("negative")
    assert pos.score(event, expected) == pytest.approx(
        neg.score(1 - event, 1 - expected), abs=1e-8
    )
    q, q_flip = pos.mle(event, expected), neg.mle(1 - event, 1 - expected)
    if 1e-5 < q < 1e5:
        assert q_flip == pytest.approx(1 / q, rel=1e-7)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=30), st.floats(0.1, 3))
def test_gaussian_sign_flip_symmetry(delta, sigma):
    d = np.array(delta)
    pos = GaussianLogitShiftScore("positive", sigma)
    neg = GaussianLogitShiftScore("negative", sigma)
    assert pos.score(d) == pytest.approx(neg.score(-d), abs=1e-10)
    assert pos.mle(d) == pytest.approx(-neg.mle(-d), abs=1e-12)
    assert pos.score(d, mu=0.0) == 0.0
    assert pos.score(d) >= 0.0


def test_gaussian_logit_difference_flips_with_complementary_event():
    p = np.array([0.2, 0.7, 0.9])
    e = np.array([0.4, 0.5, 0.6])
    d = GaussianLogitShiftScore.logit_difference(p, e)
    assert np.allclose(GaussianLogitShiftScore.logit_difference(1 - p, 1 - e), -d)
    assert d[0] == pytest.approx(np.log(0.2 / 0.8) - np.log(0.4 / 0.6))


# ------------------------------------------------------------------ test 6: Gaussian values
def test_gaussian_unit_shift():
    s = GaussianLogitShiftScore("positive", sigma=1.0)
    assert s.mle([1, 1, 1, 1]) == pytest.approx(1.0)
    assert s.score([1, 1, 1, 1]) == pytest.approx(2.0)
    assert GaussianLogitShiftScore("negative", sigma=1.0).score([1, 1, 1, 1]) == 0.0


def test_gaussian_three_records_and_penalised_zeros():
    s = GaussianLogitShiftScore("positive", sigma=0.5)
    delta = [0.5, -0.1, 0.8]
    assert s.mle(delta) == pytest.approx(0.4, abs=TOL)
    assert s.score(delta) == pytest.approx(0.96, abs=TOL)
    lo, hi = s.zeros(delta, penalty=0.5)
    assert lo == pytest.approx(0.123113, abs=TOL)
    assert hi == pytest.approx(0.676887, abs=TOL)
    assert s.zeros(delta, penalty=0.97) is None
    assert s.zeros(delta, penalty=0.0) == pytest.approx((0.0, 0.8))


# ------------------------------------------------------------------ test 7: penalty
def test_penalty_counts_only_constrained_attributes():
    import pandas as pd

    X = pd.DataFrame({"a": [0, 1, 2] * 40, "b": [0, 1] * 60})
    event = np.tile([1.0, 0.0, 1.0, 1.0], 30)
    expected = np.full(120, 0.5)
    F_all = BernoulliScore().score(event, expected)
    # all values of both attributes: no penalty at all
    s, _, n = score_subgroup(X, event, expected, {"a": [0, 1, 2]}, penalty=1.0)
    assert s == pytest.approx(F_all) and n == 120
    s, _, _ = score_subgroup(X, event, expected, None, penalty=3.0)
    assert s == pytest.approx(F_all)
    # two listed values of a, all of b: penalty 2 * lambda
    rows = X.a.isin([0, 2]).to_numpy()
    F = BernoulliScore().score(event[rows], expected[rows])
    s, _, _ = score_subgroup(X, event, expected, {"a": [0, 2], "b": [0, 1]}, penalty=0.7)
    assert s == pytest.approx(F - 2 * 0.7)
    # one value of a and one of b: penalty 2 * lambda
    rows = (X.a == 1).to_numpy() & (X.b == 0).to_numpy()
    F = BernoulliScore().score(event[rows], expected[rows])
    s, _, _ = score_subgroup(X, event, expected, {"a": [1], "b": [0]}, penalty=1.5)
    assert s == pytest.approx(F - 3.0)


# ------------------------------------------------------------------ input errors
def test_scorers_reject_bad_options_and_data():
    with pytest.raises(CBSOptionError, match="direction='up'"):
        BernoulliScore("up")
    with pytest.raises(CBSOptionError, match="sigma"):
        GaussianLogitShiftScore("positive", sigma=0.0)
    with pytest.raises(CBSOptionError, match="penalty"):
        BernoulliScore().score([1], [0.5], penalty=-1)
    with pytest.raises(DataError, match="must lie in"):
        BernoulliScore().score([2], [0.5])
    with pytest.raises(DataError, match="probabilities"):
        BernoulliScore().score([1], [1.5])
    with pytest.raises(DataError, match="NaN"):
        BernoulliScore().score([1], [np.nan])
    with pytest.raises(DataError, match="expected has"):
        BernoulliScore().score([1, 0], [0.5])

"""Tests of pcfair.audits.avoir.bounds: the adaptive Hoeffding bound (spec §6 A)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.audits.avoir import Monitor
from pcfair.audits.avoir.bounds import (
    adaptive_hoeffding_delta,
    adaptive_hoeffding_epsilon,
    AdaptiveHoeffding,
    Hoeffding,
)
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.audits.avoir.bounds import get_bound
from pcfair.errors import SpecError

AH = AdaptiveHoeffding()

# spec §6 A.1 (E): ε(δ, n) with natural logs
EPS_TABLE = [
    (1, 0.05, 1.851994),
    (2, 0.05, 1.532587),
    (10, 0.05, 0.732462),
    (100, 0.05, 0.240184),
    (100, 0.1, 0.232030),
    (100, 0.15, 0.227124),
    (1000, 0.05, 0.077512),
    (1000, 0.1, 0.074987),
    (1000, 0.15, 0.073469),
    (10000, 0.05, 0.024857),
    (10000, 0.1, 0.024070),
    (10000, 0.15, 0.023597),
    (310, 0.05, 0.1379371),
    (1550, 0.05, 0.0624473),
]


@pytest.mark.parametrize(("n", "delta", "expected"), EPS_TABLE)
def test_adaptive_hoeffding_epsilon_table(n, delta, expected):
    assert adaptive_hoeffding_epsilon(delta, n) == pytest.approx(expected, abs=1e-6)


def test_epsilon_is_vectorised():
    n = np.array([r[0] for r in EPS_TABLE])
    d = np.array([r[1] for r in EPS_TABLE])
    np.testing.assert_allclose(AH.epsilon(d, n), [r[2] for r in EPS_TABLE], atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(log_delta=st.floats(min_value=np.log(1e-9), max_value=0.0),
       n=st.integers(min_value=1, max_value=1_000_000))
def test_delta_inverts_epsilon(log_delta, n):
    delta = float(np.exp(log_delta))
    assert adaptive_hoeffding_delta(adaptive_hoeffding_epsilon(delta, n), n) == \
        pytest.approx(delta, rel=1e-9, abs=1e-15)


def test_round_trip_grid_including_the_ends():
    deltas = np.geomspace(1e-9, 1.0, 40)
    ns = np.unique(np.geomspace(1, 1e6, 40).astype(int))
    D, N = np.meshgrid(deltas, ns)
    np.testing.assert_allclose(AH.delta(AH.epsilon(D, N), N), D, rtol=1e-9)


def test_no_observations_means_no_claim():
    assert adaptive_hoeffding_epsilon(0.05, 0) == np.inf
    assert adaptive_hoeffding_delta(0.1, 0) == 1.0
    assert AH.epsilon(0.0, 10) == np.inf


def test_epsilon_is_non_increasing_in_delta_and_n():
    # spec §2.2 (E): monotone over the integers t = 1..2e5 and this δ grid
    t = np.arange(1, 200_001)
    deltas = [1e-9, 1e-4, 0.01, 0.05, 0.1, 0.5, 1.0]
    table = np.vstack([AH.epsilon(d, t) for d in deltas])
    assert np.all(np.diff(table, axis=1) <= 0)  # in n
    assert np.all(np.diff(table, axis=0) <= 0)  # in δ


def test_adaptive_hoeffding_against_plain_hoeffding():
    # spec §2.2 / §6 A.4 (E): Figure 2a of the paper
    assert adaptive_hoeffding_delta(0.1, 600) == pytest.approx(0.04675, abs=1e-5)
    assert adaptive_hoeffding_delta(0.15, 600) == pytest.approx(6.4e-8, rel=0.01)
    assert adaptive_hoeffding_delta(0.1, 1000) == pytest.approx(3.8e-5, rel=0.01)
    h = Hoeffding()
    assert h.delta(0.1, 600) == pytest.approx(2 * np.exp(-2 * 600 * 0.01), rel=1e-12)
    assert h.delta(0.1, 600) == pytest.approx(1.229e-5, rel=1e-3)
    assert h.delta(0.15, 600) == pytest.approx(3.8e-12, rel=0.02)
    assert h.delta(0.1, 1000) == pytest.approx(4.1e-9, rel=0.02)
    # a larger t gives a smaller δ at the same ε, in both bounds
    assert AH.delta(0.1, 1000) < AH.delta(0.1, 600) and h.delta(0.1, 1000) < h.delta(0.1, 600)
    # Hoeffding's inverse is consistent too
    assert h.delta(h.epsilon(0.01, 500), 500) == pytest.approx(0.01)


def test_derivative_matches_finite_differences():
    n, d = np.array([10.0, 310.0, 1550.0]), np.array([0.3, 0.05, 0.001])
    for bound in (AH, Hoeffding()):
        h = 1e-6
        numeric = (bound.epsilon(d * np.exp(h), n) - bound.epsilon(d * np.exp(-h), n)) / (2 * h)
        np.testing.assert_allclose(bound.depsilon_dlogdelta(d, n), numeric, rtol=1e-5)


def test_bad_inputs_are_rejected_with_the_value():
    with pytest.raises(SpecError, match="delta must lie in"):
        adaptive_hoeffding_epsilon(1.5, 10)
    with pytest.raises(SpecError, match="n must be >= 0"):
        adaptive_hoeffding_epsilon(0.1, -1)
    with pytest.raises(SpecError, match="epsilon must be >= 0"):
        adaptive_hoeffding_delta(-0.1, 10)
    with pytest.raises(SpecError, match="unknown bound 'bernstein'"):
        get_bound("bernstein")


def test_monitor_refuses_a_fixed_sample_bound_by_default():
    with pytest.raises(MonitorSettingError, match="not time-uniform"):
        Monitor("E[r] > 0.5", bound="hoeffding")
    assert Monitor("E[r] > 0.5", bound="hoeffding", allow_fixed_n=True).bound.name == "hoeffding"


def _violation_rate(p: float, n_streams: int, length: int, delta: float, seed: int):
    """Fraction of Bernoulli(p) streams whose running mean ever leaves the AH band."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, length + 1)
    eps = AH.epsilon(delta, t)
    ever = np.zeros(n_streams, dtype=bool)
    at_stop = np.zeros(n_streams, dtype=bool)
    for start in range(0, n_streams, 250):
        m = min(250, n_streams - start)
        x = rng.random((m, length)) < p
        mean = np.cumsum(x, axis=1, dtype=np.int32) / t
        out = np.abs(mean - p) > eps
        ever[start:start + m] = out.any(axis=1)
        # data-dependent stopping times: the first time the running mean is above p, or a
        # random time when it never is
        above = mean > p
        first = np.where(above.any(axis=1), above.argmax(axis=1),
                         rng.integers(0, length, m))
        at_stop[start:start + m] = out[np.arange(m), first]
    return ever.mean(), at_stop.mean()


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
def test_time_uniform_coverage_monte_carlo(p):
    # spec §6 A.5: 2000 streams of length 1e4 at δ = 0.1; the bound is very conservative
    ever, at_stop = _violation_rate(p, n_streams=2000, length=10_000, delta=0.1, seed=11)
    assert ever <= 0.1
    assert at_stop <= ever
    assert ever <= 0.01  # expected ≈ 0


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("delta", [0.05, 0.1, 0.5])
def test_time_uniform_coverage_many_settings(p, delta):
    ever, at_stop = _violation_rate(p, n_streams=4000, length=20_000, delta=delta, seed=7)
    assert at_stop <= ever <= delta

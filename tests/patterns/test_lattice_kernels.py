"""The lattice kernels' bounds and look-ups against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

from pcfair.patterns import _lattice_kernels as K
from pcfair.patterns.summaries import pareto_candidates
from pcfair.patterns.lattice import _compact, _front_arrays

MASS = st.one_of(st.just(0.0), st.just(1e-12), st.floats(1e-300, 1e-3),
                 st.floats(1e-3, 1.0))


@settings(max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much])  # most δ exceed a random |Δ|
@given(MASS, MASS, MASS, MASS, st.one_of(st.just(0.0), st.floats(0.0, 0.6)))
@example(0.0, 1e-300, 1e-12, 1.0, 0.0)  # found by CI: a subnormal divergence
def test_chi2_bound_is_at_least_the_divergence(a1, a0, m1, m0, delta):
    """The χ² bound never falls below the divergence the kernel computes (the same
    arithmetic), for any masses (zeros, 1e-12, tiny and ordinary) and thresholds, including
    infinite divergences, on patterns of either sign."""
    assume(a1 + a0 > 0)
    total = a1 + a0 + m1 + m0
    a1, a0, m1, m0 = (v / total for v in (a1, a0, m1, m0))
    q = a1 / (a1 + a0)
    p_dy = (a1 + m1) / (a1 + a0 + m1 + m0)
    score = q - p_dy
    assume(abs(score) > delta)
    exact = K._divergence(a1, a0, m1, m0, score, delta)
    bound = K._divergence_chi2(a1, a0, m1, m0, score, delta)
    assert bound >= exact or (np.isinf(bound) and np.isinf(exact))


def test_chi2_bound_is_tight_for_small_shifts():
    """Near the threshold the bound is close to the divergence (KL ≈ χ²/2), so it prunes."""
    a1, a0, m1, m0 = 0.03, 0.02, 0.4, 0.55
    q, p_dy = a1 / (a1 + a0), (a1 + m1) / 1.0
    delta = (q - p_dy) - 1e-3
    exact = K._divergence(a1, a0, m1, m0, q - p_dy, delta)
    bound = K._divergence_chi2(a1, a0, m1, m0, q - p_dy, delta)
    assert exact > 0 and exact <= bound <= 2.1 * exact


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-9, 1.0), st.floats(0.0, 1.0)), max_size=30),
       st.floats(1e-10, 1.0), st.floats(0.0, 1.0), st.integers(0, 3))
def test_front_look_ups_match_brute_force(points, p, mag, repeat):
    """``_front_best_at`` is the best score strictly more probable than ``p`` (beyond the
    1e-9 tie), and ``_front_dominates`` the strict dominance of the Pareto candidates."""
    if points and repeat:  # exact ties on probability
        p = points[repeat % len(points)][0]
    prob = np.array([x for x, _ in points])
    score = np.array([y for _, y in points])
    n = len(points)
    front = _compact([(prob, score, np.arange(n), score)])
    fp, fb, fl = _front_arrays([front])
    more = front[0] > p * (1 + 1e-9)
    expect = front[1][more].max() if more.any() else -1.0
    assert K._front_best_at(fp, fb, fl, 0, p) == expect
    assert K._front_dominates(fp, fb, fl, 0, p, mag) == (expect > mag * (1 + 1e-9))
    # the candidates keep every point that no other dominates strictly
    keep = pareto_candidates(score, prob) if n else np.zeros(0, bool)
    assert len(front[0]) == int(keep.sum())

"""Tests of the box kernel's helpers (:mod:`pcfair.patterns._bound_kernels`) on their own;
the box and its bounds are tested against brute force in ``test_bounds.py``."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pcfair.patterns._bound_kernels import _weighted_extreme


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 10), st.booleans())
def test_weighted_extreme_solves_the_cut_simplex_programme(seed, n, upper):
    """The greedy answer of the box's linear programme (rule M) against scipy's solver."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    c = rng.random(n)
    w = rng.dirichlet(np.ones(n))  # a feasible point, so the programme has a solution
    lo = w * rng.random(n)
    hi = np.minimum(1.0, w + rng.random(n) * (1 - w))
    sign = -1.0 if upper else 1.0
    ref = linprog(sign * c, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, hi)))
    assert ref.status == 0
    m = np.zeros((n, 10))
    m[:, 8], m[:, 0], m[:, 1] = c, lo, hi
    assert _weighted_extreme(m, n, 8, 0, upper) == pytest.approx(sign * ref.fun, abs=1e-9)
    # an empty set falls back to the plain simplex's extreme, which bounds every mean
    m[:, 0] += 1.0
    m[:, 1] += 1.0
    assert _weighted_extreme(m, n, 8, 0, upper) == (c.max() if upper else c.min())

"""Numba kernel of the strict Pareto filter (see :func:`pcfair.patterns.summaries.pareto_mask`)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def dominated_sorted(a: np.ndarray, window_end: np.ndarray, rtol: float) -> np.ndarray:
    """For points sorted by decreasing probability with scores ``a``: point ``r`` is dominated
    when some other point among the first ``window_end[r]`` (those at least as probable, up to
    the tie) has a score ``≥ a[r]·(1 − rtol)``.

    ``window_end`` is non-decreasing and ``window_end[r] > r``, so the best score of the
    points before ``r`` is a running maximum and the best of those after ``r`` inside the
    window is a sliding-window maximum over a monotone deque: O(n) in all.
    """
    n = len(a)
    out = np.zeros(n, np.bool_)
    deque = np.empty(n, np.int64)  # indices with decreasing scores
    head = 0
    tail = 0
    filled = 0  # points pushed so far (indices < filled)
    before = -np.inf
    for r in range(n):
        while filled < window_end[r]:
            while tail > head and a[deque[tail - 1]] <= a[filled]:
                tail -= 1
            deque[tail] = filled
            tail += 1
            filled += 1
        while tail > head and deque[head] <= r:
            head += 1
        best = before
        if tail > head and a[deque[head]] > best:
            best = a[deque[head]]
        out[r] = best >= a[r] * (1.0 - rtol)
        if a[r] > before:
            before = a[r]
    return out

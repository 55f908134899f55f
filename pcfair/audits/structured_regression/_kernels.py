"""Numba kernels for the structured-regression port: grouped AUC and its bootstrap.

Kernels take flat numpy arrays only (rows sorted so that every group is contiguous, described
by ``starts`` and ``sizes``); validation happens in :mod:`.metrics`. AUC uses the
Mann-Whitney form with mid-ranks, so tied scores count 1/2 (the convention of
``sklearn.metrics.roc_auc_score``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def auc_of(scores, labels):
    """AUC of one sample (labels 0/1), ties counted 1/2; NaN if a class is missing."""
    n = scores.shape[0]
    n1 = 0
    for i in range(n):
        if labels[i] != 0:
            n1 += 1
    n0 = n - n1
    if n1 == 0 or n0 == 0:
        return np.nan
    order = np.argsort(scores, kind="mergesort")
    rank_sum = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        mid_rank = 0.5 * (i + j) + 1.0
        for k in range(i, j + 1):
            if labels[order[k]] != 0:
                rank_sum += mid_rank
        i = j + 1
    return (rank_sum - 0.5 * n1 * (n1 + 1.0)) / (n0 * n1)


@njit(cache=True)
def grouped_auc(scores, labels, starts, sizes):
    """AUC of every contiguous group; NaN for empty groups or groups missing a class."""
    n_groups = starts.shape[0]
    out = np.full(n_groups, np.nan)
    for g in range(n_groups):
        if sizes[g] > 0:
            s = starts[g]
            out[g] = auc_of(scores[s : s + sizes[g]], labels[s : s + sizes[g]])
    return out


@njit(cache=True)
def bootstrap_grouped_auc(scores, labels, starts, sizes, idx):
    """AUC of every group under each resample ``idx[b]`` (row positions, shape (B, n_rows))."""
    n_rep = idx.shape[0]
    n_groups = starts.shape[0]
    out = np.full((n_rep, n_groups), np.nan)
    for b in range(n_rep):
        for g in range(n_groups):
            m = sizes[g]
            if m == 0:
                continue
            s = starts[g]
            sc = np.empty(m)
            lb = np.empty(m, dtype=labels.dtype)
            for t in range(m):
                r = idx[b, s + t]
                sc[t] = scores[r]
                lb[t] = labels[r]
            out[b, g] = auc_of(sc, lb)
    return out

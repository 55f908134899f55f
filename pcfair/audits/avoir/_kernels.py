"""Numba kernels of the AVOIR monitor (arrays and scalars only; validation is in monitor.py)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def upsert_cumulative(ids, masks, contrib, store_mask, store_contrib, present, s0, c0):
    """Running leaf sums and counts over rows with upsert semantics by observation key.

    Row ``i`` belongs to key ``ids[i]``; if that key was observed before (``present``), its
    stored contribution is retracted before the new one is added. The store arrays are updated
    in place. Returns the cumulative ``(sums, counts)`` after every row, shape ``(rows, U)``.
    """
    rows, n_sig = masks.shape
    sums = np.empty((rows, n_sig))
    counts = np.empty((rows, n_sig))
    s = s0.copy()
    c = c0.copy()
    for i in range(rows):
        k = ids[i]
        if present[k]:
            for u in range(n_sig):
                s[u] -= store_contrib[k, u]
                c[u] -= store_mask[k, u]
        for u in range(n_sig):
            m = 1.0 if masks[i, u] else 0.0
            s[u] += contrib[i, u]
            c[u] += m
            store_mask[k, u] = m
            store_contrib[k, u] = contrib[i, u]
        present[k] = True
        for u in range(n_sig):
            sums[i, u] = s[u]
            counts[i, u] = c[u]
    return sums, counts

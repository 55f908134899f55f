"""numba kernels for data flows through deterministic circuits (complete data): the kernels of
:mod:`pcfair.inference.flows`."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def flows_kernel(kind, var, value, edge_ptr, edge_a, edge_b, codes, weights, elem_count,
                 leaf_count, leaf_ptr, target_edge, target_rows):
    """Accumulate, for complete rows, how many pass through each sum element (``elem_count``)
    and each value of each categorical leaf (``leaf_count[leaf_ptr[i] + value]``).

    Support is structural (an indicator holds when its value is observed; a categorical leaf
    always holds); in a deterministic circuit at most one element of a reached sum holds.
    ``target_rows[r]`` is set when row r passes through element ``target_edge`` (−1: none)."""
    n = kind.shape[0]
    support = np.empty(n, np.bool_)
    reached = np.empty(n, np.bool_)
    for r in range(codes.shape[0]):
        row = codes[r]
        wgt = weights[r]
        for i in range(n):
            k = kind[i]
            if k == 0:
                support[i] = row[var[i]] == value[i]
            elif k == 1:
                support[i] = True
            elif k == 2:
                s = True
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    if not support[edge_a[e]]:
                        s = False
                        break
                support[i] = s
            else:
                s = False
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    if support[edge_a[e]] and (edge_b[e] < 0 or support[edge_b[e]]):
                        s = True
                        break
                support[i] = s
            reached[i] = False
        if not support[n - 1]:
            continue
        reached[n - 1] = True
        for i in range(n - 1, -1, -1):
            if not reached[i]:
                continue
            k = kind[i]
            if k == 1:
                leaf_count[leaf_ptr[i] + row[var[i]]] += wgt
            elif k == 2:
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    reached[edge_a[e]] = True
            elif k == 3:
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    if support[edge_a[e]] and (edge_b[e] < 0 or support[edge_b[e]]):
                        elem_count[e] += wgt
                        reached[edge_a[e]] = True
                        if edge_b[e] >= 0:
                            reached[edge_b[e]] = True
                        if e == target_edge:
                            target_rows[r] = True
                        break

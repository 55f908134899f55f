"""numba kernels for top-down passes: exact forward sampling and MAP (max-product) decoding."""

from __future__ import annotations

import numpy as np
from numba import njit

NEG_INF = -np.inf


@njit(cache=True, inline="always")
def _draw(u, logp, lo, hi, lognorm):
    """Index in [0, hi-lo) drawn with probabilities exp(logp[lo:hi] - lognorm)."""
    acc = 0.0
    last = -1
    for j in range(lo, hi):
        p = np.exp(logp[j] - lognorm)
        if p > 0.0:
            last = j - lo
            acc += p
            if u < acc:
                return j - lo
    return last  # rounding: the last index with positive mass


@njit(cache=True)
def sample_kernel(kind, var, value, param_ptr, param_len, params, lognorm, edge_ptr, edge_a,
                  edge_b, edge_logw, vals, ev, seed, out):
    """Fill each row of ``out`` with one sample drawn top-down given evidence ``ev``.

    ``vals`` are the node log-values under ``ev``. At a sum, an element is chosen with
    probability ∝ w·value(prime)·value(sub); at a leaf an unobserved variable is drawn from the
    leaf's distribution. Exact for smooth, decomposable circuits."""
    np.random.seed(seed)
    n_nodes = kind.shape[0]
    stack = np.empty(n_nodes + 1, np.int64)
    scratch = np.empty(max(1, edge_logw.shape[0]))
    for r in range(out.shape[0]):
        for v in range(out.shape[1]):
            out[r, v] = ev[v]
        stack[0] = n_nodes - 1
        top = 1
        while top > 0:
            top -= 1
            i = stack[top]
            k = kind[i]
            if k == 0:
                out[r, var[i]] = value[i]
            elif k == 1:
                x = var[i]
                if ev[x] < 0:
                    out[r, x] = _draw(np.random.random(), params, param_ptr[i],
                                      param_ptr[i] + param_len[i], lognorm[i])
            elif k == 2:
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    stack[top] = edge_a[e]
                    top += 1
            else:
                lo = edge_ptr[i]
                hi = edge_ptr[i + 1]
                for e in range(lo, hi):
                    t = edge_logw[e] + vals[edge_a[e]]
                    if edge_b[e] >= 0:
                        t += vals[edge_b[e]]
                    scratch[e - lo] = t
                e = lo + _draw(np.random.random(), scratch, 0, hi - lo, vals[i])
                stack[top] = edge_a[e]
                top += 1
                if edge_b[e] >= 0:
                    stack[top] = edge_b[e]
                    top += 1


@njit(cache=True)
def map_kernel(kind, var, value, param_ptr, param_len, params, edge_ptr, edge_a, edge_b,
               edge_logw, ev, buf, best, out):
    """Max-product sweep with back-pointers, then a top-down decode into ``out``.

    Returns the max log-value; ``best[i]`` is the chosen element (sums) or value (leaves)."""
    n = kind.shape[0]
    for i in range(n):
        k = kind[i]
        if k == 0:
            x = ev[var[i]]
            buf[i] = 0.0 if (x < 0 or x == value[i]) else NEG_INF
        elif k == 1:
            x = ev[var[i]]
            if x >= 0:
                buf[i] = params[param_ptr[i] + x]
                best[i] = x
            else:
                m = NEG_INF
                arg = 0
                for j in range(param_len[i]):
                    if params[param_ptr[i] + j] > m:
                        m = params[param_ptr[i] + j]
                        arg = j
                buf[i] = m
                best[i] = arg
        elif k == 2:
            s = 0.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                s += buf[edge_a[e]]
            buf[i] = s
        else:
            m = NEG_INF
            arg = edge_ptr[i]
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                t = edge_logw[e] + buf[edge_a[e]]
                if edge_b[e] >= 0:
                    t += buf[edge_b[e]]
                if t > m:
                    m = t
                    arg = e
            buf[i] = m
            best[i] = arg
    for v in range(out.shape[0]):
        out[v] = ev[v]
    stack = np.empty(n + 1, np.int64)
    stack[0] = n - 1
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        k = kind[i]
        if k == 0:
            out[var[i]] = value[i]
        elif k == 1:
            out[var[i]] = best[i]
        elif k == 2:
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                stack[top] = edge_a[e]
                top += 1
        else:
            e = best[i]
            stack[top] = edge_a[e]
            top += 1
            if edge_b[e] >= 0:
                stack[top] = edge_b[e]
                top += 1
    return buf[n - 1]

"""numba kernels for the bottom-up (marginal) sweep over a compiled circuit.

All kernels take the circuit's flat arrays (see :mod:`pcfair.circuit.circuit`) and work in log
space. Evidence rows are int32 vectors with −1 for a missing (marginalised) value.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

NEG_INF = -np.inf


@njit(cache=True, inline="always")
def _sweep(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b, edge_logw,
           ev, buf, scratch):
    n = kind.shape[0]
    for i in range(n):
        k = kind[i]
        if k == 0:
            x = ev[var[i]]
            buf[i] = 0.0 if (x < 0 or x == value[i]) else NEG_INF
        elif k == 1:
            x = ev[var[i]]
            buf[i] = lognorm[i] if x < 0 else params[param_ptr[i] + x]
        elif k == 2:
            s = 0.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                s += buf[edge_a[e]]
            buf[i] = s
        else:
            lo = edge_ptr[i]
            hi = edge_ptr[i + 1]
            if hi - lo == 1:  # single element (common in PSDDs): no log-sum-exp
                t = edge_logw[lo] + buf[edge_a[lo]]
                b = edge_b[lo]
                if b >= 0:
                    t += buf[b]
                buf[i] = t
                continue
            m = NEG_INF
            for e in range(lo, hi):
                t = edge_logw[e] + buf[edge_a[e]]
                b = edge_b[e]
                if b >= 0:
                    t += buf[b]
                scratch[e - lo] = t
                if t > m:
                    m = t
            if m == NEG_INF:
                buf[i] = NEG_INF
            elif hi - lo == 2:
                d = scratch[0] + scratch[1] - 2.0 * m  # = -(|t0 - t1|)
                buf[i] = m + np.log1p(np.exp(d))
            else:
                s = 0.0
                for j in range(hi - lo):
                    s += np.exp(scratch[j] - m)
                buf[i] = m + np.log(s)


_BLOCK = 32

#: Node-row evaluations (rows × nodes) below which :func:`log_marginals_serial` runs instead of
#: :func:`log_marginals_kernel`: a sweep this small takes a fraction of a millisecond, little
#: for threads to save and about what waking them costs; a command that stays below it never
#: compiles the threaded kernel.
PARALLEL_MIN_WORK = 1 << 16


@njit(cache=True)
def _sweep_block(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                 edge_logw, ev, nb, buf, t0, mx):
    """Bottom-up sweep for ``nb`` <= _BLOCK rows at once; ``buf[i, r]`` is node i, row r, and
    ``ev[x, r]`` the (transposed) evidence block.

    Node-major over a small block of rows: each node's children are read as short contiguous
    runs, and the inner loops over rows vectorise."""
    n = kind.shape[0]
    for i in range(n):
        k = kind[i]
        if k == 0:
            x = var[i]
            val = value[i]
            for r in range(nb):
                o = ev[x, r]
                buf[i, r] = 0.0 if (o < 0 or o == val) else NEG_INF
        elif k == 1:
            x = var[i]
            p = param_ptr[i]
            ln = lognorm[i]
            for r in range(nb):
                o = ev[x, r]
                buf[i, r] = ln if o < 0 else params[p + o]
        elif k == 2:
            for r in range(nb):
                buf[i, r] = 0.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                a = edge_a[e]
                for r in range(nb):
                    buf[i, r] += buf[a, r]
        else:
            lo = edge_ptr[i]
            hi = edge_ptr[i + 1]
            if hi - lo == 1:
                w = edge_logw[lo]
                a = edge_a[lo]
                b = edge_b[lo]
                if b >= 0:
                    for r in range(nb):
                        buf[i, r] = w + buf[a, r] + buf[b, r]
                else:
                    for r in range(nb):
                        buf[i, r] = w + buf[a, r]
                continue
            if hi - lo == 2:  # two elements: one exp and one log1p per row
                wa = edge_logw[lo]
                wb = edge_logw[lo + 1]
                a0 = edge_a[lo]
                b0 = edge_b[lo]
                a1 = edge_a[lo + 1]
                b1 = edge_b[lo + 1]
                for r in range(nb):
                    u = wa + buf[a0, r]
                    if b0 >= 0:
                        u += buf[b0, r]
                    v = wb + buf[a1, r]
                    if b1 >= 0:
                        v += buf[b1, r]
                    if u < v:
                        u, v = v, u
                    buf[i, r] = u if v == NEG_INF else u + np.log1p(np.exp(v - u))
                continue
            for r in range(nb):
                mx[r] = NEG_INF
            for e in range(lo, hi):
                w = edge_logw[e]
                a = edge_a[e]
                b = edge_b[e]
                for r in range(nb):
                    t = w + buf[a, r]
                    if b >= 0:
                        t += buf[b, r]
                    t0[e - lo, r] = t
                    if t > mx[r]:
                        mx[r] = t
            for r in range(nb):
                m = mx[r]
                if m == NEG_INF:
                    buf[i, r] = NEG_INF
                    continue
                acc = 0.0
                for j in range(hi - lo):
                    acc += np.exp(t0[j, r] - m)
                buf[i, r] = m + np.log(acc)


@njit(cache=True)
def _row_blocks(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                edge_logw, max_degree, evidence, out, blk_lo, blk_hi):
    """log P of the rows in blocks ``blk_lo .. blk_hi - 1`` (``_BLOCK`` rows each)."""
    n_rows = evidence.shape[0]
    n = kind.shape[0]
    buf = np.empty((n, _BLOCK))
    t0 = np.empty((max(max_degree, 1), _BLOCK))
    mx = np.empty(_BLOCK)
    evb = np.empty((evidence.shape[1], _BLOCK), evidence.dtype)
    for blk in range(blk_lo, blk_hi):
        r0 = blk * _BLOCK
        nb = min(_BLOCK, n_rows - r0)
        for r in range(nb):
            for x in range(evidence.shape[1]):
                evb[x, r] = evidence[r0 + r, x]
        _sweep_block(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a,
                     edge_b, edge_logw, evb, nb, buf, t0, mx)
        for r in range(nb):
            out[r0 + r] = buf[n - 1, r]


@njit(cache=True, parallel=True)
def log_marginals_kernel(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                         edge_logw, max_degree, evidence, out):
    """Fill ``out[r]`` with log P(evidence[r]) (the root's value), row blocks split across
    threads."""
    n_blocks = (evidence.shape[0] + _BLOCK - 1) // _BLOCK
    n_workers = min(n_blocks, 64)
    per = (n_blocks + n_workers - 1) // max(n_workers, 1)
    for w in prange(n_workers):
        _row_blocks(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                    edge_logw, max_degree, evidence, out, w * per, min(n_blocks, (w + 1) * per))


def log_marginals_serial(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a,
                         edge_b, edge_logw, max_degree, evidence, out) -> None:
    """:func:`log_marginals_kernel` on one thread: for little work (as the pattern search
    asks), where waking the thread pool costs more than the sweep.

    A Python function: it calls :func:`_row_blocks` with Python ints (typed int64), the very
    specialisation the threaded kernel compiles, where a compiled caller passing the constant
    0 would compile a second one for the literal ``0``."""
    _row_blocks(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                edge_logw, max_degree, evidence, out, 0,
                (evidence.shape[0] + _BLOCK - 1) // _BLOCK)


@njit(cache=True)
def node_values_kernel(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                       edge_logw, max_degree, ev, buf):
    """Fill ``buf`` with every node's log-value for one evidence row."""
    scratch = np.empty(max(max_degree, 1))
    _sweep(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b, edge_logw,
           ev, buf, scratch)


@njit(cache=True)
def smallest_positive_kernel(kind, param_ptr, param_len, params, edge_ptr, edge_a, edge_b,
                             edge_logw, buf):
    """``buf[i]``: a lower bound on ``log n_i(z)`` over the complete assignments ``z`` with
    ``n_i(z) > 0`` (+inf where there is none), bottom up; see
    :func:`pcfair.inference.smallest.log_smallest_probability` for the proof."""
    n = kind.shape[0]
    for i in range(n):
        k = kind[i]
        if k == 0:
            buf[i] = 0.0
        elif k == 1:
            m = np.inf
            for j in range(param_ptr[i], param_ptr[i] + param_len[i]):
                if params[j] > NEG_INF and params[j] < m:
                    m = params[j]
            buf[i] = m
        elif k == 2:
            s = 0.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                s += buf[edge_a[e]]  # +inf (a child never positive) stays +inf
            buf[i] = s
        else:
            m = np.inf
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                w = edge_logw[e]
                if w == NEG_INF:
                    continue
                t = w + buf[edge_a[e]]
                b = edge_b[e]
                if b >= 0:
                    t += buf[b]
                if t < m:
                    m = t
            buf[i] = m

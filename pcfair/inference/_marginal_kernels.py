"""numba kernels for the bottom-up (marginal) sweep over a compiled circuit.

All kernels take the circuit's flat arrays (see :mod:`pcfair.circuit.circuit`) and work in log
space. Evidence rows are int32 vectors with −1 for a missing (marginalised) value.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

NEG_INF = -np.inf
_CHUNK = 64


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
            else:
                s = 0.0
                for j in range(hi - lo):
                    s += np.exp(scratch[j] - m)
                buf[i] = m + np.log(s)


@njit(cache=True, parallel=True)
def log_marginals_kernel(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                         edge_logw, max_degree, evidence, out):
    """Fill ``out[r]`` with log P(evidence[r]) (the root's value), rows split across threads."""
    n_rows = evidence.shape[0]
    n = kind.shape[0]
    n_chunks = (n_rows + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        buf = np.empty(n)
        scratch = np.empty(max(max_degree, 1))
        for r in range(c * _CHUNK, min(n_rows, (c + 1) * _CHUNK)):
            _sweep(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                   edge_logw, evidence[r], buf, scratch)
            out[r] = buf[n - 1]


@njit(cache=True)
def node_values_kernel(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b,
                       edge_logw, max_degree, ev, buf):
    """Fill ``buf`` with every node's log-value for one evidence row."""
    scratch = np.empty(max(max_degree, 1))
    _sweep(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b, edge_logw,
           ev, buf, scratch)

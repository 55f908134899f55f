"""numba kernels for the top-down (gradient) sweep over a compiled circuit.

For one evidence row ``e`` the bottom-up sweep of :mod:`pcfair.inference._marginal_kernels`
gives every node's log-value ``v_n = log P_n(e)``. The top-down sweep then propagates *flows*

    f_root = 1,   f_n = Σ_parents ∂ log P_root / ∂ log P_n  (contributions below),

in linear space (each flow is a fraction of the root's mass, so it lies in [0, 1] for a smooth,
decomposable circuit and never over- or underflows):

* a product passes its flow unchanged to every child;
* element ``j = (a, b, log w)`` of a sum ``i`` gets ``f_j = f_i · exp(log w + v_a + v_b − v_i)``
  and passes it to its prime ``a`` and its sub ``b``.

``f_j`` is ``∂ log P(e) / ∂ log w_j``. A categorical leaf ``i`` with parameters ``θ`` receives
``f_i`` on its observed value, or ``f_i · θ_k / Σ θ`` on each value ``k`` when its variable is
missing: that is ``∂ log P(e) / ∂ log θ_k``. Rows with ``P(e) = 0`` get a zero gradient.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pcfair.inference._marginal_kernels import _sweep

NEG_INF = -np.inf


@njit(cache=True)
def log_marginal_gradients_kernel(kind, var, value, param_ptr, param_len, params, lognorm,
                                  edge_ptr, edge_a, edge_b, edge_logw, max_degree, evidence,
                                  logp, grad):
    """For each row ``r`` of ``evidence``: ``logp[r] = log P(e_r)`` and
    ``grad[r, j] = ∂ log P(e_r) / ∂ log w_j`` for every sum element ``j``, then
    ``grad[r, num_elements + p] = ∂ log P(e_r) / ∂ log θ_p`` for every entry ``p`` of the leaf
    parameter heap. ``grad`` must be zero on entry.

    Serial over rows: fair learning evaluates a few hundred rows many times, where thread
    start-up and barriers cost more than the sweep itself."""
    n = kind.shape[0]
    ne = edge_a.shape[0]
    for r in range(evidence.shape[0]):
        ev = evidence[r]
        buf = np.empty(n)
        scratch = np.empty(max(max_degree, 1))
        _sweep(kind, var, value, param_ptr, params, lognorm, edge_ptr, edge_a, edge_b, edge_logw,
               ev, buf, scratch)
        logp[r] = buf[n - 1]
        if buf[n - 1] == NEG_INF:
            continue
        flow = np.zeros(n)
        flow[n - 1] = 1.0
        for i in range(n - 1, -1, -1):
            f = flow[i]
            if f == 0.0:
                continue
            k = kind[i]
            if k == 1:
                x = ev[var[i]]
                p = param_ptr[i]
                if x >= 0:
                    grad[r, ne + p + x] = f
                else:
                    for j in range(param_len[i]):
                        grad[r, ne + p + j] = f * np.exp(params[p + j] - lognorm[i])
            elif k == 2:
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    flow[edge_a[e]] += f
            elif k == 3:
                vi = buf[i]
                for e in range(edge_ptr[i], edge_ptr[i + 1]):
                    a = edge_a[e]
                    b = edge_b[e]
                    t = edge_logw[e] + buf[a]
                    if b >= 0:
                        t += buf[b]
                    if t == NEG_INF:
                        continue
                    fe = f * np.exp(t - vi)
                    grad[r, e] = fe
                    flow[a] += fe
                    if b >= 0:
                        flow[b] += fe

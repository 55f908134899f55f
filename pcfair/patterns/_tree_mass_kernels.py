"""Log masses of evidence in a decision-rooted tree model, the kernel the compiled tree search
(:mod:`pcfair.patterns._tree_search_kernels`) and its plateau solver
(:mod:`pcfair.patterns._plateau_kernels`) score patterns with."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pcfair.patterns._search_kernels import sigmoid, sigmoid_shift

#: A message below this is rescaled (its log kept aside), so long products never underflow.
_TINY = 1e-150


@njit(cache=True)
def log_masses(obs, post, par, card, kp, toff, th1, th0, ch_ptr, ch_idx, moff, log_prior,
               msg, has_ev, out) -> None:
    """``out[0] = log P(d, e)``, ``out[1] = log P(¬d, e)`` for the evidence ``obs`` (normalised:
    ``log_prior`` holds ``log P(d)``, ``log P(¬d)``; ``th1``/``th0`` the conditionals
    ``θ_δ(v = k | pa = j)`` at ``toff[v] + j·card[v] + k``, linear).

    The upward pass of a tree: ``m_δ(v, j) = Σ_k θ_δ(k | j) [k allowed] Π_c m_δ(c, k)`` in post
    order, and ``P(δ, e) = P(δ) Π_roots m_δ(r)``. A subtree with no evidence has ``m = 1``
    (``θ`` sums to one) and is skipped (``has_ev``). A message vector whose largest entry
    falls below ``_TINY`` is divided by it and its log added to the result, which rescales
    every product it enters by the same factor: exact up to rounding, at any depth.
    """
    s1 = 0.0
    s0 = 0.0
    for i in range(post.shape[0]):
        v = post[i]
        o = obs[v]
        ev = o != -1
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            if has_ev[ch_idx[e]]:
                ev = True
        has_ev[v] = ev
        if not ev:
            continue
        kv = card[v]
        mx1 = 0.0
        mx0 = 0.0
        for j in range(kp[v]):
            base = toff[v] + j * kv
            acc1 = 0.0
            acc0 = 0.0
            for k in range(kv):
                if o >= 0:
                    if k != o:
                        continue
                elif o <= -2 and k == -2 - o:
                    continue
                f1 = th1[base + k]
                f0 = th0[base + k]
                for e in range(ch_ptr[v], ch_ptr[v + 1]):
                    c = ch_idx[e]
                    if has_ev[c]:
                        f1 *= msg[moff[c] + k, 0]
                        f0 *= msg[moff[c] + k, 1]
                acc1 += f1
                acc0 += f0
            msg[moff[v] + j, 0] = acc1
            msg[moff[v] + j, 1] = acc0
            mx1 = max(mx1, acc1)
            mx0 = max(mx0, acc0)
        if 0.0 < mx1 < _TINY:
            for j in range(kp[v]):
                msg[moff[v] + j, 0] /= mx1
            s1 += math.log(mx1)
        if 0.0 < mx0 < _TINY:
            for j in range(kp[v]):
                msg[moff[v] + j, 1] /= mx0
            s0 += math.log(mx0)
    r1 = 1.0
    r0 = 1.0
    for i in range(post.shape[0]):
        v = post[i]
        if par[v] < 0 and has_ev[v]:
            r1 *= msg[moff[v], 0]
            r0 *= msg[moff[v], 1]
    out[0] = log_prior[0] + s1 + (math.log(r1) if r1 > 0 else -np.inf)
    out[1] = log_prior[1] + s0 + (math.log(r0) if r0 > 0 else -np.inf)


@njit(cache=True, inline="always")
def shift_of_masses(a1, a0, b1, b0):
    """``P(d | B) − P(d | A)`` from the log masses of the two evidences (NaN where ``B`` has
    probability zero)."""
    if b1 == -np.inf and b0 == -np.inf:
        return np.nan
    t = a1 - a0
    u = b1 - b0
    if math.isfinite(t) and math.isfinite(u):
        return sigmoid_shift(t, u - t)
    return sigmoid(u) - sigmoid(t)

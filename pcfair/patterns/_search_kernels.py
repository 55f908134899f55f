"""Numba pieces shared by the compiled branch-and-bound searches
(:mod:`pcfair.patterns.naive_bayes_search`, :mod:`pcfair.patterns.tree_search`).

Both searches are explicit-stack depth-first walks over flat arrays, resumable: every piece of
their state (the path's frames, each frame's children and its cursor, the top-k heap, the
output buffer, the counters in ``ctrl``) lives in arrays the caller owns, so a kernel can stop
after a budget of nodes (the caller checks its deadline between calls) or when the output
buffer is full (the caller grows it), and pick up where it left off. Patterns are coded per
position of the search order: ``0`` absent (undecided or excluded), ``1 + v`` in ``y`` with
value ``v``, ``-(1 + v)`` in ``x`` with value ``v``. A node's ``P(x, y)`` travels as its log
(the children's ``c_p``, the heap's ``hp``, the output's ``op``): a pattern whose probability
is below the double range is defined (``log P > −inf``) and compared with ``log
min_support``, never read as 0.

This module holds what the two share: the control slots, modes and statuses, the scores
(``σ``, ``σ(t + s) − σ(t)`` without cancellation, the divergence score), the bounds
(:func:`coupled_bound`, :func:`divergence_bound`) and the top-k heap with
:func:`record_pattern`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Absolute tolerance of the strict threshold (mirrors ``scores.THRESHOLD_ATOL``).
ATOL = 1e-12
#: The bound is inflated by this relative amount (and 1e-300) before it is compared, as
#: ``search``'s ``cut`` does: the bound and the scores it bounds come from different formulas
#: and summation orders, and rounding must not prune a pattern whose computed score lies a few
#: ulps above it.
BOUND_RTOL = 1e-9

# ctrl slots
C_DEPTH, C_NODES, C_PRUNED, C_BOUNDS, C_HSIZE, C_COUNTER, C_NOUT, C_STARTED = range(8)
N_CTRL = 8
# modes
M_ALL, M_FIRST, M_TOPK = 0, 1, 2
# run's return status
DONE, BUDGET, GROW, FOUND = 0, 1, 2, 3
# child roles
R_X, R_Y, R_EXCL = 0, 1, 2

_LOG2 = math.log(2.0)


@njit(cache=True, inline="always")
def sigmoid(x: float) -> float:
    """``σ(x)`` as :func:`pcfair.inference.quotient._sigmoid` computes it."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True, inline="always")
def _log_cosh(z: float) -> float:
    a = abs(z)
    return a + math.log1p(math.exp(-2.0 * a)) - _LOG2


@njit(cache=True)
def sigmoid_shift(t: float, s: float) -> float:
    """``σ(t + s) − σ(t)`` without cancellation: ``sinh(s/2) / (2 cosh((t+s)/2) cosh(t/2))``
    (in logs where the hyperbolic functions would overflow)."""
    if s == 0.0:
        return 0.0
    a = t + s
    if abs(a) + abs(t) < 1000.0 and abs(s) < 1000.0:
        return math.sinh(0.5 * s) / (2.0 * math.cosh(0.5 * a) * math.cosh(0.5 * t))
    h = 0.5 * abs(s)
    lg = h + math.log(-math.expm1(-2.0 * h)) - _LOG2  # log sinh(h)
    lg -= _LOG2 + _log_cosh(0.5 * a) + _log_cosh(0.5 * t)
    out = math.exp(lg)
    return out if s > 0 else -out


@njit(cache=True, inline="always")
def logaddexp(a: float, b: float) -> float:
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a >= b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True, inline="always")
def _add(a: float, b: float, nan_to: float) -> float:
    """``a + b`` with ``inf − inf`` (undefined) taken as ``nan_to``, the sound side."""
    s = a + b
    return nan_to if s != s else s


@njit(cache=True)
def coupled_bound(t_lo: float, t_hi: float, s_lo: float, s_hi: float) -> float:
    """The max of ``|σ(t + s) − σ(t)|`` over the box ``[t_lo, t_hi] × [s_lo, s_hi]``: the
    computation :func:`pcfair.patterns.bounds.coupled_bound` documents and proves (it calls
    this kernel), infinite ends included."""
    finite = (math.isfinite(t_lo) and math.isfinite(t_hi) and math.isfinite(s_lo)
              and math.isfinite(s_hi))
    if not finite:
        hi = sigmoid(_add(t_hi, s_hi, np.inf)) - sigmoid(t_lo) if s_hi > 0 else 0.0
        lo = sigmoid(t_hi) - sigmoid(_add(t_lo, s_lo, -np.inf)) if s_lo < 0 else 0.0
        return max(0.0, hi, lo)
    best = 0.0
    if s_hi > 0:
        t = min(max(-s_hi / 2, t_lo), t_hi)
        best = max(best, sigmoid(t + s_hi) - sigmoid(t))
    if s_lo < 0:
        t = min(max(-s_lo / 2, t_lo), t_hi)
        best = max(best, sigmoid(t) - sigmoid(t + s_lo))
    return best


@njit(cache=True)
def bernoulli_kl(q: float, c: float) -> float:
    """:func:`pcfair.patterns.search.bernoulli_kl`."""
    out = 0.0
    a, b = q, c
    if a > 0:
        if b <= 0:
            return np.inf
        out += a * math.log(a / b)
    a, b = 1.0 - q, 1.0 - c
    if a > 0:
        if b <= 0:
            return np.inf
        out += a * math.log(a / b)
    return max(out, 0.0)


@njit(cache=True)
def divergence_bound(p_xy: float, a_min: float, a_max: float, r_min: float, r_max: float,
                     delta: float) -> float:
    """:func:`pcfair.patterns.search.divergence_bound` (same math, same 1e-9 inflation)."""
    best = 0.0
    hi = r_min + delta
    lo = r_max - delta
    if a_max > hi:
        best = max(best, bernoulli_kl(a_max, hi))
    if a_min < lo:
        best = max(best, bernoulli_kl(a_min, lo))
    return p_xy * best * (1.0 + 1e-9)


@njit(cache=True)
def log_divergence_score(score: float, la1: float, la0: float, lm1: float, lm0: float,
                         delta: float) -> float:
    """The divergence score of one pattern (``pc-certifier.md`` §2; the derivation is
    :func:`pcfair.patterns.scores.divergence_scores`') from the logs of its four masses
    ``a1 = P(d, x, y)``, ``a0 = P(¬d, x, y)``, ``m1 = P(d, y, ¬x)``, ``m0 = P(¬d, y, ¬x)``:

        Div = P(x, y)·[q·(log q − log q'₁) + (1 − q)·(log(1 − q) − log q'₀)],

    ``q = a1 / P(x, y)``, ``q'₁ = (m1 ± δ·P(y)) / P(y, ¬x)``, ``q'₀ = 1 − q'₁`` (the sign of Δ).
    Every ratio is a difference of logs (``log q'`` exactly so at δ = 0), so masses far below
    the range of doubles give the divergence a double holds: 0.0 where ``P(x, y)·KL`` itself
    underflows, +inf where ``Q`` would have to move mass out of an empty block (``a > 0``
    with ``q' ≤ 0``). 0 where ``|Δ| ≤ δ`` (up to :data:`ATOL`) or ``P(y, ¬x) = 0`` (then
    Δ = 0 and only rounding says otherwise)."""
    if not abs(score) > delta + ATOL:
        return 0.0
    l_rest = logaddexp(lm1, lm0)
    if l_rest == -np.inf:
        return 0.0
    l_xy = logaddexp(la1, la0)
    shift = 0.0 if delta == 0.0 else delta * math.exp(logaddexp(l_xy, l_rest) - l_rest)
    if score < 0:
        shift = -shift
    total = 0.0
    for side in range(2):
        la = la1 if side == 0 else la0
        if la == -np.inf:
            continue  # a term with a = 0 is 0
        lm = lm1 if side == 0 else lm0
        s = shift if side == 0 else -shift
        if s == 0.0:
            lq = lm - l_rest
        else:
            c = math.exp(lm - l_rest) + s
            if not c > 0.0:
                return np.inf
            lq = math.log(c)
        if lq == -np.inf:
            return np.inf
        total += math.exp(la - l_xy) * (la - l_xy - lq)
    return max(total, 0.0) * math.exp(l_xy)  # rounding can make the bracket -1e-17


@njit(cache=True)
def log_divergence_scores(score, la1, la0, lm1, lm0, delta, out) -> None:
    """:func:`log_divergence_score` of every pattern of the arrays, into ``out``."""
    for i in range(score.shape[0]):
        out[i] = log_divergence_score(score[i], la1[i], la0[i], lm1[i], lm0[i], delta)


@njit(cache=True, inline="always")
def _heap_less(hk, hc, a, b):
    return hk[a] < hk[b] or (hk[a] == hk[b] and hc[a] < hc[b])


@njit(cache=True)
def _sift_down(heap, hk, hc, size, pos):
    """heapq's ``_siftup``/``_siftdown`` pair for a replaced root, over slot indices."""
    item = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _heap_less(hk, hc, heap[right], heap[child]):
            child = right
        if _heap_less(hk, hc, heap[child], item):
            heap[pos] = heap[child]
            pos = child
        else:
            break
    heap[pos] = item


@njit(cache=True)
def _sift_up(heap, hk, hc, pos):
    item = heap[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if _heap_less(hk, hc, item, heap[parent]):
            heap[pos] = heap[parent]
            pos = parent
        else:
            break
    heap[pos] = item


@njit(cache=True)
def record_pattern(score, lp, div, code, depth, thr, log_ms, mode, k, by_div, ctrl,
                   fbest, heap, hk, hc, hs, hp, hd, hx, os_, op, ox) -> bool:
    """Record the pattern ``code[:depth + 1]`` (score, ``log P(x, y)`` and divergence given;
    ``log_ms`` the log of the least support):
    raise ``fbest``; if it discriminates (``|score| > thr``) and has the support, offer it
    to the top-k heap (``M_TOPK``, keyed by divergence or ``|score|``, ties by arrival as
    :mod:`heapq` orders ``search``'s) or append it to the output buffer (the caller keeps
    room for one more). Returns True for a first witness (``M_FIRST``)."""
    a = abs(score)
    if a > fbest[0]:
        fbest[0] = a
    if not (a > thr) or lp < log_ms:
        return False
    n = hx.shape[1]
    if mode == M_TOPK:
        ctrl[C_COUNTER] += 1
        key = div if by_div else a
        size = ctrl[C_HSIZE]
        slot = -1
        if size < k:
            slot = size
            heap[size] = slot
            ctrl[C_HSIZE] = size + 1
        elif key > hk[heap[0]]:
            slot = heap[0]
        if slot >= 0:
            hk[slot] = key
            hc[slot] = -ctrl[C_COUNTER]
            hs[slot] = score
            hp[slot] = lp
            hd[slot] = div
            for j in range(n):
                hx[slot, j] = code[j] if j <= depth else 0
            if size < k:
                _sift_up(heap, hk, hc, size)
            else:
                _sift_down(heap, hk, hc, k, 0)
        return False
    o = ctrl[C_NOUT]
    os_[o] = score
    op[o] = lp
    for j in range(n):
        ox[o, j] = code[j] if j <= depth else 0
    ctrl[C_NOUT] = o + 1
    return mode == M_FIRST


@njit(cache=True)
def place_child(dd, m, role, v, score, p, div, aux0, aux1, ordered, by_div, c_role, c_val,
                c_score, c_p, c_div, c_aux) -> None:
    """Write the ``m``-th child of the node at depth ``dd`` (its role, value, score, ``log P(x,
    y)``, divergence and two search-specific values ``c_aux``): after the others in
    generation order, or, when ``ordered`` (best-first top-k), inserted stably by decreasing
    key (the divergence, or ``|score|`` with a NaN score, a child without ``x``, as −1)."""
    pos = m
    if ordered:
        key = div if by_div else (abs(score) if not math.isnan(score) else -1.0)
        while pos > 0:
            prev = c_div[dd, pos - 1] if by_div else (
                abs(c_score[dd, pos - 1]) if not math.isnan(c_score[dd, pos - 1]) else -1.0)
            if not prev < key:
                break
            c_role[dd, pos] = c_role[dd, pos - 1]
            c_val[dd, pos] = c_val[dd, pos - 1]
            c_score[dd, pos] = c_score[dd, pos - 1]
            c_p[dd, pos] = c_p[dd, pos - 1]
            c_div[dd, pos] = c_div[dd, pos - 1]
            c_aux[dd, pos, 0] = c_aux[dd, pos - 1, 0]
            c_aux[dd, pos, 1] = c_aux[dd, pos - 1, 1]
            pos -= 1
    c_role[dd, pos] = role
    c_val[dd, pos] = v
    c_score[dd, pos] = score
    c_p[dd, pos] = p
    c_div[dd, pos] = div
    c_aux[dd, pos, 0] = aux0
    c_aux[dd, pos, 1] = aux1


@njit(cache=True)
def close_children(dd, m, p, aux0, aux1, cn, cur, c_role, c_val, c_score, c_p, c_div,
                   c_aux) -> None:
    """Append the excluded child (``log P`` ``p``, the node's own) after the ``m`` others
    and point the node's cursor at its first child."""
    c_role[dd, m] = R_EXCL
    c_val[dd, m] = -1
    c_score[dd, m] = np.nan
    c_p[dd, m] = p
    c_div[dd, m] = 0.0
    c_aux[dd, m, 0] = aux0
    c_aux[dd, m, 1] = aux1
    cn[dd] = m + 1
    cur[dd] = 0

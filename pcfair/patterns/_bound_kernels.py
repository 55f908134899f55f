"""Compiled kernel of the tree bound (:class:`pcfair.patterns.bounds.TreeBound`).

One bottom-up pass over the feature tree of a decision-rooted tree-augmented model computes,
for every feature ``v`` and every value ``j`` of its tree parent, intervals over the
extensions of a search node: the subtree's log-likelihood ratio under the evidence ``y'``
(``A``), under ``x', y'`` (``B``), their difference (``D``) and the log-probabilities of the
``x'`` evidence given the ``y'`` evidence under each decision value (``p``), plus exact
log-messages for subtrees with no undecided variable. The rules and their proof are in the
docstring of :class:`~pcfair.patterns.bounds.TreeBound`; this module only evaluates them.

Variable states (``st``): :data:`EXCL` (decided, excluded: marginalised), :data:`FREE`
(undecided, not sensitive: ``y`` with any value, or excluded), :data:`FREE_SENS` (undecided,
sensitive: ``x`` or ``y`` with any value, or excluded), :data:`IN_Y`, :data:`IN_X` (decided,
with the value ``val``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pcfair.patterns._search_kernels import _add, coupled_bound, sigmoid

EXCL = 0
FREE = 1
FREE_SENS = 2
IN_Y = 3
IN_X = 4

NEG = -np.inf
POS = np.inf


@njit(cache=True, inline="always")
def _lo(a: float) -> float:
    """A lower end: NaN (``inf − inf``, an undefined combination) widens to −inf."""
    return NEG if a != a else a


@njit(cache=True, inline="always")
def _hi(a: float) -> float:
    """An upper end: NaN widens to +inf."""
    return POS if a != a else a


@njit(cache=True, inline="always")
def _meet(lo1: float, hi1: float, lo2: float, hi2: float):
    """The intersection of two intervals that both contain the value; their hull if
    rounding made them disjoint (then the hull still contains it)."""
    lo = max(lo1, lo2)
    hi = min(hi1, hi2)
    if lo > hi:
        return min(lo1, lo2), max(hi1, hi2)
    return lo, hi


@njit(cache=True)
def _logaddexp(a: float, b: float) -> float:
    if a == NEG:
        return b
    if b == NEG:
        return a
    m = max(a, b)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


@njit(cache=True)
def _posterior(v, j, k0, lt, st, val, card, toff, ch_ptr, ch_idx, flags, base):
    """``(lo, hi)``: log bounds on ``P_δ(v = k0 | A-evidence below v, pa = j)`` under the
    tables ``lt`` of one decision value ``δ``. The posterior is ``θ(k0) M_k0 / Σ_k θ(k) M_k``
    with ``M_k`` the product of the children's messages; each child's ratio
    ``m(c, k) / m(c, k0) = Σ_l θ(l|k) R_l / Σ_l θ(l|k0) R_l`` lies, by the mediant inequality,
    within ``[min_l, max_l] θ(l|k) / θ(l|k0)`` (exactly ``θ(l|k)/θ(l|k0)`` for a child
    observed with ``l``; 1 for a child whose subtree holds no evidence)."""
    lo_den = NEG
    hi_den = NEG
    for k in range(card[v]):
        if lt[base + k] == NEG:
            continue
        r_max = 0.0
        r_min = 0.0
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            c = ch_idx[e]
            if not flags[c, 2]:
                continue
            kc = card[c]
            o1 = toff[c] + k * kc
            o0 = toff[c] + k0 * kc
            if st[c] == IN_Y:
                q = lt[o1 + val[c]] - lt[o0 + val[c]]
                r_max = _hi(r_max + q)
                r_min = _lo(r_min + q)
                continue
            cmax = NEG
            cmin = POS
            for l in range(kc):
                if lt[o1 + l] == NEG:
                    continue
                q = lt[o1 + l] - lt[o0 + l]
                cmax = max(cmax, q)
                cmin = min(cmin, q)
            if cmax == NEG:  # θ(· | k) has no mass: cannot happen for a distribution
                cmin = NEG
            r_max = _hi(r_max + cmax)
            r_min = _lo(r_min + cmin)
        lo_den = _logaddexp(lo_den, _hi(lt[base + k] + r_max))
        hi_den = _logaddexp(hi_den, _lo(lt[base + k] + r_min))
    num = lt[base + k0]
    lo = _lo(num - lo_den)
    hi = min(0.0, _hi(num - hi_den))
    return min(lo, hi), hi


@njit(cache=True)
def tree_box(st, val, post, par, card, kp, toff, lt1, lt0, ch_ptr, ch_idx, moff,
             box, imp, lm, flags, out, dirty) -> None:
    """Fill ``out = [A_lo, A_hi, B_lo, B_hi, D_lo, D_hi, impA, impB]`` for the forest's roots
    (the children of the decision), summed over the roots.

    Per feature ``v`` and parent value ``j`` (slot ``m = moff[v] + j``): ``box[m, 0:6]`` the
    intervals of ``A``, ``B`` and ``D``, ``box[m, 6:10]`` those of ``p_d`` and ``p_¬d`` (the
    log-probability of the subtree's ``x'`` evidence given its ``y'`` evidence),
    ``imp[m, 0/1]`` whether the ``A`` / ``B`` evidence of the subtree has probability zero
    under both decision values for every extension, ``lm[m, 0:4]`` the exact
    ``log P_d(e_sub | pa = j)`` (``A`` under ``d``, ``A`` under ``¬d``, ``B`` under ``d``, ``B``
    under ``¬d``) when the subtree has no undecided variable. ``flags[v]``: the subtree has no
    undecided variable; it holds a variable that is or can become part of ``x'``; its ``A``
    evidence can be non-empty; its ``B`` evidence can be. ``lt1``/``lt0``:
    ``log θ_d(v = k | pa = j)`` at ``toff[v] + j * card[v] + k``.

    Incremental: a feature's entries depend only on the states in its subtree, so only the
    features marked in ``dirty`` (whose ``st``/``val`` changed since the arrays were last
    filled; all of them the first time) and their ancestors are recomputed; ``dirty`` is
    cleared on return.
    """
    nf = post.shape[0]
    for i in range(nf):
        v = post[i]
        need = dirty[v]
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            if dirty[ch_idx[e]]:
                need = True
        if not need:
            continue  # nothing changed below v: its entries stand
        dirty[v] = True  # so that its parent is recomputed too
        s = st[v]
        st_ok = s == EXCL or s == IN_Y or s == IN_X
        xc = s == FREE_SENS or s == IN_X
        kids_a = False  # some child's subtree can hold A (resp. B) evidence
        kids_b = False
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            c = ch_idx[e]
            st_ok = st_ok and flags[c, 0]
            xc = xc or flags[c, 1]
            kids_a = kids_a or flags[c, 2]
            kids_b = kids_b or flags[c, 3]
        flags[v, 0] = st_ok
        flags[v, 1] = xc
        flags[v, 2] = kids_a or s == IN_Y or s == FREE or s == FREE_SENS
        flags[v, 3] = kids_b or s != EXCL
        kv = card[v]
        for j in range(kp[v]):
            m = moff[v] + j
            base = toff[v] + j * kv
            if st_ok:
                obs_a = val[v] if s == IN_Y else -1
                obs_b = val[v] if (s == IN_Y or s == IN_X) else -1
                a1 = NEG
                a0 = NEG
                b1 = NEG
                b0 = NEG
                for k in range(kv):
                    ca1 = 0.0
                    ca0 = 0.0
                    cb1 = 0.0
                    cb0 = 0.0
                    for e in range(ch_ptr[v], ch_ptr[v + 1]):
                        cm = moff[ch_idx[e]] + k
                        ca1 += lm[cm, 0]
                        ca0 += lm[cm, 1]
                        cb1 += lm[cm, 2]
                        cb0 += lm[cm, 3]
                    if obs_a < 0 or obs_a == k:
                        a1 = _logaddexp(a1, lt1[base + k] + ca1)
                        a0 = _logaddexp(a0, lt0[base + k] + ca0)
                    if obs_b < 0 or obs_b == k:
                        b1 = _logaddexp(b1, lt1[base + k] + cb1)
                        b0 = _logaddexp(b0, lt0[base + k] + cb0)
                lm[m, 0] = a1
                lm[m, 1] = a0
                lm[m, 2] = b1
                lm[m, 3] = b0
                ia = a1 == NEG and a0 == NEG
                ib = b1 == NEG and b0 == NEG
                imp[m, 0] = ia
                imp[m, 1] = ib
                ga = 0.0 if ia else a1 - a0
                gb = 0.0 if ib else b1 - b0
                box[m, 0] = ga
                box[m, 1] = ga
                box[m, 2] = gb
                box[m, 3] = gb
                box[m, 4] = _lo(gb - ga)
                box[m, 5] = _hi(gb - ga)
                for q in range(2):  # p_δ = log m_δ(B) − log m_δ(A), exactly
                    pq = lm[m, 2 + q] - lm[m, q]
                    box[m, 6 + 2 * q] = NEG if pq != pq else pq
                    box[m, 7 + 2 * q] = 0.0 if pq != pq else pq
                continue
            # hulls of the cases; the mixtures (v unobserved) over the values k
            a_lo, a_hi, b_lo, b_hi, d_lo, d_hi = POS, NEG, POS, NEG, POS, NEG
            mxa_lo, mxa_hi, mxb_lo, mxb_hi = POS, NEG, POS, NEG
            # p_δ hulls of the cases, and of the mixture (v unobserved on both sides)
            p1_lo, p1_hi, p0_lo, p0_hi = POS, NEG, POS, NEG
            mp1_lo, mp1_hi, mp0_lo, mp0_hi = POS, NEG, POS, NEG
            for k in range(kv):
                if lt1[base + k] == NEG and lt0[base + k] == NEG:
                    continue  # θ_d(k | j) = 0 for both d: no mass, in no mixture or case
                ell = lt1[base + k] - lt0[base + k]
                sa_lo = 0.0
                sa_hi = 0.0
                sb_lo = 0.0
                sb_hi = 0.0
                sd_lo = 0.0
                sd_hi = 0.0
                s1_lo = 0.0
                s1_hi = 0.0
                s0_lo = 0.0
                s0_hi = 0.0
                ia = False
                ib = False
                for e in range(ch_ptr[v], ch_ptr[v + 1]):
                    cm = moff[ch_idx[e]] + k
                    s1_lo = _lo(s1_lo + box[cm, 6])
                    s1_hi = _hi(s1_hi + box[cm, 7])
                    s0_lo = _lo(s0_lo + box[cm, 8])
                    s0_hi = _hi(s0_hi + box[cm, 9])
                    sa_lo = _lo(sa_lo + box[cm, 0])
                    sa_hi = _hi(sa_hi + box[cm, 1])
                    sb_lo = _lo(sb_lo + box[cm, 2])
                    sb_hi = _hi(sb_hi + box[cm, 3])
                    sd_lo = _lo(sd_lo + box[cm, 4])
                    sd_hi = _hi(sd_hi + box[cm, 5])
                    ia = ia or imp[cm, 0]
                    ib = ib or imp[cm, 1]
                ra_lo = _lo(ell + sa_lo)
                ra_hi = _hi(ell + sa_hi)
                rb_lo = _lo(ell + sb_lo)
                rb_hi = _hi(ell + sb_hi)
                if not ia:
                    mxa_lo = min(mxa_lo, ra_lo)
                    mxa_hi = max(mxa_hi, ra_hi)
                    mp1_lo = min(mp1_lo, s1_lo)
                    mp1_hi = max(mp1_hi, s1_hi)
                    mp0_lo = min(mp0_lo, s0_lo)
                    mp0_hi = max(mp0_hi, s0_hi)
                if not ib:
                    mxb_lo = min(mxb_lo, rb_lo)
                    mxb_hi = max(mxb_hi, rb_hi)
                # v observed with value k in both evidences (v in y)
                if (s == IN_Y and val[v] == k) or s == FREE or s == FREE_SENS:
                    if not ia:
                        a_lo = min(a_lo, ra_lo)
                        a_hi = max(a_hi, ra_hi)
                        p1_lo = min(p1_lo, s1_lo)
                        p1_hi = max(p1_hi, s1_hi)
                        p0_lo = min(p0_lo, s0_lo)
                        p0_hi = max(p0_hi, s0_hi)
                    if not ib:
                        b_lo = min(b_lo, rb_lo)
                        b_hi = max(b_hi, rb_hi)
                    if not (ia or ib):
                        d_lo = min(d_lo, sd_lo)
                        d_hi = max(d_hi, sd_hi)
            # v observed in B only (v in x), or in neither (excluded): A is a mixture, by
            # (P3), or exactly 0, by (P1), when no child's subtree can hold evidence
            has_a = mxa_lo <= mxa_hi
            has_b = mxb_lo <= mxb_hi
            if not kids_a:
                mxa_lo = 0.0
                mxa_hi = 0.0
                has_a = True
            if not kids_b:
                mxb_lo = 0.0
                mxb_hi = 0.0
                has_b = True
            if s == IN_X or s == FREE_SENS:
                # the A side is the mixture whatever k is (possible or not on the B side)
                if has_a:
                    a_lo = min(a_lo, mxa_lo)
                    a_hi = max(a_hi, mxa_hi)
                for k in range(kv):
                    if s == IN_X and val[v] != k:
                        continue
                    if lt1[base + k] == NEG and lt0[base + k] == NEG:
                        if has_a:  # B impossible on both sides: p_δ = −inf
                            p1_lo = NEG
                            p0_lo = NEG
                            p1_hi = max(p1_hi, NEG)
                            p0_hi = max(p0_hi, NEG)
                        continue
                    ell = lt1[base + k] - lt0[base + k]
                    sb_lo = 0.0
                    sb_hi = 0.0
                    sd_lo = 0.0
                    sd_hi = 0.0
                    s1_lo = 0.0
                    s1_hi = 0.0
                    s0_lo = 0.0
                    s0_hi = 0.0
                    ib = False
                    for e in range(ch_ptr[v], ch_ptr[v + 1]):
                        cm = moff[ch_idx[e]] + k
                        sb_lo = _lo(sb_lo + box[cm, 2])
                        sb_hi = _hi(sb_hi + box[cm, 3])
                        sd_lo = _lo(sd_lo + box[cm, 4])
                        sd_hi = _hi(sd_hi + box[cm, 5])
                        s1_lo = _lo(s1_lo + box[cm, 6])
                        s1_hi = _hi(s1_hi + box[cm, 7])
                        s0_lo = _lo(s0_lo + box[cm, 8])
                        s0_hi = _hi(s0_hi + box[cm, 9])
                        ib = ib or imp[cm, 1]
                    # log P_δ(v = k | A below, j): bounds by the children's mediants
                    q1_lo, q1_hi = _posterior(v, j, k, lt1, st, val, card, toff, ch_ptr,
                                              ch_idx, flags, base)
                    q0_lo, q0_hi = _posterior(v, j, k, lt0, st, val, card, toff, ch_ptr,
                                              ch_idx, flags, base)
                    if has_a:
                        p1_lo = min(p1_lo, _lo(q1_lo + s1_lo))
                        p1_hi = max(p1_hi, _hi(q1_hi + s1_hi))
                        p0_lo = min(p0_lo, _lo(q0_lo + s0_lo))
                        p0_hi = max(p0_hi, _hi(q0_hi + s0_hi))
                    if ib:
                        continue
                    rb_lo = _lo(ell + sb_lo)
                    rb_hi = _hi(ell + sb_hi)
                    b_lo = min(b_lo, rb_lo)
                    b_hi = max(b_hi, rb_hi)
                    if has_a:
                        # D = log α_k − log β_k + Σ_c D(c, k) (posteriors α, β of v = k under
                        # d, ¬d), intersected with the difference of the two intervals
                        lo1 = _lo(rb_lo - mxa_hi)
                        hi1 = _hi(rb_hi - mxa_lo)
                        lo2 = _lo(_lo(q1_lo - q0_hi) + sd_lo)
                        hi2 = _hi(_hi(q1_hi - q0_lo) + sd_hi)
                        lo, hi = _meet(lo1, hi1, lo2, hi2)
                        d_lo = min(d_lo, lo)
                        d_hi = max(d_hi, hi)
            if s == EXCL or s == FREE or s == FREE_SENS:
                if has_a:
                    a_lo = min(a_lo, mxa_lo)
                    a_hi = max(a_hi, mxa_hi)
                if has_b:
                    b_lo = min(b_lo, mxb_lo)
                    b_hi = max(b_hi, mxb_hi)
                if has_a:
                    p1_lo = min(p1_lo, mp1_lo)
                    p1_hi = max(p1_hi, mp1_hi)
                    p0_lo = min(p0_lo, mp0_lo)
                    p0_hi = max(p0_hi, mp0_hi)
                if has_a and has_b:
                    if xc:
                        # D = log E_α[U] − log E_β[W] (U, W the children's e^{p_d}, e^{p_¬d})
                        lo, hi = _meet(_lo(mxb_lo - mxa_hi), _hi(mxb_hi - mxa_lo),
                                       _lo(mp1_lo - mp0_hi), _hi(mp1_hi - mp0_lo))
                        d_lo = min(d_lo, lo)
                        d_hi = max(d_hi, hi)
                    else:  # the same evidence on both sides: the same ratio
                        d_lo = min(d_lo, 0.0)
                        d_hi = max(d_hi, 0.0)
            imp[m, 0] = not (a_lo <= a_hi)
            imp[m, 1] = not (b_lo <= b_hi)
            if d_lo > d_hi:  # no case where both are possible: D is never asked for
                d_lo = 0.0
                d_hi = 0.0
            box[m, 0] = a_lo if a_lo <= a_hi else 0.0
            box[m, 1] = a_hi if a_lo <= a_hi else 0.0
            box[m, 2] = b_lo if b_lo <= b_hi else 0.0
            box[m, 3] = b_hi if b_lo <= b_hi else 0.0
            box[m, 4] = d_lo
            box[m, 5] = d_hi
            if not xc:  # the same evidence on both sides: nothing more to observe
                p1_lo, p1_hi, p0_lo, p0_hi = 0.0, 0.0, 0.0, 0.0
            elif not (b_lo <= b_hi):  # B impossible for every extension
                p1_lo, p1_hi, p0_lo, p0_hi = NEG, 0.0, NEG, 0.0
            if p1_lo > p1_hi:
                p1_lo, p1_hi = NEG, 0.0
            if p0_lo > p0_hi:
                p0_lo, p0_hi = NEG, 0.0
            box[m, 6] = p1_lo
            box[m, 7] = min(p1_hi, 0.0)
            box[m, 8] = p0_lo
            box[m, 9] = min(p0_hi, 0.0)
    for q in range(6):
        out[q] = 0.0
    out[6] = 0.0
    out[7] = 0.0
    for i in range(nf):
        v = post[i]
        if par[v] >= 0:
            continue
        m = moff[v]
        out[0] = _lo(out[0] + box[m, 0])
        out[1] = _hi(out[1] + box[m, 1])
        out[2] = _lo(out[2] + box[m, 2])
        out[3] = _hi(out[3] + box[m, 3])
        out[4] = _lo(out[4] + box[m, 4])
        out[5] = _hi(out[5] + box[m, 5])
        if imp[m, 0]:
            out[6] = 1.0
        if imp[m, 1]:
            out[7] = 1.0
    for i in range(nf):
        dirty[post[i]] = False


@njit(cache=True)
def node_bound(out, pi):
    """``(ub, a_min, a_max)`` of a search node from its :func:`tree_box` ``out`` and
    ``π = logit P(d)``: the bound :class:`~pcfair.patterns.bounds.TreeBound` proves, ``ub`` the
    smaller of :func:`~pcfair.patterns._search_kernels.coupled_bound` over ``[π + A] × [D]`` and
    the corners ``max(σ(π + B_hi) − σ(π + A_lo), σ(π + A_hi) − σ(π + B_lo))``, and
    ``[a_min, a_max] = σ(π + [B])``. ``ub = −1`` when no extension has positive probability
    (``impA`` or ``impB``); where ``π`` is infinite every conditional is 0 or 1 and ``ub = 0``."""
    if out[6] != 0.0 or out[7] != 0.0:
        return -1.0, 0.0, 0.0
    if not math.isfinite(pi):
        p = sigmoid(pi)
        return 0.0, p, p
    t_lo = _add(pi, out[0], NEG)
    t_hi = _add(pi, out[1], POS)
    u_lo = _add(pi, out[2], NEG)
    u_hi = _add(pi, out[3], POS)
    corners = max(sigmoid(u_hi) - sigmoid(t_lo), sigmoid(t_hi) - sigmoid(u_lo), 0.0)
    ub = min(coupled_bound(t_lo, t_hi, out[4], out[5]), corners)
    return ub, sigmoid(u_lo), sigmoid(u_hi)


@njit(cache=True)
def rest_range(out, pi):
    """The range ``σ(π + [A])`` of ``P(d | y', ¬x')`` from a :func:`tree_box` computed with
    ``x``'s variables undecided (``(0, 1)`` where that evidence is impossible)."""
    if out[6] != 0.0:
        return 0.0, 1.0
    return sigmoid(_add(pi, out[0], NEG)), sigmoid(_add(pi, out[1], POS))

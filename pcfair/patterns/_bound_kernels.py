"""Compiled kernel of the tree bound (:class:`pcfair.patterns.bounds.TreeBound`).

One bottom-up pass over the feature tree of a decision-rooted tree-augmented model computes,
for every feature ``v`` and every value ``j`` of its tree parent, three intervals over the
extensions of a search node: the subtree's log-likelihood ratio under the evidence ``y'``
(``A``), under ``x', y'`` (``B``), and their difference (``D``), plus exact log-messages for
subtrees with no undecided variable. The rules and their proof are in the docstring of
:class:`~pcfair.patterns.bounds.TreeBound`; this module only evaluates them.

Variable states (``st``): :data:`EXCL` (decided, excluded: marginalised), :data:`FREE`
(undecided, not sensitive: ``y`` with any value, or excluded), :data:`FREE_SENS` (undecided,
sensitive: ``x`` or ``y`` with any value, or excluded), :data:`IN_Y`, :data:`IN_X` (decided,
with the value ``val``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

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


@njit(cache=True)
def _logaddexp(a: float, b: float) -> float:
    if a == NEG:
        return b
    if b == NEG:
        return a
    m = max(a, b)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


@njit(cache=True)
def tree_box(st, val, post, par, card, kp, toff, lt1, lt0, ch_ptr, ch_idx, moff,
             box, imp, lm, flags, out) -> None:
    """Fill ``out = [A_lo, A_hi, B_lo, B_hi, D_lo, D_hi, impA, impB]`` for the forest's roots
    (the children of the decision), summed over the roots.

    Per feature ``v`` and parent value ``j`` (slot ``m = moff[v] + j``): ``box[m, 0:6]`` the
    intervals, ``imp[m, 0/1]`` whether the ``A`` / ``B`` evidence of the subtree has
    probability zero under both decision values for every extension, ``lm[m, 0:4]`` the exact
    ``log P_d(e_sub | pa = j)`` (``A`` under ``d``, ``A`` under ``¬d``, ``B`` under ``d``, ``B``
    under ``¬d``) when the subtree has no undecided variable. ``flags[v]``: the subtree has no
    undecided variable; it holds a variable that is or can become part of ``x'``; its ``A``
    evidence can be non-empty; its ``B`` evidence can be. ``lt1``/``lt0``:
    ``log θ_d(v = k | pa = j)`` at ``toff[v] + j * card[v] + k``.
    """
    nf = post.shape[0]
    for i in range(nf):
        v = post[i]
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
                continue
            # hulls of the cases; the mixtures (v unobserved) over the values k
            a_lo, a_hi, b_lo, b_hi, d_lo, d_hi = POS, NEG, POS, NEG, POS, NEG
            mxa_lo, mxa_hi, mxb_lo, mxb_hi = POS, NEG, POS, NEG
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
                ia = False
                ib = False
                for e in range(ch_ptr[v], ch_ptr[v + 1]):
                    cm = moff[ch_idx[e]] + k
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
                if not ib:
                    mxb_lo = min(mxb_lo, rb_lo)
                    mxb_hi = max(mxb_hi, rb_hi)
                # v observed with value k in both evidences (v in y)
                if (s == IN_Y and val[v] == k) or s == FREE or s == FREE_SENS:
                    if not ia:
                        a_lo = min(a_lo, ra_lo)
                        a_hi = max(a_hi, ra_hi)
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
                        continue
                    ell = lt1[base + k] - lt0[base + k]
                    sb_lo = 0.0
                    sb_hi = 0.0
                    ib = False
                    for e in range(ch_ptr[v], ch_ptr[v + 1]):
                        cm = moff[ch_idx[e]] + k
                        sb_lo = _lo(sb_lo + box[cm, 2])
                        sb_hi = _hi(sb_hi + box[cm, 3])
                        ib = ib or imp[cm, 1]
                    if ib:
                        continue
                    rb_lo = _lo(ell + sb_lo)
                    rb_hi = _hi(ell + sb_hi)
                    b_lo = min(b_lo, rb_lo)
                    b_hi = max(b_hi, rb_hi)
                    if has_a:
                        d_lo = min(d_lo, _lo(rb_lo - mxa_hi))
                        d_hi = max(d_hi, _hi(rb_hi - mxa_lo))
            if s == EXCL or s == FREE or s == FREE_SENS:
                if has_a:
                    a_lo = min(a_lo, mxa_lo)
                    a_hi = max(a_hi, mxa_hi)
                if has_b:
                    b_lo = min(b_lo, mxb_lo)
                    b_hi = max(b_hi, mxb_hi)
                if has_a and has_b:
                    if xc:
                        d_lo = min(d_lo, _lo(mxb_lo - mxa_hi))
                        d_hi = max(d_hi, _hi(mxb_hi - mxa_lo))
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

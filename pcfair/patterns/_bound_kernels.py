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

:func:`tree_box` reads as its rules, one helper each, and passes the records
(:mod:`pcfair.patterns._tree_records`) whole. The helpers that take a record are compiled
without numba's reference counts (``_nrt=False``: they allocate nothing and only borrow
their caller's arrays), as each field read from a record and each record handed to an
inlined helper would otherwise count a reference (measured: the box twice as slow with
them). The cases of a slot (:func:`_observed_cases`, :func:`_x_cases`,
:func:`_excluded_case`) are plain calls, the rest inlined: inlining them too made the box
faster still but its first compile slower than that of the kernel before the split. The
helpers of a slot pass their running intervals as tuples of ends, each ``[X]`` as
``X_lo, X_hi`` (``lo > hi``: empty so far):

- ``hull``: ``[A], [B], [D], [p_d], [p_¬d]``, the hull of the cases an extension can
  realise at ``v``;
- ``mixture``: ``[A], [B], [p_d], [p_¬d]`` of ``v`` unobserved, mixtures over its values
  (P3);
- ``hm``: rule H's ``[D]``, then the number of rule M's rows (in ``BoxWork.mix``);
- ``rc``: rule C's ``min(Σ_c ω_d(c), Σ_c ω_¬d(c))`` and ``Σ_c ω_A(c)``, the hull of the
  ``D_k``, the range of the ``ℓ_k`` and the hull of the ``ℓ_k + A_k``.
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

#: The box's sharper mixture rules (:class:`~pcfair.patterns.bounds.TreeBound`, rules H and M),
#: as bits of ``rules``; ``0`` gives the box without them (kept to measure what they prune).
RULE_H = 1
RULE_M = 2
#: The contraction rule (:class:`~pcfair.patterns.bounds.TreeBound`, rule C): each subtree's
#: oscillation of ``p_δ`` over its parent's values, and the difference of a mixture bounded by
#: it (Birkhoff's contraction), cheap enough for the plain box.
RULE_C = 4
#: Evidence below an observed variable detached (:func:`_detach`): the variable exact for its
#: ancestors, its children's part added once at the roots.
RULE_E = 8
RULES_ALL = RULE_H | RULE_M | RULE_C | RULE_E
#: Columns of the box: ``[A]``, ``[B]``, ``[D]``, ``[p_d]``, ``[p_¬d]``, then the
#: oscillations ``ω_d``, ``ω_¬d`` and ``ω_A`` of rule C, then (in a feature's first slot
#: only) the ``[A]``, ``[B]``, ``[D]`` its children's subtrees contribute when it is in ``y``
#: (detached: :func:`_detach`).
BOX_COLUMNS = 19
#: Columns of ``imp``: ``A`` and ``B`` impossible in the slot, then (first slot only) in the
#: detached part of a feature in ``y``.
IMP_COLUMNS = 4


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


@njit(cache=True, _nrt=False)
def _child_ratios(v, lt, q, st, val, model, bw) -> None:
    """``bw.rr[q, k, k0] = (lo, hi)``: log bounds on ``Π_c m(c, k) / m(c, k0)``, the product
    over ``v``'s children of the ratio of their ``A``-evidence messages at two values of
    ``v``, under the tables ``lt`` of one decision value (``q``: 0 for ``d``, 1 for ``¬d``).
    Each child's ratio ``m(c, k) / m(c, k0) = Σ_l θ(l|k) R_l / Σ_l θ(l|k0) R_l`` lies, by the
    mediant inequality, within ``[min_l, max_l] θ(l|k) / θ(l|k0)`` over the ``l`` in either
    sum (a ratio ``0`` where ``θ(l|k) = 0 < θ(l|k0)``, which an earlier version left out,
    claiming too high a least ratio; +inf where ``θ(l|k0) = 0 < θ(l|k)``; exactly
    ``θ(l|k)/θ(l|k0)`` for a child observed with ``l``; 1 for a child whose subtree holds no
    evidence; exactly ``m(c, k) / m(c, k0)`` from the exact messages ``bw.lm`` of a child
    whose subtree has no undecided variable, any ratio where both are 0). The bounds do not
    depend on ``v``'s parent value, so one table serves every parent value;
    ``bw.rr[q, k, k0, 2:4]`` holds their exponentials."""
    card, toff, moff = model.card, model.toff, model.moff
    ch_ptr, ch_idx = model.ch_ptr, model.ch_idx
    flags, rr, lm = bw.flags, bw.rr, bw.lm
    kv = card[v]
    for k in range(kv):
        for k0 in range(kv):
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
                    r = lt[o1 + val[c]] - lt[o0 + val[c]]
                    r_max = _hi(r_max + r)
                    r_min = _lo(r_min + r)
                    continue
                if flags[c, 0]:  # decided below: the exact messages (NaN: 0/0, any ratio)
                    r = lm[moff[c] + k, q] - lm[moff[c] + k0, q]
                    r_max = _hi(r_max + r)
                    r_min = _lo(r_min + r)
                    continue
                cmax = NEG
                cmin = POS
                for l in range(kc):
                    if lt[o1 + l] == NEG and lt[o0 + l] == NEG:
                        continue  # in neither sum
                    r = lt[o1 + l] - lt[o0 + l]  # −inf where θ(l | k) = 0 < θ(l | k0)
                    cmax = max(cmax, r)
                    cmin = min(cmin, r)
                if cmax == NEG:  # every ratio 0 (or no value at all)
                    cmin = NEG
                r_max = _hi(r_max + cmax)
                r_min = _lo(r_min + cmin)
            rr[q, k, k0, 0] = r_min
            rr[q, k, k0, 1] = r_max
            # np.exp: +inf past the double range (math.exp raises there when the kernels run
            # as plain Python, NUMBA_DISABLE_JIT=1; compiled, the two are one instruction)
            rr[q, k, k0, 2] = np.exp(r_min)
            rr[q, k, k0, 3] = np.exp(r_max)

@njit(cache=True)
def _posterior(k0, lt, th, base, kv, rr, q):
    """``(lo, hi)``: log bounds on ``P_δ(v = k0 | A-evidence below v, pa = j)`` under the
    tables ``lt`` (logs) and ``th`` (linear) of one decision value (``base`` the row of
    ``θ(· | j)``). The posterior is
    ``θ(k0) M_k0 / Σ_k θ(k) M_k`` with ``M_k`` the product of the children's messages, and
    ``M_k / M_k0`` lies within :func:`_child_ratios`' bounds ``rr[q, k, k0, 0:2]`` (their
    exponentials in ``rr[q, k, k0, 2:4]``). The denominators are summed in linear space, and
    again in log space where a linear sum leaves the normal range (below ``1e-290``, where
    rounding is no longer relative, or infinite)."""
    num = lt[base + k0]
    den_lo = 0.0  # Σ_k θ(k) e^{r_max}: the largest denominator, for the lower bound
    den_hi = 0.0
    for k in range(kv):
        if lt[base + k] == NEG:
            continue
        t = th[base + k]
        den_lo += t * rr[q, k, k0, 3]
        den_hi += t * rr[q, k, k0, 2]
    if 1e-290 < den_lo < POS and 1e-290 < den_hi < POS:
        lo = _lo(num - math.log(den_lo))
        hi = min(0.0, _hi(num - math.log(den_hi)))
        return min(lo, hi), hi
    lo_den = NEG
    hi_den = NEG
    for k in range(kv):
        if lt[base + k] == NEG:
            continue
        lo_den = _logaddexp(lo_den, _hi(lt[base + k] + rr[q, k, k0, 1]))
        hi_den = _logaddexp(hi_den, _lo(lt[base + k] + rr[q, k, k0, 0]))
    lo = _lo(num - lo_den)
    hi = min(0.0, _hi(num - hi_den))
    return min(lo, hi), hi

@njit(cache=True, _nrt=False)
def _posteriors(v, k, base, ready, st, val, model, bw):
    """:func:`_posterior`'s bounds of ``v = k`` under ``d`` and ``¬d`` (``lo_d, hi_d, lo_¬d,
    hi_¬d``; ``base`` the row of ``θ(· | j)``), filling ``v``'s child-ratio table first unless
    it is ``ready``."""
    if not ready:
        _child_ratios(v, model.lt1, 0, st, val, model, bw)
        _child_ratios(v, model.lt0, 1, st, val, model, bw)
    kv = model.card[v]
    q1_lo, q1_hi = _posterior(k, model.lt1, model.th1, base, kv, bw.rr, 0)
    q0_lo, q0_hi = _posterior(k, model.lt0, model.th0, base, kv, bw.rr, 1)
    return q1_lo, q1_hi, q0_lo, q0_hi


@njit(cache=True)
def _weighted_extreme(m, n, cc, wl, upper) -> float:
    """``max`` (``upper``) or ``min`` of ``Σ_k w_k c_k`` over the weights ``w`` with
    ``lo_k ≤ w_k ≤ hi_k`` and ``Σ_k w_k = 1`` (``k < n``; ``c``, ``lo``, ``hi`` the columns
    ``cc``, ``wl``, ``wl + 1`` of ``m``; column 9 is scratch): a linear programme over the
    simplex cut by a box, solved greedily (start at ``lo``, give the remaining mass to the
    largest ``c`` first, for ``max``; smallest first, for ``min``: an exchange argument shows
    no feasible ``w`` does better). Where rounding or loose ends leave the set empty
    (``Σ lo > 1`` or ``Σ hi < 1``) the answer is the plain simplex's, ``max_k c_k`` (``min``),
    which bounds every weighted mean as well. Sums within ``1e-9`` of one count as one (the
    ends come from logs and exponentials); the caller widens the result for that rounding."""
    ext = -np.inf if upper else np.inf
    tot_lo = 0.0
    tot_hi = 0.0
    acc = 0.0
    for k in range(n):
        ext = max(ext, m[k, cc]) if upper else min(ext, m[k, cc])
        tot_lo += m[k, wl]
        tot_hi += m[k, wl + 1]
        acc += m[k, wl] * m[k, cc]
        m[k, 9] = 0.0
    if tot_lo > 1.0 + 1e-9 or tot_hi < 1.0 - 1e-9:
        return ext
    rest = max(1.0 - tot_lo, 0.0)
    for _ in range(n):  # the next value by c (a selection: n is a variable's arity)
        best = -1
        for k in range(n):
            if m[k, 9] == 0.0 and (best < 0 or (m[k, cc] > m[best, cc] if upper
                                                else m[k, cc] < m[best, cc])):
                best = k
        m[best, 9] = 1.0
        add = min(m[best, wl + 1] - m[best, wl], rest)
        if add > 0.0:
            acc += add * m[best, cc]
            rest -= add
        if rest <= 0.0:
            break
    return min(acc, ext) if upper else max(acc, ext)


@njit(cache=True)
def _log_weighted(mix, n, col, wlo, upper) -> float:
    """The log of :func:`_weighted_extreme` of ``exp(mix[:, col])`` with weights bounded by
    ``mix[:, wlo]``, ``mix[:, wlo + 1]``: the values are shifted by their largest log (so they
    lie in ``[0, 1]``, in column 8), the shift added back in log space."""
    top = NEG
    for k in range(n):
        top = max(top, mix[k, col])
    if top == NEG or top == POS:
        return top
    for k in range(n):
        mix[k, 8] = math.exp(mix[k, col] - top)
    val = _weighted_extreme(mix, n, 8, wlo, upper)
    return (math.log(val) if val > 0.0 else NEG) + top


@njit(cache=True)
def _mixture_difference(mix, n):
    """Bounds of ``D = log Σ_k α_k U_k − log Σ_k β_k W_k`` (rule M of
    :class:`~pcfair.patterns.bounds.TreeBound`) from the rows ``mix[k, :8] = [α_lo, α_hi,
    β_lo, β_hi, log U_lo, log U_hi, log W_lo, log W_hi]`` of the ``n`` values in the mixture
    (columns 8 and 9 are scratch): the least numerator over the greatest denominator and the
    greatest over the least, each by :func:`_log_weighted`; the ends are widened by ``1e-12``
    for the rounding of the weighted sums."""
    num_hi = _log_weighted(mix, n, 5, 0, True)
    num_lo = _log_weighted(mix, n, 4, 0, False)
    den_hi = _log_weighted(mix, n, 7, 2, True)
    den_lo = _log_weighted(mix, n, 6, 2, False)
    return _lo(num_lo - den_hi) - 1e-12, _hi(num_hi - den_lo) + 1e-12


@njit(cache=True, _nrt=False)
def _oscillation(v, st, val, kids_a, j_lo, j_hi, model, bw) -> None:
    """Rule C of :class:`~pcfair.patterns.bounds.TreeBound`: ``ω_δ(v)``, a bound on
    ``p_δ(v, j) − p_δ(v, j')``, and ``ω_A(v)``, a bound on ``g_A(v, j) − g_A(v, j')``, over
    the parent values ``j``, ``j'`` (for every extension), written into ``bw.box[m, 10:13]``
    of the slots ``j_lo ≤ j < j_hi`` (``ω_d``, ``ω_¬d``, ``ω_A``; ``kids_a``: some child's
    subtree can hold ``A`` evidence). +inf where a bounded quantity can be infinite; ``0``
    with one parent value; the spread of the exact values in a decided subtree (``bw.flags[v, 0]``);
    otherwise by ``v``'s state (``model.ctr``: :meth:`TreeBound.contraction
    <pcfair.patterns.bounds.TreeBound.contraction>`'s tables):

    - ``ω_δ``: ``0`` in ``y``; ``Δ_k`` in ``x`` with ``k`` (the spread of ``log θ_δ(k | ·)``
      when no child's subtree can hold ``A`` evidence); ``τ_δ Σ_c ω_δ(c)`` excluded; the
      largest of its cases undecided;
    - ``ω_A``: the spread of ``ℓ_v(k, ·)`` in ``y`` with ``k``; unobserved on the ``A`` side
      (excluded, or in ``x``): ``0`` when no child's subtree can hold ``A`` evidence, else
      ``min(τ_d, τ_¬d) (spread_k m_k + Σ_c ω_A(c)) + 2h`` (``m_k`` the mid-range of
      ``ℓ_v(k, ·)``, ``h`` the largest half-range); the largest of its cases undecided."""
    s = st[v]
    st_ok = bw.flags[v, 0]
    kp, moff, ctr = model.kp, model.moff, model.ctr
    ch_ptr, ch_idx = model.ch_ptr, model.ch_idx
    box, imp = bw.box, bw.imp
    for q in range(3):
        o = 0.0
        if kp[v] > 1:
            col = 6 + 2 * q if q < 2 else 0
            lo_p = POS
            hi_p = NEG
            for j in range(j_lo, j_hi):
                m = moff[v] + j
                if q == 2 and imp[m, 0]:
                    continue  # A impossible: the slot has no weight above
                lo_p = min(lo_p, box[m, col])
                hi_p = max(hi_p, box[m, col])
            if lo_p == NEG or hi_p == POS:
                o = POS
            elif st_ok:  # exact per slot (lo = hi)
                o = (hi_p - lo_p) * (1.0 + 1e-12) if lo_p <= hi_p else 0.0
            elif q < 2:
                if s != IN_Y:
                    om = 0.0
                    for e in range(ch_ptr[v], ch_ptr[v + 1]):
                        om += box[moff[ch_idx[e]], 10 + q]
                    mixture = POS if om == POS else ctr[v, q, 0] * om * (1.0 + 1e-12)
                    # v in x: Δ_k, or the spread of log θ(k | ·) itself when no child's
                    # subtree can hold A evidence (the sum Σ_l θ(l | j) w_l is then 1)
                    plane = q if kids_a else 4 + q
                    if s == IN_X:
                        o = ctr[v, plane, 2 + val[v]]
                    elif s == FREE_SENS:
                        o = max(mixture, ctr[v, plane, 1])
                    else:  # excluded, or undecided and not sensitive (y: 0, or excluded)
                        o = mixture
            else:
                if s == IN_Y:
                    o = ctr[v, 2, 2 + val[v]]
                else:
                    mixture = 0.0
                    if kids_a:
                        om = 0.0
                        for e in range(ch_ptr[v], ch_ptr[v + 1]):
                            om += box[moff[ch_idx[e]], 12]
                        tau = min(ctr[v, 0, 0], ctr[v, 1, 0])
                        mixture = (tau * (ctr[v, 3, 0] + om) + ctr[v, 3, 1]) * (1.0 + 1e-12)
                        if not mixture < POS:
                            mixture = POS
                    o = mixture
                    if s == FREE or s == FREE_SENS:
                        o = max(o, ctr[v, 2, 1])
        for j in range(j_lo, j_hi):
            box[moff[v] + j, 10 + q] = o

@njit(cache=True, _nrt=False)
def _detach(v, a, j_lo, j_hi, model, bw) -> None:
    """Rule E: ``v`` in ``y`` with value ``a`` (:class:`~pcfair.patterns.bounds.TreeBound`,
    "detached evidence"): the sums of the children's ``[A]``, ``[B]``, ``[D]`` at ``a`` and
    whether their ``A`` / ``B`` evidence is impossible go to ``bw.box[moff[v], 13:19]`` and
    ``bw.imp[moff[v], 2:4]``, added once at the roots; ``v``'s own slots ``j_lo ≤ j < j_hi``
    hold what is left, exact: ``g = ℓ_v(a, j)`` on both sides, ``D = 0``, ``p_δ = 0``,
    messages ``log θ_δ(a | j)``; for its ancestors ``v`` counts as decided and as holding no
    ``x`` (``bw.flags[v, 0:2]``)."""
    bw.flags[v, 0] = True
    bw.flags[v, 1] = False
    kv = model.card[v]
    toff, lt1, lt0, moff = model.toff, model.lt1, model.lt0, model.moff
    ch_ptr, ch_idx = model.ch_ptr, model.ch_idx
    box, imp, lm = bw.box, bw.imp, bw.lm
    m0 = moff[v]
    for q in range(6):
        box[m0, 13 + q] = 0.0
    ia = False
    ib = False
    for e in range(ch_ptr[v], ch_ptr[v + 1]):
        cm = moff[ch_idx[e]] + a
        for q in range(0, 6, 2):
            box[m0, 13 + q] = _lo(box[m0, 13 + q] + box[cm, q])
            box[m0, 14 + q] = _hi(box[m0, 14 + q] + box[cm, q + 1])
        ia = ia or imp[cm, 0]
        ib = ib or imp[cm, 1]
    imp[m0, 2] = ia
    imp[m0, 3] = ib
    for j in range(j_lo, j_hi):
        m = moff[v] + j
        o = toff[v] + j * kv + a
        t1 = lt1[o]
        t0 = lt0[o]
        lm[m, 0] = t1
        lm[m, 1] = t0
        lm[m, 2] = t1
        lm[m, 3] = t0
        none = t1 == NEG and t0 == NEG
        imp[m, 0] = none
        imp[m, 1] = none
        g = 0.0 if none else t1 - t0
        for q in range(4):
            box[m, q] = g
        for q in range(4, 10):
            box[m, q] = 0.0

@njit(cache=True, inline="always")
def _stale(v, model, dirty) -> bool:
    """Whether ``v``'s entries must be recomputed: ``v``, one of its children or its parent
    (whose state says which of ``v``'s slots are read) is marked in ``dirty``."""
    pv = model.par[v]
    need = dirty[v] or (pv >= 0 and dirty[pv])
    for e in range(model.ch_ptr[v], model.ch_ptr[v + 1]):
        if dirty[model.ch_idx[e]]:
            need = True
    return need


@njit(cache=True, inline="always")
def _fill_flags(v, st, model, flags):
    """``flags[v]`` from ``v``'s state and its children's flags; returns ``(kids_a,
    kids_b)``: whether some child's subtree can hold ``A`` (resp. ``B``) evidence."""
    s = st[v]
    st_ok = s == EXCL or s == IN_Y or s == IN_X
    xc = s == FREE_SENS or s == IN_X
    kids_a = False
    kids_b = False
    for e in range(model.ch_ptr[v], model.ch_ptr[v + 1]):
        c = model.ch_idx[e]
        st_ok = st_ok and flags[c, 0]
        xc = xc or flags[c, 1]
        kids_a = kids_a or flags[c, 2]
        kids_b = kids_b or flags[c, 3]
    flags[v, 0] = st_ok
    flags[v, 1] = xc
    flags[v, 2] = kids_a or s == IN_Y or s == FREE or s == FREE_SENS
    flags[v, 3] = kids_b or s != EXCL
    return kids_a, kids_b


@njit(cache=True, inline="always")
def _read_slots(v, st, val, model):
    """``(j_lo, j_hi)``: the slots of ``v`` to fill, every parent value, or only the slot of
    its parent's value when the parent is in ``y`` (the parent reads no other)."""
    pv = model.par[v]
    if pv >= 0 and st[pv] == IN_Y:
        return val[pv], val[pv] + 1
    return 0, model.kp[v]


@njit(cache=True, inline="always")
def _exact_slot(v, j, st, val, model, bw) -> None:
    """Slot ``j`` of ``v`` whose subtree has no undecided variable: the exact messages
    ``bw.lm`` (by (P2), (P3) as sums, in log space), and from them ``g_A``, ``g_B``, their
    difference, ``p_δ`` and the flags, exactly."""
    s = st[v]
    kv = model.card[v]
    m = model.moff[v] + j
    base = model.toff[v] + j * kv
    lt1, lt0, moff = model.lt1, model.lt0, model.moff
    ch_ptr, ch_idx = model.ch_ptr, model.ch_idx
    box, imp, lm = bw.box, bw.imp, bw.lm
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


@njit(cache=True, inline="always")
def _child_oscillations(v, st, model, bw, rules):
    """Rule C's sums of the children's oscillations, ``(min(Σ_c ω_d(c), Σ_c ω_¬d(c)),
    Σ_c ω_A(c))`` (one value for every slot of ``v``); ``(+inf, 0)`` where the rule is off or
    does not apply (``v`` in ``y``, or its subtree holds no ``x``)."""
    om = POS
    oa = 0.0
    if bw.flags[v, 1] and st[v] != IN_Y and rules & RULE_C:
        om1 = 0.0
        om0 = 0.0
        for e in range(model.ch_ptr[v], model.ch_ptr[v + 1]):
            c = model.moff[model.ch_idx[e]]
            om1 += bw.box[c, 10]
            om0 += bw.box[c, 11]
            oa += bw.box[c, 12]
        om = min(om1, om0)
    return om, oa


@njit(cache=True, inline="always")
def _child_sums(v, k, model, bw):
    """The sums over ``v``'s children ``c`` of their intervals at ``v = k`` (slot ``moff[c] +
    k``): ``[A]``, ``[B]``, ``[D]``, ``[p_d]``, ``[p_¬d]`` as ten ends (``lo, hi`` each), then
    whether some child's ``A``, and ``B``, evidence is impossible."""
    moff, ch_ptr, ch_idx = model.moff, model.ch_ptr, model.ch_idx
    box, imp = bw.box, bw.imp
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
    return sa_lo, sa_hi, sb_lo, sb_hi, sd_lo, sd_hi, s1_lo, s1_hi, s0_lo, s0_hi, ia, ib


@njit(cache=True, _nrt=False)
def _observed_cases(v, j, st, val, model, bw, rules, ratios):
    """One pass over ``v``'s values ``k`` at slot ``j``: the case ``v`` in ``y`` with ``k``
    (observed on both sides, by (P2): the children's sums), and the mixtures over ``k`` of
    ``v`` unobserved (P3), with what rules H, M and C need of them. Returns ``(hull,
    mixture, hm, ck, ratios)``: the hull of the cases so far, the mixture intervals, rule
    H's ``[D]`` and rule M's row count (its rows in ``bw.mix``), rule C's hulls of the
    ``D_k`` and of the ``ℓ_k``, and whether ``bw.rr`` holds ``v``'s child ratios (the
    module docstring names each tuple's ends)."""
    s = st[v]
    kv = model.card[v]
    base = model.toff[v] + j * kv
    lt1, lt0, mix = model.lt1, model.lt0, bw.mix
    # hulls of the cases; the mixtures (v unobserved) over the values k
    a_lo, a_hi, b_lo, b_hi, d_lo, d_hi = POS, NEG, POS, NEG, POS, NEG
    mxa_lo, mxa_hi, mxb_lo, mxb_hi = POS, NEG, POS, NEG
    # p_δ hulls of the cases, and of the mixture (v unobserved on both sides)
    p1_lo, p1_hi, p0_lo, p0_hi = POS, NEG, POS, NEG
    mp1_lo, mp1_hi, mp0_lo, mp0_hi = POS, NEG, POS, NEG
    # D of the mixture (v unobserved on both sides) as the hull over k of the
    # x-case expressions log α_k − log β_k + Σ_c D(c, k) (see TreeBound, rule M)
    md_lo, md_hi = POS, NEG
    mixed = (bw.flags[v, 1] and (s == EXCL or s == FREE or s == FREE_SENS)
             and rules & (RULE_H | RULE_M) != 0)
    cd_lo, cd_hi = POS, NEG  # rule C: the hull of the D_k
    el_lo, el_hi = POS, NEG  # the range of ℓ_k over the mixture's values
    nmix = 0
    for k in range(kv):
        if lt1[base + k] == NEG and lt0[base + k] == NEG:
            continue  # θ_d(k | j) = 0 for both d: no mass, in no mixture or case
        ell = lt1[base + k] - lt0[base + k]
        (sa_lo, sa_hi, sb_lo, sb_hi, sd_lo, sd_hi, s1_lo, s1_hi, s0_lo, s0_hi, ia,
         ib) = _child_sums(v, k, model, bw)
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
            if not ia:
                cd_lo = min(cd_lo, sd_lo)
                cd_hi = max(cd_hi, sd_hi)
        if not ia:
            el_lo = min(el_lo, ell)
            el_hi = max(el_hi, ell)
        if mixed and not ia:
            q1_lo, q1_hi, q0_lo, q0_hi = _posteriors(v, k, base, ratios, st, val, model, bw)
            ratios = True
            if not ib:
                md_lo = min(md_lo, _lo(_lo(q1_lo - q0_hi) + sd_lo))
                md_hi = max(md_hi, _hi(_hi(q1_hi - q0_lo) + sd_hi))
            mix[nmix, 0] = math.exp(q1_lo)
            mix[nmix, 1] = math.exp(q1_hi)
            mix[nmix, 2] = math.exp(q0_lo)
            mix[nmix, 3] = math.exp(q0_hi)
            if ib:  # U_k = W_k = 0 for every extension
                for q in range(4, 8):
                    mix[nmix, q] = NEG
            else:
                mix[nmix, 4] = s1_lo
                mix[nmix, 5] = s1_hi
                mix[nmix, 6] = s0_lo
                mix[nmix, 7] = s0_hi
            nmix += 1
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
    return ((a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi),
            (mxa_lo, mxa_hi, mxb_lo, mxb_hi, mp1_lo, mp1_hi, mp0_lo, mp0_hi),
            (md_lo, md_hi, nmix), (cd_lo, cd_hi, el_lo, el_hi), ratios)


@njit(cache=True, _nrt=False)
def _x_cases(v, j, st, val, model, bw, rules, hull, mixture, rc, ratios):
    """The cases ``v`` in ``x`` with ``k`` (observed in ``B`` only) at slot ``j``: ``g_B`` by
    (P2), ``g_A`` the mixture whatever ``k`` is; ``p_δ`` from the posterior of ``v = k``;
    ``D`` the difference of the two intervals, intersected with ``log α_k − log β_k +
    Σ_c D(c, k)`` (the posteriors' ratio sharpened by rule C). Returns ``hull`` widened by
    them, and whether ``bw.rr`` holds ``v``'s child ratios."""
    a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi = hull
    mxa_lo = mixture[0]
    mxa_hi = mixture[1]
    oa = rc[1]
    el_lo = rc[4]
    el_hi = rc[5]
    has_a = mxa_lo <= mxa_hi
    s = st[v]
    kv = model.card[v]
    base = model.toff[v] + j * kv
    lt1, lt0 = model.lt1, model.lt0
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
        (sa_lo, sa_hi, sb_lo, sb_hi, sd_lo, sd_hi, s1_lo, s1_hi, s0_lo, s0_hi, ia,
         ib) = _child_sums(v, k, model, bw)
        # log P_δ(v = k | A below, j): bounds by the children's mediants
        q1_lo, q1_hi, q0_lo, q0_hi = _posteriors(v, k, base, ratios, st, val, model, bw)
        ratios = True
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
            r_lo = _lo(q1_lo - q0_hi)
            r_hi = _hi(q1_hi - q0_lo)
            if rules & RULE_C:
                # rule C: log α_k/β_k = ρ_k − log E_β e^ρ, ρ_l = ℓ_l + A_l, and
                # the A_l spread by at most Σ_c ω_A(c)
                r_lo, r_hi = _meet(r_lo, r_hi, _lo(_lo(ell - el_hi) - oa) - 1e-12,
                                   _hi(_hi(ell - el_lo) + oa) + 1e-12)
            lo2 = _lo(r_lo + sd_lo)
            hi2 = _hi(r_hi + sd_hi)
            lo, hi = _meet(lo1, hi1, lo2, hi2)
            d_lo = min(d_lo, lo)
            d_hi = max(d_hi, hi)
    return (a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi), ratios


@njit(cache=True, _nrt=False)
def _excluded_case(v, bw, rules, hull, mixture, rc, hm):
    """The case ``v`` excluded (observed on neither side): ``[A]``, ``[B]`` and ``[p_δ]`` the
    mixtures (P3); ``[D]`` the difference of the mixture intervals intersected with that of
    the ``p_δ`` and with rules H, M and C, or exactly 0 where the subtree holds no variable
    that is or can become part of ``x'``. Returns ``hull`` widened by it."""
    a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi = hull
    mxa_lo, mxa_hi, mxb_lo, mxb_hi, mp1_lo, mp1_hi, mp0_lo, mp0_hi = mixture
    om, oa, cd_lo, cd_hi, el_lo, el_hi, ca_lo, ca_hi = rc
    md_lo, md_hi, nmix = hm
    xc = bw.flags[v, 1]
    mix = bw.mix
    has_a = mxa_lo <= mxa_hi
    has_b = mxb_lo <= mxb_hi
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
            if md_lo <= md_hi and rules & RULE_H:
                lo, hi = _meet(lo, hi, md_lo, md_hi)
            if nmix > 0 and rules & RULE_M:
                w_lo, w_hi = _mixture_difference(mix, nmix)
                lo, hi = _meet(lo, hi, w_lo, w_hi)
            if om < POS and cd_lo <= cd_hi and NEG < ca_lo and ca_hi < POS:
                # rule C: D ∈ [min D_k, max D_k] ± tanh(Δ/4) Ω, Δ ≤ the width
                # of the ℓ_k + A_k hull and ≤ the spread of ℓ_k + Σ_c ω_A(c), Ω
                # the children's oscillations
                width = min(ca_hi - ca_lo, _hi(el_hi - el_lo) + oa)
                t = math.tanh(width * 0.25) * om * (1.0 + 1e-12) + 1e-12
                lo, hi = _meet(lo, hi, _lo(cd_lo - t), _hi(cd_hi + t))
            d_lo = min(d_lo, lo)
            d_hi = max(d_hi, hi)
        else:  # the same evidence on both sides: the same ratio
            d_lo = min(d_lo, 0.0)
            d_hi = max(d_hi, 0.0)
    return a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi


@njit(cache=True, inline="always")
def _write_slot(m, hull, xc, bw) -> None:
    """Slot ``m``'s entries of ``bw.box`` and ``bw.imp`` from the hull of its cases (``xc``:
    the subtree holds a variable that is or can become part of ``x'``): a case-less side
    is impossible, ``[D]`` is never asked for where one is, and ``[p_δ]`` is ``0`` without
    ``x'`` below and ``[−inf, 0]`` where ``B`` is impossible or no case bounds it."""
    a_lo, a_hi, b_lo, b_hi, d_lo, d_hi, p1_lo, p1_hi, p0_lo, p0_hi = hull
    box, imp = bw.box, bw.imp
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


@njit(cache=True, inline="always")
def _bound_slot(v, j, st, val, model, bw, rules, kids_a, kids_b, osc, ratios):
    """Slot ``j`` of ``v`` whose subtree has an undecided variable: the hull over the cases
    an extension can realise at ``v`` (:class:`~pcfair.patterns.bounds.TreeBound`, "the box
    of a search node"), ``kids_a``/``kids_b`` saying whether some child's subtree can hold
    ``A``/``B`` evidence and ``osc`` rule C's sums (:func:`_child_oscillations`). Returns
    whether ``bw.rr`` holds ``v``'s child ratios (``ratios`` on entry: they are computed at
    the first need, for every slot)."""
    hull, mixture, hm, ck, ratios = _observed_cases(v, j, st, val, model, bw, rules, ratios)
    mxa_lo, mxa_hi, mxb_lo, mxb_hi, mp1_lo, mp1_hi, mp0_lo, mp0_hi = mixture
    # rule C: the children's sums, the hulls of D_k and ℓ_k, and that of ℓ_k + A_k
    rc = (osc[0], osc[1], ck[0], ck[1], ck[2], ck[3], mxa_lo, mxa_hi)
    # v observed in B only (v in x), or in neither (excluded): A is a mixture, by
    # (P3), or exactly 0, by (P1), when no child's subtree can hold evidence
    if not kids_a:
        mxa_lo = 0.0
        mxa_hi = 0.0
    if not kids_b:
        mxb_lo = 0.0
        mxb_hi = 0.0
    mixture = (mxa_lo, mxa_hi, mxb_lo, mxb_hi, mp1_lo, mp1_hi, mp0_lo, mp0_hi)
    s = st[v]
    if s == IN_X or s == FREE_SENS:
        hull, ratios = _x_cases(v, j, st, val, model, bw, rules, hull, mixture, rc, ratios)
    if s == EXCL or s == FREE or s == FREE_SENS:
        hull = _excluded_case(v, bw, rules, hull, mixture, rc, hm)
    _write_slot(model.moff[v] + j, hull, bw.flags[v, 1], bw)
    return ratios


@njit(cache=True, inline="always")
def _sum_roots(st, model, bw, rules) -> None:
    """``bw.out``: the roots' intervals summed, plus the parts rule E detached (impossible
    where any is); clears ``bw.dirty``."""
    post, par, moff = model.post, model.par, model.moff
    box, imp, out, dirty = bw.box, bw.imp, bw.out, bw.dirty
    nf = post.shape[0]
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
        v = post[i]
        dirty[v] = False
        if st[v] == IN_Y and rules & RULE_E:  # the detached parts
            m = moff[v]
            for q in range(0, 6, 2):
                out[q] = _lo(out[q] + box[m, 13 + q])
                out[q + 1] = _hi(out[q + 1] + box[m, 14 + q])
            if imp[m, 2]:
                out[6] = 1.0
            if imp[m, 3]:
                out[7] = 1.0


@njit(cache=True, _nrt=False)
def tree_box(st, val, model, bw, rules) -> None:
    """Fill ``bw.out = [A_lo, A_hi, B_lo, B_hi, D_lo, D_hi, impA, impB]`` for the forest's
    roots (the children of the decision), summed over the roots, for the variable states
    ``st``/``val`` of the model ``model`` (a :class:`~pcfair.patterns._tree_records.TreeModel`)
    in the box ``bw`` (a :class:`~pcfair.patterns._tree_records.BoxWork`, whose fields say
    what each array holds); ``rules``: the rules to apply (bits :data:`RULE_H`,
    :data:`RULE_M`, :data:`RULE_C`, :data:`RULE_E`).

    Bottom-up, each feature ``v`` is one of: ``v`` in ``y`` with rule E (its children's part
    detached, :func:`_detach`); a subtree with no undecided variable (exact,
    :func:`_exact_slot`); otherwise the hull of ``v``'s cases per slot (:func:`_bound_slot`:
    ``v`` in ``y`` and the mixtures, :func:`_observed_cases`; in ``x``, :func:`_x_cases`;
    excluded, :func:`_excluded_case`, with rules H, M and C); then rule C's oscillations
    (:func:`_oscillation`); the roots last (:func:`_sum_roots`). The rules and their proofs
    are in :class:`~pcfair.patterns.bounds.TreeBound`.

    Incremental: a feature's entries depend only on the states in its subtree, so only the
    features marked in ``bw.dirty`` (whose ``st``/``val`` changed since the arrays were last
    filled; all of them the first time), their ancestors and their children are recomputed;
    ``bw.dirty`` is cleared on return. A feature whose parent is in ``y`` fills only the slot
    of the parent's value: a parent in ``y`` reads its children's other slots into its
    mixtures only, which its own cases never use (the other slots keep older values, and the
    parent's change of state marks the children for recomputation).
    """
    for i in range(model.post.shape[0]):
        v = model.post[i]
        if not _stale(v, model, bw.dirty):
            continue  # nothing changed below v: its entries stand
        bw.dirty[v] = True  # so that its parent is recomputed too
        kids_a, kids_b = _fill_flags(v, st, model, bw.flags)
        j_lo, j_hi = _read_slots(v, st, val, model)
        if st[v] == IN_Y and rules & RULE_E:  # the children's part detached: v exact above
            _detach(v, val[v], j_lo, j_hi, model, bw)
        elif bw.flags[v, 0]:  # no undecided variable below: exact
            for j in range(j_lo, j_hi):
                _exact_slot(v, j, st, val, model, bw)
        else:
            osc = _child_oscillations(v, st, model, bw, rules)
            ratios = False  # bw.rr holds v's child ratios (computed at the first need)
            for j in range(j_lo, j_hi):
                ratios = _bound_slot(v, j, st, val, model, bw, rules, kids_a, kids_b, osc,
                                     ratios)
        if rules & RULE_C:
            _oscillation(v, st, val, kids_a, j_lo, j_hi, model, bw)
    _sum_roots(st, model, bw, rules)


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

"""Compiled builder of pair plans: the pairwise recursion of ``quotient.py`` as one numba loop.

The builder walks the pairs of terms ``(tp, tq)`` of two compatible circuits depth first (an
explicit stack, no recursion), memoises them in an open-addressing hash table keyed by
``tp * TQ + tq`` and writes the flat plan arrays that :mod:`._quotient_kernels` evaluates:
entries in evaluation order (children first), options, option children, merges and groups.
Terms are node ids ``0..N-1`` and elements ``N + edge``, exactly as in the Python builder.

**Static pruning** (``prune=True``). A pair whose two sides share no support is infeasible under
every evidence, so options that contain it can be dropped, and a pair is only explored while
the option it belongs to can still be feasible (the prime pair first, the sub pair only when the
prime pair can meet). A pair is *statically feasible* when some point ``x`` has ``p(x) > 0`` and
``q(x') > 0``, where ``x'`` equals ``x`` except on the ``relaxed`` variables (those the two sides
may observe differently: the decision ``D`` of a self-plan, or the variables relaxed by the
marginal-determinism test); in a self-plan with ``D`` relaxed, pairs of two primes of one
decision node meet only through ``D``, so the quadratic cross pairs of a decision node's
elements mostly vanish. The exact shortcuts of the evaluator replace some entries by ratios of
marginals; pairs that can be evaluated that way (real pairs on a right-most-path vtree node that
allows the shortcut, and merge entries) are kept whenever both sides have mass, so that
*feasible in some evaluation* always implies *statically feasible*: dropping statically
infeasible options never changes a value, a feasibility or an arg-max. Entries that lost options
carry a flag; the evaluator then counts the lost options as possibly maximising a marginalised
variable of the entry's scope (the ``exact`` flag stays sound, never optimistic).

Two cheap tests cut the walk further: *projections* (per node, the values each variable takes
on its support; two terms whose projections on some variable that cannot be relaxed are
disjoint never meet), and, for a deterministic circuit paired with itself, *diagonals* (two
different elements of one sum share no support where both sides see the same evidence).

``emit=False`` runs the same walk in the Boolean semiring only (no plan, early exit at the first
feasible option): the determinism test.

The walk never reallocates inside numba: :func:`build_step` returns when an array is full, and
:func:`run` grows it and calls again (arrays reassigned inside a numba loop cost reference
counting on every step, several times the walk itself).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NEG_INF = -np.inf
MISSING = -2
INFEASIBLE = -1

C_LEAF = 0
C_SS = 1  # sum x sum
C_SN = 2  # sum x other
C_NS = 3  # other x sum
C_F = 4  # factors
C_EMPTY = 5  # a constant factor is zero: no option

F_PRUNED_OPT = 1
F_PRUNED_MERGE = 2
F_MERGE = 4

# error codes
E_SCOPE = 1
E_SPLIT = 2
E_KIND = 3


# ------------------------------------------------------------------------------- helpers
@njit(cache=True, inline="always")
def _slot(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(mask))


@njit(cache=True)
def memo_get(keys, vals, key):
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return vals[s]
        if k == -1:
            return MISSING
        s = (s + 1) & mask


@njit(cache=True)
def _memo_put(keys, vals, key, val):
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while True:
        k = keys[s]
        if k == key or k == -1:
            keys[s] = key
            vals[s] = val
            return k == -1
        s = (s + 1) & mask


@njit(cache=True)
def _memo_grow(keys, vals):
    cap = keys.shape[0] * 2
    nk = np.full(cap, -1, np.int64)
    nv = np.empty(cap, np.int64)
    for s in range(keys.shape[0]):
        if keys[s] != -1:
            _memo_put(nk, nv, keys[s], vals[s])
    return nk, nv


def new_memo(cap: int = 1 << 12) -> tuple[np.ndarray, np.ndarray]:
    return np.full(cap, -1, np.int64), np.empty(cap, np.int64)


@njit(cache=True, inline="always")
def _leaf_pos(kind, value, param_ptr, params, node, v):
    if kind[node] == 0:
        return v == value[node]
    return params[param_ptr[node] + v] > NEG_INF


@njit(cache=True)
def node_vtree_nodes(kind, var, edge_ptr, edge_a, edge_b, leaf_of, vt_parent, vt_depth):
    """The vtree node of every circuit node (lowest common ancestor of its scope; −1 when the
    scope is empty), and of every element (its owner's)."""
    n = kind.shape[0]
    out = np.full(n, -1, np.int64)
    out_e = np.full(edge_a.shape[0], -1, np.int64)
    for i in range(n):
        if kind[i] == 0 or kind[i] == 1:
            out[i] = leaf_of[var[i]]
            continue
        w = -1
        for e in range(edge_ptr[i], edge_ptr[i + 1]):
            for side in range(2):
                c = edge_a[e] if side == 0 else edge_b[e]
                if c < 0:
                    continue
                cw = out[c]
                if cw < 0:
                    continue
                if w < 0:
                    w = cw
                    continue
                a = w
                b = cw
                while vt_depth[a] > vt_depth[b]:
                    a = vt_parent[a]
                while vt_depth[b] > vt_depth[a]:
                    b = vt_parent[b]
                while a != b:
                    a = vt_parent[a]
                    b = vt_parent[b]
                w = a
        out[i] = w
        for e in range(edge_ptr[i], edge_ptr[i + 1]):
            out_e[e] = w
    return out, out_e


@njit(cache=True)
def projections(kind, var, value, param_ptr, params, edge_ptr, edge_a, edge_b, edge_logw, const,
                off, card, n_words):
    """Per node, the projection of its support on every variable, as a bitset over the
    (variable, value) slots (``off[x] + v``); variables outside the scope keep every value, and
    a node without mass projects to nothing. Two nodes whose projections on some variable are
    disjoint share no support (a sound, cheap test run before any pair is explored)."""
    n = kind.shape[0]
    nv = card.shape[0]
    full = np.zeros(n_words, np.uint64)
    for x in range(nv):
        for v in range(card[x]):
            s = off[x] + v
            full[s >> 6] |= np.uint64(1) << np.uint64(s & 63)
    out = np.zeros((n, n_words), np.uint64)
    for i in range(n):
        if const[i] == NEG_INF:
            continue
        k = kind[i]
        if k == 0 or k == 1:
            for wd in range(n_words):
                out[i, wd] = full[wd]
            x = var[i]
            for v in range(card[x]):
                s = off[x] + v
                bit = np.uint64(1) << np.uint64(s & 63)
                if k == 0:
                    keep = v == value[i]
                else:
                    keep = params[param_ptr[i] + v] > NEG_INF
                if not keep:
                    out[i, s >> 6] &= ~bit
        elif k == 2:
            for wd in range(n_words):
                out[i, wd] = full[wd]
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                c = edge_a[e]
                for wd in range(n_words):
                    out[i, wd] &= out[c, wd]
        else:
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                if edge_logw[e] == NEG_INF:
                    continue
                a = edge_a[e]
                b = edge_b[e]
                for wd in range(n_words):
                    t = out[a, wd]
                    if b >= 0:
                        t &= out[b, wd]
                    out[i, wd] |= t
    return out


@njit(cache=True, inline="always")
def _disjoint(pp, pa, pb, qp, qa, qb, off, card, chk, vv_lo, vv_hi, vv, ex_lo, ex_hi, w):
    """Whether the terms with projection rows ``pa & pb`` (p side; ``pb`` −1 for none) and
    ``qa & qb`` (q side) have disjoint projections on some checkable variable under ``w``
    (the variables ``vv[ex_lo[w]:ex_hi[w]]`` are skipped)."""
    for k in range(vv_lo[w], vv_hi[w]):
        if ex_lo[w] <= k < ex_hi[w]:
            continue
        y = vv[k]
        if not chk[y]:
            continue
        found = False
        for v in range(card[y]):
            s = off[y] + v
            wd = s >> 6
            bit = np.uint64(1) << np.uint64(s & 63)
            x = pp[pa, wd] & qp[qa, wd]
            if pb >= 0:
                x &= pp[pb, wd]
            if qb >= 0:
                x &= qp[qb, wd]
            if x & bit:
                found = True
                break
        if not found:
            return True
    return False


# -------------------------------------------------------------------------------- builder
# frame columns (one row per frame of the explicit depth-first stack)
FT_TP, FT_TQ, FT_CASE, FT_PHASE, FT_I, FT_J, FT_PEND, FT_PCH, FT_PM, FT_FAC, FT_NF, FT_DP, \
    FT_NDP, FT_NDQ, FT_FEAS, FT_FLAGS, FT_VAR = range(17)
NFT = 17

# counters (the builder's scalar state, kept between calls)
(K_NENT, K_NOPT, K_NOCH, K_NM, K_NG, K_NGS, K_NMEMO, K_FRAMES, K_SP, K_PEND, K_PCH, K_PM, K_FAC,
 K_DP, K_ROOT, K_STARTED, K_PUSH, K_PTP, K_PTQ, K_MEMO0, K_OVER, K_NEED, K_NEEDN, K_ERR,
 K_ERRP, K_ERRQ) = range(26)
NK = 26

# array groups a call may ask to grow (K_NEED), with the size it needs (K_NEEDN)
G_MEMO, G_ENT, G_OPT, G_OCH, G_M, G_G, G_GS, G_FR, G_PEND, G_PCH, G_PM, G_FAC, G_DP = range(1, 14)
GROUPS = {  # group -> (state indices, extra slot for pointer arrays)
    G_ENT: ((2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 1), (13, 1)),
    G_OPT: ((10, 0), (11, 1)),
    G_OCH: ((12, 0),),
    G_M: ((14, 0), (15, 0), (16, 0)),
    G_G: ((17, 1), (18, 0)),
    G_GS: ((19, 0), (20, 0)),
    G_FR: ((21, 0), (22, 0)),
    G_PEND: ((23, 0), (24, 0)),
    G_PCH: ((25, 0),),
    G_PM: ((26, 0),),
    G_FAC: ((27, 0),),
    G_DP: ((28, 0),),
}


def new_state() -> list:
    """An empty builder state: the arrays :func:`build_step` fills (see :func:`run`)."""
    i32, i64 = np.int32, np.int64
    keys, vals = new_memo()
    z = np.zeros(16, i32)
    return [keys, vals, np.empty(16, np.int8), np.empty(16, i32), np.empty(16, i32),
            np.empty(16, i32), np.empty(16, i32), np.empty(16, i32), np.empty(16, np.int8),
            z.copy(), np.empty(16), z.copy(), np.empty(16, i32), z.copy(), np.empty(16, i32),
            np.empty(16, i32), np.empty(16, i32), z.copy(), np.empty(16, np.int8),
            np.empty(16), np.empty(16, i32),
            np.empty((64, NFT), i64), np.empty(64), np.empty(64), np.empty(64, i64),
            np.empty(64, i64), np.empty((64, 3), i64), np.empty((64, 2), i64),
            np.empty(64, i64)]


def new_counters() -> np.ndarray:
    return np.zeros(NK, np.int64)


def run(P, Q, card, empty_sid, relaxed, sc_vt, mc_vt, emit, prune, roots_p, roots_q, state,
        cnt, budget, same, diag_vt, PJ) -> np.ndarray:
    """Drive :func:`build_step` until every root is compiled, growing the state's arrays
    between calls (the step function never reallocates: reassigned arrays would cost numba
    reference counting on every step). Returns ``out_roots`` (see :func:`build_step`); on an
    incompatibility, ``cnt[K_ERR]`` is non-zero and names the pair."""
    roots_p = np.ascontiguousarray(roots_p, np.int64)
    roots_q = np.ascontiguousarray(roots_q, np.int64)
    out = np.zeros(len(roots_p), np.int64)
    cnt[K_ROOT] = 0
    cnt[K_STARTED] = 0
    while True:
        code = build_step(P, Q, card, empty_sid, relaxed, sc_vt, mc_vt, emit, prune, roots_p,
                          roots_q, tuple(state), cnt, out, budget, same, diag_vt, PJ)
        if code == 2:  # leave a consistent (empty) stack behind before the caller raises
            for k in (K_SP, K_PEND, K_PCH, K_PM, K_FAC, K_DP, K_PUSH, K_STARTED, K_OVER):
                cnt[k] = 0
        if code != 1:
            return out
        grow(state, int(cnt[K_NEED]), int(cnt[K_NEEDN]))


def grow(state: list, g: int, need: int) -> None:
    """Grow the arrays of group ``g`` of ``state`` to hold ``need`` items (at least double)."""
    if g == G_MEMO:
        state[0], state[1] = _memo_grow(state[0], state[1])
        return
    for k, extra in GROUPS[g]:
        a = state[k]
        if a.shape[0] >= need + extra:
            continue
        cap = max(2 * a.shape[0], need + extra + 1, 16)
        b = np.empty((cap,) + a.shape[1:], a.dtype)
        b[: a.shape[0]] = a
        state[k] = b


@njit(cache=True)
def build_step(P, Q, card, empty_sid, relaxed, sc_vt, mc_vt, emit, prune, roots_p, roots_q, ST,
               C, out_roots, budget, same, diag_vt, PJ):
    """Compile the pairs ``(roots_p[k], roots_q[k])`` (and everything below them) into the
    state ``ST``; ``out_roots[k]`` receives the entry (or, without ``emit``, 1 / −1 for
    feasible / infeasible). Returns 0 when done, 1 when an array of the state must grow first
    (``C[K_NEED]``, ``C[K_NEEDN]``; the call can be repeated after growing it: no step writes
    before it has checked its room), 2 on an incompatibility at the pair ``C[K_ERRP],
    C[K_ERRQ]`` (``C[K_ERR]`` says which).

    ``P`` and ``Q``: ``(kind, var, value, param_ptr, params, edge_ptr, edge_a, edge_b,
    edge_logw, sid_node, sid_edge, const, vt_node, vt_edge)``. With ``budget`` >= 0 (Boolean
    mode), a root that needs more than ``budget`` new pairs is abandoned: ``out_roots`` gets 0
    (unknown) and the pairs finished so far stay memoised.

    ``same``: ``P`` and ``Q`` are one circuit; then a node paired with itself shares support
    exactly when it has mass (decided at once in Boolean mode), and, in a pruned plan, a sum
    paired with itself on a vtree node ``w`` with ``diag_vt[w]`` (no relaxed variable below
    ``w``, and the circuit deterministic) pairs each element with itself only: two different
    elements of a deterministic sum share no support when both sides see the same evidence,
    so the cross options are statically infeasible (and counted as pruned).

    ``PJ = (p_proj, q_proj, off, chk, vv_lo, vv_hi, vv, ex_lo, ex_hi)``: support projections
    (see :func:`projections`), the checkable variables (not relaxed), the variables under
    each vtree node (an in-order range of ``vv``) and, per vtree node, the range of variables
    that a shortcut or a merge below it may relax (skipped); a pruned build drops a pair at
    once when its projections are disjoint on a checkable variable."""
    p_kind, p_var, p_value, p_pptr, p_params, p_eptr, p_ea, p_eb, p_lw, p_sid, p_sidE, \
        p_const, p_vt, p_vtE = P
    q_kind, q_var, q_value, q_pptr, q_params, q_eptr, q_ea, q_eb, q_lw, q_sid, q_sidE, \
        q_const, q_vt, q_vtE = Q
    memo_k, memo_v, e_kind, e_pnode, e_qnode, e_var, e_vt, e_svt, e_flags, opt_ptr, \
        opt_const, och_ptr, och, m_ptr, m_child, m_gp, m_gq, g_ptr, g_side, g_logw, g_sub, \
        FR, FRc, pend_const, pend_ch0, pch, PM, FAC, dp = ST
    p_proj, q_proj, pj_off, pj_chk, vv_lo, vv_hi, vv, ex_lo, ex_hi = PJ
    Np = p_kind.shape[0]
    Nq = q_kind.shape[0]
    TQ = np.int64(Nq + q_ea.shape[0])

    n_memo = C[K_NMEMO]
    sp = C[K_SP]
    pend_top = C[K_PEND]
    pch_top = C[K_PCH]
    pm_top = C[K_PM]
    fac_top = C[K_FAC]
    dp_top = C[K_DP]
    r = C[K_ROOT]
    started = C[K_STARTED]
    push = C[K_PUSH]
    ptp = C[K_PTP]
    ptq = C[K_PTQ]
    memo0 = C[K_MEMO0]
    over = C[K_OVER]
    need = 0
    need_n = 0
    err = 0
    n_roots = roots_p.shape[0]
    while r < n_roots:
        if sp == 0 and push == 0:
            rkey = roots_p[r] * TQ + roots_q[r]
            if started == 0:
                got = memo_get(memo_k, memo_v, rkey)
                if got == MISSING:
                    push = 1
                    ptp = roots_p[r]
                    ptq = roots_q[r]
                    started = 1
                    memo0 = n_memo
                    over = 0
                    continue
                out_roots[r] = got
                r += 1
                continue
            out_roots[r] = 0 if over else memo_get(memo_k, memo_v, rkey)
            started = 0
            over = 0
            r += 1
            continue
        if push:
            # ---------------------------------------------------------------- init frame
            f = sp
            if f + 1 > FR.shape[0]:
                need = G_FR
                need_n = f + 1
                break
            FR[f, FT_TP] = ptp
            FR[f, FT_TQ] = ptq
            FR[f, FT_PHASE] = 0
            FR[f, FT_I] = 0
            FR[f, FT_J] = 0
            FR[f, FT_PEND] = pend_top
            FR[f, FT_PCH] = pch_top
            FR[f, FT_PM] = pm_top
            FR[f, FT_FAC] = fac_top
            FR[f, FT_NF] = 0
            FR[f, FT_DP] = dp_top
            FR[f, FT_NDP] = 0
            FR[f, FT_NDQ] = 0
            FR[f, FT_FEAS] = 0
            FR[f, FT_FLAGS] = 0
            FR[f, FT_VAR] = -1
            FRc[f] = 0.0
            s_p = p_sid[ptp] if ptp < Np else p_sidE[ptp - Np]
            s_q = q_sid[ptq] if ptq < Nq else q_sidE[ptq - Nq]
            if s_p != s_q:
                err = E_SCOPE
                break
            p_sum = ptp < Np and p_kind[ptp] == 3
            q_sum = ptq < Nq and q_kind[ptq] == 3
            dis = False
            if prune and not (same and ptp == ptq):
                if ptp < Np:
                    pa_ = ptp
                    pb_ = -1
                    wv = p_vt[ptp]
                else:
                    pa_ = p_ea[ptp - Np]
                    pb_ = p_eb[ptp - Np]
                    wv = p_vtE[ptp - Np]
                if ptq < Nq:
                    qa_ = ptq
                    qb_ = -1
                else:
                    qa_ = q_ea[ptq - Nq]
                    qb_ = q_eb[ptq - Nq]
                if wv >= 0:
                    dis = _disjoint(p_proj, pa_, pb_, q_proj, qa_, qb_, pj_off, card, pj_chk,
                                    vv_lo, vv_hi, vv, ex_lo, ex_hi, wv)
            if dis:
                FR[f, FT_CASE] = C_EMPTY
            elif same and not emit and ptp == ptq:
                FR[f, FT_CASE] = C_EMPTY
                if ptp < Np:
                    ok = p_const[ptp] > NEG_INF
                else:
                    e = ptp - Np
                    ok = p_const[p_ea[e]] > NEG_INF and (p_eb[e] < 0 or p_const[p_eb[e]] > NEG_INF)
                FR[f, FT_FEAS] = 1 if ok else 0
            elif p_sum and q_sum:
                FR[f, FT_CASE] = C_SS
            elif p_sum:
                FR[f, FT_CASE] = C_SN
            elif q_sum:
                FR[f, FT_CASE] = C_NS
            else:
                # factors of each side, constants of empty-scope factors folded
                if ptp >= Np:
                    nfp = 2 if p_eb[ptp - Np] >= 0 else 1
                elif p_kind[ptp] == 2:
                    nfp = p_eptr[ptp + 1] - p_eptr[ptp]
                else:
                    nfp = 1
                if ptq >= Nq:
                    nfq = 2 if q_eb[ptq - Nq] >= 0 else 1
                elif q_kind[ptq] == 2:
                    nfq = q_eptr[ptq + 1] - q_eptr[ptq]
                else:
                    nfq = 1
                k0 = fac_top
                if k0 + 2 * (nfp + nfq) > FAC.shape[0]:
                    need = G_FAC
                    need_n = k0 + 2 * (nfp + nfq)
                    break
                const = 0.0
                np_keep = 0
                for k in range(nfp):
                    if ptp >= Np:
                        e = ptp - Np
                        t = p_ea[e] if k == 0 else p_eb[e]
                    elif p_kind[ptp] == 2:
                        t = p_ea[p_eptr[ptp] + k]
                    else:
                        t = ptp
                    if p_sid[t] == empty_sid:
                        const += p_const[t]
                    else:
                        FAC[k0 + np_keep, 0] = t
                        np_keep += 1
                nq_keep = 0
                q0 = k0 + nfp + nfq  # scratch for the q factors
                for k in range(nfq):
                    if ptq >= Nq:
                        e = ptq - Nq
                        t = q_ea[e] if k == 0 else q_eb[e]
                    elif q_kind[ptq] == 2:
                        t = q_ea[q_eptr[ptq] + k]
                    else:
                        t = ptq
                    if q_sid[t] == empty_sid:
                        const -= q_const[t]
                    else:
                        FAC[q0 + nq_keep, 1] = t
                        nq_keep += 1
                if not np.isfinite(const):
                    FR[f, FT_CASE] = C_EMPTY
                elif (np_keep == 1 and nq_keep == 1 and FAC[k0, 0] == ptp
                      and FAC[q0, 1] == ptq):
                    if p_kind[ptp] > 1 or q_kind[ptq] > 1:
                        err = E_KIND
                        break
                    FR[f, FT_CASE] = C_LEAF
                    x = p_var[ptp]
                    FR[f, FT_VAR] = x
                    ok = False
                    if relaxed[x]:
                        some_p = False
                        some_q = False
                        for v in range(card[x]):
                            if _leaf_pos(p_kind, p_value, p_pptr, p_params, ptp, v):
                                some_p = True
                            if _leaf_pos(q_kind, q_value, q_pptr, q_params, ptq, v):
                                some_q = True
                        ok = some_p and some_q
                    else:
                        for v in range(card[x]):
                            if (_leaf_pos(p_kind, p_value, p_pptr, p_params, ptp, v)
                                    and _leaf_pos(q_kind, q_value, q_pptr, q_params, ptq, v)):
                                ok = True
                                break
                    FR[f, FT_FEAS] = 1 if ok else 0
                else:
                    # match q factors to p factors by scope: pair k = (FAC[k0+k, 0], FAC[k0+k, 1])
                    bad = np_keep != nq_keep
                    if not bad:
                        for a in range(nq_keep):
                            for b in range(a + 1, nq_keep):
                                if q_sid[FAC[q0 + a, 1]] == q_sid[FAC[q0 + b, 1]]:
                                    bad = True
                    if not bad:
                        for a in range(np_keep):
                            sa = p_sid[FAC[k0 + a, 0]]
                            found = -1
                            for b in range(nq_keep):
                                if q_sid[FAC[q0 + b, 1]] == sa:
                                    found = FAC[q0 + b, 1]
                                    break
                            if found < 0:
                                bad = True
                                break
                            FAC[k0 + a, 1] = found
                    if bad:
                        err = E_SPLIT
                        break
                    FR[f, FT_CASE] = C_F
                    FR[f, FT_NF] = np_keep
                    FRc[f] = const
                    FR[f, FT_FEAS] = 1  # the option is feasible until a child fails
                    fac_top = k0 + np_keep
            sp = f + 1
            push = 0
            C[K_FRAMES] += 1
            continue

        # -------------------------------------------------------------------- step frame
        if budget >= 0 and n_memo - memo0 > budget:
            over = 1
            pend_top = 0
            pch_top = 0
            pm_top = 0
            fac_top = 0
            dp_top = 0
            sp = 0
            continue
        f = sp - 1
        tp = FR[f, FT_TP]
        tq = FR[f, FT_TQ]
        case = FR[f, FT_CASE]
        pushed = False
        stop = False
        if case == C_SS or case == C_SN or case == C_NS:
            if FR[f, FT_PHASE] == 0:
                if case == C_NS:
                    na = 1
                    a_lo = 0
                else:
                    a_lo = p_eptr[tp]
                    na = p_eptr[tp + 1] - a_lo
                if case == C_SN:
                    nb = 1
                    b_lo = 0
                else:
                    b_lo = q_eptr[tq]
                    nb = q_eptr[tq + 1] - b_lo
                diag = False
                if case == C_SS and same and prune and tp == tq and diag_vt.shape[0] > 0:
                    diag = p_vt[tp] >= 0 and diag_vt[p_vt[tp]]
                wv = p_vt[tp] if tp < Np else -1
                i = FR[f, FT_I]
                j = FR[f, FT_J]
                while i < na:
                    if not emit and FR[f, FT_FEAS]:
                        break
                    a = a_lo + i
                    if case != C_NS and p_lw[a] == NEG_INF:
                        i += 1
                        j = 0
                        continue
                    while j < nb:
                        b = b_lo + j
                        if case != C_SN and q_lw[b] == NEG_INF:
                            j += 1
                            continue
                        if diag and b != a:
                            FR[f, FT_FLAGS] |= F_PRUNED_OPT
                            j += 1
                            continue
                        if case == C_SS:
                            ctp = Np + a
                            ctq = Nq + b
                            c = p_lw[a] - q_lw[b]
                            if prune and wv >= 0 and not (same and a == b) and _disjoint(
                                    p_proj, p_ea[a], p_eb[a], q_proj, q_ea[b], q_eb[b], pj_off,
                                    card, pj_chk, vv_lo, vv_hi, vv, ex_lo, ex_hi, wv):
                                FR[f, FT_FLAGS] |= F_PRUNED_OPT
                                j += 1
                                continue
                        elif case == C_SN:
                            ctp = Np + a
                            ctq = tq
                            c = p_lw[a]
                        else:
                            ctp = tp
                            ctq = Nq + b
                            c = -q_lw[b]
                        got = memo_get(memo_k, memo_v, ctp * TQ + ctq)
                        if got == MISSING:
                            ptp = ctp
                            ptq = ctq
                            push = 1
                            pushed = True
                            break
                        if got >= 0:
                            FR[f, FT_FEAS] = 1
                            if emit:
                                if pend_top + 1 > pend_const.shape[0]:
                                    need = G_PEND
                                    need_n = pend_top + 1
                                    stop = True
                                    break
                                if pch_top + 1 > pch.shape[0]:
                                    need = G_PCH
                                    need_n = pch_top + 1
                                    stop = True
                                    break
                                pend_const[pend_top] = c
                                pend_ch0[pend_top] = pch_top
                                pend_top += 1
                                pch[pch_top] = got
                                pch_top += 1
                            else:
                                break
                        else:
                            FR[f, FT_FLAGS] |= F_PRUNED_OPT
                        j += 1
                    if pushed or stop:
                        break
                    if not emit and FR[f, FT_FEAS]:
                        break
                    i += 1
                    j = 0
                FR[f, FT_I] = i
                FR[f, FT_J] = j
                if stop:
                    break
                if pushed:
                    continue
                FR[f, FT_PHASE] = 2
                if case == C_SS and emit and wv >= 0 and mc_vt[wv]:
                    FR[f, FT_PHASE] = 3
            if FR[f, FT_PHASE] == 3:
                # distinct primes of each side, in order of first appearance
                a_lo = p_eptr[tp]
                na = p_eptr[tp + 1] - a_lo
                b_lo = q_eptr[tq]
                nb = q_eptr[tq + 1] - b_lo
                if dp_top + na + nb > dp.shape[0]:
                    need = G_DP
                    need_n = dp_top + na + nb
                    break
                d0 = dp_top
                for a in range(a_lo, a_lo + na):
                    if p_lw[a] == NEG_INF:
                        continue
                    new = True
                    for k in range(d0, dp_top):
                        if dp[k] == p_ea[a]:
                            new = False
                            break
                    if new:
                        dp[dp_top] = p_ea[a]
                        dp_top += 1
                ndp = dp_top - d0
                for b in range(b_lo, b_lo + nb):
                    if q_lw[b] == NEG_INF:
                        continue
                    new = True
                    for k in range(d0 + ndp, dp_top):
                        if dp[k] == q_ea[b]:
                            new = False
                            break
                    if new:
                        dp[dp_top] = q_ea[b]
                        dp_top += 1
                FR[f, FT_DP] = d0
                FR[f, FT_NDP] = ndp
                FR[f, FT_NDQ] = dp_top - d0 - ndp
                FR[f, FT_PHASE] = 1
                FR[f, FT_I] = 0
                FR[f, FT_J] = 0
            if FR[f, FT_PHASE] == 1:
                d0 = FR[f, FT_DP]
                ndp = FR[f, FT_NDP]
                ndq = FR[f, FT_NDQ]
                diag = False
                if same and prune and tp == tq and diag_vt.shape[0] > 0:
                    diag = p_vt[tp] >= 0 and diag_vt[p_vt[tp]]
                i = FR[f, FT_I]
                j = FR[f, FT_J]
                while i < ndp:
                    while j < ndq:
                        ctp = dp[d0 + i]
                        ctq = dp[d0 + ndp + j]
                        if diag and ctp != ctq:
                            FR[f, FT_FLAGS] |= F_PRUNED_MERGE
                            j += 1
                            continue
                        got = memo_get(memo_k, memo_v, ctp * TQ + ctq)
                        if got == MISSING:
                            ptp = ctp
                            ptq = ctq
                            push = 1
                            pushed = True
                            break
                        if got >= 0:
                            if pm_top + 1 > PM.shape[0]:
                                need = G_PM
                                need_n = pm_top + 1
                                stop = True
                                break
                            PM[pm_top, 0] = got
                            PM[pm_top, 1] = i
                            PM[pm_top, 2] = j
                            pm_top += 1
                            if prune and not FR[f, FT_FEAS]:
                                # feasible through the merge when both groups have mass
                                gpos = False
                                for a in range(p_eptr[tp], p_eptr[tp + 1]):
                                    if (p_lw[a] > NEG_INF and p_ea[a] == ctp
                                            and p_const[p_eb[a]] > NEG_INF):
                                        gpos = True
                                        break
                                if gpos:
                                    gpos = False
                                    for b in range(q_eptr[tq], q_eptr[tq + 1]):
                                        if (q_lw[b] > NEG_INF and q_ea[b] == ctq
                                                and q_const[q_eb[b]] > NEG_INF):
                                            gpos = True
                                            break
                                if gpos:
                                    FR[f, FT_FEAS] = 1
                        else:
                            FR[f, FT_FLAGS] |= F_PRUNED_MERGE
                        j += 1
                    if pushed or stop:
                        break
                    i += 1
                    j = 0
                FR[f, FT_I] = i
                FR[f, FT_J] = j
                if stop:
                    break
                if pushed:
                    continue
                FR[f, FT_FLAGS] |= F_MERGE
                FR[f, FT_PHASE] = 2
        elif case == C_F and FR[f, FT_PHASE] == 0:
            j = FR[f, FT_J]
            nf = FR[f, FT_NF]
            k0 = FR[f, FT_FAC]
            if prune and j == 0 and nf > 1 and FR[f, FT_FEAS]:
                # a child already known infeasible kills the option before any exploring
                for k in range(nf):
                    if memo_get(memo_k, memo_v, FAC[k0 + k, 0] * TQ + FAC[k0 + k, 1]) == -1:
                        FR[f, FT_FEAS] = 0
                        FR[f, FT_FLAGS] |= F_PRUNED_OPT
                        break
            while FR[f, FT_FEAS] and j < nf:
                ctp = FAC[k0 + j, 0]
                ctq = FAC[k0 + j, 1]
                got = memo_get(memo_k, memo_v, ctp * TQ + ctq)
                if got == MISSING:
                    ptp = ctp
                    ptq = ctq
                    push = 1
                    pushed = True
                    break
                if got < 0:
                    FR[f, FT_FEAS] = 0
                    FR[f, FT_FLAGS] |= F_PRUNED_OPT
                    break
                if emit:
                    if pch_top + 1 > pch.shape[0]:
                        need = G_PCH
                        need_n = pch_top + 1
                        stop = True
                        break
                    pch[pch_top] = got
                    pch_top += 1
                j += 1
            FR[f, FT_J] = j
            if stop:
                break
            if pushed:
                continue
            if FR[f, FT_FEAS] and emit:
                if pend_top + 1 > pend_const.shape[0]:
                    need = G_PEND
                    need_n = pend_top + 1
                    break
                pend_const[pend_top] = FRc[f]
                pend_ch0[pend_top] = FR[f, FT_PCH]
                pend_top += 1
            FR[f, FT_PHASE] = 2  # the option is recorded: a repeated finish adds nothing
        # ----------------------------------------------------------------- finish frame
        real = tp < Np and tq < Nq
        w = p_vt[tp] if real else -1
        feas = FR[f, FT_FEAS] != 0
        if prune and not feas and real and w >= 0 and sc_vt[w]:
            feas = p_const[tp] > NEG_INF and q_const[tq] > NEG_INF
        key = tp * TQ + tq
        flags = FR[f, FT_FLAGS]
        idx = C[K_NENT]
        no = C[K_NOPT]
        nc = C[K_NOCH]
        nm = C[K_NM]
        g0 = C[K_NG]
        ngs = C[K_NGS]
        ndp = FR[f, FT_NDP]
        ndq = FR[f, FT_NDQ]
        if emit and (feas or not prune):
            nopt = pend_top - FR[f, FT_PEND]
            nch = pch_top - FR[f, FT_PCH]
            nmm = pm_top - FR[f, FT_PM]
            nel = (p_eptr[tp + 1] - p_eptr[tp]) + (q_eptr[tq + 1] - q_eptr[tq]) if real else 0
            if idx + 2 > e_kind.shape[0] or idx + 2 > opt_ptr.shape[0] or \
                    idx + 2 > m_ptr.shape[0]:
                need = G_ENT
                need_n = idx + 2
                break
            if no + nopt + 1 > opt_const.shape[0] or no + nopt + 1 > och_ptr.shape[0]:
                need = G_OPT
                need_n = no + nopt + 1
                break
            if nc + nch > och.shape[0]:
                need = G_OCH
                need_n = nc + nch
                break
            if nm + nmm > m_child.shape[0]:
                need = G_M
                need_n = nm + nmm
                break
            if g0 + ndp + ndq + 1 > g_ptr.shape[0] or g0 + ndp + ndq > g_side.shape[0]:
                need = G_G
                need_n = g0 + ndp + ndq + 1
                break
            if ngs + nel > g_logw.shape[0]:
                need = G_GS
                need_n = ngs + nel
                break
        if 2 * (n_memo + 1) > memo_k.shape[0]:
            need = G_MEMO
            need_n = 0
            break
        if emit and (feas or not prune):
            e_kind[idx] = 0 if case == C_LEAF else 1
            e_pnode[idx] = tp if real else -1
            e_qnode[idx] = tq if real else -1
            e_var[idx] = FR[f, FT_VAR]
            e_vt[idx] = w
            e_svt[idx] = p_vt[tp] if tp < Np else p_vtE[tp - Np]
            e_flags[idx] = flags if prune else (flags & F_MERGE)
            # options
            for o in range(FR[f, FT_PEND], pend_top):
                opt_const[no] = pend_const[o]
                hi = pend_ch0[o + 1] if o + 1 < pend_top else pch_top
                for k in range(pend_ch0[o], hi):
                    och[nc] = pch[k]
                    nc += 1
                no += 1
                och_ptr[no] = nc
            C[K_NOPT] = no
            C[K_NOCH] = nc
            opt_ptr[idx + 1] = no
            # merges and their groups
            if flags & F_MERGE:
                d0 = FR[f, FT_DP]
                ng = g0
                for side in range(2):
                    lo = p_eptr[tp] if side == 0 else q_eptr[tq]
                    hi = p_eptr[tp + 1] if side == 0 else q_eptr[tq + 1]
                    nd = ndp if side == 0 else ndq
                    base = d0 if side == 0 else d0 + ndp
                    for k in range(nd):
                        prime = dp[base + k]
                        g_side[ng] = side
                        for e in range(lo, hi):
                            lw = p_lw[e] if side == 0 else q_lw[e]
                            pr = p_ea[e] if side == 0 else q_ea[e]
                            if lw == NEG_INF or pr != prime:
                                continue
                            g_logw[ngs] = lw
                            g_sub[ngs] = p_eb[e] if side == 0 else q_eb[e]
                            ngs += 1
                        ng += 1
                        g_ptr[ng] = ngs
                C[K_NG] = ng
                C[K_NGS] = ngs
                for k in range(FR[f, FT_PM], pm_top):
                    m_child[nm] = PM[k, 0]
                    m_gp[nm] = g0 + PM[k, 1]
                    m_gq[nm] = g0 + ndp + PM[k, 2]
                    nm += 1
            C[K_NM] = nm
            m_ptr[idx + 1] = nm
            C[K_NENT] = idx + 1
            val = idx
        else:
            val = 1 if (feas or not prune) else INFEASIBLE
        if _memo_put(memo_k, memo_v, key, val):
            n_memo += 1
        # pop
        pend_top = FR[f, FT_PEND]
        pch_top = FR[f, FT_PCH]
        pm_top = FR[f, FT_PM]
        fac_top = FR[f, FT_FAC]
        dp_top = FR[f, FT_DP]
        sp -= 1
    C[K_NMEMO] = n_memo
    C[K_SP] = sp
    C[K_PEND] = pend_top
    C[K_PCH] = pch_top
    C[K_PM] = pm_top
    C[K_FAC] = fac_top
    C[K_DP] = dp_top
    C[K_ROOT] = r
    C[K_STARTED] = started
    C[K_PUSH] = push
    C[K_PTP] = ptp
    C[K_PTQ] = ptq
    C[K_MEMO0] = memo0
    C[K_OVER] = over
    C[K_NEED] = need
    C[K_NEEDN] = need_n
    if err != 0:
        C[K_ERR] = err
        C[K_ERRP] = ptp
        C[K_ERRQ] = ptq
        return 2
    return 1 if need != 0 else 0


@njit(cache=True)
def add_dead_entry(ST, C):
    """Append an entry with no option (a requested pair that can never be feasible); the
    entry arrays must have room for one more entry."""
    e_kind, e_pnode, e_qnode, e_var, e_vt, e_svt, e_flags, opt_ptr, m_ptr = (
        ST[2], ST[3], ST[4], ST[5], ST[6], ST[7], ST[8], ST[9], ST[13])
    idx = C[K_NENT]
    e_kind[idx] = 1
    e_pnode[idx] = -1
    e_qnode[idx] = -1
    e_var[idx] = -1
    e_vt[idx] = -1
    e_svt[idx] = -1
    e_flags[idx] = F_PRUNED_OPT
    opt_ptr[idx + 1] = opt_ptr[idx]
    m_ptr[idx + 1] = m_ptr[idx]
    C[K_NENT] = idx + 1
    return idx

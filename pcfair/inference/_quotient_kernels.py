"""numba kernels of the pairwise (two-circuit) pass: max log-quotient over a compiled pair plan.

A plan is a list of entries in evaluation order (children first). A LEAF entry pairs two input
nodes on one variable; a MAX entry is the maximum over options, each option a constant plus the
sum of a few child entries. An entry may be "infeasible" (no common support), kept in a separate
boolean array, never encoded as ±inf. Each entry also carries flags (options dropped by static
pruning, merge entry) and the vtree node of its scope, by which :func:`plan_update`
re-evaluates only what new evidence changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pcfair.inference._marginal_kernels import _sweep

NEG_INF = -np.inf
LEAF = 0
MAX = 1


@njit(cache=True, inline="always")
def _leaf_logp(kind, value, param_ptr, params, node, v):
    if kind[node] == 0:
        return 0.0 if v == value[node] else NEG_INF
    return params[param_ptr[node] + v]


@njit(cache=True)
def ghost_nodes(vt_left, vt_right, vt_var, short, free, ev_p, ev_q, relaxed):
    """Per vtree node: whether some marginalised variable under it has a leaf that is not
    evaluated by a shortcut (what an option dropped by static pruning could have maximised)."""
    m = vt_var.shape[0]
    gz = np.zeros(m, np.bool_)
    for w in range(m):
        x = vt_var[w]
        if x >= 0:
            gz[w] = ((not free[x]) and ev_p[x] < 0 and ev_q[x] < 0 and not relaxed[x]
                     and not short[w])
        else:
            gz[w] = gz[vt_left[w]] or gz[vt_right[w]]
    return gz


@njit(cache=True)
def evaluate_entries(A, order, n_order, p_kind, p_value, p_param_ptr, p_params, q_kind, q_value,
                     q_param_ptr, q_params, card, ev_p, ev_q, free, relaxed, shortcut_vt,
                     merge_vt, gz, vt_left, val_p, val_q, out_val, out_ok, out_choice,
                     out_marg_free):
    """Evaluate the entries ``order[:n_order]`` (all of them, in order, when ``order`` is
    empty and ``n_order`` < 0), children before parents.

    ``A`` is the plan: ``(e_kind, e_pnode, e_qnode, e_var, e_vt, opt_ptr, opt_const, och_ptr,
    och, m_ptr, m_child, m_gp, m_gq, g_ptr, g_side, g_logw, g_sub, e_flags, e_svt)``.
    ``shortcut_vt[w]`` marks vtree nodes whose pairs take the exact ratio of marginals
    ``val_p[n] - val_q[m]``; ``merge_vt[w]`` marks right-most-path nodes whose right side is
    summed out, where elements sharing a prime are merged (their subs' marginals summed)
    before the maximum over prime pairs (entries flagged as merge entries). ``out_choice``
    holds the winning option (MAX; ``-3 - k`` for merge option ``k``) or value (LEAF, −1 when
    not maximised). ``out_marg_free`` flags entries whose value maximised a marginalised
    variable (then the value is an upper bound, not exact); an entry that lost options to
    static pruning counts them as possibly maximising any marginalised variable of its scope
    (``gz``). A ``relaxed`` variable's leaf pair is feasible when each side has some value of
    positive probability (the two sides may differ): the Boolean test of marginal
    determinism."""
    e_kind, e_pnode, e_qnode, e_var, e_vt, opt_ptr, opt_const, och_ptr, och, m_ptr, m_child, \
        m_gp, m_gq, g_ptr, g_side, g_logw, g_sub, e_flags, e_svt = A
    n_entries = e_kind.shape[0] if n_order < 0 else n_order
    root_vt = vt_left.shape[0] - 1
    gval = np.empty(max(1, g_side.shape[0]))
    for t in range(n_entries):
        i = t if n_order < 0 else order[t]
        w = e_vt[i]
        if w >= 0 and merge_vt[w] and not shortcut_vt[w] and (e_flags[i] & 4):
            best = 0.0
            arg = -1
            ok = False
            mf = (e_flags[i] & 2) != 0 and gz[vt_left[w]]
            for k in range(m_ptr[i], m_ptr[i + 1]):
                ch = m_child[k]
                mf = mf or out_marg_free[ch]
                if not out_ok[ch]:
                    continue
                s = out_val[ch]
                for side in range(2):
                    g = m_gp[k] if side == 0 else m_gq[k]
                    vals = val_p if g_side[g] == 0 else val_q
                    m = NEG_INF
                    for j in range(g_ptr[g], g_ptr[g + 1]):
                        t2 = g_logw[j] + vals[g_sub[j]]
                        if t2 > m:
                            m = t2
                    if m > NEG_INF:
                        acc = 0.0
                        for j in range(g_ptr[g], g_ptr[g + 1]):
                            acc += np.exp(g_logw[j] + vals[g_sub[j]] - m)
                        m = m + np.log(acc)
                    gval[g] = m
                a = gval[m_gp[k]]
                b = gval[m_gq[k]]
                if a == NEG_INF or b == NEG_INF:
                    continue
                s += a - b
                if not ok or s > best:
                    best = s
                    arg = -3 - (k - m_ptr[i])
                    ok = True
            out_ok[i] = ok
            out_val[i] = best if ok else 0.0
            out_choice[i] = arg
            out_marg_free[i] = mf
            continue
        if w >= 0 and shortcut_vt[w]:
            a = val_p[e_pnode[i]]
            b = val_q[e_qnode[i]]
            out_choice[i] = -2
            out_marg_free[i] = False
            if a == NEG_INF or b == NEG_INF:
                out_ok[i] = False
                out_val[i] = 0.0
            else:
                out_ok[i] = True
                out_val[i] = a - b
            continue
        if e_kind[i] == LEAF:
            x = e_var[i]
            pn = e_pnode[i]
            qm = e_qnode[i]
            best = NEG_INF
            arg = -1
            ok = False
            if relaxed[x]:
                some_p = False
                some_q = False
                for v in range(card[x]):
                    if _leaf_logp(p_kind, p_value, p_param_ptr, p_params, pn, v) > NEG_INF:
                        some_p = True
                    if _leaf_logp(q_kind, q_value, q_param_ptr, q_params, qm, v) > NEG_INF:
                        some_q = True
                out_ok[i] = some_p and some_q
                out_val[i] = 0.0
                out_choice[i] = -1
                out_marg_free[i] = False
                continue
            if free[x] or (ev_p[x] < 0 and ev_q[x] < 0):
                for v in range(card[x]):
                    a = _leaf_logp(p_kind, p_value, p_param_ptr, p_params, pn, v)
                    b = _leaf_logp(q_kind, q_value, q_param_ptr, q_params, qm, v)
                    if a == NEG_INF or b == NEG_INF:
                        continue
                    if not ok or a - b > best:
                        best = a - b
                        arg = v
                        ok = True
                out_marg_free[i] = not free[x]
            else:
                a = _leaf_logp(p_kind, p_value, p_param_ptr, p_params, pn, ev_p[x])
                b = _leaf_logp(q_kind, q_value, q_param_ptr, q_params, qm, ev_q[x])
                if a != NEG_INF and b != NEG_INF:
                    best = a - b
                    ok = True
                out_marg_free[i] = False
            out_ok[i] = ok
            out_val[i] = best if ok else 0.0
            out_choice[i] = arg
        else:
            best = 0.0
            arg = -1
            ok = False
            mf = False
            if e_flags[i] & 1:
                sv = e_svt[i]
                mf = gz[sv if sv >= 0 else root_vt]
            for o in range(opt_ptr[i], opt_ptr[i + 1]):
                s = opt_const[o]
                feasible = True
                for c in range(och_ptr[o], och_ptr[o + 1]):
                    ch = och[c]
                    # an infeasible option can become feasible once marginalised variables are
                    # summed rather than maximised: its flag counts too
                    mf = mf or out_marg_free[ch]
                    if out_ok[ch]:
                        s += out_val[ch]
                    else:
                        feasible = False
                if not feasible:
                    continue
                if not ok or s > best:
                    best = s
                    arg = o
                    ok = True
            out_ok[i] = ok
            out_val[i] = best if ok else 0.0
            out_choice[i] = arg
            out_marg_free[i] = mf


@njit(cache=True)
def plan_update(A, grp_ptr, grp_ent, PC, QC, card, VT, ev_p, ev_q, free, relaxed, st_evp,
                st_evq, st_free, st_rel, st_valid, out_val, out_ok, out_choice, out_marg_free):
    """Bring one evaluation slot of a plan up to date for new evidence, re-evaluating only the
    entries whose scope holds a variable whose state (observed values, free, relaxed) changed
    since the slot's last evaluation (``st_*``; everything when ``st_valid[0]`` is False).

    An entry's value depends only on the variables of its scope, and so do the shortcut,
    merge and ghost flags of the vtree nodes below it; entries are grouped by the vtree node
    of their scope (``grp_ptr``/``grp_ent``: group ``w + 1``, group 0 for empty scopes, each
    group in entry order), and vtree nodes come after their children, so the dirty groups
    taken in order respect the plan's evaluation order. ``PC``/``QC``: the circuits' marginal
    kernel arguments; ``VT``: ``(left, right, var, parent, leaf_of, on_rightmost, short_ok,
    merge_ok)``. Returns the number of entries evaluated."""
    vt_left, vt_right, vt_var, vt_parent, leaf_of, on_rightmost, short_ok, merge_ok = VT
    m = vt_var.shape[0]
    nv = ev_p.shape[0]
    n = A[0].shape[0]
    dirty = np.zeros(m + 1, np.bool_)
    full = not st_valid[0]
    if not full:
        changed = False
        for x in range(nv):
            if (ev_p[x] != st_evp[x] or ev_q[x] != st_evq[x] or free[x] != st_free[x]
                    or relaxed[x] != st_rel[x]):
                changed = True
                w = leaf_of[x]
                while w >= 0 and not dirty[w + 1]:
                    dirty[w + 1] = True
                    w = vt_parent[w]
        if not changed:
            return 0
    observed = np.empty(nv, np.bool_)
    for x in range(nv):
        observed[x] = ev_p[x] >= 0
    short, merge = shortcut_nodes(vt_left, vt_right, vt_var, on_rightmost, short_ok, merge_ok,
                                  free, observed)
    gz = ghost_nodes(vt_left, vt_right, vt_var, short, free, ev_p, ev_q, relaxed)
    need = False
    for w in range(m):
        need = need or short[w] or merge[w]
    if need:
        p_kind, p_var, p_value, p_pptr, p_params, p_lognorm, p_eptr, p_ea, p_eb, p_lw, p_deg = PC
        q_kind, q_var, q_value, q_pptr, q_params, q_lognorm, q_eptr, q_ea, q_eb, q_lw, q_deg = QC
        row = ev_p.copy()
        for x in range(nv):
            if free[x]:
                row[x] = -1
        val_p = np.empty(p_kind.shape[0])
        _sweep(p_kind, p_var, p_value, p_pptr, p_params, p_lognorm, p_eptr, p_ea, p_eb, p_lw,
               row, val_p, np.empty(max(p_deg, 1)))
        for x in range(nv):
            row[x] = -1 if free[x] else ev_q[x]
        val_q = np.empty(q_kind.shape[0])
        _sweep(q_kind, q_var, q_value, q_pptr, q_params, q_lognorm, q_eptr, q_ea, q_eb, q_lw,
               row, val_q, np.empty(max(q_deg, 1)))
    else:
        val_p = np.zeros(1)
        val_q = np.zeros(1)
    if full:
        order = np.empty(0, np.int64)
        n_order = -1
    else:
        n_order = 0
        for g in range(m + 1):
            if dirty[g]:
                n_order += grp_ptr[g + 1] - grp_ptr[g]
        order = np.empty(n_order, np.int64)
        k = 0
        for g in range(m + 1):
            if dirty[g]:
                for j in range(grp_ptr[g], grp_ptr[g + 1]):
                    order[k] = grp_ent[j]
                    k += 1
    evaluate_entries(A, order, n_order, PC[0], PC[2], PC[3], PC[4], QC[0], QC[2], QC[3], QC[4],
                     card, ev_p, ev_q, free, relaxed, short, merge, gz, vt_left, val_p, val_q,
                     out_val, out_ok, out_choice, out_marg_free)
    st_evp[:] = ev_p
    st_evq[:] = ev_q
    st_free[:] = free
    st_rel[:] = relaxed
    st_valid[0] = True
    return n if full else n_order


@njit(cache=True)
def decode_plan(root, e_kind, e_var, opt_ptr, och_ptr, och, m_ptr, m_child, choice, assignment):
    """Follow the winning options from ``root`` and write maximised leaf values."""
    stack = np.empty(e_kind.shape[0] + 1, np.int64)
    top = 0
    stack[top] = root
    top += 1
    while top > 0:
        top -= 1
        i = stack[top]
        c = choice[i]
        if c == -2:
            continue
        if c <= -3:
            stack[top] = m_child[m_ptr[i] + (-3 - c)]
            top += 1
            continue
        if e_kind[i] == LEAF:
            if c >= 0:
                assignment[e_var[i]] = c
            continue
        if c < 0:
            continue
        for k in range(och_ptr[c], och_ptr[c + 1]):
            stack[top] = och[k]
            top += 1


@njit(cache=True)
def support_count(kind, var, value, param_ptr, params, edge_ptr, edge_a, edge_b, edge_logw,
                  card, ev, buf):
    """Number of completions of ``ev`` in the support of a smooth, deterministic, decomposable
    circuit (missing values range over the whole domain), as a float64: exact while the counts
    stay below 2**53. Fills ``buf`` with every node's count and returns the root's."""
    n = kind.shape[0]
    for i in range(n):
        k = kind[i]
        if k == 0 or k == 1:
            x = var[i]
            c = 0.0
            for v in range(card[x]):
                if ev[x] >= 0 and v != ev[x]:
                    continue
                if k == 0:
                    if v == value[i]:
                        c += 1.0
                elif params[param_ptr[i] + v] > NEG_INF:
                    c += 1.0
            buf[i] = c
        elif k == 2:
            s = 1.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                s *= buf[edge_a[e]]
            buf[i] = s
        else:
            s = 0.0
            for e in range(edge_ptr[i], edge_ptr[i + 1]):
                if edge_logw[e] == NEG_INF:
                    continue
                t = buf[edge_a[e]]
                if edge_b[e] >= 0:
                    t *= buf[edge_b[e]]
                s += t
            buf[i] = s
    return buf[n - 1]


@njit(cache=True)
def shortcut_nodes(vt_left, vt_right, vt_var, on_rightmost, short_ok, merge_ok, free, observed):
    """Per vtree node: ``short`` where pairs may take the exact ratio of marginals (all
    variables observed, or a right-most-path node with no free variable whose ancestors choose
    by exclusive primes), and ``merge`` where elements sharing a prime are merged (a
    right-most-path node whose right child has no free variable)."""
    m = vt_var.shape[0]
    nonfree = np.zeros(m, np.bool_)
    allobs = np.zeros(m, np.bool_)
    short = np.zeros(m, np.bool_)
    merge = np.zeros(m, np.bool_)
    for w in range(m):
        x = vt_var[w]
        if x >= 0:
            nonfree[w] = not free[x]
            allobs[w] = observed[x]
        else:
            nonfree[w] = nonfree[vt_left[w]] and nonfree[vt_right[w]]
            allobs[w] = allobs[vt_left[w]] and allobs[vt_right[w]]
        short[w] = allobs[w] or (on_rightmost[w] and short_ok[w] and nonfree[w])
        if x < 0:
            merge[w] = merge_ok[w] and (not nonfree[w]) and nonfree[vt_right[w]]
    return short, merge


@njit(cache=True)
def count_plan(e_kind, e_var, e_pnode, e_qnode, opt_ptr, och_ptr, och, p_kind, p_value,
               p_param_ptr, p_params, q_kind, q_value, q_param_ptr, q_params, card, ev_p, ev_q,
               out):
    """Number of completions where both sides are positive (the product circuit's model count
    over the common support), per entry; exact in float64 below 2**53."""
    for i in range(e_kind.shape[0]):
        if e_kind[i] == LEAF:
            x = e_var[i]
            c = 0.0
            if ev_p[x] < 0:
                for v in range(card[x]):
                    if (_leaf_logp(p_kind, p_value, p_param_ptr, p_params, e_pnode[i], v) > NEG_INF
                            and _leaf_logp(q_kind, q_value, q_param_ptr, q_params, e_qnode[i], v)
                            > NEG_INF):
                        c += 1.0
            elif (_leaf_logp(p_kind, p_value, p_param_ptr, p_params, e_pnode[i], ev_p[x]) > NEG_INF
                  and _leaf_logp(q_kind, q_value, q_param_ptr, q_params, e_qnode[i], ev_q[x])
                  > NEG_INF):
                c = 1.0
            out[i] = c
        else:
            s = 0.0
            for o in range(opt_ptr[i], opt_ptr[i + 1]):
                t = 1.0
                for k in range(och_ptr[o], och_ptr[o + 1]):
                    t *= out[och[k]]
                s += t
            out[i] = s


@njit(cache=True)
def conditional_extremes(A, grp_ptr, grp_ent, PC, card, VT, root, d, fav, ev, free, slots, out):
    """Both quotient passes of a circuit against itself, one call: ``out = (max log
    P(d,e,u)/P(¬d,e,u), feasible, max log P(¬d,e,u)/P(d,e,u), feasible)`` over completions
    ``u`` of the ``free`` variables (variables neither free nor observed in ``ev`` are
    marginalised, soundly). What :meth:`PairPlan.evaluate_all` does twice, without the
    Python round trips, each side in its own incremental slot (``slots[side]``: the state
    arrays of :func:`plan_update`): the branch-and-bound search asks for it at every node."""
    ev_d = ev.copy()
    ev_nd = ev.copy()
    ev_d[d] = fav
    ev_nd[d] = 1 - fav
    relaxed = np.zeros(free.shape[0], np.bool_)
    for side in range(2):
        a, b = (ev_d, ev_nd) if side == 0 else (ev_nd, ev_d)
        st_evp, st_evq, st_free, st_rel, st_valid, o_val, o_ok, o_choice, o_mf = slots[side]
        plan_update(A, grp_ptr, grp_ent, PC, PC, card, VT, a, b, free, relaxed, st_evp, st_evq,
                    st_free, st_rel, st_valid, o_val, o_ok, o_choice, o_mf)
        out[2 * side] = o_val[root]
        out[2 * side + 1] = 1.0 if o_ok[root] else 0.0

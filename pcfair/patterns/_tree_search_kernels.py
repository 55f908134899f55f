"""Numba kernels of the compiled branch and bound over decision-rooted tree-augmented models
(:mod:`pcfair.patterns.tree_search`).

The walk, its resumable state and the pattern codes are those of the naive-Bayes search
(:mod:`pcfair.patterns._search_kernels`). What differs is how a node is scored and bounded:

- a node keeps, per variable, its lattice state for the bound (``st``/``val``, the states of
  :mod:`pcfair.patterns._bound_kernels`) and two evidence vectors, ``obs_a`` (``y`` only) and
  ``obs_b`` (``x`` and ``y``), each entry ``-1`` (marginalised), ``k ≥ 0`` (observed with
  value ``k``) or ``-2 - k`` (any value but ``k``: the events of the divergence's ``¬x``);
  deciding a position writes its variable's entries and leaving the position's frame resets
  them, so the vectors are updated in O(1) per step;
- a child's masses ``log P(δ, e)`` for both decision values come from one upward pass of
  linear-space messages over the feature forest
  (:func:`pcfair.patterns._tree_mass_kernels.log_masses`), skipping subtrees with
  no evidence (their message is 1), rescaled where a message would underflow;
- the bound is :func:`pcfair.patterns._bound_kernels.tree_box` on ``st``/``val`` and
  :func:`pcfair.patterns._bound_kernels.node_bound` on its box: the
  :class:`~pcfair.patterns.bounds.TreeBound` the Python search uses, evaluated in place.
"""

from __future__ import annotations

import math

import numpy as np
from numba import literally, njit

from pcfair.patterns._bound_kernels import (
    EXCL,
    FREE,
    IN_X,
    IN_Y,
    RULE_C,
    RULE_E,
    RULE_H,
    RULE_M,
    node_bound,
    rest_range,
    tree_box,
)
from pcfair.patterns._search_kernels import (
    ATOL,
    BOUND_RTOL,
    BUDGET,
    C_BOUNDS,
    C_DEPTH,
    C_HSIZE,
    C_NODES,
    C_NOUT,
    C_PRUNED,
    C_STARTED,
    DONE,
    FOUND,
    GROW,
    M_ALL,
    M_TOPK,
    R_EXCL,
    R_X,
    close_children,
    divergence_bound,
    log_divergence_score,
    logaddexp,
    place_child,
    record_pattern,
)
from pcfair.patterns._plateau_kernels import SOLVED, WITNESS, on_plateau, solve_plateau
from pcfair.patterns._tree_mass_kernels import log_masses, shift_of_masses


@njit(cache=True)
def node_hash(code, depth) -> int:
    """A non-negative hash of the node ``code[:depth]`` (FNV-style, wrapping 64-bit), the same
    in every process."""
    h = np.int64(1469598103934665603)
    for j in range(depth):
        h = h * np.int64(1099511628211) + np.int64(code[j] + 3)
    return h & np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True)
def _divergence(code, dd, role, z, v, pos_var, obs_a, scratch, score, b1, b0, delta, model,
                msg, has_ev, tmp, linear):
    """The divergence of the child ``(role, v)`` at position ``dd`` (variable ``z``) of the
    node whose pattern is ``code[:dd]``: ``P(δ, y, ¬x)`` summed over the disjoint events "the
    earlier ``x`` variables hold and this one takes another value" (as
    :func:`pcfair.patterns.scores.divergence_masses` sums them), each one pass."""
    for u in range(obs_a.shape[0]):
        scratch[u] = obs_a[u]
    if role != R_X:
        scratch[z] = v
    lm1 = -np.inf
    lm0 = -np.inf
    for j in range(dd + 1):
        if j < dd:
            c = code[j]
            if c >= 0:
                continue
            var = pos_var[j]
            val = -c - 1
        elif role == R_X:
            var = z
            val = v
        else:
            continue
        scratch[var] = -2 - val
        log_masses(scratch, model, msg, has_ev, tmp, linear)
        lm1 = logaddexp(lm1, tmp[0])
        lm0 = logaddexp(lm0, tmp[1])
        scratch[var] = val
    return log_divergence_score(score, b1, b0, lm1, lm0, delta)


@njit(cache=True)
def _children(dd, pos_var, sens, st, obs_a, obs_b, scratch, fa, fp, fint, code, cn, cur,
              c_role, c_val, c_score, c_p, c_div, c_la, delta, by_div, best_first, mode,
              model, msg, has_ev, tmp, linear):
    """The children of the node at depth ``dd`` (its ``x`` children, its ``y`` children, in
    value order, then by decreasing score for top-k; the excluded child last), scored."""
    card = model[2]
    z = pos_var[dd]
    a1 = fa[dd, 0]
    a0 = fa[dd, 1]
    nx = fint[dd, 0]
    m = 0
    for role in range(2):
        if role == R_X and not sens[dd]:
            continue
        for v in range(card[z]):
            if role == R_X:
                obs_b[z] = v
                log_masses(obs_b, model, msg, has_ev, tmp, linear)
                ca1 = a1
                ca0 = a0
                b1 = tmp[0]
                b0 = tmp[1]
                obs_b[z] = -1
                has_x = True
            else:
                obs_a[z] = v
                log_masses(obs_a, model, msg, has_ev, tmp, linear)
                ca1 = tmp[0]
                ca0 = tmp[1]
                obs_a[z] = -1
                if nx > 0:
                    obs_b[z] = v
                    log_masses(obs_b, model, msg, has_ev, tmp, linear)
                    b1 = tmp[0]
                    b0 = tmp[1]
                    obs_b[z] = -1
                else:
                    b1 = ca1
                    b0 = ca0
                has_x = nx > 0
            p = logaddexp(b1, b0)  # log P(x, y)
            score = shift_of_masses(ca1, ca0, b1, b0) if has_x else np.nan
            div = 0.0
            if by_div and has_x and abs(score) > delta + ATOL:
                div = _divergence(code, dd, role, z, v, pos_var, obs_a, scratch, score, b1,
                                  b0, delta, model, msg, has_ev, tmp, linear)
            place_child(dd, m, role, v, score, p, div, ca1, ca0, best_first and mode == M_TOPK,
                        by_div, c_role, c_val, c_score, c_p, c_div, c_la)
            m += 1
    close_children(dd, m, fp[dd], a1, a0, cn, cur, c_role, c_val, c_score, c_p, c_div, c_la)


@njit(cache=True, inline="always")
def _prunes(ub, thr, mode, by_div, k, ctrl, hk, heap) -> bool:
    """Whether the bound ``ub`` prunes a node by itself: at most the threshold, or (top-k by
    discrimination, heap full) at most the heap's least score."""
    ubr = ub * (1.0 + BOUND_RTOL) + 1e-300
    if ubr <= thr:
        return True
    return mode == M_TOPK and not by_div and ctrl[C_HSIZE] >= k and ubr <= hk[heap[0]]


@njit(cache=True, nogil=True)
def run(model, positions, params, iparams, state, work, work2, plateau, walk, top, found,
        budget, linear):
    """Run the search until it ends (``DONE``), a first pattern is found (``FOUND``),
    ``budget`` nodes were visited (``BUDGET``) or the output buffer is full (``GROW``).

    The state comes in bundles: ``model``, the tree model (a
    :class:`~pcfair.patterns._tree_records.TreeModel`); ``positions = (pos_var, sens, free_st,
    sens_left, orders)``; ``state = (st, val, obs_a, obs_b, scratch, fa, fp, fint)`` (the
    evidence and the path's frames); ``work = (msg, has_ev, tmp, bw)`` (the messages' scratch
    and the plain box, a :class:`~pcfair.patterns._tree_records.BoxWork`) and ``work2 =
    (bw2, stats)``, a second box with the mixture rules (``rules``), evaluated only where the
    plain box does not prune and while it prunes at least one node in 20 where it is tried
    (``stats``: tries, prunes, skips); ``walk``, ``top`` and ``found`` are
    :class:`~pcfair.patterns._compiled.SearchBuffers`' bundles.

    ``plateau = (pos_of, scratch, stats)``: the plateau solver's
    (:func:`pcfair.patterns._plateau_kernels.solve_plateau`), tried at every node the bound
    does not prune once every sensitive position is decided (and inside this share's subtrees),
    which answers the node's whole subtree where it applies.

    ``params = (logit P(d), δ, log min_support)`` (``fp``, ``c_p``: ``log P(x, y)``);
    ``iparams = (mode, k, rank by divergence,
    best first, w, n_w, split, rules, plateau solver, head)`` (``head > 0``: on entering a
    node at depth ``head``, the positions below it take ``orders[mask]``, ``mask`` the head
    positions in ``x``; ``rules``: the box's, see
    :data:`~pcfair.patterns._bound_kernels.RULES_ALL`); ``dirty`` marks the variables whose
    state changed since the last :func:`~pcfair.patterns._bound_kernels.tree_box` (every
    write to ``st``/``val`` sets it, the box clears it), which recomputes only their
    subtrees' paths. With ``n_w > 1`` the run is share ``w`` of ``n_w``, entering
    only the subtrees at depth ``split`` whose :func:`node_hash` is ``w`` modulo ``n_w`` (the
    nodes above are walked by every share, so the shares are disjoint and cover the tree).
    Positions ``j`` hold the variables ``pos_var[j]`` (sensitive first,
    ``sens[j]``); ``free_st[j]`` is position ``j``'s undecided state.
    """
    literally(linear)  # compiled once per value (run_linear, run_in_logs): no branch per pass
    log_prior = model.log_prior
    pos_var, sens, free_st, sens_left, orders = positions
    st, val, obs_a, obs_b, scratch, fa, fp, fint = state
    msg, has_ev, tmp, bw = work
    bw2, stats2 = work2
    out = bw.out
    dirty = bw.dirty
    out2 = bw2.out
    dirty2 = bw2.dirty
    ctrl, fbest, code, cn, cur, c_role, c_val, c_score, c_p, c_div, c_la = walk
    heap, hk, hc, hs, hp, hd, hx = top
    os_, op, ox = found
    n = pos_var.shape[0]
    pi = params[0]
    delta = params[1]
    log_ms = params[2]
    mode = iparams[0]
    k = iparams[1]
    by_div = iparams[2] != 0
    best_first = iparams[3] != 0
    share = iparams[4]
    shares = iparams[5]
    split = iparams[6]
    rules = iparams[7]
    plain = rules & (RULE_C | RULE_E)  # the first box's (the same on every use of its arrays)
    mixtures = rules & (RULE_H | RULE_M) != 0  # a second box is worth trying
    pos_of, p_scratch, p_stats = plateau
    solver = iparams[8] != 0 and mode != M_ALL and not by_div and log_ms == -np.inf
    head = iparams[9]  # > 0: the order below the head depends on the node's x (orders)
    thr = delta + ATOL
    cap = os_.shape[0]
    visited = 0

    if ctrl[C_STARTED] == 0:
        ctrl[C_STARTED] = 1
        fa[0, 0] = log_prior[0]
        fa[0, 1] = log_prior[1]
        fp[0] = 0.0  # log P of the empty pattern
        fint[0, 0] = 0
        fint[0, 1] = 0
        ctrl[C_NODES] += 1
        visited += 1
        if n == 0 or sens_left[0] == 0:
            ctrl[C_DEPTH] = -1
            return DONE
        ctrl[C_DEPTH] = 0
        _children(0, pos_var, sens, st, obs_a, obs_b, scratch, fa, fp, fint, code, cn, cur,
                  c_role, c_val, c_score, c_p, c_div, c_la, delta, by_div, best_first, mode,
                  model, msg, has_ev, tmp, linear)

    while True:
        d = ctrl[C_DEPTH]
        if d < 0:
            return DONE
        z = pos_var[d]
        if cur[d] >= cn[d]:  # the frame is done: position d is undecided again
            st[z] = free_st[d]
            dirty[z] = True
            dirty2[z] = True
            val[z] = 0
            obs_a[z] = -1
            obs_b[z] = -1
            code[d] = 0
            ctrl[C_DEPTH] = d - 1
            continue
        if visited >= budget:
            return BUDGET
        if mode != M_TOPK and ctrl[C_NOUT] >= cap:
            return GROW
        c = cur[d]
        cur[d] = c + 1
        role = c_role[d, c]
        v = c_val[d, c]
        dd = d + 1
        p = c_p[d, c]
        dirty[z] = True
        dirty2[z] = True
        if role == R_EXCL:
            st[z] = EXCL
            val[z] = 0
            obs_a[z] = -1
            obs_b[z] = -1
            code[d] = 0
            fint[dd, 0] = fint[d, 0]
            fint[dd, 1] = fint[d, 1]
        else:
            if not p > -np.inf:
                continue  # P(x, y) = 0: neither it nor its extensions are defined
            val[z] = v
            obs_b[z] = v
            if role == R_X:
                st[z] = IN_X
                obs_a[z] = -1
                code[d] = -(v + 1)
                fint[dd, 0] = fint[d, 0] + 1
                fint[dd, 1] = fint[d, 1]
            else:
                st[z] = IN_Y
                obs_a[z] = v
                code[d] = v + 1
                fint[dd, 0] = fint[d, 0]
                fint[dd, 1] = fint[d, 1] + 1
            if fint[dd, 0] > 0 and record_pattern(
                    c_score[d, c], p, c_div[d, c], code, d, thr, log_ms, mode, k,
                    by_div, ctrl, fbest, heap, hk, hc, hs, hp, hd, hx, os_, op, ox):
                return FOUND
        fa[dd, 0] = c_la[d, c, 0]
        fa[dd, 1] = c_la[d, c, 1]
        fp[dd] = p
        # enter the child at depth dd
        ctrl[C_NODES] += 1
        visited += 1
        if dd == n:
            continue
        if shares > 1 and dd == split and node_hash(code, dd) % shares != share:
            continue  # another share's subtree
        if fint[dd, 0] == 0 and sens_left[dd] == 0:
            continue  # no sensitive variable left to put in x
        if head > 0 and dd == head:  # the order below, for this x
            mask = 0
            for j in range(head):
                if code[j] < 0:
                    mask |= 1 << j
            for j in range(head, n):
                pos_var[j] = orders[mask, j]
                pos_of[pos_var[j]] = j
        if fint[dd, 0] > 0 or fint[dd, 1] > 0:
            prune = p < log_ms
            if not prune:
                ctrl[C_BOUNDS] += 1
                tree_box(st, val, model, bw, plain)
                ub, a_min, a_max = node_bound(out, pi)
                if ub >= 0.0 and mixtures and not _prunes(ub, thr, mode, by_div, k,
                                                             ctrl, hk, heap):
                    # the box with the mixture rules (second, incremental on its own
                    # arrays), only where the plain box does not prune already, and only
                    # while it prunes often enough to pay for itself (stats2: tries,
                    # prunes, skips; a skipped node's bound is the plain box, which is sound)
                    use = stats2[0] < 1000 or stats2[1] * 20 >= stats2[0]
                    if not use:
                        stats2[2] += 1
                        use = stats2[2] % 64 == 0  # keep sampling the prune rate
                    if use:
                        stats2[0] += 1
                        tree_box(st, val, model, bw2, rules)
                        ub2, a_min2, a_max2 = node_bound(out2, pi)
                        ub = min(ub, ub2)
                        a_min = max(a_min, a_min2)
                        a_max = min(a_max, a_max2)
                        if _prunes(ub, thr, mode, by_div, k, ctrl, hk, heap):
                            stats2[1] += 1
                if ub < 0.0:
                    prune = True  # no extension has positive probability
                else:
                    ub = ub * (1.0 + BOUND_RTOL) + 1e-300
                    if ub <= thr:
                        prune = True
                    elif mode == M_TOPK and ctrl[C_HSIZE] >= k:
                        if not by_div:
                            prune = ub <= hk[heap[0]]
                        else:
                            # the P(d | y', ¬x') range: x's variables made undecided
                            for j in range(dd):
                                if code[j] < 0:
                                    st[pos_var[j]] = FREE
                                    dirty[pos_var[j]] = True
                                    dirty2[pos_var[j]] = True
                            tree_box(st, val, model, bw, plain)
                            for j in range(dd):
                                if code[j] < 0:
                                    st[pos_var[j]] = IN_X
                                    dirty[pos_var[j]] = True
                                    dirty2[pos_var[j]] = True
                            r_min, r_max = rest_range(out, pi)
                            prune = divergence_bound(math.exp(p), a_min, a_max, r_min,
                                                     r_max, delta) <= hk[heap[0]]
            if prune:
                ctrl[C_PRUNED] += 1
                continue
            if solver and sens_left[dd] == 0 and (shares == 1 or dd >= split) and \
                    on_plateau(out, thr, mode, k, ctrl, hk, heap):
                # every extension at once where the plateau solver applies
                r = solve_plateau(n, model, linear, obs_a, obs_b, code, pos_of, st, thr,
                                  log_ms, mode, k, ctrl, fbest, top, found, p_scratch,
                                  p_stats)
                if r == WITNESS:
                    return FOUND
                if r == SOLVED:
                    continue
        ctrl[C_DEPTH] = dd
        _children(dd, pos_var, sens, st, obs_a, obs_b, scratch, fa, fp, fint, code, cn, cur,
                  c_role, c_val, c_score, c_p, c_div, c_la, delta, by_div, best_first, mode,
                  model, msg, has_ev, tmp, linear)


@njit(cache=True, nogil=True)
def run_linear(model, positions, params, iparams, state, work, work2, plateau, walk, top,
               found, budget):
    """:func:`run` with the masses' pass in linear space (a model where
    :func:`~pcfair.patterns._tree_mass_kernels.linear_is_exact` holds). Its own entry point:
    ``run``'s ``linear`` is a literal, compiled once per value here, and a literal from
    Python would be resolved again at every call."""
    return run(model, positions, params, iparams, state, work, work2, plateau, walk, top,
               found, budget, True)


@njit(cache=True, nogil=True)
def run_in_logs(model, positions, params, iparams, state, work, work2, plateau, walk, top,
                found, budget):
    """:func:`run` with the masses' pass in logs (every other model; see
    :func:`run_linear`)."""
    return run(model, positions, params, iparams, state, work, work2, plateau, walk, top,
               found, budget, False)


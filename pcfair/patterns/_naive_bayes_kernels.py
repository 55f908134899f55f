"""Numba kernels of the compiled naive-Bayes branch and bound
(:mod:`pcfair.patterns.naive_bayes_search`).

The walk is the resumable explicit-stack one of :mod:`pcfair.patterns._search_kernels` (which
holds the pieces it shares with the tree search: scores, bounds, the top-k heap, the pattern
codes); this module holds what is particular to naive Bayes.

Every quantity of a node is incremental (see the module docstring of
:mod:`pcfair.patterns.naive_bayes_search`): ``t = prior + Σ_y w``, ``s = Σ_x w``, the log-products
``ly_c = log P(D=c) + Σ_y log P(v|D=c)`` and ``lx_c = Σ_x log P(v|D=c)`` for ``c`` the
favourable (1) and the other (0) decision value, ``xlo``/``xhi`` = ``Σ_x min_k w`` / ``max_k w``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pcfair.patterns._search_kernels import (
    ATOL,
    BOUND_RTOL,
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
    BUDGET,
    M_TOPK,
    R_EXCL,
    R_X,
    close_children,
    coupled_bound,
    divergence_bound,
    log_divergence_score,
    logaddexp,
    place_child,
    record_pattern,
    sigmoid,
    sigmoid_shift,
)

# frame columns (floats)
F_T, F_S, F_LY1, F_LY0, F_LX1, F_LX0, F_XLO, F_XHI, F_P = range(9)
N_F = 9


@njit(cache=True)
def _pattern_divergence(code, depth, cur_role, cur_val, off, lp1, lp0, lq1, lq0,
                        ly1, ly0, lx1, lx0, score, delta, n_sens):
    """Divergence of the pattern coded by ``code[:depth]`` plus (``cur_role``, ``cur_val``)
    at position ``depth``, whose log-products are ``ly*``/``lx*``. ``P(d, y, ¬x)`` is summed
    over the disjoint events "the earlier ``x`` variables hold and this one takes another
    value" (as :func:`pcfair.patterns.scores.divergence_masses` does): no cancellation."""
    lm1 = -np.inf
    lm0 = -np.inf
    pre1 = 0.0
    pre0 = 0.0
    last = min(depth, n_sens)
    for j in range(last + 1):
        if j < depth:
            c = code[j]
            if c >= 0:
                continue
            v = -c - 1
        elif j == depth and cur_role == R_X:
            v = cur_val
        else:
            continue
        i = off[j] + v
        lm1 = logaddexp(lm1, ly1 + pre1 + lq1[i])
        lm0 = logaddexp(lm0, ly0 + pre0 + lq0[i])
        pre1 += lp1[i]
        pre0 += lp0[i]
    return log_divergence_score(score, ly1 + lx1, ly0 + lx0, lm1, lm0, delta)


@njit(cache=True, nogil=True)
def run(model, params, iparams, frames, fint, walk, top, found, budget):
    """Run the search until it ends (``DONE``), a first pattern is found (``FOUND``),
    ``budget`` nodes were visited (``BUDGET``) or the output buffer is full (``GROW``).

    ``model = (card, sens, off, w, lp1, lp0, lq1, lq0, wmin, wmax, t_lo_suf, t_hi_suf,
    s_lo_suf, s_hi_suf, sens_left)`` (the tables, by search position); ``params = (prior,
    log P(d), log P(¬d), δ, log min_support)`` (the frames' ``F_P`` and ``c_p``: ``log P(x,
    y)``); ``iparams = (mode, k, rank by divergence, best
    first, number of sensitive variables)``; ``walk``, ``top`` and ``found`` are
    :class:`~pcfair.patterns._compiled.SearchBuffers`' bundles.
    """
    (card, sens, off, w, lp1, lp0, lq1, lq0, wmin, wmax, t_lo_suf, t_hi_suf, s_lo_suf,
     s_hi_suf, sens_left) = model
    ctrl, fbest, code, cn, cur, c_role, c_val, c_score, c_p, c_div, c_aux = walk
    heap, hk, hc, hs, hp, hd, hx = top
    os_, op, ox = found
    n = len(card)
    prior = params[0]
    delta = params[3]
    log_ms = params[4]
    mode = iparams[0]
    k = iparams[1]
    by_div = iparams[2] != 0
    best_first = iparams[3] != 0
    n_sens = iparams[4]
    thr = delta + ATOL
    cap = len(os_)
    visited = 0

    if ctrl[C_STARTED] == 0:
        ctrl[C_STARTED] = 1
        frames[0, F_T] = prior
        frames[0, F_S] = 0.0
        frames[0, F_LY1] = params[1]
        frames[0, F_LY0] = params[2]
        frames[0, F_LX1] = 0.0
        frames[0, F_LX0] = 0.0
        frames[0, F_XLO] = 0.0
        frames[0, F_XHI] = 0.0
        frames[0, F_P] = 0.0  # log P of the empty pattern
        fint[0, 0] = 0
        fint[0, 1] = 0
        ctrl[C_NODES] += 1
        visited += 1
        if n == 0 or sens_left[0] == 0:
            ctrl[C_DEPTH] = -1
            return DONE
        dd = 0
        ctrl[C_DEPTH] = 0
        # generate the root's children (the code below, shared through the loop's tail)
        _children(dd, card, sens, off, w, lp1, lp0, lq1, lq0, frames, fint, code, cn, cur,
                  c_role, c_val, c_score, c_p, c_div, c_aux, delta, by_div, best_first, n_sens,
                  mode)

    while True:
        d = ctrl[C_DEPTH]
        if d < 0:
            return DONE
        if cur[d] >= cn[d]:
            ctrl[C_DEPTH] = d - 1
            continue
        if visited >= budget:
            return BUDGET
        if mode != M_TOPK and ctrl[C_NOUT] >= cap:
            return GROW
        c = cur[d]
        cur[d] = c + 1
        role = c_role[d, c]
        val = c_val[d, c]
        dd = d + 1
        if role == R_EXCL:
            for f in range(N_F):
                frames[dd, f] = frames[d, f]
            fint[dd, 0] = fint[d, 0]
            fint[dd, 1] = fint[d, 1]
            code[d] = 0
        else:
            p = c_p[d, c]
            if not p > -np.inf:
                continue  # P(x, y) = 0: neither it nor its extensions are defined
            i = off[d] + val
            for f in range(N_F):
                frames[dd, f] = frames[d, f]
            fint[dd, 0] = fint[d, 0]
            fint[dd, 1] = fint[d, 1]
            if role == R_X:
                frames[dd, F_S] += w[i]
                frames[dd, F_LX1] += lp1[i]
                frames[dd, F_LX0] += lp0[i]
                frames[dd, F_XLO] += wmin[d]
                frames[dd, F_XHI] += wmax[d]
                fint[dd, 0] += 1
                code[d] = -(val + 1)
            else:
                frames[dd, F_T] += w[i]
                frames[dd, F_LY1] += lp1[i]
                frames[dd, F_LY0] += lp0[i]
                fint[dd, 1] += 1
                code[d] = val + 1
            frames[dd, F_P] = p
            if fint[dd, 0] > 0 and record_pattern(
                    c_score[d, c], p, c_div[d, c], code, d, thr, log_ms, mode, k,
                    by_div, ctrl, fbest, heap, hk, hc, hs, hp, hd, hx, os_, op, ox):
                return FOUND
        # enter the child at depth dd
        ctrl[C_NODES] += 1
        visited += 1
        if dd == n:
            continue
        nx = fint[dd, 0]
        ny = fint[dd, 1]
        if nx == 0 and sens_left[dd] == 0:
            continue  # no sensitive variable left to put in x
        if nx > 0 or ny > 0:
            p = frames[dd, F_P]
            prune = p < log_ms
            if not prune:
                ctrl[C_BOUNDS] += 1
                t = frames[dd, F_T]
                s = frames[dd, F_S]
                t_lo = t + t_lo_suf[dd]
                t_hi = t + t_hi_suf[dd]
                s_lo = s + s_lo_suf[dd]
                s_hi = s + s_hi_suf[dd]
                ub = coupled_bound(t_lo, t_hi, s_lo, s_hi) * (1.0 + BOUND_RTOL) + 1e-300
                if ub <= thr:
                    prune = True
                elif mode == M_TOPK and ctrl[C_HSIZE] >= k:
                    if not by_div:
                        prune = ub <= hk[heap[0]]
                    else:
                        a_min = sigmoid(t_lo + s_lo)
                        a_max = sigmoid(t_hi + s_hi)
                        r_min = sigmoid(t_lo + frames[dd, F_XLO])
                        r_max = sigmoid(t_hi + frames[dd, F_XHI])
                        prune = divergence_bound(math.exp(p), a_min, a_max, r_min, r_max,
                                                 delta) <= hk[heap[0]]
            if prune:
                ctrl[C_PRUNED] += 1
                continue
        ctrl[C_DEPTH] = dd
        _children(dd, card, sens, off, w, lp1, lp0, lq1, lq0, frames, fint, code, cn, cur,
                  c_role, c_val, c_score, c_p, c_div, c_aux, delta, by_div, best_first, n_sens,
                  mode)


@njit(cache=True, nogil=True)
def _children(dd, card, sens, off, w, lp1, lp0, lq1, lq0, frames, fint, code, cn, cur,
              c_role, c_val, c_score, c_p, c_div, c_aux, delta, by_div, best_first, n_sens,
              mode):
    """The children of the node at depth ``dd`` (its ``x`` children, its ``y`` children, in
    value order, then by decreasing score for top-k; the excluded child last), scored."""
    t = frames[dd, F_T]
    s = frames[dd, F_S]
    ly1 = frames[dd, F_LY1]
    ly0 = frames[dd, F_LY0]
    lx1 = frames[dd, F_LX1]
    lx0 = frames[dd, F_LX0]
    nx = fint[dd, 0]
    kk = card[dd]
    base = off[dd]
    m = 0
    for role in range(2):
        if role == R_X and not sens[dd]:
            continue
        for v in range(kk):
            i = base + v
            if role == R_X:
                cx1 = lx1 + lp1[i]
                cx0 = lx0 + lp0[i]
                cy1 = ly1
                cy0 = ly0
                ct = t
                cs = s + w[i]
                has_x = True
            else:
                cx1 = lx1
                cx0 = lx0
                cy1 = ly1 + lp1[i]
                cy0 = ly0 + lp0[i]
                ct = t + w[i]
                cs = s
                has_x = nx > 0
            p = logaddexp(cy1 + cx1, cy0 + cx0)  # log P(x, y)
            if has_x:
                score = sigmoid_shift(ct, cs)
            else:
                score = np.nan
            div = 0.0
            if by_div and has_x and abs(score) > delta + ATOL:
                div = _pattern_divergence(code, dd, role, v, off, lp1, lp0, lq1, lq0, cy1,
                                          cy0, cx1, cx0, score, delta, n_sens)
            place_child(dd, m, role, v, score, p, div, 0.0, 0.0, best_first and mode == M_TOPK,
                        by_div, c_role, c_val, c_score, c_p, c_div, c_aux)
            m += 1
    close_children(dd, m, frames[dd, F_P], 0.0, 0.0, cn, cur, c_role, c_val, c_score, c_p,
                   c_div, c_aux)

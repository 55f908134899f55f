"""The plateau solver of the compiled tree search (:mod:`pcfair.patterns.tree_search`).

**Why.** Near the largest |Δ| of a tree model the branch and bound meets nodes whose
difference ``D = B − A`` is decided while the shared log-odds ``A`` still spans the peak
``−D/2`` of ``σ(A + D) − σ(A)``: every such node's bound is the peak ``tanh(|D|/4)``, above
every pattern below it, and only deciding (nearly) every remaining variable shows how close
``A`` can get to ``−D/2``, a closest-sum problem the depth-first walk solves by enumeration.
:func:`solve_plateau` solves it by sorting instead (meet in the middle), where it applies.

**When it applies** (the proof of "detached evidence" in
:class:`~pcfair.patterns.bounds.TreeBound`). Cut the feature forest below every variable in
``y``: each *part* is a subtree whose root is a forest root or a child of a variable in
``y``, less the parts below it. Given ``D`` the parts are independent, and a part's evidence
enters ``logit P(d | e)`` as one additive term (its subtree's log-likelihood ratio at the
observed parent's value). When no part that holds an undecided variable also holds a variable
that is or can become part of ``x``, every extension ``(x, y')`` of the node has

    ``A(y') = A₀ + Σ_parts a_p(assignment of p's undecided variables)``,  ``B − A = D₀``,

with ``A₀``, ``D₀`` the node's own (every undecided variable excluded) and ``a_p`` the change
of ``A`` when only part ``p``'s undecided variables take the assignment (each one excluded,
or in ``y`` with a value). The extension's ``|Δ| = |σ(A + D₀) − σ(A)|`` exceeds ``t`` exactly
when ``A`` lies in an open interval (:func:`_window`: the function is unimodal), so the
patterns above the threshold are the sums that fall in that interval.

**What it does.** It computes every ``a_p`` by one message pass per assignment
(:func:`~pcfair.patterns._tree_mass_kernels.log_masses`, the search's own scoring), splits the
parts into two groups, sorts one group's sums and, for each sum of the other, finds by binary
search the sums that put ``A`` in the interval (widened by ``1e-9`` relative for rounding).
Each of those candidates is scored exactly (the same two passes the walk uses) and offered to
:func:`~pcfair.patterns._search_kernels.record_pattern` like a node of the walk, with the top-k
threshold re-read as the heap fills. Every extension of the node is either the node itself
(recorded by the walk already, so skipped) or one assignment of the parts, so the node's
subtree is answered completely: the walk need not enter it. Where the parts, their sums or the
candidates exceed the caps below (one call stays within milliseconds), or an evidence has
probability zero at the node, the solver declines and the walk goes on as before.

Modes: ``first`` and top-k by |Δ| (the walk handles ``all`` and the divergence ranking, whose
scores are not a function of ``A`` alone).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pcfair.patterns._bound_kernels import FREE, FREE_SENS, IN_X, IN_Y
from pcfair.patterns._search_kernels import C_HSIZE, C_NODES, M_TOPK, logaddexp, record_pattern
from pcfair.patterns._tree_mass_kernels import log_masses, shift_of_masses

#: Most assignments of one part's undecided variables.
PART_CAP = 1 << 12
#: Most assignments of all parts together (one message pass each).
EVAL_CAP = 1 << 14
#: Most sums of one group of parts.
GROUP_CAP = 1 << 17
#: Most candidates scored exactly in one call.
CAND_CAP = 1 << 12
#: What :func:`solve_plateau` returns.
DECLINED, SOLVED, WITNESS = 0, 1, 2
#: A node is tried when the window of ``A`` is narrower than this share of ``A``'s interval.
PLATEAU_SHARE = 0.1
#: Relative widening of the window for the rounding of the sums.
SLACK = 1e-9


def scratch(nv: int, slots: int) -> tuple:
    """The arrays :func:`solve_plateau` works in, for ``nv`` variables and ``slots`` message
    slots (one set per search)."""
    return (np.zeros(nv, np.int64), np.zeros((nv, 2), np.int64), np.zeros(nv, np.int64),
            np.zeros((nv, 4), np.int64), np.zeros(nv, np.int64), np.zeros(EVAL_CAP),
            np.zeros(2 * GROUP_CAP), np.zeros(2 * GROUP_CAP, np.int64), np.zeros(GROUP_CAP),
            np.zeros(GROUP_CAP, np.int64), np.zeros(GROUP_CAP, np.int64), np.zeros((slots, 2)),
            np.zeros(nv, np.bool_), np.zeros(2))


@njit(cache=True)
def _window(thr: float, dlt: float):
    """``(lo, hi)``: the open interval of ``L`` where ``|σ(L + dlt) − σ(L)| > thr``
    (``lo > hi`` when there is none). For ``dlt > 0`` and ``u = e^L``, ``σ(L + dlt) − σ(L) =
    u (e − 1) / ((1 + u e)(1 + u))`` with ``e = e^dlt``, which exceeds ``thr`` exactly when
    ``thr·e u² + (thr (1 + e) − (e − 1)) u + thr < 0``: between the two positive roots, which
    exist when the discriminant is positive and the middle coefficient negative. ``dlt < 0``
    is the mirror image, shifted by ``dlt``. Where ``e`` would overflow the whole line is
    returned (the exact check decides)."""
    if dlt == 0.0 or not thr < 1.0:
        return 1.0, -1.0
    a_d = abs(dlt)
    if thr <= 0.0 or a_d > 600.0:
        return -np.inf, np.inf
    e = math.exp(a_d)
    a = thr * e
    b = thr * (1.0 + e) - (e - 1.0)
    c = thr
    disc = b * b - 4.0 * a * c
    if not (b < 0.0 and disc > 0.0):
        return 1.0, -1.0
    u2 = (-b + math.sqrt(disc)) / (2.0 * a)
    u1 = c / (a * u2)  # the product of the roots is c / a (no cancellation)
    lo = math.log(u1)
    hi = math.log(u2)
    if dlt < 0.0:
        lo -= dlt
        hi -= dlt
    return lo, hi


@njit(cache=True, inline="always")
def _threshold(thr, mode, k, ctrl, hk, heap) -> float:
    """The threshold a pattern must beat: ``thr``, or the least score of a full top-k heap."""
    if mode == M_TOPK and ctrl[C_HSIZE] >= k:
        return max(thr, hk[heap[0]])
    return thr


@njit(cache=True)
def on_plateau(out, thr, mode, k, ctrl, hk, heap) -> bool:
    """Whether a node looks like a plateau, where the solver pays (a cheap test on its
    :func:`~pcfair.patterns._bound_kernels.tree_box` ``out``; the solver checks its own
    condition): ``D`` decided (its interval narrower than ``1e-9`` relative) and the values
    of ``A`` that beat the threshold a small part (:data:`PLATEAU_SHARE`) of ``A``'s
    interval, so that sorting finds few candidates where the walk would enter every node
    whose ``A`` interval still meets them."""
    d_lo = out[4]
    d_hi = out[5]
    if not (math.isfinite(d_lo) and math.isfinite(d_hi) and math.isfinite(out[0])
            and math.isfinite(out[1])):
        return False
    if d_hi - d_lo > 1e-9 * (1.0 + abs(d_hi)):
        return False
    lo, hi = _window(_threshold(thr, mode, k, ctrl, hk, heap), 0.5 * (d_lo + d_hi))
    return lo <= hi and hi - lo < PLATEAU_SHARE * (out[1] - out[0])


@njit(cache=True)
def _parts(st, post, par, card, proot, pinfo, pvars, parts) -> int:
    """Fill the parts of the node (see the module docstring): ``proot[v]`` the root of
    ``v``'s part; per part with an undecided variable, in ``parts[i]``: ``[first index into
    pvars, number of variables, number of assignments, offset of its values]``. Returns the
    number of such parts, or −1 where a part holds both an undecided variable and an ``x``
    one, or the caps are exceeded."""
    nf = post.shape[0]
    for i in range(nf - 1, -1, -1):  # parents before children
        v = post[i]
        p = par[v]
        proot[v] = v if (p < 0 or st[p] == IN_Y) else proot[p]
        pinfo[v, 0] = 0
        pinfo[v, 1] = 0
    for i in range(nf):
        v = post[i]
        s = st[v]
        r = proot[v]
        if s == FREE or s == FREE_SENS:
            pinfo[r, 0] += 1
        if s == IN_X or s == FREE_SENS:
            pinfo[r, 1] = 1
    m = 0
    nvar = 0
    total = 0
    for i in range(nf):
        r = post[i]
        if proot[r] != r or pinfo[r, 0] == 0:
            continue
        if pinfo[r, 1]:
            return -1
        parts[m, 0] = nvar
        size = 1
        for j in range(nf):
            w = post[j]
            if proot[w] == r and st[w] == FREE:
                pvars[nvar] = w
                nvar += 1
                size *= card[w] + 1
                if size > PART_CAP:
                    return -1
        parts[m, 1] = nvar - parts[m, 0]
        parts[m, 2] = size
        parts[m, 3] = total
        total += size
        if total > EVAL_CAP:
            return -1
        m += 1
    return m


@njit(cache=True)
def _set_part(i, idx, parts, pvars, card, obs_a, obs_b, code, pos_of) -> bool:
    """Write assignment ``idx`` of part ``i`` (mixed radix over its variables: digit 0
    excluded, ``1 + k`` in ``y`` with ``k``) into the evidence and the pattern code; returns
    whether any variable is in ``y``."""
    any_y = False
    t = idx
    for q in range(parts[i, 0], parts[i, 0] + parts[i, 1]):
        w = pvars[q]
        r = card[w] + 1
        dgt = t % r
        t //= r
        obs_a[w] = dgt - 1
        obs_b[w] = dgt - 1
        code[pos_of[w]] = dgt
        any_y = any_y or dgt > 0
    return any_y


@njit(cache=True)
def _clear_part(i, parts, pvars, obs_a, obs_b, code, pos_of) -> None:
    for q in range(parts[i, 0], parts[i, 0] + parts[i, 1]):
        w = pvars[q]
        obs_a[w] = -1
        obs_b[w] = -1
        code[pos_of[w]] = 0


@njit(cache=True)
def _group_sums(g, m, parts, group, vals, sums, combo) -> int:
    """The sums over group ``g``'s parts of one value each, skipping combinations with an
    impossible value (NaN); ``combo`` the mixed-radix index over the group's parts (in part
    order). Returns their number."""
    prod = 1
    for i in range(m):
        if group[i] == g:
            prod *= parts[i, 2]
    cnt = 0
    for c in range(prod):
        t = c
        acc = 0.0
        for i in range(m):
            if group[i] != g:
                continue
            r = parts[i, 2]
            acc += vals[parts[i, 3] + t % r]
            t //= r
        if acc == acc:
            sums[cnt] = acc
            combo[cnt] = c
            cnt += 1
    return cnt


@njit(cache=True)
def _apply_combo(g, c, m, parts, group, pvars, card, obs_a, obs_b, code, pos_of) -> bool:
    any_y = False
    t = c
    for i in range(m):
        if group[i] != g:
            continue
        r = parts[i, 2]
        any_y = _set_part(i, t % r, parts, pvars, card, obs_a, obs_b, code, pos_of) or any_y
        t //= r
    return any_y


@njit(cache=True)
def solve_plateau(n, model, linear, obs_a, obs_b, code, pos_of, st, thr, log_ms, mode, k,
                  ctrl, fbest, top, found, scratch, stats) -> int:
    """Answer every extension of the current node at once where the module docstring's
    condition holds: ``SOLVED`` (its patterns offered to the heap or found none),
    ``WITNESS`` (a first witness recorded, mode ``first``) or ``DECLINED`` (the walk goes on).

    ``model``: the tree search's model bundle (``linear``: its masses' pass, see
    :func:`~pcfair.patterns._tree_mass_kernels.log_masses`); ``obs_a``/``obs_b``/``code``/``st``: the
    node's evidence, pattern code and states (restored on return); ``pos_of[v]``: the
    position of ``v`` in the search order; ``thr``: the strict threshold; ``top`` and
    ``found``: the heap and output bundles of
    :class:`~pcfair.patterns._compiled.SearchBuffers`; ``scratch = (proot, pinfo, pvars,
    parts, group, vals, s1, c1, s2, c2, order, msg, has_ev, tmp)``; ``stats``: calls, calls
    that solved the node, calls declined after the parts were evaluated.
    """
    post, par, card = model[0], model[1], model[2]
    heap, hk, hc, hs, hp, hd, hx = top
    os_, op, ox = found
    proot, pinfo, pvars, parts, group, vals, s1, c1, s2, c2, order, msg, has_ev, tmp = scratch
    stats[0] += 1
    m = _parts(st, post, par, card, proot, pinfo, pvars, parts)
    if m <= 0:
        return DECLINED
    # the node itself: A₀ and D₀
    log_masses(obs_a, model, msg, has_ev, tmp, linear)
    a1 = tmp[0]
    a0 = tmp[1]
    log_masses(obs_b, model, msg, has_ev, tmp, linear)
    b1 = tmp[0]
    b0 = tmp[1]
    if not (math.isfinite(a1) and math.isfinite(a0) and math.isfinite(b1)
            and math.isfinite(b0)):
        return DECLINED
    l0 = a1 - a0
    dlt = (b1 - b0) - l0
    # each part's values a_p (NaN where the evidence is impossible or A infinite: |Δ| = 0)
    evals = 0
    for i in range(m):
        for idx in range(parts[i, 2]):
            _set_part(i, idx, parts, pvars, card, obs_a, obs_b, code, pos_of)
            log_masses(obs_a, model, msg, has_ev, tmp, linear)
            x1 = tmp[0]
            x0 = tmp[1]
            ok = math.isfinite(x1) and math.isfinite(x0)
            vals[parts[i, 3] + idx] = (x1 - x0) - l0 if ok else np.nan
            evals += 1
        _clear_part(i, parts, pvars, obs_a, obs_b, code, pos_of)
    ctrl[C_NODES] += evals
    # two groups of parts with balanced numbers of sums (the largest parts first)
    prod0 = 1
    prod1 = 1
    for i in range(m):
        group[i] = -1
    for _ in range(m):
        big = -1
        for i in range(m):
            if group[i] < 0 and (big < 0 or parts[i, 2] > parts[big, 2]):
                big = i
        if prod0 <= prod1:
            group[big] = 0
            prod0 *= parts[big, 2]
        else:
            group[big] = 1
            prod1 *= parts[big, 2]
    if prod0 > GROUP_CAP or prod1 > GROUP_CAP:
        stats[2] += 1
        return DECLINED
    n1 = _group_sums(0, m, parts, group, vals, s1, c1)
    n2 = _group_sums(1, m, parts, group, vals, s2, c2)
    srt = np.argsort(s2[:n2])
    for j in range(n2):
        order[j] = srt[j]
    for j in range(n2):  # s2, c2 sorted (through the scratch of the permutation's inverse)
        s1[n1 + j] = s2[order[j]]
        c1[n1 + j] = c2[order[j]]
    for j in range(n2):
        s2[j] = s1[n1 + j]
        c2[j] = c1[n1 + j]
    # count the candidates first: decline rather than score too many
    t_eff = _threshold(thr, mode, k, ctrl, hk, heap)
    lo, hi = _window(t_eff, dlt)
    if lo > hi:
        stats[1] += 1
        return SOLVED
    count = 0
    for j in range(n1):
        a = lo - l0 - s1[j]
        b = hi - l0 - s1[j]
        w = SLACK * (1.0 + abs(a) + abs(b)) + 1e-12
        count += np.searchsorted(s2[:n2], b + w, side="right") - np.searchsorted(
            s2[:n2], a - w, side="left")
        if count > CAND_CAP:
            stats[2] += 1
            return DECLINED
    result = SOLVED
    for j in range(n1):
        if _threshold(thr, mode, k, ctrl, hk, heap) > t_eff:
            t_eff = _threshold(thr, mode, k, ctrl, hk, heap)  # the heap rose: narrower
            lo, hi = _window(t_eff, dlt)
            if lo > hi:
                break
        a = lo - l0 - s1[j]
        b = hi - l0 - s1[j]
        w = SLACK * (1.0 + abs(a) + abs(b)) + 1e-12
        q_lo = np.searchsorted(s2[:n2], a - w, side="left")
        q_hi = np.searchsorted(s2[:n2], b + w, side="right")
        if q_lo >= q_hi:
            continue
        y1 = _apply_combo(0, c1[j], m, parts, group, pvars, card, obs_a, obs_b, code, pos_of)
        for q in range(q_lo, q_hi):
            y2 = _apply_combo(1, c2[q], m, parts, group, pvars, card, obs_a, obs_b, code,
                              pos_of)
            if y1 or y2:  # not the node itself
                log_masses(obs_a, model, msg, has_ev, tmp, linear)
                ca1 = tmp[0]
                ca0 = tmp[1]
                log_masses(obs_b, model, msg, has_ev, tmp, linear)
                p = logaddexp(tmp[0], tmp[1])  # log P(x, y)
                ctrl[C_NODES] += 1
                if p > -np.inf and record_pattern(shift_of_masses(ca1, ca0, tmp[0], tmp[1]), p,
                                                  0.0, code, n - 1, thr, log_ms, mode, k, False,
                                                  ctrl, fbest, heap, hk, hc, hs, hp, hd, hx,
                                                  os_, op, ox):
                    result = WITNESS
                    break
        for i in range(m):
            _clear_part(i, parts, pvars, obs_a, obs_b, code, pos_of)
        if result == WITNESS:
            break
    stats[1] += 1
    return result

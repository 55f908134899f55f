"""Numba kernels of the streaming lattice engine (see :mod:`pcfair.patterns.lattice`).

Two kernels: :func:`next_leaves` walks the non-sensitive part of the pattern lattice depth
first over a chunk's table of joint probabilities, producing one small table per
non-sensitive assignment ``y_n`` (a *leaf*: the joint of the sensitive variables and the
decision given ``y_n``, closed over the sensitive axes); :func:`score_leaves` scores every
sensitive combination of a batch of leaves and folds the scores into the query's
accumulators. Both work on flat arrays; the walk is resumable (its stack lives in arrays the
caller keeps), so a chunk is processed in bounded batches.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _copy(out, src):
    """``out[:] = src`` (a loop over views: vectorised, no temporary)."""
    for t in range(len(out)):
        out[t] = src[t]


@njit(cache=True)
def _sum_blocks(dst, src, block):
    """``dst`` = the sum of the consecutive blocks of ``block`` entries of ``src``, in order.
    (Separate views of one buffer: the loops vectorise, which indexing the buffer with
    offsets does not.)"""
    for t in range(block):
        dst[t] = src[t]
    for off in range(block, len(src), block):
        part = src[off:off + block]
        for t in range(block):
            dst[t] += part[t]


@njit(cache=True)
def next_leaves(work, level_base, scratch, cards, strides, st, pos, leaf_size, leaf_ext,
                leaf_index, max_leaves, local_strides, leaf_local):
    """Advance the depth-first walk; copy up to ``max_leaves`` leaf tables out.

    ``work`` holds the chunk's table, already closed over the sensitive axes (rows over the
    remaining non-sensitive axes, then one block of ``leaf_size`` entries: every sensitive
    state combination with ``y`` only, × the decision, fav then ¬fav) at offset 0 and one
    scratch region per level. Level ``j`` data starts at ``level_base[j]``; axis ``j`` has
    ``cards[j]`` values and lattice state ``st[j]`` (0 absent, ``k + 1`` value ``k``).
    ``pos[0]`` is the current depth (−1 when the walk is over). ``strides[j]`` is axis
    ``j``'s stride in the global lattice index; ``pos[1]`` the index part of the chunk's
    prefix. ``leaf_local`` receives each leaf's index in the chunk's own sub-grid (strides
    ``local_strides``; the prefix's part is 0), where the summaries' bitmap of the chunk is
    written. A value state takes a contiguous block of its level; the absent state sums the
    blocks of every value (the closure over the sensitive axes commutes with these sums).

    Returns the number of leaves written to ``leaf_ext`` (and ``leaf_index``,
    ``leaf_local``).
    """
    n_axes = len(cards)
    produced = 0
    while produced < max_leaves:
        j = pos[0]
        if j < 0:
            break
        if j == n_axes:  # a leaf
            src = level_base[n_axes]
            _copy(leaf_ext[produced], work[src:src + leaf_size])
            idx = pos[1]
            loc = 0
            for a in range(n_axes):
                idx += st[a] * strides[a]
                loc += st[a] * local_strides[a]
            leaf_index[produced] = idx
            leaf_local[produced] = loc
            produced += 1
            pos[0] = j - 1
            continue
        st[j] += 1
        if st[j] > cards[j]:
            st[j] = -1
            pos[0] = j - 1
            continue
        block = leaf_size
        for a in range(j + 1, n_axes):
            block *= cards[a]
        here = level_base[j]
        if st[j] == 0:  # absent: the sum of the value blocks, in value order
            dst = scratch[j + 1]
            _sum_blocks(work[dst:dst + block], work[here:here + cards[j] * block], block)
            level_base[j + 1] = dst
        else:
            level_base[j + 1] = here + (st[j] - 1) * block
        pos[0] = j + 1
    return produced


@njit(cache=True)
def _sift_down(vals, idx, pay, size, i):
    while True:
        lo = i
        left = 2 * i + 1
        right = left + 1
        if left < size and vals[left] < vals[lo]:
            lo = left
        if right < size and vals[right] < vals[lo]:
            lo = right
        if lo == i:
            return
        vals[i], vals[lo] = vals[lo], vals[i]
        idx[i], idx[lo] = idx[lo], idx[i]
        pay[i], pay[lo] = pay[lo], pay[i]
        i = lo


@njit(cache=True)
def _heap_offer(vals, idx, pay, sizes, h, value, index, payload):
    """Offer ``(value, index, payload)`` to min-heap ``h`` (rows of ``vals``/``idx``/``pay``);
    keeps the largest ``vals.shape[1]`` values."""
    cap = vals.shape[1]
    size = sizes[h]
    if size < cap:
        i = size
        vals[h, i] = value
        idx[h, i] = index
        pay[h, i] = payload
        sizes[h] = size + 1
        while i > 0:
            parent = (i - 1) // 2
            if vals[h, parent] <= vals[h, i]:
                break
            vals[h, parent], vals[h, i] = vals[h, i], vals[h, parent]
            idx[h, parent], idx[h, i] = idx[h, i], idx[h, parent]
            pay[h, parent], pay[h, i] = pay[h, i], pay[h, parent]
            i = parent
        return
    if value <= vals[h, 0]:
        return
    vals[h, 0] = value
    idx[h, 0] = index
    pay[h, 0] = payload
    _sift_down(vals[h], idx[h], pay[h], size, 0)


@njit(cache=True, error_model="numpy")
def _cond(t, e):
    """``P(d | e)`` of ext cell ``e`` of leaf table ``t`` (NaN when ``P(e) = 0``): the one
    expression every score of the engine is a difference of. The masses are non-negative,
    so the rounded sum is at least the favourable one and the quotient at most 1; an empty
    cell gives 0 / 0 = NaN (the numpy error model: no exception, no branch)."""
    return t[2 * e] / (t[2 * e] + t[2 * e + 1])


@njit(cache=True)
def _rest_masses(t, mass_ptr, mass_idx, c):
    """``P(d, y, ¬x)`` and ``P(¬d, y, ¬x)`` of combination ``c`` in leaf table ``t``: the sum
    over the disjoint events of ``¬x`` (its cells ``mass_idx[mass_ptr[c]:mass_ptr[c + 1]]``)."""
    m1 = 0.0
    m0 = 0.0
    for r in range(mass_ptr[c], mass_ptr[c + 1]):
        cell = mass_idx[r]
        m1 += t[2 * cell]
        m0 += t[2 * cell + 1]
    return m1, m0


@njit(cache=True, inline="always")
def _closed_form_masses(a1, a0, m1, m0, score, delta):
    """``P(x, y)``, ``P(y, ¬x)`` and the masses ``c1``, ``c0`` to which the divergence's closed
    form moves ``P(d, y, ¬x)`` and ``P(¬d, y, ¬x)`` (spec §2)."""
    p_xy = a1 + a0
    rest = m1 + m0
    shift = (delta if score > 0 else -delta) * (p_xy + rest)
    return p_xy, rest, m1 + shift, m0 - shift


@njit(cache=True)
def _divergence(a1, a0, m1, m0, score, delta):
    """The closed form of :func:`pcfair.patterns.scores.divergence_scores` for one pattern."""
    p_xy, rest, c1, c0 = _closed_form_masses(a1, a0, m1, m0, score, delta)
    if rest <= 0.0:
        return 0.0
    out = 0.0
    if a1 > 0.0:
        if c1 <= 0.0:
            return math.inf
        out += a1 * math.log((a1 / p_xy) / (c1 / rest))
    if a0 > 0.0:
        if c0 <= 0.0:
            return math.inf
        out += a0 * math.log((a0 / p_xy) / (c0 / rest))
    return max(out, 0.0)


@njit(cache=True)
def _divergence_chi2(a1, a0, m1, m0, score, delta):
    """An upper bound, without a logarithm, on the value :func:`_divergence` computes.

    Proof. With ``p = a1 + a0``, ``rest = m1 + m0``, ``q = a1 / p`` and ``q' = c1 / rest``
    (``1 − q' = c0 / rest``, as ``c1 + c0 = rest``), :func:`_divergence` is
    ``p·KL(q ‖ q')``, and ``KL(P ‖ Q) ≤ log(1 + χ²(P ‖ Q)) ≤ χ²(P ‖ Q)`` (Jensen), where for
    Bernoulli laws ``χ² = (q − q')² / (q'(1 − q')) = (q − q')²·rest² / (c1·c0)``. Where
    ``c1 ≤ 0`` or ``c0 ≤ 0`` the divergence may be infinite: the bound is ``inf``; where
    ``rest ≤ 0`` it is 0, as the divergence. Rounding: ``_divergence`` sums two logarithms of
    ratios near 1 when the divergence is small, with an absolute error of a few ulps of
    ``p·(|log r1| + |log r0|)``; the bound is inflated by ``1e-9`` relative and ``1e-13·p``
    absolute, far above both (``|log r| < 40`` wherever the ratios are finite doubles), and
    by ``1e-300`` for divergences in the subnormal range, where the relative rounding of
    doubles degrades; so a pattern the bound drops has a computed divergence at most the
    bound.
    """
    p_xy, rest, c1, c0 = _closed_form_masses(a1, a0, m1, m0, score, delta)
    if rest <= 0.0:
        return 0.0
    if c1 <= 0.0 or c0 <= 0.0:
        return math.inf
    shift = a1 / p_xy - c1 / rest
    # each factor near 1 before the product with P(x, y): no underflow where P(x, y) is tiny
    chi2 = (shift * (rest / c1)) * (shift * (rest / c0))
    return p_xy * chi2 * (1.0 + 1e-9) + 1e-13 * p_xy + 1e-300


@njit(cache=True, inline="always")
def _front_best_at(front_p, front_best, front_len, d, p_xy) -> float:
    """The best score of the kept points of front ``d`` more probable (beyond the relative
    1e-9 tie) than ``p_xy`` (-1 when none): the front is sorted by decreasing probability and
    ``front_best`` is the running maximum of its scores, so one binary search decides. Non-
    increasing in ``p_xy``."""
    left = 0
    right = front_len[d]
    limit = p_xy * (1.0 + 1e-9)
    while left < right:
        mid = (left + right) // 2
        if front_p[d, mid] > limit:
            left = mid + 1
        else:
            right = mid
    return front_best[d, left - 1] if left > 0 else -1.0


@njit(cache=True, inline="always")
def _front_dominates(front_p, front_best, front_len, d, p_xy, mag) -> bool:
    """Whether a kept point of front ``d`` strictly dominates (beyond the relative 1e-9 tie)
    a point ``(P(x, y), |Δ|) = (p_xy, mag)``. Monotone: a point that is dominated stays so
    with a smaller ``p_xy`` or ``mag``."""
    return _front_best_at(front_p, front_best, front_len, d, p_xy) > mag * (1.0 + 1e-9)


@njit(cache=True)
def score_leaves(leaves, combos, thresholds, totals, top, div, pareto, listing, bits_out):
    """Score every sensitive combination of ``n_leaves`` leaves and fold into the
    accumulators (each enabled by its arrays having entries; see
    :func:`pcfair.patterns.lattice.LatticeQuery`).

    The state comes in bundles (tuples, unpacked below): ``leaves = (leaf_ext, leaf_index,
    n_leaves, leaf_local)``; ``combos = (ext_size, combo_xy, combo_y, combo_off,
    cell_combos, mass_ptr, mass_idx, combo_loff, cond, prob)``; ``thresholds = (deltas,
    atol, min_support, p_floor)``; ``totals = (counts, rare, defined, best, best_idx)``; ``top =
    (top_vals, top_idx, top_pay, top_sizes)``; ``div = (div_vals, div_idx, div_pay,
    div_sizes, div_floor)``; ``pareto = (pareto_on, front_p, front_best, front_len, surv_p,
    surv_a, surv_s, surv_idx, surv_len)``; ``listing = (list_on, list_idx, list_score,
    list_p, list_div, list_len)``.

    ``combo_xy``/``combo_y``: ext-table index of ``x y`` and of ``y`` for each combination
    with a non-empty ``x``; ``combo_off`` its part of the global lattice index; ``mass_ptr``/
    ``mass_idx`` the ext cells whose masses sum to ``P(·, y, ¬x)`` (the disjoint events of
    :func:`pcfair.patterns.scores.divergence_masses`). The heaps and the Pareto candidates
    carry each pattern's signed score (``*_pay``, ``surv_s``) so that a pattern is reported
    with the very numbers that selected it. ``defined[0]`` counts the defined
    patterns (``P(x, y) > 0``). Patterns with ``P(x, y) < min_support`` are set aside:
    counted in ``rare`` (per δ) where they discriminate, and otherwise treated as undefined.
    ``cell_combos[e]`` is the number of combinations whose
    ``x y`` cell is ``e``, ``cond``/``prob`` scratch arrays of ``ext_size``. A cell whose
    mass is below ``p_floor`` (0: none; see :func:`pcfair.patterns.lattice.probability_floor`)
    is not scored: its conditional is NaN, so every pattern ``(x, y)`` whose ``x y`` cell it is
    (and every one whose ``y`` cell it is: ``P(x, y) ≤ P(y)``) is left out like an undefined
    one, from every count, heap, front, listing and bitmap word.

    Per leaf, the conditionals ``P(d | e)`` of its cells are computed once; every ``|Δ|`` of
    the leaf is a difference of two of them, so a leaf whose conditionals span at most
    ``min(δ) + atol`` and at most the best ``|Δ|`` so far holds no pattern to count, rank
    or list and is skipped (not when the summaries' bitmap is written); likewise the
    patterns of a leaf are offered to the heaps, fronts and listing, and to the best, only
    when its largest ``|Δ|`` exceeds their threshold, and to the divergence heaps and the
    fronts only when the leaf's mass ``P(y_n)`` (≥ every ``P(x, y)`` of the leaf) and its
    largest ``|Δ|`` pass the per-pattern tests (both are monotone in ``P(x, y)`` and ``|Δ|``,
    so the leaf-level test never drops a pattern the per-pattern one keeps).

    ``div_floor[d]`` (0: off) is a divergence known to be reached by ``k_div`` patterns of
    other chunks at ``deltas[d]``: a pattern below it cannot be among the best of the whole
    lattice and is not offered (ties with it are: the merge breaks them by index).

    ``bits_out`` (empty: off) is the chunk's bitmap for the summaries
    (:func:`pcfair.patterns.summaries.extension_summaries`): the word of each pattern with support,
    at ``leaf_local[leaf] + combo_loff[c]``, gets bit ``d`` when it discriminates at
    ``deltas[d]`` (the very comparison that counts it) and bit ``len(deltas)`` (defined).
    """
    leaf_ext, leaf_index, n_leaves, leaf_local = leaves
    (ext_size, combo_xy, combo_y, combo_off, cell_combos, mass_ptr, mass_idx, combo_loff,
     cond, prob) = combos
    deltas, atol, min_support, p_floor = thresholds
    counts, rare, defined, best, best_idx = totals
    top_vals, top_idx, top_pay, top_sizes = top
    div_vals, div_idx, div_pay, div_sizes, div_floor = div
    pareto_on, front_p, front_best, front_len, surv_p, surv_a, surv_s, surv_idx, surv_len = pareto
    list_on, list_idx, list_score, list_p, list_div, list_len = listing
    n_d = len(deltas)
    k_top = top_vals.shape[1]
    k_div = div_vals.shape[1]
    lo_delta = deltas[0]
    for d in range(1, n_d):
        if deltas[d] < lo_delta:
            lo_delta = deltas[d]
    writing = bits_out.shape[0] > 0
    valid_bit = 1 << n_d
    n_c = len(combo_xy)
    mags = np.empty(n_c)
    # unsigned copies of the cells for the pass over every combination: indexing with them
    # skips the negative-index wrap-around (about 1.6× faster)
    u_xy = combo_xy.astype(np.uint64)
    u_y = combo_y.astype(np.uint64)
    thresholds = deltas + atol
    front_floor = np.empty(n_d)
    kl_cap = np.empty(n_d)  # the largest KL(q ‖ δ) or KL(q ‖ 1 − δ) over q ∈ [0, 1]
    for d in range(n_d):
        lo_c = min(deltas[d], 1.0 - deltas[d])
        kl_cap[d] = -math.log(lo_c) if lo_c > 0.0 else math.inf
    lo_thr = lo_delta + atol
    best_val = best[0]
    n_defined = 0
    slow_on = k_top > 0 or k_div > 0 or pareto_on or list_on
    for leaf in range(n_leaves):
        t = leaf_ext[leaf]
        base = leaf_index[leaf]
        lo = 2.0
        hi = -1.0
        leaf_mass = 0.0  # P(y_n), the largest P(x, y) of the leaf (its cells are sub-events)
        for e in range(ext_size):
            prob[e] = t[2 * e] + t[2 * e + 1]
            cond[e] = _cond(t, e) if not prob[e] < p_floor else np.nan
            leaf_mass = max(leaf_mass, prob[e])
        for e in range(ext_size):
            q = cond[e]  # NaN when undefined: every comparison with it is false
            if q == q:
                n_defined += cell_combos[e]
                lo = min(lo, q)
                hi = max(hi, q)
        if not writing and hi - lo <= lo_thr and hi - lo <= best_val:
            continue  # no |Δ| of this leaf exceeds δ or the best so far
        # simple passes first (gathers, compares, sums), the rare patterns after
        n_above = 0
        top = 0.0  # the leaf's largest |Δ| (at least that of every pattern with support)
        for c in range(n_c):
            m = abs(cond[u_xy[c]] - cond[u_y[c]])
            mags[c] = m
            n_above += m > thresholds[0]
            if m > top:
                top = m
        counts[0] += n_above
        if min_support > 0.0:  # set aside the patterns that describe too few
            for c in range(n_c):
                if prob[combo_xy[c]] < min_support and mags[c] == mags[c]:
                    for d in range(n_d):
                        if mags[c] > thresholds[d]:
                            rare[d] += 1
                            if d == 0:
                                counts[0] -= 1
                    mags[c] = np.nan
        for d in range(1, n_d):
            thr = thresholds[d]
            n_above = 0
            for c in range(n_c):
                n_above += mags[c] > thr
            counts[d] += n_above
        if writing:  # the word of every pattern with support
            local = leaf_local[leaf]
            for c in range(n_c):
                mag = mags[c]
                if mag == mag:
                    word = valid_bit
                    for d in range(n_d):
                        if mag > thresholds[d]:
                            word |= 1 << d
                    bits_out[local + combo_loff[c]] = word
        if top > best_val:
            for c in range(n_c):
                if mags[c] > best_val:
                    best_val = mags[c]
                    best_idx[0] = base + combo_off[c]
        if not slow_on:
            continue
        # whether the leaf's patterns can enter the divergence heaps or the fronts at all: the
        # per-pattern tests below, with P(x, y) raised to the leaf's mass and |Δ| to its
        # largest (each test is monotone in both, so a leaf that fails it has no pattern that
        # passes it)
        need_div = False
        for d in range(n_d if k_div > 0 else 0):
            cap = leaf_mass * kl_cap[d] * (1.0 + 1e-9)
            if top > thresholds[d] and not cap < div_floor[d] and (
                    div_sizes[d] < k_div or cap > div_vals[d, 0]):
                need_div = True
        # per δ, the front's best above the leaf's mass: a pattern of the leaf scoring below
        # it is dominated (its P(x, y) is at most the mass, and _front_best_at is
        # non-increasing), which spares most patterns the binary search
        need_front = False
        for d in range(n_d if pareto_on else 0):
            floor = _front_best_at(front_p, front_best, front_len, d, leaf_mass)
            front_floor[d] = floor
            if top > thresholds[d] and not floor > top * (1.0 + 1e-9):
                need_front = True
        # the patterns that may enter a heap, a front or the listing
        slow_thr = lo_thr
        if not (need_div or need_front or list_on):
            if k_top == 0:
                continue
            if top_sizes[0] == k_top and top_vals[0, 0] > slow_thr:
                slow_thr = top_vals[0, 0]
        if top <= slow_thr:
            continue
        for c in range(n_c):
            mag = mags[c]
            if not mag > slow_thr:
                continue
            ixy = combo_xy[c]
            p_xy = prob[ixy]
            q = cond[ixy]
            score = q - cond[combo_y[c]]
            index = base + combo_off[c]
            a1 = t[2 * ixy]
            a0 = t[2 * ixy + 1]
            if k_top > 0 and (top_sizes[0] < k_top or mag > top_vals[0, 0]):
                # heap np.int64(0), not the literal 0: the divergence heaps' specialisation
                _heap_offer(top_vals, top_idx, top_pay, top_sizes, np.int64(0), mag, index,
                            score)
            if need_div:
                have_rest = False
                m1 = m0 = 0.0
                for d in range(n_d):
                    if not mag > deltas[d] + atol:
                        continue
                    # cheap sound bounds first (no logarithm): the divergence is P(x, y)·KL(q ‖ q')
                    # with δ ≤ q' ≤ q when Δ > δ (mirrored when Δ < −δ), so at most
                    # P(x, y)·KL(q ‖ δ) ≤ P(x, y)·kl_cap[d]; then the χ² bound of
                    # _divergence_chi2
                    full = div_sizes[d] == k_div
                    if full or div_floor[d] > 0.0:
                        low = div_vals[d, 0] if full else -1.0
                        ub = p_xy * kl_cap[d] * (1.0 + 1e-9)
                        if ub <= low or ub < div_floor[d]:
                            continue
                        if not have_rest:
                            m1, m0 = _rest_masses(t, mass_ptr, mass_idx, c)
                            have_rest = True
                        ub = _divergence_chi2(a1, a0, m1, m0, score, deltas[d])
                        if ub <= low or ub < div_floor[d]:
                            continue
                    if not have_rest:
                        m1, m0 = _rest_masses(t, mass_ptr, mass_idx, c)
                        have_rest = True
                    dv = _divergence(a1, a0, m1, m0, score, deltas[d])
                    if not dv < div_floor[d]:
                        _heap_offer(div_vals, div_idx, div_pay, div_sizes, d, dv, index, score)
            if need_front:
                for d in range(n_d):
                    if not mag > deltas[d] + atol:
                        continue
                    if front_floor[d] > mag * (1.0 + 1e-9) or \
                            _front_dominates(front_p, front_best, front_len, d, p_xy, mag):
                        continue
                    s = surv_len[d]
                    surv_p[d, s] = p_xy
                    surv_a[d, s] = mag
                    surv_s[d, s] = score
                    surv_idx[d, s] = index
                    surv_len[d] = s + 1
            if list_on and mag > deltas[0] + atol:
                m1, m0 = _rest_masses(t, mass_ptr, mass_idx, c)
                s = list_len[0]
                list_idx[s] = index
                list_score[s] = score
                list_p[s] = p_xy
                list_div[s] = _divergence(a1, a0, m1, m0, score, deltas[0])
                list_len[0] = s + 1
    best[0] = best_val
    defined[0] += n_defined


@njit(cache=True)
def pick_scores(leaf_ext, leaf_index, n_leaves, combo_xy, combo_y, combo_off, pick_keys,
                pick_idx, pick_out):
    """Write the signed ``Δ`` of the wanted lattice points among ``n_leaves`` leaves:
    ``pick_idx`` (sorted global indices), ``pick_keys`` (sorted, unique: their indices with the
    sensitive part removed, i.e. their leaves' ``leaf_index``); ``pick_out[i]`` receives the
    score of ``pick_idx[i]``, with the arithmetic of :func:`score_leaves` (bit-identical to
    the score that the scan compared with ``δ``)."""
    n_c = len(combo_xy)
    for leaf in range(n_leaves):
        base = leaf_index[leaf]
        k = np.searchsorted(pick_keys, base)
        if k == len(pick_keys) or pick_keys[k] != base:
            continue
        t = leaf_ext[leaf]
        for c in range(n_c):
            index = base + combo_off[c]
            i = np.searchsorted(pick_idx, index)
            if i < len(pick_idx) and pick_idx[i] == index:
                pick_out[i] = _cond(t, combo_xy[c]) - _cond(t, combo_y[c])


# ------------------------------------------------------------------- summaries over bitmaps
@njit(cache=True)
def seed_closure(words, n_d, bad):
    """Fill the closure field (bits ``n_d + 1 .. 2 n_d``) of every word from its own bits:
    the discriminating bits (``bad`` false) or the defined-but-not-discriminating bits
    (``bad`` true)."""
    dmask = (1 << n_d) - 1
    vbit = 1 << n_d
    for i in range(len(words)):
        w = words[i] & (dmask | vbit)
        disc = w & dmask
        if bad:
            field = (disc ^ dmask) if w & vbit else 0
        else:
            field = disc
        words[i] = w | (field << (n_d + 1))


@njit(cache=True)
def or_zeta_axis(words, outer, n, inner, cmask):
    """One axis of the up-closure: ``words`` seen as ``(outer, n, inner)``; the absent state
    (0) of the axis gets the OR of the closure bits (``cmask``, of the words' type) of every
    state of the axis (each value state is above the absent one only)."""
    if inner == 1:  # the last axis: short groups, one accumulator
        for o in range(outer):
            base = o * n
            acc = 0
            for s in range(1, n):
                acc |= words[base + s]
            words[base] |= acc & cmask
        return
    for o in range(outer):
        base = o * n * inner
        dst = words[base:base + inner]
        for s in range(1, n):
            src = words[base + s * inner:base + (s + 1) * inner]
            for i in range(inner):
                dst[i] = dst[i] | (src[i] & cmask)


@njit(cache=True)
def _record(m, i, n_d, counts, collect, out, found):
    """Count point ``i`` for every δ whose bit is set in ``m``; write it to ``out`` when that
    δ is ``collect``. Returns the new number written."""
    for d in range(n_d):
        if (m >> d) & 1:
            counts[d] += 1
            if d == collect:
                out[found] = i
                found += 1
    return found


@njit(cache=True)
def maximal_pass(words, dims, strides, n_d, counts, collect, out):
    """Maximal points, the closure field holding ``U``: per δ ``d``, a word with bit ``d``
    (discriminating), some absent axis (not complete) and no one-step extension whose ``U``
    has bit ``d``. Counted in ``counts[d]``; those of δ ``collect`` (≥ 0) written to ``out``
    in index order. Returns the number written."""
    n_axes = len(dims)
    dmask = (1 << n_d) - 1
    sh = n_d + 1
    st = np.zeros(n_axes, np.int64)
    n_absent = n_axes
    found = 0
    for i in range(len(words)):
        disc = words[i] & dmask
        if disc != 0 and n_absent > 0:
            ext = 0
            for a in range(n_axes):
                if st[a] != 0:
                    continue
                for s in range(1, dims[a]):
                    ext |= (words[i + s * strides[a]] >> sh) & dmask
                if disc & ext == disc:
                    break
            found = _record(disc & (ext ^ dmask), i, n_d, counts, collect, out, found)
        a = n_axes - 1  # the next point's states (C order)
        while a >= 0:
            if st[a] == 0:
                n_absent -= 1
            st[a] += 1
            if st[a] < dims[a]:
                break
            st[a] = 0
            n_absent += 1
            a -= 1
    return found


@njit(cache=True)
def minimal_pass(words, dims, strides, cards, n_d, counts, collect, out):
    """Minimal points, the closure field holding ``B`` (some defined extension-or-self outside
    Σ): per δ ``d``, ``A = disc ∧ ¬B`` has bit ``d`` and no one-step contraction that keeps
    ``x`` non-empty has it. ``cards[a]``: values of axis ``a`` (states above it are in
    ``x``). Counted and collected as in :func:`maximal_pass`."""
    n_axes = len(dims)
    dmask = (1 << n_d) - 1
    sh = n_d + 1
    st = np.zeros(n_axes, np.int64)
    n_x = 0
    found = 0
    for i in range(len(words)):
        w = words[i]
        up = (w & dmask) & (((w >> sh) & dmask) ^ dmask)
        if up != 0:
            blocked = 0
            for a in range(n_axes):
                s = st[a]
                if s == 0 or (s > cards[a] and n_x == 1):
                    continue  # no contraction on this axis, or it would empty x
                wc = words[i - s * strides[a]]
                blocked |= (wc & dmask) & (((wc >> sh) & dmask) ^ dmask)
                if up & blocked == up:
                    break
            found = _record(up & (blocked ^ dmask), i, n_d, counts, collect, out, found)
        a = n_axes - 1
        while a >= 0:
            if st[a] > cards[a]:
                n_x -= 1
            st[a] += 1
            if st[a] < dims[a]:
                if st[a] > cards[a]:
                    n_x += 1
                break
            st[a] = 0
            a -= 1
    return found

"""Numba kernels of the streaming lattice engine (see :mod:`pcfair.patterns.lattice`).

Two kernels: :func:`next_leaves` walks the non-sensitive part of the pattern lattice depth
first over a chunk's table of joint probabilities, producing one small table per
non-sensitive assignment ``y_n`` (a *leaf*: the joint of the sensitive variables and the
decision given ``y_n``, closed over the sensitive axes); :func:`score_leaves` scores every
sensitive combination of a batch of leaves and folds the scores into the query's
accumulators. Both work on flat arrays, passed in the named records below; the walk is
resumable (its stack lives in arrays the caller keeps), so a chunk is processed in bounded
batches.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

Walk = namedtuple("Walk", "work level_base scratch cards strides local_strides leaf_size st pos")
Walk.__doc__ = """The depth-first walk of one chunk (:func:`next_leaves`).

``work`` holds the chunk's table, already closed over the sensitive axes (rows over the
remaining non-sensitive axes, then one block of ``leaf_size`` entries: every sensitive state
combination with ``y`` only, × the decision, fav then ¬fav) at offset 0 and one scratch region
per level, level ``j``'s at ``scratch[j]``. Level ``j`` data starts at ``level_base[j]``; axis
``j`` has ``cards[j]`` values, stride ``strides[j]`` in the global lattice index and
``local_strides[j]`` in the chunk's own sub-grid (where the summaries' bitmap of the chunk is
written), and lattice state ``st[j]`` (0 absent, ``k + 1`` value ``k``). ``pos[0]`` is the
current depth (−1 when the walk is over), ``pos[1]`` the index part of the chunk's prefix.
"""

Leaves = namedtuple("Leaves", "ext index local")
Leaves.__doc__ = """A batch of leaves: row ``i`` of ``ext`` is leaf ``i``'s table (``leaf_size``
entries, see :class:`Walk`), ``index[i]`` its part of the global lattice index (the sensitive
states absent) and ``local[i]`` its index in the chunk's sub-grid."""

Combos = namedtuple("Combos", "ext_size xy y off cell_combos mass_ptr mass_idx local_off "
                              "cond prob")
Combos.__doc__ = """The sensitive combinations with a non-empty ``x`` (one leaf's patterns).

``ext_size`` cells per leaf (each sensitive variable absent or a value); ``xy``/``y``: the
ext-table cell of ``x y`` and of ``y`` of each combination; ``off`` its part of the global
lattice index and ``local_off`` of the chunk's sub-grid (empty where no bitmap is written);
``mass_ptr``/``mass_idx`` the cells ``mass_idx[mass_ptr[c]:mass_ptr[c + 1]]`` whose masses
sum to ``P(·, y, ¬x)`` (the disjoint events of
:func:`pcfair.patterns.scores.divergence_masses`); ``cell_combos[e]`` the number of
combinations whose ``x y`` cell is ``e``; ``cond``/``prob`` scratch arrays of ``ext_size``
(a leaf's conditionals ``P(d | e)`` and masses ``P(e)``)."""

Thresholds = namedtuple("Thresholds", "deltas atol min_support p_floor div_floor")
Thresholds.__doc__ = """The bars of a scan: a pattern discriminates at ``deltas[d]`` when
``|Δ| > deltas[d] + atol``; one with ``P(x, y) < min_support`` is set aside (counted as
rare where it discriminates, otherwise treated as undefined); a cell whose mass is below
``p_floor`` (0: none; see :func:`pcfair.patterns.lattice.probability_floor`) is not scored.
``div_floor[d]`` (0: off) is a divergence known to be reached by ``k_div`` patterns of other
chunks at ``deltas[d]``: a pattern below it cannot be among the best of the whole lattice
and is not offered to the divergence heap (ties with it are: the merge breaks them by
index)."""

Totals = namedtuple("Totals", "counts rare defined best best_idx")
Totals.__doc__ = """The scan's running totals: ``counts[d]`` and ``rare[d]`` the patterns that
discriminate at ``deltas[d]`` (with support; set aside), ``defined[0]`` the defined patterns
(``P(x, y) > 0``), ``best[0]`` the largest ``|Δ|`` and ``best_idx[0]`` its global index."""

Heaps = namedtuple("Heaps", "vals idx pay sizes")
Heaps.__doc__ = """Min-heaps, one a row, each keeping the largest ``vals.shape[1]`` keys:
``vals`` the keys (``|Δ|`` or a divergence), ``idx`` the global indices, ``pay`` the signed
``Δ`` (a pattern is reported with the very numbers that selected it), ``sizes`` the number of
entries of each heap."""

Pareto = namedtuple("Pareto", "on p best length surv_p surv_a surv_s surv_idx surv_len")
Pareto.__doc__ = """The Pareto fronts per δ (``on``: kept at all). The kept points of front
``d`` are ``p[d, :length[d]]`` (``P(x, y)``, decreasing) with ``best`` the running maximum of
their ``|Δ|``; the candidates the batch adds are ``surv_p``/``surv_a``/``surv_s``/``surv_idx``
(``P(x, y)``, ``|Δ|``, ``Δ``, index), ``surv_len[d]`` of them."""

Listing = namedtuple("Listing", "on idx score p div length")
Listing.__doc__ = """The patterns of the smallest δ (``on``: listed at all): global index,
``Δ``, ``P(x, y)`` and divergence of each, ``length[0]`` of them."""

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
def next_leaves(walk, leaves, max_leaves):
    """Advance the depth-first :class:`Walk` ``walk``; copy up to ``max_leaves`` leaf tables
    (with their global and local indices) into the :class:`Leaves` ``leaves``.

    A value state takes a contiguous block of its level; the absent state sums the blocks of
    every value (the closure over the sensitive axes commutes with these sums).

    Returns the number of leaves written.
    """
    work, level_base, cards, st, pos = walk.work, walk.level_base, walk.cards, walk.st, walk.pos
    leaf_size = walk.leaf_size
    n_axes = len(cards)
    produced = 0
    while produced < max_leaves:
        j = pos[0]
        if j < 0:
            break
        if j == n_axes:  # a leaf
            src = level_base[n_axes]
            _copy(leaves.ext[produced], work[src:src + leaf_size])
            idx = pos[1]
            loc = 0
            for a in range(n_axes):
                idx += st[a] * walk.strides[a]
                loc += st[a] * walk.local_strides[a]
            leaves.index[produced] = idx
            leaves.local[produced] = loc
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
            dst = walk.scratch[j + 1]
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
def _heap_offer(heaps, h, value, index, payload):
    """Offer ``(value, index, payload)`` to heap ``h`` of the :class:`Heaps` ``heaps``; it
    keeps the largest ``heaps.vals.shape[1]`` values."""
    vals, idx, pay, sizes = heaps.vals, heaps.idx, heaps.pay, heaps.sizes
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
def _rest_masses(t, combos, c):
    """``P(d, y, ¬x)`` and ``P(¬d, y, ¬x)`` of combination ``c`` of the :class:`Combos`
    ``combos`` in leaf table ``t``: the sum over the disjoint events of ``¬x``."""
    m1 = 0.0
    m0 = 0.0
    for r in range(combos.mass_ptr[c], combos.mass_ptr[c + 1]):
        cell = combos.mass_idx[r]
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



@njit(cache=True, inline="always")
def _leaf_conditionals(t, combos, p_floor):
    """Fill ``combos.cond`` and ``combos.prob`` from leaf table ``t``: per cell ``e`` its mass
    and ``P(d | e)``, NaN where the mass is below ``p_floor``. Returns the span ``(lo, hi)``
    of the defined conditionals, the leaf's mass ``P(y_n)`` (the largest ``P(x, y)`` of the
    leaf: its cells are sub-events) and its number of defined patterns."""
    cond, prob = combos.cond, combos.prob
    leaf_mass = 0.0
    for e in range(combos.ext_size):
        prob[e] = t[2 * e] + t[2 * e + 1]
        cond[e] = _cond(t, e) if not prob[e] < p_floor else np.nan
        leaf_mass = max(leaf_mass, prob[e])
    lo = 2.0
    hi = -1.0
    n_defined = 0
    for e in range(combos.ext_size):
        q = cond[e]  # NaN when undefined: every comparison with it is false
        if q == q:
            n_defined += combos.cell_combos[e]
            lo = min(lo, q)
            hi = max(hi, q)
    return lo, hi, leaf_mass, n_defined


@njit(cache=True, inline="always")
def _count_leaf(combos, u_xy, u_y, mags, bars, min_support, counts, rare):
    """Write the ``|Δ|`` of every combination of the leaf whose conditionals ``combos.cond``
    holds into ``mags`` and count, per δ, those above ``bars`` (``deltas + atol``) into
    ``counts``, or into ``rare`` where ``P(x, y) < min_support`` (their ``mags`` then NaN:
    treated as undefined from here on). ``u_xy``/``u_y``: ``combos.xy``/``combos.y`` unsigned
    (indexing with them skips the negative-index wrap-around, about 1.6× faster). Returns
    the leaf's largest ``|Δ|`` (at least that of every pattern with support)."""
    cond, prob, combo_xy = combos.cond, combos.prob, combos.xy
    n_c = len(combo_xy)
    n_d = len(bars)
    # simple passes first (gathers, compares, sums), the rare patterns after
    n_above = 0
    peak = 0.0
    for c in range(n_c):
        m = abs(cond[u_xy[c]] - cond[u_y[c]])
        mags[c] = m
        n_above += m > bars[0]
        if m > peak:
            peak = m
    counts[0] += n_above
    if min_support > 0.0:  # set aside the patterns that describe too few
        for c in range(n_c):
            if prob[combo_xy[c]] < min_support and mags[c] == mags[c]:
                for d in range(n_d):
                    if mags[c] > bars[d]:
                        rare[d] += 1
                        if d == 0:
                            counts[0] -= 1
                mags[c] = np.nan
    for d in range(1, n_d):
        thr = bars[d]
        n_above = 0
        for c in range(n_c):
            n_above += mags[c] > thr
        counts[d] += n_above
    return peak


@njit(cache=True, inline="always")
def _write_words(bits_out, local, mags, local_off, bars):
    """The bitmap word of every pattern of the leaf with support (``mags`` not NaN), at
    ``local + local_off[c]``: bit ``d`` where it discriminates at δ ``d`` (``|Δ| > bars[d]``,
    the very comparison that counts it) and bit ``len(bars)`` (defined)."""
    n_d = len(bars)
    valid_bit = 1 << n_d
    for c in range(len(mags)):
        mag = mags[c]
        if mag == mag:
            word = valid_bit
            for d in range(n_d):
                if mag > bars[d]:
                    word |= 1 << d
            bits_out[local + local_off[c]] = word


@njit(cache=True, inline="always")
def _needs_divergence(leaf_mass, peak, bars, kl_cap, div_floor, div):
    """Whether a pattern of a leaf of mass ``leaf_mass`` and largest ``|Δ|`` ``peak`` may enter
    a divergence heap: the per-pattern tests of :func:`_offer_divergences` with ``P(x, y)``
    raised to the leaf's mass and ``|Δ|`` to its largest (each test is monotone in both, so a
    leaf that fails it has no pattern that passes it)."""
    k_div = div.vals.shape[1]
    need = False
    for d in range(len(bars) if k_div > 0 else 0):
        cap = leaf_mass * kl_cap[d] * (1.0 + 1e-9)
        if peak > bars[d] and not cap < div_floor[d] and (
                div.sizes[d] < k_div or cap > div.vals[d, 0]):
            need = True
    return need


@njit(cache=True, inline="always")
def _needs_front(leaf_mass, peak, bars, pareto, front_floor):
    """Whether a pattern of the leaf may enter a front, with ``front_floor[d]`` set to the
    front's best above the leaf's mass: a pattern of the leaf scoring below it is dominated
    (its ``P(x, y)`` is at most the mass, and :func:`_front_best_at` is non-increasing),
    which spares most patterns the binary search."""
    need = False
    for d in range(len(bars) if pareto.on else 0):
        floor = _front_best_at(pareto.p, pareto.best, pareto.length, d, leaf_mass)
        front_floor[d] = floor
        if peak > bars[d] and not floor > peak * (1.0 + 1e-9):
            need = True
    return need


@njit(cache=True, inline="always")
def _offer_divergences(t, c, mag, score, index, kl_cap, combos, thresholds, div):
    """Offer pattern ``c`` of leaf table ``t`` (``|Δ|`` ``mag``, signed ``score``, global
    ``index``) to the divergence heap of every δ it discriminates at. Cheap sound bounds
    first (no logarithm): the divergence is ``P(x, y)·KL(q ‖ q')`` with ``δ ≤ q' ≤ q`` when
    ``Δ > δ`` (mirrored when ``Δ < −δ``), so at most ``P(x, y)·KL(q ‖ δ) ≤
    P(x, y)·kl_cap[d]`` (``kl_cap[d]``: the largest ``KL(q ‖ δ)`` or ``KL(q ‖ 1 − δ)`` over
    ``q``); then the χ² bound of :func:`_divergence_chi2`."""
    deltas, atol, div_floor = thresholds.deltas, thresholds.atol, thresholds.div_floor
    k_div = div.vals.shape[1]
    ixy = combos.xy[c]
    p_xy = combos.prob[ixy]
    a1 = t[2 * ixy]
    a0 = t[2 * ixy + 1]
    have_rest = False
    m1 = m0 = 0.0
    for d in range(len(deltas)):
        if not mag > deltas[d] + atol:
            continue
        full = div.sizes[d] == k_div
        if full or div_floor[d] > 0.0:
            low = div.vals[d, 0] if full else -1.0
            ub = p_xy * kl_cap[d] * (1.0 + 1e-9)
            if ub <= low or ub < div_floor[d]:
                continue
            if not have_rest:
                m1, m0 = _rest_masses(t, combos, c)
                have_rest = True
            ub = _divergence_chi2(a1, a0, m1, m0, score, deltas[d])
            if ub <= low or ub < div_floor[d]:
                continue
        if not have_rest:
            m1, m0 = _rest_masses(t, combos, c)
            have_rest = True
        dv = _divergence(a1, a0, m1, m0, score, deltas[d])
        if not dv < div_floor[d]:
            _heap_offer(div, d, dv, index, score)


@njit(cache=True, inline="always")
def _offer_fronts(pareto, front_floor, thresholds, p_xy, mag, score, index):
    """Add the pattern ``(P(x, y), |Δ|) = (p_xy, mag)`` (signed ``score``, global ``index``)
    to the candidates of every front whose δ it discriminates at and whose kept points
    (``front_floor``: see :func:`_needs_front`) do not strictly dominate it."""
    deltas, atol = thresholds.deltas, thresholds.atol
    for d in range(len(deltas)):
        if not mag > deltas[d] + atol:
            continue
        if front_floor[d] > mag * (1.0 + 1e-9) or \
                _front_dominates(pareto.p, pareto.best, pareto.length, d, p_xy, mag):
            continue
        s = pareto.surv_len[d]
        pareto.surv_p[d, s] = p_xy
        pareto.surv_a[d, s] = mag
        pareto.surv_s[d, s] = score
        pareto.surv_idx[d, s] = index
        pareto.surv_len[d] = s + 1


@njit(cache=True, inline="always")
def _list_pattern(listing, t, c, combos, score, index, delta):
    """Append pattern ``c`` of leaf table ``t`` (signed ``score``, global ``index``) to the
    :class:`Listing` ``listing``, with its divergence at ``delta``."""
    m1, m0 = _rest_masses(t, combos, c)
    ixy = combos.xy[c]
    s = listing.length[0]
    listing.idx[s] = index
    listing.score[s] = score
    listing.p[s] = combos.prob[ixy]
    listing.div[s] = _divergence(t[2 * ixy], t[2 * ixy + 1], m1, m0, score, delta)
    listing.length[0] = s + 1


@njit(cache=True)
def score_leaves(leaves, n_leaves, combos, thresholds, totals, top, div, pareto, listing,
                 bits_out):
    """Score every sensitive combination of the first ``n_leaves`` of the :class:`Leaves`
    ``leaves`` and fold into the accumulators, each enabled by its arrays having entries
    (see :class:`pcfair.patterns.lattice.LatticeQuery`): the :class:`Totals` ``totals``, the
    top ``|Δ|`` heap ``top`` and the per-δ divergence heaps ``div`` (:class:`Heaps`), the
    :class:`Pareto` candidates ``pareto``, the :class:`Listing` ``listing``, under the
    :class:`Thresholds` ``thresholds``; ``combos`` (:class:`Combos`) are a leaf's patterns.
    A cell whose mass is below ``thresholds.p_floor`` is not scored: its conditional is NaN,
    so every pattern ``(x, y)`` whose ``x y`` cell it is (and every one whose ``y`` cell it
    is: ``P(x, y) ≤ P(y)``) is left out like an undefined one, from every count, heap, front,
    listing and bitmap word.

    Per leaf, the conditionals ``P(d | e)`` of its cells are computed once; every ``|Δ|`` of
    the leaf is a difference of two of them, so a leaf whose conditionals span at most
    ``min(δ) + atol`` and at most the best ``|Δ|`` so far holds no pattern to count, rank
    or list and is skipped (not when the summaries' bitmap is written); likewise the
    patterns of a leaf are offered to the heaps, fronts and listing, and to the best, only
    when its largest ``|Δ|`` exceeds their threshold, and to the divergence heaps and the
    fronts only when the leaf's mass ``P(y_n)`` (≥ every ``P(x, y)`` of the leaf) and its
    largest ``|Δ|`` pass the per-pattern tests (both are monotone in ``P(x, y)`` and ``|Δ|``,
    so the leaf-level test never drops a pattern the per-pattern one keeps).

    ``bits_out`` (empty: off) is the chunk's bitmap for the summaries
    (:func:`pcfair.patterns.summaries.extension_summaries`): see :func:`_write_words`.
    """
    deltas = thresholds.deltas
    n_d = len(deltas)
    k_top = top.vals.shape[1]
    k_div = div.vals.shape[1]
    writing = bits_out.shape[0] > 0
    n_c = len(combos.xy)
    mags = np.empty(n_c)
    u_xy = combos.xy.astype(np.uint64)
    u_y = combos.y.astype(np.uint64)
    bars = deltas + thresholds.atol
    front_floor = np.empty(n_d)
    kl_cap = np.empty(n_d)  # the largest KL(q ‖ δ) or KL(q ‖ 1 − δ) over q ∈ [0, 1]
    for d in range(n_d):
        lo_c = min(deltas[d], 1.0 - deltas[d])
        kl_cap[d] = -math.log(lo_c) if lo_c > 0.0 else math.inf
    lo_thr = deltas[0]  # the smallest threshold (a loop: ``ndarray.min`` compiles for 0.6 s)
    for d in range(1, n_d):
        lo_thr = min(lo_thr, deltas[d])
    lo_thr += thresholds.atol
    best_val = totals.best[0]
    n_defined = 0
    slow_on = k_top > 0 or k_div > 0 or pareto.on or listing.on
    for leaf in range(n_leaves):
        t = leaves.ext[leaf]
        base = leaves.index[leaf]
        lo, hi, leaf_mass, n_leaf = _leaf_conditionals(t, combos, thresholds.p_floor)
        n_defined += n_leaf
        if not writing and hi - lo <= lo_thr and hi - lo <= best_val:
            continue  # no |Δ| of this leaf exceeds δ or the best so far
        peak = _count_leaf(combos, u_xy, u_y, mags, bars, thresholds.min_support,
                           totals.counts, totals.rare)
        if writing:
            _write_words(bits_out, leaves.local[leaf], mags, combos.local_off, bars)
        if peak > best_val:
            for c in range(n_c):
                if mags[c] > best_val:
                    best_val = mags[c]
                    totals.best_idx[0] = base + combos.off[c]
        if not slow_on:
            continue
        need_div = _needs_divergence(leaf_mass, peak, bars, kl_cap, thresholds.div_floor, div)
        need_front = _needs_front(leaf_mass, peak, bars, pareto, front_floor)
        # the patterns that may enter a heap, a front or the listing
        slow_thr = lo_thr
        if not (need_div or need_front or listing.on):
            if k_top == 0:
                continue
            if top.sizes[0] == k_top and top.vals[0, 0] > slow_thr:
                slow_thr = top.vals[0, 0]
        if peak <= slow_thr:
            continue
        for c in range(n_c):
            mag = mags[c]
            if not mag > slow_thr:
                continue
            ixy = combos.xy[c]
            score = combos.cond[ixy] - combos.cond[combos.y[c]]
            index = base + combos.off[c]
            if k_top > 0 and (top.sizes[0] < k_top or mag > top.vals[0, 0]):
                # heap np.int64(0), not the literal 0: the divergence heaps' specialisation
                _heap_offer(top, np.int64(0), mag, index, score)
            if need_div:
                _offer_divergences(t, c, mag, score, index, kl_cap, combos, thresholds, div)
            if need_front:
                _offer_fronts(pareto, front_floor, thresholds, combos.prob[ixy], mag, score,
                              index)
            if listing.on and mag > deltas[0] + thresholds.atol:
                _list_pattern(listing, t, c, combos, score, index, deltas[0])
    totals.best[0] = best_val
    totals.defined[0] += n_defined


@njit(cache=True)
def pick_scores(leaves, n_leaves, combos, pick_keys, pick_idx, pick_out):
    """Write the signed ``Δ`` of the wanted lattice points among the first ``n_leaves`` of
    ``leaves`` (:class:`Leaves`; ``combos``: :class:`Combos`): ``pick_idx`` (sorted global
    indices), ``pick_keys`` (sorted, unique: their indices with the sensitive part removed,
    i.e. their leaves' ``index``); ``pick_out[i]`` receives the score of ``pick_idx[i]``, with
    the arithmetic of :func:`score_leaves` (bit-identical to the score that the scan compared
    with ``δ``)."""
    n_c = len(combos.xy)
    for leaf in range(n_leaves):
        base = leaves.index[leaf]
        k = np.searchsorted(pick_keys, base)
        if k == len(pick_keys) or pick_keys[k] != base:
            continue
        t = leaves.ext[leaf]
        for c in range(n_c):
            index = base + combos.off[c]
            i = np.searchsorted(pick_idx, index)
            if i < len(pick_idx) and pick_idx[i] == index:
                pick_out[i] = _cond(t, combos.xy[c]) - _cond(t, combos.y[c])


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

"""Summaries over the pattern lattice: maximal and minimal patterns by per-axis closures over
a bitmap, and the strict Pareto filter.

The pattern lattice (see :mod:`pcfair.patterns.lattice`, which scores it) has one axis per
feature. A feature with ``k`` values has states ``0`` (absent), ``1..k`` (in ``y`` with value
``s − 1``) and, when sensitive, ``k+1..2k`` (in ``x`` with value ``s − k − 1``).

- maximal and minimal (``pc-certifier.md`` §3): :func:`extension_summaries`, from one small
  word per lattice point (membership of Σ at each threshold, and definedness) that the
  lattice engine's chunks fill; the closures and one-step checks run in numba
  (:mod:`pcfair.patterns._lattice_kernels`);
- Pareto-optimal (strict, Definition 5, with the tie rule of :func:`pareto_mask`): no other
  discriminating pattern has ``|Δ|`` and probability both at least as large;
  :func:`pareto_frame` flags it among a set of points, for :mod:`pcfair.plot`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcfair.patterns import _lattice_kernels as K
from pcfair.patterns._front_kernels import dominated_sorted
from pcfair.patterns.scores import PARETO_RTOL, discriminates

__all__ = ["extension_summaries", "pareto_candidates", "pareto_frame", "pareto_mask",
           "summary_word"]


def summary_word(n_deltas: int) -> np.dtype | None:
    """The word type of the summaries' bitmap for ``n_deltas`` thresholds (``2 n + 1`` bits,
    see :func:`extension_summaries`): uint8 up to 3 thresholds, uint16 up to 7, uint32 up to
    15; None beyond."""
    bits = 2 * n_deltas + 1
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bits <= 8 * np.dtype(dtype).itemsize:
            return np.dtype(dtype)
    return None


def extension_summaries(words: np.ndarray, shape: tuple, cards: tuple, n_deltas: int,
                        kinds=("maximal", "minimal"), collect: int | None = None) -> dict:
    """Maximal and minimal patterns (``pc-certifier.md`` §3) from the summaries' bitmap.

    ``words`` (flat, C order over the lattice ``shape``; ``cards[a]`` values on axis ``a``)
    holds one word per lattice point: bit ``d < n`` when the point is in Σ_d (discriminates at
    the ``d``-th threshold), bit ``n`` when it is defined (``P(x, y) > 0``, with support); bits
    ``n + 1 .. 2n`` are scratch for the closures below (overwritten). Returns, for each kind,
    ``(counts per threshold, indices of threshold collect or None)``.

    The order. ``q ⊒ p`` (``q`` extends ``p`` or is ``p``) when on every axis ``p_a = 0``
    (absent) or ``q_a = p_a``: on each axis the absent state lies below every value state and
    the value states (of ``y`` or of ``x``, different values) are pairwise unrelated; the
    lattice order is the product of these per-axis orders (``x ⊆ x'`` and ``y ⊆ y'`` of the
    spec, and of ``is_extension`` in the test oracle).

    The closures. For a set ``S``, ``up_S(p) = ∃ q ⊒ p: q ∈ S``. On one axis, ``up`` maps
    ``f`` to ``f(0) ∨ ⋁_{s>0} f(s)`` at the absent state and to ``f(s)`` elsewhere
    (:func:`pcfair.patterns._lattice_kernels.or_zeta_axis`). Applying it to the axes one after
    the other gives ``up_S``: by induction, after axes ``1..j`` a point holds the OR over the
    ``q`` with ``q_a ⊒ p_a`` for ``a ≤ j`` and ``q_a = p_a`` for ``a > j``, because the order
    is a product. We compute ``U = up_Σ`` and ``B = up_Bad`` with ``Bad`` = defined and not
    in Σ; ``A = Σ ∧ ¬B`` is then "in Σ, and every defined extension in Σ" (the point itself
    is in Σ, so counting it among the ``q`` of ``B`` changes nothing). Both are monotone:
    ``U`` decreases up the order (``q ⊒ p ⇒ U(q) → U(p)``), and ``A`` holds on every defined
    ``r ⊒ c`` whenever ``A(c)`` (``r``'s extensions are ``c``'s, and ``r`` is one).

    Maximal (:func:`pcfair.patterns._lattice_kernels.maximal_pass`): ``p ∈ Σ``, some axis
    absent, and no one-step extension ``r`` (one absent axis of ``p`` set to a value) with
    ``U(r)``. This is the definition: a strict extension ``q ∈ Σ`` has an axis with
    ``p_a = 0 ≠ q_a``; ``r`` = ``p`` with ``r_a = q_a`` is a one-step extension and ``q ⊒ r``,
    so ``U(r)``; conversely ``U(r)`` gives ``q ⊒ r ⊐ p`` in Σ.

    Minimal (:func:`pcfair.patterns._lattice_kernels.minimal_pass`): ``A(p)`` and no one-step
    contraction ``r`` (one value axis of ``p`` made absent) with ``x_r ≠ ∅`` and ``A(r)``. This
    is the definition (no valid contraction ``c`` with ``A(c)``): given such a ``c ⊏ p``, take
    an axis with ``c_a = 0 ≠ p_a`` and ``r`` = ``p`` with ``r_a = 0``; then ``c ⊑ r ⊏ p``, ``r``
    is valid (``x_r ⊇ x_c ≠ ∅``) and defined (``P(r) ≥ P(p)``: a contraction marginalises, so
    the support threshold holds too), hence ``A(r)`` by monotonicity. The converse is the
    special case ``c = r``.

    Cost: two closures (``len(shape)`` passes each) and two passes over the words, the
    one-step checks only at points in Σ; memory: the words themselves (plus ``collect``'s
    indices).

    Examples
    --------
    >>> import numpy as np
    >>> words = np.zeros(3, np.uint8)  # one sensitive binary feature: absent, x=0, x=1
    >>> words[1:] = [0b11, 0b10]        # x=0 defined and in Σ, x=1 defined only
    >>> out = extension_summaries(words, (3,), (1,), 1, collect=0)
    >>> out["maximal"][1].tolist(), out["minimal"][1].tolist()
    ([], [1])
    """
    shape = tuple(int(n) for n in shape)
    dims = np.array(shape, np.int64)
    strides = np.ones(len(shape), np.int64)
    for a in range(len(shape) - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    cmask = words.dtype.type(((1 << n_deltas) - 1) << (n_deltas + 1))
    axis_cards = np.array(cards, np.int64)
    out = {}
    for kind in kinds:
        K.seed_closure(words, n_deltas, kind == "minimal")
        for a, n in enumerate(shape):
            K.or_zeta_axis(words, int(np.prod(shape[:a], dtype=np.int64)), n,
                           int(strides[a]), cmask)

        def run(counts, target, found):
            if kind == "maximal":
                return K.maximal_pass(words, dims, strides, n_deltas, counts, target, found)
            return K.minimal_pass(words, dims, strides, axis_cards, n_deltas, counts, target,
                                  found)

        counts = np.zeros(n_deltas, np.int64)
        run(counts, -1, np.zeros(0, np.int64))
        indices = None
        if collect is not None:  # a second pass, into exactly the room needed
            indices = np.zeros(int(counts[collect]), np.int64)
            run(np.zeros(n_deltas, np.int64), int(collect), indices)
        out[kind] = (counts, indices)
    return out


def pareto_mask(abs_score: np.ndarray, prob: np.ndarray, member: np.ndarray,
                rtol: float = PARETO_RTOL) -> np.ndarray:
    """Strict Pareto front among ``member`` points (Definition 5).

    Tie rule: two probabilities tie when ``|p − q| ≤ rtol·max(p, q)``, two scores likewise
    (relative, so rare patterns with ``P(x, y) ~ 1e-16`` are compared on their own scale;
    patterns that tie mathematically come out of floating point a few ulps apart, far inside
    ``rtol`` = 1e-9). A point is on the front when every other member has a smaller score or
    a smaller probability, each beyond a tie; so a point is dominated by another at least as
    probable (or tied) with a score at least as large (or tied), and two points that tie on
    both leave the front together.

    Examples
    --------
    >>> import numpy as np
    >>> a, p = np.array([0.3, 0.2, 0.3, 0.5]), np.array([0.1, 0.4, 0.1 + 1e-13, 1e-17])
    >>> pareto_mask(a, p, np.ones(4, bool)).tolist()
    [False, True, False, True]
    """
    out = np.zeros(len(abs_score), bool)
    idx = np.flatnonzero(member)
    if len(idx) == 0:
        return out
    order = np.lexsort((-abs_score[idx], -prob[idx]))  # by probability, then score, decreasing
    a = np.ascontiguousarray(abs_score[idx][order], np.float64)
    p = prob[idx][order]
    # the points at least as probable as point r, ties included: P ≥ P_r·(1 − rtol)
    window_end = np.searchsorted(-p, -(p * (1.0 - rtol)), side="right").astype(np.int64)
    out[idx[order]] = ~dominated_sorted(a, window_end, rtol)
    return out


def pareto_frame(probability, abs_score, delta: float | None = None) -> pd.DataFrame:
    """The points with ``|Δ| > delta`` (all when None) and their strict Pareto front, as
    :func:`pcfair.plot.pareto_front` draws them.

    Parameters
    ----------
    probability, abs_score : array-like of float
        ``P(x, y)`` and ``|Δ|`` of each pattern.
    delta : float, optional
        Threshold: points that do not discriminate at it (:func:`discriminates`) are left out.

    Returns
    -------
    pandas.DataFrame
        Columns ``probability``, ``abs_score`` and ``is_pareto`` (:func:`pareto_mask` among
        the points kept), one row per point kept, in the given order.

    Examples
    --------
    >>> pareto_frame([0.1, 0.4, 0.3, 0.02], [0.27, 0.25, 0.1, 0.03], delta=0.05)
       probability  abs_score  is_pareto
    0          0.1       0.27       True
    1          0.4       0.25       True
    2          0.3       0.10      False
    """
    prob = np.asarray(probability, float)
    score = np.asarray(abs_score, float)
    if delta is not None:
        keep = discriminates(score, delta)
        prob, score = prob[keep], score[keep]
    return pd.DataFrame({"probability": prob, "abs_score": score,
                         "is_pareto": pareto_mask(score, prob, np.ones(len(prob), bool))})


def pareto_candidates(abs_score: np.ndarray, prob: np.ndarray, rtol: float = PARETO_RTOL
                      ) -> np.ndarray:
    """Points that may be on the strict front of any superset: those not *strongly*
    dominated, i.e. with no other point beyond the tie in one coordinate and at least tied in
    the other. Points that only tie with others are kept: under the strict rule two exact
    ties knock each other off the front, so dropping them early would let a third point they
    dominate survive a later merge. :func:`pareto_mask` of the union of the candidates of
    the parts is the front of the whole.

    Examples
    --------
    >>> import numpy as np
    >>> pareto_candidates(np.array([0.3, 0.3, 0.2, 0.1]), np.array([0.5, 0.5, 0.5, 0.6])).tolist()
    [True, True, False, True]
    """
    if len(abs_score) == 0:
        return np.zeros(0, bool)
    order = np.lexsort((-abs_score, -prob))
    a, p = abs_score[order], prob[order]
    best = np.maximum.accumulate(a)
    tied_or_more = np.searchsorted(-p, -(p * (1.0 - rtol)), side="right")  # ≥ 1 (itself)
    more = np.searchsorted(-p, -(p * (1.0 + rtol)), side="left")  # strictly more probable
    strong = best[tied_or_more - 1] > a * (1.0 + rtol)
    strong |= (more > 0) & (best[np.maximum(more - 1, 0)] >= a * (1.0 - rtol))
    out = np.empty(len(a), bool)
    out[order] = ~strong
    return out

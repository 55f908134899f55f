"""Summaries over the pattern lattice: maximal and minimal patterns by per-axis closures, and the
strict Pareto filter.

The pattern lattice (see :mod:`pcfair.patterns.lattice`, which scores it) has one axis per
feature. A feature with ``k`` values has states ``0`` (absent), ``1..k`` (in ``y`` with value
``s − 1``) and, when sensitive, ``k+1..2k`` (in ``x`` with value ``s − k − 1``). Given the masks
of defined and discriminating points:

- ``up_any[s]``: some pattern ``s' ⊒ s`` (extension or ``s`` itself) discriminates;
- ``up_all[s]``: every defined pattern ``s' ⊒ s`` discriminates (patterns with probability
  zero are undefined and do not count);
- maximal: discriminating, not a complete assignment of ``Z``, no discriminating extension;
- minimal (``pc-certifier.md`` §3): ``up_all[s]`` and no valid one-step contraction has
  ``up_all`` (one step suffices because ``up_all`` is monotone);
- Pareto-optimal (strict, Definition 5, with the tie rule of :func:`pareto_mask`): no other
  discriminating pattern has ``|Δ|`` and probability both at least as large.
"""

from __future__ import annotations

import numpy as np

from pcfair.errors import PCFairError
from pcfair.patterns._front_kernels import dominated_sorted
from pcfair.patterns.scores import PARETO_RTOL


class LatticeTooLarge(PCFairError, MemoryError):
    """The lattice engine's memory budget (``max_bytes``) is too small for the request; the
    message says how much is needed."""


def _per_axis(arr: np.ndarray, shape: tuple, reduce) -> np.ndarray:
    """Close ``arr`` over the extension order: at each axis, the absent state (0) combines
    all states of that axis (value states are only above themselves)."""
    a = arr.reshape(shape).copy()
    for axis in range(len(shape)):
        idx = [slice(None)] * len(shape)
        idx[axis] = 0
        a[tuple(idx)] = reduce(a, axis=axis)  # computed before the assignment
    return a


def structure(shape: tuple, cards: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Number of x-variables and completeness of every lattice point (δ-independent)."""
    n_x = np.zeros(shape, np.int8)
    complete = np.ones(shape, bool)
    for axis in range(len(shape)):
        view = [1] * len(shape)
        view[axis] = shape[axis]
        st = np.arange(shape[axis]).reshape(view)
        n_x = n_x + (st > cards[axis])
        complete = complete & (st > 0)
    return n_x, complete


def extension_summaries(valid: np.ndarray, disc: np.ndarray, shape: tuple, cards: tuple,
                        structure_arrays: tuple | None = None) -> dict[str, np.ndarray]:
    """Maximal and minimal masks (flat, C-order over ``shape``) from the masks of defined
    (``valid``) and discriminating (``disc``) lattice points; ``cards`` are the features'
    cardinalities (a state above ``cards[axis]`` puts the feature in ``x``)."""
    defined_ok = disc | ~valid
    up_any = _per_axis(disc, shape, np.any)
    # up_all over defined patterns; invalid points must not make a valid point's set fail,
    # and a valid point's extensions are all valid or undefined (x only grows)
    up_all = _per_axis(defined_ok, shape, np.all) & disc.reshape(shape)
    d = disc.reshape(shape)
    ndim = len(shape)
    n_x, complete = structure_arrays if structure_arrays is not None else structure(shape, cards)

    has_ext = np.zeros(shape, bool)
    minimal = up_all.copy()
    for axis in range(ndim):
        absent = [slice(None)] * ndim
        absent[axis] = 0
        rest = [slice(None)] * ndim
        rest[axis] = slice(1, None)
        absent, rest = tuple(absent), tuple(rest)
        # from its absent state, a discriminating extension along this axis
        has_ext[absent] |= up_any[rest].any(axis=axis)
        # one-step contraction along this axis (only from non-absent states); it must keep
        # x non-empty to be valid
        view = [1] * ndim
        view[axis] = shape[axis] - 1
        in_x = (np.arange(1, shape[axis]) > cards[axis]).reshape(view)
        keeps_x = (n_x[rest] - in_x) > 0
        minimal[rest] &= ~(keeps_x & np.expand_dims(up_all[absent], axis))
    maximal = d & ~has_ext & ~complete
    return {"maximal": maximal.ravel(), "minimal": minimal.ravel()}


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

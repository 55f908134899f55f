"""The dense lattice engine: every discrimination pattern scored by table look-ups.

For a smooth, decomposable circuit whose variables are few enough, the joint over complete
assignments is enumerated once and turned into the table of marginals of *all partial*
assignments (per variable, one extra "absent" index holding the sum over its values). A pattern
``(x, y)`` then needs four look-ups: ``P(d, x, y)``, ``P(x, y)``, ``P(d, y)``, ``P(y)``.

The pattern lattice has one axis per feature. A feature with ``k`` values has states
``0`` (absent), ``1..k`` (in ``y`` with value ``s − 1``) and, when sensitive, ``k+1..2k`` (in
``x`` with value ``s − k − 1``). Summaries are computed on the lattice with per-axis passes:

- ``up_any[s]``: some pattern ``s' ⊒ s`` (extension or ``s`` itself) discriminates;
- ``up_all[s]``: every defined pattern ``s' ⊒ s`` discriminates (patterns with probability
  zero are undefined and do not count);
- maximal: discriminating, not a complete assignment of ``Z``, no discriminating extension;
- minimal (``pc-certifier.md`` §3): ``up_all[s]`` and no valid one-step contraction has
  ``up_all`` (one step suffices because ``up_all`` is monotone);
- Pareto-optimal (strict, Definition 5): no other discriminating pattern has ``|Δ|`` and
  probability both at least as large.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import NumericalError, PCFairError
from pcfair.patterns._front_kernels import dominated_sorted
from pcfair.patterns.scores import (
    PARETO_RTOL,
    DivergenceMasses,
    discriminates,
    divergence_scores,
    log_normalizer,
)


class LatticeTooLarge(PCFairError, MemoryError):
    """The dense engine's tables would not fit the memory budget."""


@dataclass(frozen=True)
class Lattice:
    """Scores of every lattice point (flattened C-order arrays over ``shape``), all of the
    normalised distribution, and the table of partial-assignment marginals they came from."""

    features: tuple[int, ...]
    sensitive: tuple[bool, ...]
    cards: tuple[int, ...]
    shape: tuple[int, ...]
    score: np.ndarray        # Δ (NaN where undefined: x empty or P(x, y) = 0)
    probability: np.ndarray  # P(x, y)
    p_dxy: np.ndarray        # P(d, x, y)
    p_y: np.ndarray          # P(y)
    table: np.ndarray = field(repr=False)  # P of every partial assignment (see extended_marginals)
    maps: tuple = field(repr=False)        # per feature: lattice state -> table index (xy, y)
    decision: tuple = field(repr=False)    # (decision's axis, favourable value)
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def discriminating(self, delta: float) -> np.ndarray:
        """Mask of the discrimination patterns at ``delta`` (:func:`discriminates`)."""
        return self.valid & discriminates(self.abs_score, delta)

    def masses(self, idx: np.ndarray) -> DivergenceMasses:
        """The divergence masses of lattice points ``idx``, read from the table. ``P(·, y, ¬x)``
        is summed over the disjoint events "the ``x`` variables before axis ``j`` hold and
        axis ``j`` takes another value" (as :func:`pcfair.patterns.scores.divergence_masses`
        does with queries): a difference such as ``P(·, y) − P(·, x, y)`` would cancel
        catastrophically when ``x`` holds almost surely given ``y``."""
        states = np.unravel_index(np.asarray(idx, np.int64), self.shape)
        axis, fav = self.decision
        xy = [m[0][s] for m, s in zip(self.maps, states)]
        in_x = [s > k for s, k in zip(states, self.cards)]
        a, m = [], []
        for val in (fav, 1 - fav):
            t = np.take(self.table, val, axis=axis)
            a.append(t[tuple(xy)])
            rest = np.zeros(len(a[-1]))
            for j, k in enumerate(self.cards):
                if not self.sensitive[j] or not in_x[j].any():
                    continue
                # x variables after axis j are absent; y and earlier x variables stay
                base = [np.where(in_x[i], k_i, xy[i]) if i > j else xy[i]
                        for i, k_i in enumerate(self.cards)]
                for other in range(k):
                    cell = list(base)
                    cell[j] = np.full(len(rest), other)
                    got = t[tuple(cell)]
                    rest += np.where(in_x[j] & (xy[j] != other), got, 0.0)
            m.append(rest)
        return DivergenceMasses(a[0], a[1], m[0], m[1])

    @property
    def valid(self) -> np.ndarray:
        """Defined patterns (x non-empty, P(x, y) > 0)."""
        if "valid" not in self.cache:
            self.cache["valid"] = ~np.isnan(self.score)
        return self.cache["valid"]

    @property
    def abs_score(self) -> np.ndarray:
        """|Δ|, 0 where undefined."""
        if "abs_score" not in self.cache:
            self.cache["abs_score"] = np.abs(np.nan_to_num(self.score))
        return self.cache["abs_score"]

    def decode(self, flat_index: int) -> tuple[dict[int, int], dict[int, int]]:
        """``(x, y)`` as ``{variable: value index}`` of lattice point ``flat_index``."""
        states = np.unravel_index(flat_index, self.shape)
        x: dict[int, int] = {}
        y: dict[int, int] = {}
        for v, k, s in zip(self.features, self.cards, states):
            s = int(s)
            if s == 0:
                continue
            if s <= k:
                y[v] = s - 1
            else:
                x[v] = s - k - 1
        return x, y


def lattice_bytes(circuit: Circuit, decision: int, sensitive_mask: np.ndarray) -> int:
    """Bytes the dense engine needs (the largest of its tables, times a working factor)."""
    card = circuit.variables.cardinalities.astype(float)
    joint = float(np.prod(card))
    ext = float(np.prod(card + 1))
    feats = [v for v in range(len(card)) if v != decision]
    lat = float(np.prod([2 * card[v] + 1 if sensitive_mask[v] else card[v] + 1 for v in feats]))
    return int(8 * max(joint, ext, 10 * lat))


def extended_marginals(circuit: Circuit) -> np.ndarray:
    """Table of the normalised P over all partial assignments: axis ``v`` has ``k_v + 1``
    entries, the last one summing over the variable's values. The joint is exponentiated after
    subtracting its log-normaliser, so a circuit with any constant factor gives the table of
    its normalised distribution."""
    card = [int(c) for c in circuit.variables.cardinalities]
    grids = np.indices(card).reshape(len(card), -1).T.astype(np.int32)
    log_joint = circuit.log_marginal(grids)
    with np.errstate(invalid="ignore", over="ignore"):
        log_z = log_normalizer(float(logsumexp(log_joint)))
    ext = np.exp(log_joint - log_z).reshape(card)
    for axis in range(len(card)):
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    return ext


def build_lattice(circuit: Circuit, decision: int, favorable: int, sensitive: list[int],
                  max_bytes: int = 2 << 30) -> Lattice:
    """Score every pattern of ``circuit`` (see the module docstring).

    Raises :class:`pcfair.errors.StructureError` for a circuit whose marginals are not exact
    (not smooth, not decomposable), :class:`LatticeTooLarge` over ``max_bytes``, and
    :class:`pcfair.errors.NumericalError` for a circuit without a finite, positive mass.
    """
    require_tractable_marginals(circuit)
    n = circuit.num_variables
    smask = np.zeros(n, bool)
    smask[sensitive] = True
    need = lattice_bytes(circuit, decision, smask)
    if need > max_bytes:
        raise LatticeTooLarge(
            f"the dense engine needs about {need / 2**30:.1f} GiB for this model, over its "
            f"budget of {max_bytes / 2**30:.1f} GiB; use the branch-and-bound engine")
    ext = extended_marginals(circuit)
    card = [int(c) for c in circuit.variables.cardinalities]
    features = [v for v in range(n) if v != decision]
    # per-feature maps from lattice state to table index (xy and y) and whether it is in x
    xy_maps, y_maps, x_maps = [], [], []
    for v in features:
        k = card[v]
        states = [k] + list(range(k)) + (list(range(k)) if smask[v] else [])
        xy_maps.append(np.array(states))
        y_maps.append(np.array([k] + list(range(k)) + ([k] * k if smask[v] else [])))
        x_maps.append(np.array([False] * (k + 1) + ([True] * k if smask[v] else [])))
    d_axis = decision
    p_d = np.take(ext, favorable, axis=d_axis)
    p_all = np.take(ext, card[d_axis], axis=d_axis)
    ix_xy = np.ix_(*xy_maps)
    ix_y = np.ix_(*y_maps)
    p_dxy = p_d[ix_xy]
    p_xy = p_all[ix_xy]
    p_dy = p_d[ix_y]
    p_y = p_all[ix_y]
    any_x = np.zeros(p_xy.shape, bool)
    for i, xm in enumerate(x_maps):
        shape = [1] * len(features)
        shape[i] = len(xm)
        any_x = any_x | xm.reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.minimum(p_dxy / p_xy, 1.0) - np.minimum(p_dy / p_y, 1.0)
    defined = any_x & (p_xy > 0)
    if np.any(defined & np.isnan(score)):
        raise NumericalError("a pattern with P(x, y) > 0 has an undefined score: the model's "
                             "parameters are not finite")
    score = np.where(defined, score, np.nan)
    return Lattice(tuple(features), tuple(bool(smask[v]) for v in features),
                   tuple(card[v] for v in features), p_xy.shape, score.ravel(),
                   p_xy.ravel(), p_dxy.ravel(), p_y.ravel(), ext,
                   tuple(zip(xy_maps, y_maps)), (d_axis, favorable))


def divergence(lat: Lattice, delta: float, idx: np.ndarray) -> np.ndarray:
    """Divergence score (``pc-certifier.md`` §2) of lattice points ``idx`` (0 where not a
    pattern), from masses read in the table (:meth:`Lattice.masses`)."""
    idx = np.asarray(idx, np.int64)
    return divergence_scores(lat.score[idx], lat.masses(idx), delta)


def _per_axis(arr: np.ndarray, shape: tuple, reduce) -> np.ndarray:
    """Close ``arr`` over the extension order: at each axis, the absent state (0) combines
    all states of that axis (value states are only above themselves)."""
    a = arr.reshape(shape).copy()
    for axis in range(len(shape)):
        idx = [slice(None)] * len(shape)
        idx[axis] = 0
        a[tuple(idx)] = reduce(a, axis=axis)  # computed before the assignment
    return a


def _structure(lat: Lattice) -> tuple[np.ndarray, np.ndarray]:
    """Number of x-variables and completeness of every lattice point (δ-independent)."""
    if "structure" not in lat.cache:
        shape = lat.shape
        n_x = np.zeros(shape, np.int8)
        complete = np.ones(shape, bool)
        for axis in range(len(shape)):
            view = [1] * len(shape)
            view[axis] = shape[axis]
            st = np.arange(shape[axis]).reshape(view)
            n_x = n_x + (st > lat.cards[axis])
            complete = complete & (st > 0)
        lat.cache["structure"] = (n_x, complete)
    return lat.cache["structure"]


def summaries(lat: Lattice, delta: float) -> dict[str, np.ndarray]:
    """Boolean masks over the lattice: ``patterns`` (|Δ| > δ), ``maximal``, ``minimal``,
    ``pareto``."""
    shape = lat.shape
    valid = lat.valid
    disc = lat.discriminating(delta)
    defined_ok = disc | ~valid | (lat.probability <= 0)
    up_any = _per_axis(disc, shape, np.any)
    # up_all over defined patterns; invalid points must not make a valid point's set fail,
    # and a valid point's extensions are all valid or undefined (x only grows)
    up_all = _per_axis(defined_ok, shape, np.all) & disc.reshape(shape)
    d = disc.reshape(shape)
    ndim = len(shape)
    n_x, complete = _structure(lat)

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
        in_x = (np.arange(1, shape[axis]) > lat.cards[axis]).reshape(view)
        keeps_x = (n_x[rest] - in_x) > 0
        minimal[rest] &= ~(keeps_x & np.expand_dims(up_all[absent], axis))
    maximal = d & ~has_ext & ~complete
    return {"patterns": disc, "maximal": maximal.ravel(), "minimal": minimal.ravel(),
            "pareto": pareto_mask(lat.abs_score, lat.probability, disc)}


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

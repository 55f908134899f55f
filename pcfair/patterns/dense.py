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

from pcfair.circuit.circuit import Circuit
from pcfair.errors import PCFairError
from pcfair.patterns.scores import divergence_scores


class LatticeTooLarge(PCFairError, MemoryError):
    """The dense engine's tables would not fit the memory budget."""


@dataclass(frozen=True)
class Lattice:
    """Scores of every lattice point (flattened C-order arrays over ``shape``)."""

    features: tuple[int, ...]
    sensitive: tuple[bool, ...]
    cards: tuple[int, ...]
    shape: tuple[int, ...]
    score: np.ndarray        # Δ (NaN where undefined: x empty or P(x, y) = 0)
    probability: np.ndarray  # P(x, y)
    p_dxy: np.ndarray        # P(d, x, y)
    p_y: np.ndarray          # P(y)
    cache: dict = field(default_factory=dict, repr=False, compare=False)

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


def extended_marginals(circuit: Circuit, max_bytes: int) -> np.ndarray:
    """Table of P over all partial assignments: axis ``v`` has ``k_v + 1`` entries, the last
    one summing over the variable's values."""
    card = [int(c) for c in circuit.variables.cardinalities]
    grids = np.indices(card).reshape(len(card), -1).T.astype(np.int32)
    joint = np.exp(circuit.log_marginal(grids)).reshape(card)
    ext = joint
    for axis in range(len(card)):
        ext = np.concatenate([ext, ext.sum(axis=axis, keepdims=True)], axis=axis)
    return ext


def build_lattice(circuit: Circuit, decision: int, favorable: int, sensitive: list[int],
                  max_bytes: int = 2 << 30) -> Lattice:
    """Score every pattern of ``circuit`` (see the module docstring)."""
    n = circuit.num_variables
    smask = np.zeros(n, bool)
    smask[sensitive] = True
    need = lattice_bytes(circuit, decision, smask)
    if need > max_bytes:
        raise LatticeTooLarge(
            f"the dense engine needs about {need / 2**30:.1f} GiB for this model, over its "
            f"budget of {max_bytes / 2**30:.1f} GiB; use the branch-and-bound engine")
    ext = extended_marginals(circuit, max_bytes)
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
        score = p_dxy / p_xy - p_dy / p_y
    score = np.where(any_x & (p_xy > 0), score, np.nan)
    return Lattice(tuple(features), tuple(bool(smask[v]) for v in features),
                   tuple(card[v] for v in features), p_xy.shape, score.ravel(),
                   p_xy.ravel(), p_dxy.ravel(), p_y.ravel())


def divergence(lat: Lattice, delta: float) -> np.ndarray:
    """Divergence score (``pc-certifier.md`` §2) of every lattice point (0 where not a
    pattern)."""
    return divergence_scores(lat.score, lat.p_dxy, lat.probability, lat.p_y, delta)


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
    disc = valid & (lat.abs_score > delta)
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
    # A pattern dominated by any defined pattern q is dominated inside Σ too (|Δq| ≥ |Δ| > δ
    # puts q in Σ), so the front of Σ is the δ-independent front of all defined patterns
    # restricted to Σ: computed once per lattice.
    if "front" not in lat.cache:
        lat.cache["front"] = pareto_mask(lat.abs_score, lat.probability, lat.valid)
    return {"patterns": disc, "maximal": maximal.ravel(), "minimal": minimal.ravel(),
            "pareto": lat.cache["front"] & disc}


def pareto_mask(abs_score: np.ndarray, prob: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Strict Pareto front among ``member`` points: no other member has both ``abs_score`` and
    ``prob`` at least as large.

    Grouped by probability (decreasing), a point is on the front when it is the unique best
    score of its group and beats every more probable point. Ties are decided on values
    rounded to 1e-12 (scores) and 1e-15 (probabilities): patterns that tie mathematically
    (the same rows, or a variable independent of the decision given the rest) come out of
    floating point a few ulps apart, and the strict definition must still see the tie.
    """
    out = np.zeros(len(abs_score), bool)
    idx = np.flatnonzero(member)
    if len(idx) == 0:
        return out
    a_all, p_all = np.round(abs_score[idx], 12), np.round(prob[idx], 15)
    local = np.argsort(-p_all)  # equal probabilities end up adjacent: stability not needed
    a, p = a_all[local], p_all[local]
    # groups of equal probability, in decreasing probability
    starts = np.flatnonzero(np.concatenate([[True], p[1:] != p[:-1]]))
    group = np.cumsum(np.concatenate([[False], p[1:] != p[:-1]]))
    gmax = np.maximum.reduceat(a, starts)
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(gmax)[:-1]])
    at_max = a == gmax[group]
    n_at_max = np.add.reduceat(at_max.astype(np.int64), starts)
    # on the front: the group's unique best score, above every more probable pattern's
    out[idx[local]] = at_max & (gmax[group] > best_before[group]) & (n_at_max[group] == 1)
    return out

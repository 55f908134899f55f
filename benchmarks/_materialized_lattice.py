"""The pre-#15 materialising lattice engine, kept ONLY as the in-run baseline of
``benchmarks/bench_lattice.py``; nothing in the package uses it.

Copied from ``pcfair/patterns/summaries.py`` and the census of ``pcfair/patterns/api.py`` at commit
6e3d123 (the engine was removed from the package in b9fe5cf), trimmed to what the benchmark
needs: the table of all partial-assignment marginals is enumerated once, every lattice point is
scored into full-lattice arrays (Δ, P(x, y), P(d, x, y), P(y)), and the summaries are boolean
masks over the whole lattice (``extension_summaries`` and ``structure``, the maximal and
minimal passes of the old ``summaries``, moved here from ``pcfair/patterns/summaries.py`` when the
package's summaries moved to bitmaps). Helpers that still exist in the package with the same
code are imported instead of copied: :func:`pcfair.patterns.summaries.pareto_mask` and the scoring
numerics of :mod:`pcfair.patterns.scores`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import NumericalError
from pcfair.errors import LatticeTooLarge
from pcfair.patterns.summaries import pareto_mask
from pcfair.patterns.scores import (
    DivergenceMasses,
    discriminates,
    divergence_scores,
    log_normalizer,
)


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
    table: np.ndarray = field(repr=False)
    maps: tuple = field(repr=False)        # per feature: lattice state -> table index (xy, y)
    decision: tuple = field(repr=False)    # (decision's axis, favourable value)
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def discriminating(self, delta: float) -> np.ndarray:
        return self.valid & discriminates(self.abs_score, delta)

    def masses(self, idx: np.ndarray) -> DivergenceMasses:
        """The divergence masses of lattice points ``idx``, read from the table (``¬x`` as
        disjoint events, as :func:`pcfair.patterns.scores.divergence_masses`)."""
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
                base = [np.where(in_x[i], k_i, xy[i]) if i > j else xy[i]
                        for i, k_i in enumerate(self.cards)]
                for other in range(k):
                    cell = list(base)
                    cell[j] = np.full(len(rest), other)
                    got = t[tuple(cell)]
                    rest += np.where(in_x[j] & (xy[j] != other), got, 0.0)
            m.append(rest)
        with np.errstate(divide="ignore"):
            return DivergenceMasses(*np.log([a[0], a[1], m[0], m[1]]))

    @property
    def valid(self) -> np.ndarray:
        if "valid" not in self.cache:
            self.cache["valid"] = ~np.isnan(self.score)
        return self.cache["valid"]

    @property
    def abs_score(self) -> np.ndarray:
        if "abs_score" not in self.cache:
            self.cache["abs_score"] = np.abs(np.nan_to_num(self.score))
        return self.cache["abs_score"]


def lattice_bytes(circuit: Circuit, decision: int, sensitive_mask: np.ndarray) -> int:
    card = circuit.variables.cardinalities.astype(float)
    joint = float(np.prod(card))
    ext = float(np.prod(card + 1))
    feats = [v for v in range(len(card)) if v != decision]
    lat = float(np.prod([2 * card[v] + 1 if sensitive_mask[v] else card[v] + 1 for v in feats]))
    return int(8 * max(joint, ext, 10 * lat))


def extended_marginals(circuit: Circuit) -> np.ndarray:
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
    """Score every pattern of ``circuit`` into full-lattice arrays."""
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
        raise NumericalError("a pattern with P(x, y) > 0 has an undefined score")
    score = np.where(defined, score, np.nan)
    return Lattice(tuple(features), tuple(bool(smask[v]) for v in features),
                   tuple(card[v] for v in features), p_xy.shape, score.ravel(),
                   p_xy.ravel(), p_dxy.ravel(), p_y.ravel(), ext,
                   tuple(zip(xy_maps, y_maps)), (d_axis, favorable))


def divergence(lat: Lattice, delta: float, idx: np.ndarray) -> np.ndarray:
    """Divergence score of lattice points ``idx`` from masses read in the table."""
    idx = np.asarray(idx, np.int64)
    return divergence_scores(lat.score[idx], lat.masses(idx), delta)


def summaries(lat: Lattice, delta: float) -> dict[str, np.ndarray]:
    """Boolean masks over the whole lattice: ``patterns``, ``maximal``, ``minimal``,
    ``pareto``."""
    if "structure" not in lat.cache:
        lat.cache["structure"] = structure(lat.shape, lat.cards)
    disc = lat.discriminating(delta)
    masks = extension_summaries(lat.valid, disc, lat.shape, lat.cards, lat.cache["structure"])
    return {"patterns": disc, "maximal": masks["maximal"], "minimal": masks["minimal"],
            "pareto": pareto_mask(lat.abs_score, lat.probability, disc)}


def census(pc: Circuit, d: int, fav: int, sens: list[int], deltas=(0.01, 0.05, 0.1),
           ks=(1, 10, 100), max_bytes: int = 2 << 30) -> pd.DataFrame:
    """The old ``pattern_census`` body (arguments already resolved): one lattice, then per δ
    the summary masks and the top-k of ``|Δ|`` and of the divergence over the patterns."""
    lat = build_lattice(pc, d, fav, sens, max_bytes)
    abs_score = lat.abs_score
    rows = []
    for delta in deltas:
        m = summaries(lat, float(delta))
        row = {"delta": delta, **{k: int(v.sum()) for k, v in m.items()}}
        member = np.flatnonzero(m["patterns"])
        kmax = min(max(ks), len(member))
        div = divergence(lat, float(delta), member)
        for name, values in (("abs_score", abs_score[member]), ("divergence", div)):
            top = np.sort(np.partition(values, len(values) - kmax)[len(values) - kmax:])[::-1] \
                if kmax else values
            for k in ks:
                row[f"top{k}_{name}"] = float(top[k - 1]) if len(top) >= k else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)

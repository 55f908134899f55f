"""The streaming lattice engine: every pattern scored, chunk by chunk, never materialising the
lattice.

Layout. The pattern lattice has one axis per feature (states: absent, each value in ``y`` and,
for a sensitive feature, each value in ``x``); patterns are numbered by their C-order index
over the features in the circuit's order (:attr:`LatticePlan.shape`; the states of
:mod:`pcfair.patterns.summaries`). The non-sensitive features are walked depth first; the sensitive ones and the
decision form a small table at each step of the walk:

- a **chunk** fixes the states of the first ``p`` non-sensitive features (its *prefix*). Its
  table is the joint of the remaining features and ``D`` given the prefix's values (absent
  prefix features marginalised), computed by one batch of marginal queries, then closed once
  over the sensitive axes (each gets an absent state: every partial sensitive assignment);
- the chunk's walk (:func:`pcfair.patterns._lattice_kernels.next_leaves`) fixes the remaining
  non-sensitive features one at a time: a value takes a contiguous block of the table, the
  absent state sums the blocks (sums over different axes commute, so the blocks stay closed).
  Each complete walk gives a *leaf*: the joint of every partial sensitive assignment and
  ``D`` given one non-sensitive assignment ``y_n``;
- each leaf scores its sensitive combinations by table look-ups
  (:func:`pcfair.patterns._lattice_kernels.score_leaves`): ``Δ = P(d|x,y) − P(d|y)`` with
  ``P(x, y)`` and, where asked, the divergence from the masses of the disjoint events that
  make up ``¬x``.

Every pattern belongs to exactly one chunk and one leaf, so a chunk's partial result
(counts, heaps of the best scores, its Pareto candidates, its listed patterns) merges exactly
with the others whatever order they finish in: 1 process, several, or a Dask cluster give the
same answer. Queries with divergence heaps or Pareto fronts first scan, in the calling
process, the chunk of the prefix's absent states (the most probable patterns), and hand its
heaps and front to the other chunks as a *seed* (:func:`scan_chunk`): bars that only drop
patterns which cannot be in the answer, so the answer does not change, only the work. Memory
is one chunk's table and its walk buffers (bounded by ``max_bytes`` through the choice of
``p``), whatever the size of the lattice.

Exact for any smooth, decomposable circuit (marginals only; no determinism needed). Numerics
are those of :mod:`pcfair.patterns.scores`: normalised probabilities, ``|Δ| > δ + 1e-12``,
divergence from directly summed masses. The tables are linear doubles, exact for every
pattern whose ``P(x, y)`` is at least the model's :func:`probability_floor`: on a model whose
smallest positive probability lies below :data:`~pcfair.patterns.scores.PROBABILITY_FLOOR`
the patterns below that floor are left out and the scan says it is incomplete
(``stats["probability_floor"]``), never "fair" for them; the searches, which score in logs,
decide them (:mod:`pcfair.patterns.engines` prefers them on such a model).

Maximal and minimal patterns relate points of different chunks through the extension order in
both directions. Each chunk writes, for its own points, one small word per point (membership
of Σ at each threshold, and definedness: the very comparisons that count them) into a bitmap
over its sub-grid of the lattice (its prefix axes fixed); the scan places these disjoint parts
into one bitmap of the whole lattice, whatever process computed them, so the bitmap (hence
the summaries) does not depend on the split. :func:`pcfair.patterns.summaries.extension_summaries`
then closes it per axis (its docstring proves the passes exact). The bitmap (1 byte a point
for up to 3 thresholds) must fit ``max_bytes``, else :class:`LatticeTooLarge`; the scores of
the patterns it selects come from a second pass over the chunks that hold them
(:func:`summary_patterns`), with the same arithmetic.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from pcfair._clock import deadline_from
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io.json_io import to_dict
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import LatticeTooLarge, OptionError, StructureError
from pcfair.inference.marginals import log_marginals
from pcfair.inference.smallest import log_smallest_probability
from pcfair.patterns import _lattice_kernels as K
from pcfair.patterns._arguments import Problem
from pcfair.patterns._search_kernels import BOUND_RTOL
from pcfair.patterns.executors import map_chunks
from pcfair.patterns.scores import PROBABILITY_FLOOR, THRESHOLD_ATOL, log_normalizer
from pcfair.patterns.summaries import (
    extension_summaries,
    pareto_candidates,
    pareto_mask,
    summary_word,
)

__all__ = ["DEFAULT_MAX_BYTES", "LatticePlan", "LatticeQuery", "ScanCost", "chunk_bounds",
           "estimate", "final_front", "make_plan", "probability_floor", "probe_cost", "scan",
           "ScanRun", "scan_chunk", "summary_bytes", "summary_counts", "summary_patterns"]

#: Default memory budget of one chunk (table and walk buffers), bytes.
DEFAULT_MAX_BYTES = 1 << 30


# ----------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class LatticePlan:
    """How a circuit's pattern lattice is split and walked (see the module docstring)."""

    num_variables: int
    decision: int
    favorable: int
    features: tuple[int, ...]      # every variable but the decision, circuit order
    sensitive: tuple[int, ...]     # sensitive features, circuit order
    nonsensitive: tuple[int, ...]  # walk order
    cards: tuple[int, ...]         # cardinality of every variable
    prefix: int                    # non-sensitive features fixed per chunk
    strides: dict = field(repr=False)  # variable -> stride of its state in the global index
    ext_size: int = 0   # sensitive state combinations with y only (each: absent or a value)
    leaf_size: int = 0  # cells of a leaf before the closure: sensitive values × the decision
    combos: tuple = field(default=(), repr=False)  # (xy, y, offset, mass_ptr, mass_idx)

    @cached_property
    def shape(self) -> tuple[int, ...]:
        """States per feature (the lattice's shape)."""
        return tuple(2 * self.cards[v] + 1 if v in self.sensitive else self.cards[v] + 1
                     for v in self.features)

    @property
    def num_points(self) -> int:
        return int(np.prod(self.shape, dtype=np.float64))

    @property
    def num_chunks(self) -> int:
        """Number of chunks (prefixes), without listing them."""
        return int(np.prod([self.cards[v] + 1 for v in self.nonsensitive[: self.prefix]],
                           dtype=np.float64))

    def chunks(self) -> list[tuple[int, ...]]:
        """The prefixes: state tuples of the first ``prefix`` non-sensitive features."""
        axes = self.nonsensitive[: self.prefix]
        return list(itertools.product(*[range(self.cards[v] + 1) for v in axes]))

    def chunk_rows(self) -> int:
        """Rows of one chunk's table (before its closure over the sensitive axes)."""
        rest = self.nonsensitive[self.prefix:]
        return int(np.prod([self.cards[v] for v in rest], dtype=np.float64)) * self.leaf_size

    def chunk_bytes(self) -> int:
        """Bytes one chunk needs: its evidence rows, its table, and the walk's buffers (the
        table closed over the sensitive axes and one scratch region per level, together at
        most twice the closed table)."""
        rows = self.chunk_rows()
        closed = rows // max(self.leaf_size, 1) * 2 * self.ext_size
        return int(rows * (4 * self.num_variables + 8 * 3) + 16 * closed + (1 << 22))

    def sub_grid(self) -> tuple[tuple[int, ...], dict]:
        """A chunk's sub-grid: the features other than the prefix's (circuit order) and their
        strides in a C-order array over them (a chunk's part of the summaries' bitmap)."""
        fixed = set(self.nonsensitive[: self.prefix])
        axes = tuple(v for v in self.features if v not in fixed)
        dims = dict(zip(self.features, self.shape))
        strides, acc = {}, 1
        for v in reversed(axes):
            strides[v] = acc
            acc *= dims[v]
        return axes, strides

    def decode(self, index: int) -> tuple[dict[int, int], dict[int, int]]:
        """``(x, y)`` in index form of global lattice index ``index``."""
        x: dict[int, int] = {}
        y: dict[int, int] = {}
        rest = int(index)
        for v in self.features:
            s, rest = divmod(rest, self.strides[v])
            k = self.cards[v]
            if s == 0:
                continue
            if s <= k:
                y[v] = s - 1
            else:
                x[v] = s - k - 1
        return x, y


def make_plan(circuit: Circuit, decision: int, favorable: int, sensitive: list[int],
              max_bytes: int = DEFAULT_MAX_BYTES, min_chunks: int = 1) -> LatticePlan:
    """Plan the walk: the fewest chunks (at least ``min_chunks``) whose tables fit
    ``max_bytes``."""
    n = circuit.num_variables
    cards = tuple(int(c) for c in circuit.variables.cardinalities)
    features = tuple(v for v in range(n) if v != decision)
    sens = tuple(v for v in features if v in set(sensitive))
    nonsens = tuple(v for v in features if v not in set(sensitive))
    shape = [2 * cards[v] + 1 if v in sens else cards[v] + 1 for v in features]
    strides, acc = {}, 1
    for v, s in zip(reversed(features), reversed(shape)):
        strides[v] = acc
        acc *= s
    ext_size = int(np.prod([cards[v] + 1 for v in sens]))
    leaf_size = int(np.prod([cards[v] for v in sens])) * 2
    plan = LatticePlan(n, decision, favorable, features, sens, nonsens, cards, 0, strides,
                       ext_size, leaf_size, _combos(sens, cards, strides))
    prefix = 0
    while prefix < len(nonsens):
        trial = _replace(plan, prefix)
        if trial.chunk_bytes() <= max_bytes and trial.num_chunks >= min_chunks:
            break
        prefix += 1
    plan = _replace(plan, prefix)
    if plan.chunk_bytes() > max_bytes:
        raise LatticeTooLarge(
            f"one chunk of the lattice engine needs about {plan.chunk_bytes() / 2**30:.2f} GiB "
            f"(the sensitive features and the decision alone make {plan.leaf_size:,} cells "
            f"per leaf), over the budget of {max_bytes / 2**30:.2f} GiB: raise max_bytes or "
            "use the branch-and-bound engine")
    return plan


def _replace(plan: LatticePlan, prefix: int) -> LatticePlan:
    return LatticePlan(plan.num_variables, plan.decision, plan.favorable, plan.features,
                       plan.sensitive, plan.nonsensitive, plan.cards, prefix, plan.strides,
                       plan.ext_size, plan.leaf_size, plan.combos)


def _combos(sens: tuple[int, ...], cards: tuple[int, ...], strides: dict) -> tuple:
    """Every sensitive state combination with a non-empty ``x``: the ext cells of ``x y`` and
    of ``y``, its part of the global index, and the ext cells of the disjoint events of
    ``¬x`` (variables of ``x`` in order: the earlier ones hold, this one takes another
    value, the later ones are absent)."""
    ks = [cards[v] for v in sens]
    ext_dims = [k + 1 for k in ks]

    def ext(states):
        return int(np.ravel_multi_index(states, ext_dims)) if states else 0

    xy, yy, off, mptr, midx = [], [], [], [0], []
    for combo in itertools.product(*[range(2 * k + 1) for k in ks]):
        in_x = [s > k for s, k in zip(combo, ks)]
        if not any(in_x):
            continue
        val = [(s - 1 if s <= k else s - k - 1) if s else k for s, k in zip(combo, ks)]
        xy.append(ext(val))
        yy.append(ext([k if ix else v for v, k, ix in zip(val, ks, in_x)]))
        off.append(sum(s * strides[v] for v, s in zip(sens, combo)))
        base = [k if ix else v for v, k, ix in zip(val, ks, in_x)]  # y only
        for j in range(len(ks)):
            if not in_x[j]:
                continue
            for other in range(ks[j]):
                if other != val[j]:
                    cell = list(base)
                    cell[j] = other
                    midx.append(ext(cell))
            base[j] = val[j]
        mptr.append(len(midx))
    return tuple(np.array(a, np.int64) for a in (xy, yy, off, mptr, midx))


# ---------------------------------------------------------------------------------- the query
@dataclass(frozen=True)
class LatticeQuery:
    """What a scan accumulates. ``deltas``: thresholds (counts per δ; top-k by divergence and
    Pareto candidates per δ, see :func:`final_front`; the smallest is the listing's and the witness's threshold).
    ``k_top``: best ``|Δ|`` kept; ``k_div``: best divergences kept per δ; ``pareto``: the
    strict fronts; ``listing``: every pattern of the smallest δ; ``summaries``: fill the bitmap
    of :func:`pcfair.patterns.summaries.extension_summaries` (at most 15 thresholds). ``points``
    (sorted global indices of defined points) makes a query that only scores those points
    (:attr:`ChunkResult.picked`). Patterns with ``P(x, y) < min_support`` are set aside:
    counted per δ in :attr:`ChunkResult.rare`, otherwise treated as undefined. Patterns with
    ``P(x, y) < floor`` are left out (not scored, not counted): :func:`scan` sets it to the
    model's :func:`probability_floor`."""

    deltas: tuple[float, ...]
    min_support: float = 0.0
    floor: float = 0.0
    k_top: int = 0
    k_div: int = 0
    pareto: bool = False
    listing: bool = False
    summaries: bool = False
    points: np.ndarray | None = field(default=None, compare=False)


@dataclass
class ChunkResult:
    """The partial result of one chunk (or of several, merged): ``listing`` holds the
    patterns of the smallest δ as arrays (global index, Δ, P(x, y), divergence)."""

    counts: np.ndarray
    rare: np.ndarray | None = None
    defined: int = 0
    best: float = 0.0
    best_index: int = -1
    top: tuple = (np.zeros(0), np.zeros(0, np.int64), np.zeros(0))
    div: list = field(default_factory=list)     # per δ: (divergences, indices, Δ)
    fronts: list = field(default_factory=list)  # per δ: (P(x, y), |Δ|, indices, Δ)
    listing: tuple = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    points: int = 0
    seconds: float = 0.0
    bits: np.ndarray | None = None    # the chunk's part of the summaries' bitmap
    picked: np.ndarray | None = None  # scores of the query's points (NaN: not in this chunk)
    partial: bool = False  # the deadline stopped the chunk: what it holds covers part of it
    pruned: bool = False   # skipped: its bound says it holds nothing the query keeps


#: Rows of marginal queries between two looks at the deadline while a chunk's table is made.
TABLE_BLOCK_ROWS = 1 << 16


def _chunk_table(circuit: Circuit, plan: LatticePlan, prefix: tuple[int, ...], log_z: float,
                 deadline: float | None = None) -> np.ndarray | None:
    """The chunk's table: P(remaining non-sensitive values, sensitive values, D) with the
    prefix's values as evidence, C-order with ``D`` last (favourable first). Made in blocks of
    :data:`TABLE_BLOCK_ROWS` queries; None when ``deadline`` (a :func:`time.time` value)
    passes first."""
    rest = plan.nonsensitive[plan.prefix:]
    axes = list(rest) + list(plan.sensitive)
    dims = [plan.cards[v] for v in axes] + [2]
    grid = np.indices(dims, dtype=np.int32).reshape(len(dims), -1)
    rows = np.full((grid.shape[1], plan.num_variables), -1, np.int32)
    for v, state in zip(plan.nonsensitive[: plan.prefix], prefix):
        if state:
            rows[:, v] = state - 1
    for i, v in enumerate(axes):
        rows[:, v] = grid[i]
    rows[:, plan.decision] = np.where(grid[-1] == 0, plan.favorable, 1 - plan.favorable)
    table = np.empty(len(rows))
    for start in range(0, len(rows), TABLE_BLOCK_ROWS):
        if deadline is not None and time.time() > deadline:
            return None
        block = slice(start, start + TABLE_BLOCK_ROWS)
        table[block] = log_marginals(circuit, rows[block])
    return np.exp(table - log_z)


def _close_sensitive(plan: LatticePlan, table: np.ndarray, out: np.ndarray) -> None:
    """Write ``table`` closed over the sensitive axes into ``out``: each sensitive axis gets
    its absent state (last, after the values), the sum over its values; axis by axis in
    order, so an axis's sums run over every state of the earlier axes and the values of the
    later ones. The leaf blocks of ``out`` then hold the ext cells of
    :func:`_combos`."""
    ks = [plan.cards[v] for v in plan.sensitive]
    closed = out.reshape((-1, *[k + 1 for k in ks], 2))
    closed[(slice(None), *[slice(0, k) for k in ks])] = table.reshape((-1, *ks, 2))
    for a, k in enumerate(ks):
        where = [slice(None)] * (a + 1) + [slice(0, k)] + [slice(0, kk) for kk in ks[a + 1:]]
        values = closed[tuple(where)]
        where[a + 1] = k
        np.add.reduce(values, axis=a + 1, out=closed[tuple(where)])


def _empty_result(query: LatticeQuery, **flags) -> ChunkResult:
    """A result with nothing found (every count 0, every heap and front empty)."""
    nd = len(query.deltas)
    out = ChunkResult(counts=np.zeros(nd, np.int64), rare=np.zeros(nd, np.int64), **flags)
    out.div = [out.top] * nd
    out.fronts = [_NO_FRONT] * nd if query.pareto else []
    return out


def _chunk_walk(plan: LatticePlan, prefix: tuple[int, ...], table: np.ndarray) -> K.Walk:
    """The walk of a chunk over its ``table``: the table closed over the sensitive axes,
    then one scratch region per level (level ``j ≥ 1``: a block of level ``j − 1``)."""
    rest = plan.nonsensitive[plan.prefix:]
    cards = np.array([plan.cards[v] for v in rest], np.int64)
    n_axes = len(rest)
    sizes = [len(table) // plan.leaf_size * 2 * plan.ext_size]
    for j in range(n_axes):
        sizes.append(sizes[-1] // int(cards[j]))
    scratch = np.zeros(n_axes + 1, np.int64)
    offset = sizes[0]
    for j in range(1, n_axes + 1):
        scratch[j] = offset
        offset += sizes[j]
    work = np.empty(offset)
    _close_sensitive(plan, table, work[: sizes[0]])
    _, sub_strides = plan.sub_grid()
    pos = np.array([0, sum(s * plan.strides[v]
                           for v, s in zip(plan.nonsensitive[: plan.prefix], prefix))], np.int64)
    return K.Walk(work, np.zeros(n_axes + 1, np.int64), scratch, cards,
                  np.array([plan.strides[v] for v in rest], np.int64),
                  np.array([sub_strides[v] for v in rest], np.int64), 2 * plan.ext_size,
                  np.full(max(n_axes, 1), -1, np.int64), pos)


def _chunk_combos(plan: LatticePlan, query: LatticeQuery) -> tuple[K.Combos, np.ndarray]:
    """A chunk's :class:`~pcfair.patterns._lattice_kernels.Combos` and its part of the
    summaries' bitmap (empty where ``query.summaries`` is off)."""
    xy, yy, off, mptr, midx = plan.combos
    bits = np.zeros(0, np.uint8)
    local_off = np.zeros(0, np.int64)
    if query.summaries:
        sub_axes, sub_strides = plan.sub_grid()
        dims = dict(zip(plan.features, plan.shape))
        bits = np.zeros(int(np.prod([dims[v] for v in sub_axes], dtype=np.int64)),
                        summary_word(len(query.deltas)))
        states = np.unravel_index(off, plan.shape)  # the sensitive states of each combination
        local_off = sum(states[plan.features.index(v)] * sub_strides[v]
                        for v in plan.sensitive).astype(np.int64)
    cell_combos = np.bincount(xy, minlength=plan.ext_size).astype(np.int64)
    return K.Combos(plan.ext_size, xy, yy, off, cell_combos, mptr, midx, local_off,
                    np.zeros(plan.ext_size), np.zeros(plan.ext_size)), bits


def _heaps(n: int, k: int) -> K.Heaps:
    """``n`` empty heaps of ``k`` entries."""
    return K.Heaps(np.zeros((n, k)), np.zeros((n, k), np.int64), np.zeros((n, k)),
                   np.zeros(n, np.int64))


class _ChunkAccumulators:
    """What a chunk's scan accumulates: the kernel's records (thresholds, totals, heaps,
    Pareto candidates, listing; :mod:`pcfair.patterns._lattice_kernels`) and, folded from
    them after each batch, the chunk's fronts and listed patterns."""

    def __init__(self, query: LatticeQuery, seed: ChunkResult | None, per_batch: int):
        nd = len(query.deltas)
        div_floor = np.zeros(nd)
        if seed is not None and query.k_div:
            for d, (vals, _, _) in enumerate(seed.div):
                if len(vals) == query.k_div:
                    div_floor[d] = vals.min()
        self.thresholds = K.Thresholds(np.array(query.deltas, np.float64), THRESHOLD_ATOL,
                                       float(query.min_support), float(query.floor), div_floor)
        self.totals = K.Totals(np.zeros(nd, np.int64), np.zeros(nd, np.int64),
                               np.zeros(1, np.int64), np.zeros(1), np.full(1, -1, np.int64))
        self.top = _heaps(1, query.k_top)
        self.div = _heaps(nd, query.k_div)
        self.fronts = [_NO_FRONT for _ in range(nd)]
        self.seed_fronts = seed.fronts if seed is not None and query.pareto else self.fronts
        cap = per_batch if query.pareto else 0
        self.pareto = K.Pareto(query.pareto, *_front_arrays(self.seed_fronts),
                               np.zeros((nd, cap)), np.zeros((nd, cap)), np.zeros((nd, cap)),
                               np.zeros((nd, cap), np.int64), np.zeros(nd, np.int64))
        lcap = per_batch if query.listing else 0
        self.listing = K.Listing(query.listing, np.zeros(lcap, np.int64), np.zeros(lcap),
                                 np.zeros(lcap), np.zeros(lcap), np.zeros(1, np.int64))
        self.listed: list[tuple] = []

    def score(self, leaves: K.Leaves, n_leaves: int, combos: K.Combos, bits: np.ndarray):
        """Score a batch of leaves; fold its Pareto candidates into the fronts (the kernel's
        view of them rebuilt) and its listed patterns into :attr:`listed`."""
        K.score_leaves(leaves, n_leaves, combos, self.thresholds, self.totals, self.top,
                       self.div, self.pareto, self.listing, bits)
        pareto, listing = self.pareto, self.listing
        if pareto.on and pareto.surv_len.max() > 0:
            for d in range(len(self.fronts)):
                m = pareto.surv_len[d]
                self.fronts[d] = _compact([self.fronts[d], (
                    pareto.surv_p[d, :m], pareto.surv_a[d, :m], pareto.surv_idx[d, :m],
                    pareto.surv_s[d, :m])])
            pareto.surv_len[:] = 0
            front_p, front_best, front_len = _front_arrays(
                self.fronts if self.seed_fronts is self.fronts else
                [_compact([own, other]) for own, other in zip(self.fronts, self.seed_fronts)])
            self.pareto = pareto._replace(p=front_p, best=front_best, length=front_len)
        if listing.on and listing.length[0]:
            m = int(listing.length[0])
            self.listed.append((listing.idx[:m].copy(), listing.score[:m].copy(),
                                listing.p[:m].copy(), listing.div[:m].copy()))
            listing.length[0] = 0

    def result(self, **fields) -> ChunkResult:
        """The chunk's :class:`ChunkResult` (``fields``: its other attributes)."""
        totals, top, div = self.totals, self.top, self.div
        out = ChunkResult(counts=totals.counts, rare=totals.rare,
                          defined=int(totals.defined[0]), best=float(totals.best[0]),
                          best_index=int(totals.best_idx[0]),
                          top=_heap_items(top.vals[0], top.idx[0], top.pay[0],
                                          int(top.sizes[0])),
                          div=[_heap_items(div.vals[d], div.idx[d], div.pay[d],
                                           int(div.sizes[d])) for d in range(len(self.fronts))],
                          fronts=self.fronts if self.pareto.on else [], **fields)
        if self.listed:
            out.listing = tuple(np.concatenate([part[i] for part in self.listed])
                                for i in range(4))
        return out


def scan_chunk(circuit, plan: LatticePlan, prefix: tuple[int, ...], query: LatticeQuery,
               log_z: float, batch: int = 2048, deadline: float | None = None,
               seed: ChunkResult | None = None,
               bar: tuple[float, np.ndarray] | None = None) -> ChunkResult | None:
    """Scan one chunk (see the module docstring). When ``deadline`` (a ``time.time()`` value)
    passes first, the chunk stops between two batches of leaves and returns what it found so
    far, marked :attr:`ChunkResult.partial` (None if it passed before the chunk's table was
    made). ``circuit`` may be a :class:`Circuit` or its
    :func:`pcfair.circuit.io.json_io.to_dict` form (for worker processes).

    ``seed``, the result of another chunk, raises the bars of the divergence heaps and the
    Pareto fronts from the start: a pattern whose divergence is below the seed's ``k_div``-th
    best (a full heap) cannot be among the best of the lattice, and one that a seed candidate
    dominates strictly cannot be on the strict front, nor can its absence change another
    point's status (what it dominates, the seed point dominates too, within the tie rule).
    The seed's own patterns are not copied into the result, so the merge sees each pattern
    once and the answer does not depend on the seed.

    ``bar = (ub, best)``: the chunk's bound on ``|Δ|`` and a one-element array holding the
    ``k_top``-th best ``|Δ|`` found so far (:func:`scan`'s top-k pruning, which updates it
    as chunks finish, in this process); a chunk whose bound is at most that is skipped
    (:attr:`ChunkResult.pruned`)."""
    t0 = time.perf_counter()
    if bar is not None and _below(bar[0], float(bar[1][0])):
        return _empty_result(query, pruned=True)
    picking = query.points is not None
    if picking:
        wanted = _points_in_chunk(plan, prefix, query.points)
        if not wanted.any():  # nothing to score here
            return _empty_result(query, picked=np.full(len(query.points), np.nan))
        pick_idx = np.ascontiguousarray(query.points, np.int64)
        pick_keys = np.unique(pick_idx[wanted] - _sensitive_part(plan, pick_idx[wanted]))
        picked = np.full(len(pick_idx), np.nan)
    if not isinstance(circuit, Circuit):
        circuit = _circuit_from_dict(circuit)
    table = _chunk_table(circuit, plan, prefix, log_z, deadline)
    if table is None:
        return None
    walk = _chunk_walk(plan, prefix, table)
    del table
    leaves = K.Leaves(np.empty((batch, 2 * plan.ext_size)), np.empty(batch, np.int64),
                      np.empty(batch, np.int64))
    combos, bits = _chunk_combos(plan, query)
    n_combo = len(combos.xy)
    acc = _ChunkAccumulators(query, seed, batch * n_combo)
    n_leaves = 0
    partial = False
    step = min(16, batch)  # small first batches: the Pareto filter learns its front early
    # at most about 4 M patterns a batch (tens of milliseconds): the deadline is checked often
    most = max(1, min(batch, (1 << 22) // max(n_combo, 1)))
    while True:
        if deadline is not None and time.time() > deadline:
            partial = True
            break
        got = K.next_leaves(walk, leaves, min(step, most))
        step = min(2 * step, batch)
        if got == 0:
            break
        n_leaves += got
        if picking:
            K.pick_scores(leaves, got, combos, pick_keys, pick_idx, picked)
        else:
            acc.score(leaves, got, combos, bits)
    return acc.result(points=n_leaves * int(np.prod([2 * plan.cards[v] + 1
                                                     for v in plan.sensitive])),
                      seconds=time.perf_counter() - t0,
                      bits=bits if query.summaries else None,
                      picked=picked if picking else None, partial=partial)


def _front_arrays(fronts: list[tuple]) -> tuple:
    """The kernel's view of Pareto candidates per δ (each sorted by decreasing probability):
    probabilities, running maxima of the scores, lengths."""
    nd = len(fronts)
    width = max([1] + [len(f[0]) for f in fronts])
    front_p, front_best = np.zeros((nd, width)), np.zeros((nd, width))
    front_len = np.zeros(nd, np.int64)
    for d, f in enumerate(fronts):
        m = len(f[0])
        front_p[d, :m] = f[0]
        front_best[d, :m] = np.maximum.accumulate(f[1]) if m else 0.0
        front_len[d] = m
    return front_p, front_best, front_len


def _sensitive_part(plan: LatticePlan, indices: np.ndarray) -> np.ndarray:
    """The part of global lattice indices that the sensitive states make up."""
    states = np.unravel_index(indices, plan.shape)
    return sum(states[plan.features.index(v)] * plan.strides[v] for v in plan.sensitive)


def _points_in_chunk(plan: LatticePlan, prefix: tuple[int, ...], indices: np.ndarray
                     ) -> np.ndarray:
    """Mask of the global lattice indices that lie in the chunk of ``prefix``."""
    states = np.unravel_index(np.asarray(indices, np.int64), plan.shape)
    keep = np.ones(len(indices), bool)
    for v, state in zip(plan.nonsensitive[: plan.prefix], prefix):
        keep &= states[plan.features.index(v)] == state
    return keep


#: No Pareto candidates: ``(P(x, y), |Δ|, index, Δ)`` arrays.
_NO_FRONT = (np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0))


def final_front(candidates: tuple) -> tuple:
    """The strict Pareto front (:func:`pcfair.patterns.summaries.pareto_mask`) of merged
    candidates ``(P(x, y), |Δ|, indices, Δ)``."""
    keep = pareto_mask(candidates[1], candidates[0], np.ones(len(candidates[0]), bool))
    return tuple(column[keep] for column in candidates)


def _heap_items(vals: np.ndarray, idx: np.ndarray, scores: np.ndarray, size: int) -> tuple:
    """A heap's ``(key, index, Δ)`` arrays."""
    return vals[:size].copy(), idx[:size].copy(), scores[:size].copy()


def _compact(parts: list[tuple]) -> tuple:
    """The Pareto candidates (:func:`pareto_candidates`) of several candidate sets, sorted by
    decreasing probability."""
    p, a, idx, score = (np.concatenate([part[i] for part in parts]) for i in range(4))
    keep = np.flatnonzero(pareto_candidates(a, p))
    keep = keep[np.argsort(-p[keep], kind="stable")]
    return p[keep], a[keep], idx[keep], score[keep]


_CIRCUITS: dict = {}


def _circuit_from_dict(data: dict) -> Circuit:
    """A worker's circuit, built once per process per model."""
    from pcfair.circuit.io.json_io import from_dict

    key = id(data) if "digest" not in data else data["digest"]
    if key not in _CIRCUITS:
        _CIRCUITS.clear()
        _CIRCUITS[key] = from_dict(data)
    return _CIRCUITS[key]


def merge(results: list[ChunkResult], query: LatticeQuery) -> ChunkResult:
    """Merge chunk results exactly: counts add, heaps keep the best, fronts are re-filtered,
    listings concatenate (sorted by index, so the merge does not depend on order)."""
    nd = len(query.deltas)
    out = _empty_result(query)
    results = [r for r in results if r is not None]
    if not results:
        return out
    out.counts = np.sum([r.counts for r in results], axis=0)
    out.rare = np.sum([r.rare for r in results], axis=0)
    out.defined = sum(r.defined for r in results)
    best = max(results, key=lambda r: (r.best, -r.best_index))
    out.best, out.best_index = best.best, best.best_index
    out.top = _best_k([r.top for r in results], query.k_top)
    out.div = [_best_k([r.div[d] for r in results], query.k_div) for d in range(nd)]
    if query.pareto:
        out.fronts = [_compact([r.fronts[d] for r in results]) for d in range(nd)]
    if query.listing:
        idx = np.concatenate([r.listing[0] for r in results])
        order = np.argsort(idx, kind="stable")
        out.listing = tuple(np.concatenate([r.listing[i] for r in results])[order]
                            for i in range(4))
    out.points = sum(r.points for r in results)
    out.seconds = sum(r.seconds for r in results)
    return out


def _best_k(parts: list[tuple], k: int) -> tuple:
    """The ``k`` best ``(key, index, Δ)`` entries, ties broken by the smaller index (so the
    merge does not depend on the order of the parts)."""
    vals, idx, scores = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((idx, -vals))[:k]
    return vals[order], idx[order], scores[order]


# ------------------------------------------------------------------------- chunk pruning
#: How :func:`scan` may skip chunks by a bound (see :func:`chunk_bounds`).
PRUNE_MODES = (None, "threshold", "topk")
#: Chunks up to which :func:`scan` bounds them (one bound evaluation each) before scanning.
MAX_BOUNDED_CHUNKS = 4096
#: Rows of a chunk's table per bound evaluation :func:`chunk_bounds` may spend on the chunk's
#: sub-chunks: both costs grow with the circuit, and one evaluation is far cheaper than 64
#: rows (the binarized German CLT: a chunk of 262,144 rows scans in ~0.8 s; its 4,096
#: evaluations of the tree bound take ~25 ms).
SUBCHUNK_ROWS_PER_BOUND = 64
#: Chunks :func:`chunk_bounds` splits before it stops splitting if none of them was skipped
#: (it splits the chunks nearest the bar first): where the bound is expensive and loose at
#: every depth (the German Strudel PSDD's quotient bound: 80 s of evaluations against a 105 s
#: scan, nothing skipped), trying a few chunks bounds the loss.
SUBCHUNK_TRIALS = 4


def _below(ub: float, bar: float) -> bool:
    """Whether a bound ``ub`` on ``|Δ|`` (widened for rounding as the searches widen
    theirs) cannot beat ``bar``: no pattern under it has ``|Δ| > bar``."""
    return ub * (1.0 + BOUND_RTOL) + 1e-300 <= bar


def chunk_bounds(circuit: Circuit, plan: LatticePlan, chunks: list[tuple[int, ...]],
                 deadline: float | None = None, bar: float | None = None,
                 budget: int | None = None) -> np.ndarray | None:
    """An upper bound on ``|Δ|`` over the patterns of each chunk, or None where no bound
    applies to the circuit.

    A chunk is a search node (:mod:`pcfair.patterns.bounds`): its prefix features are
    decided (a state ``s > 0`` puts the feature in ``y`` with value ``s − 1``, the state 0
    excludes it), every other feature is undecided, the sensitive ones free to enter ``x``.
    Every pattern of the chunk is an extension of that node, so the bound
    (:func:`pcfair.patterns.bounds.select_bound`'s choice for the circuit) covers every
    ``|Δ|`` in the chunk (its proof is the bound's); a node with no extension of positive
    probability holds no defined pattern and gets ``-1``. Hence a skipped chunk, one whose
    bound is at most a threshold, holds no pattern above it: the pruned scan equals the
    unpruned one on everything kept above that threshold. Chunks not bounded when
    ``deadline`` (a :func:`time.time` value) passes get ``+inf`` (never skipped).

    With ``bar`` (the threshold a skipped chunk must stay under), a chunk whose own bound
    is above it is split into *sub-chunks* along the features outside its prefix, in the
    branch-and-bound search's order (:func:`pcfair.patterns.search_types.search_order`:
    sensitive first, then the tree order where the circuit is a tree model), each state of
    the next feature one sub-chunk (excluded; in ``y`` with a value; for a sensitive one
    also in ``x`` with a value), depth first, up to ``budget`` bound evaluations per chunk
    (default: one per :data:`SUBCHUNK_ROWS_PER_BOUND` rows of its table;
    :func:`_subchunk_bound`). The sub-chunks of a node partition its patterns (every pattern
    gives the next feature exactly one state), so the largest bound over a partition's
    leaves bounds the chunk too; where every leaf is under ``bar``, so is the chunk's value
    here, and :func:`scan` skips it. The chunk's table is still scanned whole where it is not
    skipped. Chunks are split nearest the bar first, and splitting stops after
    :data:`SUBCHUNK_TRIALS` chunks split in vain.
    """
    from pcfair.patterns.bounds import select_bound  # the bounds import the quotient engine

    try:
        bound = select_bound(circuit, plan.decision, plan.favorable)
    except (OptionError, StructureError):
        return None
    from pcfair.patterns.search_types import search_order

    axes = plan.nonsensitive[: plan.prefix]
    below = [v for v in search_order(circuit, plan.decision, plan.favorable,
                                     list(plan.sensitive)) if v not in axes]
    free = [v for v in plan.features if v not in axes]
    sens = set(plan.sensitive)
    if budget is None:
        budget = plan.chunk_rows() // SUBCHUNK_ROWS_PER_BOUND
    out = np.full(len(chunks), np.inf)
    for i, prefix in enumerate(chunks):
        if deadline is not None and time.time() > deadline:
            return out
        node = bound.node({}, _chunk_y(axes, prefix), free, sens)
        out[i] = -1.0 if node is None else node.ub
    if bar is None:
        return out
    tried = skipped = 0
    for i in np.argsort(out, kind="stable"):  # the chunks nearest the bar first
        if not np.isfinite(out[i]) or _below(out[i], bar):
            continue
        if (deadline is not None and time.time() > deadline) or \
                (not skipped and tried >= SUBCHUNK_TRIALS):
            break
        out[i] = _subchunk_bound(bound, plan, _chunk_y(axes, chunks[i]), free, below, sens,
                                 bar, out[i], budget)
        tried += 1
        skipped += _below(out[i], bar)
    return out


def _chunk_y(axes, prefix: tuple[int, ...]) -> dict:
    """The ``y`` of a chunk's prefix (state ``s > 0``: value ``s − 1``; 0: excluded)."""
    return {v: s - 1 for v, s in zip(axes, prefix) if s > 0}


def _subchunk_bound(bound, plan: LatticePlan, y: dict, free: list[int], below, sens: set,
                    bar: float, ub: float, budget: int) -> float:
    """A chunk's bound from its sub-chunks (:func:`chunk_bounds`), or ``ub`` where the
    search cannot show that every sub-chunk is under ``bar``.

    Depth first over the features ``below`` (those outside the chunk's prefix, split in
    this order; ``x`` and ``y`` grow as features are put in them): a sub-chunk under
    ``bar`` (or with no extension of positive probability) is a leaf; one above it is split
    on the next feature. The search gives up, returning ``ub``, at the first sub-chunk
    above ``bar`` with no feature left to split on or once ``budget`` evaluations are spent
    (then the chunk is scanned anyway, so the finer value is not worth more evaluations).
    Otherwise every
    leaf is under ``bar``, and their largest bound (≤ ``bar``) is returned: it bounds every
    pattern of the chunk (the leaves partition them).
    """
    stack = [({}, y, free, 0)]
    worst = -1.0
    spent = 0
    while stack:
        x0, y0, free0, k = stack.pop()
        if k == len(below):
            return ub  # a sub-chunk above the bar with nothing left to split
        v = below[k]
        rest = [w for w in free0 if w != v]
        card = plan.cards[v]
        for state in range(2 * card + 1 if v in sens else card + 1):
            if spent >= budget:
                return ub
            x1, y1 = x0, y0
            if 0 < state <= card:
                y1 = {**y0, v: state - 1}
            elif state > card:
                x1 = {**x0, v: state - card - 1}
            node = bound.node(x1, y1, rest, sens)
            spent += 1
            if node is None:
                continue
            if _below(node.ub, bar):
                worst = max(worst, node.ub)
            else:
                stack.append((x1, y1, rest, k + 1))
    return worst


# ------------------------------------------------------------------------------- the engine
def probability_floor(circuit: Circuit) -> float:
    """The least ``P(x, y)`` a scan of ``circuit`` scores: 0.0 (every defined pattern) where
    the model's smallest positive probability ``L``
    (:func:`~pcfair.inference.smallest.log_smallest_probability`, a proved lower bound) is at
    least ``F`` = :data:`~pcfair.patterns.scores.PROBABILITY_FLOOR`, else ``F``.

    Theorem. (a) If ``L ≥ F``, every chunk-table entry is 0 exactly when the event it is the
    mass of has probability 0, every cell mass of a leaf is 0 exactly when its pattern is
    undefined, and every score is exact to relative rounding. (b) If ``L < F``, every pattern
    whose computed ``P(x, y)`` is at least ``F`` has its four masses ``P(δ, x, y)``,
    ``P(δ, y)``, hence its Δ, within a relative ``1e-21`` of the values in exact arithmetic (on
    top of the rounding of case (a)); those below are the ones left out. Its divergence also
    reads ``P(δ, y, ¬x)``, which may lie below the floor: a scan with a floor is incomplete,
    and :func:`pcfair.patterns._lattice_engine.run_lattice` computes the divergences it reports
    from log-space queries.

    Proof. An entry is the normalised marginal of an event that fixes every variable but the
    absent prefix features, ``exp(log P(e) − log Z)`` from a log-space marginal: positive
    exactly when the event holds a positive complete assignment, and then at least ``L`` (a
    sum of such probabilities). (a) With ``L ≥ F > 2.3e-308`` every positive entry, and so
    every partial sum of the walk and of the closure (sums of non-negative doubles, each at
    least its largest term), lies in the normal range, where each addition rounds with a
    relative error of at most 2⁻⁵³; a zero sum has only zero terms. (b) An entry below the
    normal range rounds with an absolute error of at most 2⁻¹⁰⁷⁵ (a subnormal's half-ulp, or
    to 0); a mass sums at most ``N < 2⁴⁰`` entries of the chunk (``max_bytes`` far below a
    TiB), so it carries an absolute error of at most ``2⁴⁰·2⁻¹⁰⁷⁵ < 3e-312`` besides relative
    rounding, which is less than ``3e-22`` of any mass ``≥ F = 1e-290``. Both conditionals of a
    pattern have denominators ``P(x, y) ≤ P(y)``, so at least ``F``. ∎

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> def model(p):
    ...     return b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [1 - p, p]), .5),
    ...                                (b.indicator("d", 0), b.categorical("s", [.5, .5]), .5)]))
    >>> probability_floor(model(1e-12)), probability_floor(model(1e-320))
    (0.0, 1e-290)
    """
    low = log_smallest_probability(circuit)
    return 0.0 if low >= math.log(PROBABILITY_FLOOR) else PROBABILITY_FLOOR


@dataclass
class ScanResult:
    """A whole scan: the merged result, completeness and statistics."""

    result: ChunkResult
    complete: bool
    plan: LatticePlan
    stats: dict
    bits: np.ndarray | None = None    # the summaries' bitmap (query.summaries)
    picked: np.ndarray | None = None  # scores of query.points


@dataclass(frozen=True)
class ScanRun:
    """How a :func:`scan` runs (what it computes is its :class:`LatticeQuery`); checked
    where it is made.

    - ``max_bytes``: the memory budget of one chunk (:func:`make_plan`) and of the summaries'
      bitmap;
    - ``n_jobs``, ``executor``: chunks run serially, on ``n_jobs`` local processes, or on
      ``executor`` (any ``concurrent.futures.Executor`` or a ``dask.distributed.Client``; see
      :func:`pcfair.patterns.executors.map_chunks`);
    - ``deadline``: a :func:`time.time` value (shared with the caller; None: no limit) that
      stops the scan, whose result is then incomplete;
    - ``progress``: a progress bar over the chunks (None: when stderr is a terminal);
    - ``min_chunks``: split the lattice at least that finely (more, smaller tasks; the answer
      does not change);
    - ``sink``: receives each chunk's listing (the arrays of :attr:`ChunkResult.listing`) as
      the chunk finishes, and the listing is not kept: a set of any size streams through
      bounded memory;
    - ``plan``: the plan of an earlier scan of the same model (replaces the planning);
    - ``until_witness``: stop at the first chunk that finds a pattern at the first threshold
      (a certification's witness): the result is then complete for the question "is there a
      pattern", not for the others;
    - ``handover``: seconds per listed pattern, the caller's cost of handing one over, kept
      within the deadline: chunks stop at half the time left, and no new chunk starts once
      the listing's hand-over would take the rest;
    - ``prune``: skip chunks by their bound (:func:`chunk_bounds`), one of
      :data:`PRUNE_MODES` (see :func:`scan`).

    >>> ScanRun(n_jobs=2, prune="threshold").prune
    'threshold'
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    n_jobs: int = 1
    executor: Any = None
    deadline: float | None = None
    progress: bool | None = None
    min_chunks: int = 1
    sink: Callable | None = None
    plan: LatticePlan | None = None
    until_witness: bool = False
    handover: float = 0.0
    prune: str | None = None

    def __post_init__(self):
        if self.prune not in PRUNE_MODES:
            raise OptionError(f"prune must be one of {PRUNE_MODES}, not {self.prune!r}")

    @property
    def parallel(self) -> bool:
        """Whether chunks run outside this process."""
        return self.executor is not None or self.n_jobs != 1


def _summary_bitmap(plan: LatticePlan, query: LatticeQuery, max_bytes: int
                    ) -> np.ndarray | None:
    """The whole lattice's bitmap of a summaries query that runs in several chunks (None
    with one chunk, whose part is the whole bitmap, or without summaries);
    :class:`LatticeTooLarge` where it does not fit ``max_bytes``."""
    if not query.summaries:
        return None
    need = summary_bytes(plan, len(query.deltas))
    if need is None:
        raise LatticeTooLarge(f"maximal and minimal patterns are computed for at most 15 "
                              f"thresholds in one pass, not {len(query.deltas)}")
    if need > max_bytes:
        raise LatticeTooLarge(
            f"maximal and minimal patterns need a bitmap of the whole lattice "
            f"({plan.num_points:,} points): about {need / 2**20:,.0f} MiB "
            f"({need:,} bytes), over the budget of {max_bytes / 2**20:,.0f} MiB: raise "
            "max_bytes; counts, top-k, Pareto fronts and certification stream in bounded "
            "memory whatever the model")
    return None if plan.prefix == 0 else np.zeros(plan.num_points,
                                                   summary_word(len(query.deltas)))


def _visit_order(circuit: Circuit, plan: LatticePlan, query: LatticeQuery, prune: str | None,
                 deadline: float | None) -> tuple[list, np.ndarray | None, int, float]:
    """The chunks a scan visits, in order, with their bounds (None: not bounded), how many
    the bounds skip, and the seconds spent bounding (``prune``: :func:`scan`)."""
    chunks = plan.chunks()
    if prune is None or query.summaries or query.points is not None \
            or not 1 < len(chunks) <= MAX_BOUNDED_CHUNKS:
        return chunks, None, 0, 0.0
    t0 = time.perf_counter()
    lo = min(query.deltas) + THRESHOLD_ATOL
    ubs = chunk_bounds(circuit, plan, chunks, deadline,
                       bar=lo if prune == "threshold" else None)
    seconds = time.perf_counter() - t0
    if ubs is None:
        return chunks, None, 0, seconds
    order = np.argsort(-ubs, kind="stable")  # the most promising chunks first
    if prune == "threshold":
        order = np.array([i for i in order if not _below(ubs[i], lo)], np.int64)
    return [chunks[i] for i in order], ubs[order], len(chunks) - len(order), seconds


class _Collector:
    """What a scan keeps of its chunks as they finish (:func:`scan`): the results, the
    bitmap's parts, the points' scores, the running top-k bar, the listing's count."""

    def __init__(self, plan: LatticePlan, query: LatticeQuery, how: ScanRun, chunks: list,
                 top_bar: np.ndarray | None):
        self.plan, self.query, self.how, self.chunks = plan, query, how, chunks
        self.bits = _summary_bitmap(plan, query, how.max_bytes)
        self.grid = None if self.bits is None else self.bits.reshape(plan.shape)
        self.picked = None if query.points is None else np.full(len(query.points), np.nan)
        self.top_bar = top_bar
        self.running = ChunkResult(counts=np.zeros(0, np.int64)).top
        self.fixed = {v: i for i, v in enumerate(plan.nonsensitive[: plan.prefix])}
        self.sub_shape = [n for v, n in zip(plan.features, plan.shape) if v not in self.fixed]
        self.results: list[ChunkResult] = []
        self.partial: list[int] = []
        self.pruned: list[int] = []
        self.listed = 0

    def __call__(self, index: int, part: ChunkResult | None) -> bool:
        """Keep chunk ``index``'s result; True stops the scan."""
        if part is None:  # the chunk met the deadline before its table was made
            return False
        query, how = self.query, self.how
        if part.partial:
            self.partial.append(index)
        if part.pruned:
            self.pruned.append(index)
        elif self.top_bar is not None:
            self.running = _best_k([self.running, part.top], query.k_top)
            if len(self.running[0]) == query.k_top:
                self.top_bar[0] = float(self.running[0].min())
        self._place_bits(index, part)
        if part.picked is not None:
            found = ~np.isnan(part.picked)
            self.picked[found] = part.picked[found]
            part.picked = None
        self.listed += len(part.listing[0])
        if how.sink is not None and query.listing:
            how.sink(part.listing)
            part.listing = ChunkResult(counts=part.counts).listing
        self.results.append(part)
        if how.handover and how.deadline is not None and \
                self.listed * how.handover >= how.deadline - time.time():
            return True  # what is listed takes the time left to hand over
        return how.until_witness and bool(part.counts[0] > 0)

    def _place_bits(self, index: int, part: ChunkResult) -> None:
        if part.bits is not None and self.grid is None:
            self.bits = part.bits
        elif part.bits is not None:  # its disjoint part of the bitmap
            where = tuple(self.chunks[index][self.fixed[v]] if v in self.fixed
                          else slice(None) for v in self.plan.features)
            self.grid[where] = part.bits.reshape(self.sub_shape)
        part.bits = None


def scan(problem: Problem, query: LatticeQuery, how: ScanRun = ScanRun()) -> ScanResult:
    """Scan every pattern of ``problem`` (its circuit, decision, favourable value and
    sensitive variables; any smooth, decomposable circuit, normalised or not) for ``query``,
    run as ``how`` says (see the module docstring).

    A chunk stopped by the deadline keeps what it found (:attr:`ChunkResult.partial`): the
    result holds it and is marked incomplete; ``stats`` counts the chunks done and partial.

    With ``query.summaries`` the result holds the summaries' bitmap (:attr:`ScanResult.bits`,
    see :func:`summary_bytes`); with ``query.points`` their scores (:attr:`ScanResult.picked`).

    ``how.prune`` skips chunks by their bound (:func:`chunk_bounds`; ignored with summaries
    or points, where no bound applies, and beyond :data:`MAX_BOUNDED_CHUNKS` chunks),
    visiting the others by decreasing bound:
    ``"threshold"`` skips those whose bound is at most the smallest δ, which hold no
    pattern to count, list, rank by divergence or put on a front (exact for every part of
    the result but the statistics ``defined`` and ``best``); ``"topk"`` skips, as the scan
    goes, those whose bound is at most the ``k_top``-th best ``|Δ|`` found so far (exact
    for the top-k heap and ``best``; the counts then cover the visited chunks only).
    ``stats["chunks_pruned"]`` counts the skipped chunks (done, for completeness), and
    ``stats["bound_seconds"]`` the time spent bounding them.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> run = scan(Problem(pc, 0, 1, [1]), LatticeQuery(deltas=(0.1,)))
    >>> int(run.result.counts[0]), round(run.result.best, 4), run.complete
    (2, 0.25, True)
    """
    circuit, decision, favorable, sensitive = problem
    require_tractable_marginals(circuit)
    log_z = log_normalizer(float(circuit.log_marginal(None)[0]))
    t0 = time.perf_counter()
    floor = probability_floor(circuit)
    if floor != query.floor:
        query = replace(query, floor=floor)
    plan = how.plan or make_plan(circuit, decision, favorable, list(sensitive), how.max_bytes,
                                 min_chunks=max(how.min_chunks, 64 if how.parallel else 1))
    prune = None if how.prune == "topk" and not query.k_top else how.prune
    chunks, ubs, n_pruned, bounding = _visit_order(circuit, plan, query, prune, how.deadline)
    chunk_deadline = how.deadline
    if how.handover and query.listing and how.deadline is not None:
        chunk_deadline = time.time() + 0.5 * max(0.0, how.deadline - time.time())
    # worker processes get the circuit as plain data; in-process chunks share the object
    model = to_dict(circuit) if how.parallel else circuit
    tasks = [(model, plan, prefix, query, log_z, 2048, chunk_deadline) for prefix in chunks]
    top_bar = None
    if prune == "topk" and ubs is not None:
        # the bar rises as chunks finish (shared in this process; a worker process gets the
        # bar as it was when the task was sent, which is lower: sound)
        top_bar = np.zeros(1)
        tasks = [task + (None, (float(ub), top_bar)) for task, ub in zip(tasks, ubs)]
    collect = _Collector(plan, query, how, chunks, top_bar)
    first = 0
    if (query.k_div or query.pareto) and query.points is None and len(chunks) > 1:
        # a pilot: the first chunk (the prefix's absent states, the most probable patterns
        # and largest divergences; with pruning, the chunk of the largest bound) runs here
        # first, and seeds the others' heaps and fronts (any chunk's are sound seeds)
        found: list = []
        map_chunks(scan_chunk, [(circuit, *tasks[0][1:7])], lambda i, part: found.append(part),
                   progress=how.progress, deadline=how.deadline, desc="lattice pilot chunk")
        pilot = found[0] if found else None
        if pilot is not None:
            seed = ChunkResult(counts=pilot.counts, div=pilot.div, fronts=pilot.fronts)
            tasks = [task[:7] + (seed,) + task[8:] for task in tasks]
        collect(0, pilot)
        first = 1
    run = map_chunks(scan_chunk, tasks[first:], lambda i, part: collect(i + first, part),
                     executor=how.executor, n_jobs=how.n_jobs, deadline=how.deadline,
                     progress=how.progress, desc="lattice chunks")
    results, partial = collect.results, collect.partial
    witness = how.until_witness and any(r.counts[0] > 0 for r in results)
    # with a floor, the patterns below it were not scored: complete only with a witness
    complete = witness or (run.complete and len(results) == len(chunks) and not partial
                           and not floor)
    bits = collect.bits
    if query.summaries and bits is None:  # the one chunk met the deadline: nothing known
        bits = np.zeros(plan.num_points, summary_word(len(query.deltas)))
    merged = merge(results, query)
    stats = {"lattice_points": plan.num_points, "defined_patterns": merged.defined,
             "chunks": len(chunks) + n_pruned,
             "chunks_done": len(results) - len(partial) - len(collect.pruned),
             "chunks_partial": len(partial), "chunks_pruned": n_pruned + len(collect.pruned),
             "bound_seconds": bounding,
             "seconds": time.perf_counter() - t0, "chunk_bytes": plan.chunk_bytes()}
    if floor:
        stats["probability_floor"] = floor
        stats["smallest_probability_log10"] = log_smallest_probability(circuit) / math.log(10)
    return ScanResult(merged, complete, plan, stats, bits, collect.picked)


def summary_bytes(plan: LatticePlan, n_deltas: int) -> int | None:
    """Bytes of the summaries' bitmap for ``n_deltas`` thresholds (one word a lattice point,
    :func:`pcfair.patterns.summaries.summary_word`); None beyond 15 thresholds."""
    word = summary_word(n_deltas)
    return None if word is None else plan.num_points * word.itemsize


def summary_counts(run: ScanResult) -> dict[str, np.ndarray]:
    """Numbers of maximal and minimal patterns at each threshold of a scan with
    ``query.summaries`` (the bitmap's scratch bits are overwritten)."""
    out = extension_summaries(run.bits, run.plan.shape, _axis_cards(run.plan),
                              len(run.result.counts))
    return {kind: counts for kind, (counts, _) in out.items()}


def summary_patterns(circuit: Circuit, run: ScanResult, kind: str, query: LatticeQuery, *,
                     n_jobs: int = 1, executor=None, scores: bool = True
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """Global indices and signed scores of the ``kind`` (maximal or minimal) patterns at the
    first threshold of a scan ``run`` of ``circuit`` with ``query.summaries``. The scores come
    from a second pass over the chunks that hold them, with ``run``'s plan and arithmetic: the
    very scores that put them in Σ (None with ``scores=False``: no second pass)."""
    _, idx = extension_summaries(run.bits, run.plan.shape, _axis_cards(run.plan),
                                 len(run.result.counts), kinds=(kind,), collect=0)[kind]
    if not scores:
        return idx, None
    if len(idx) == 0:
        return idx, np.zeros(0)
    plan = run.plan
    again = scan(Problem(circuit, plan.decision, plan.favorable, list(plan.sensitive)),
                 LatticeQuery(deltas=query.deltas[:1], min_support=query.min_support,
                              points=idx),
                 ScanRun(n_jobs=n_jobs, executor=executor, plan=plan, progress=False))
    return idx, again.picked


def _axis_cards(plan: LatticePlan) -> tuple[int, ...]:
    return tuple(plan.cards[v] for v in plan.features)


@dataclass(frozen=True)
class ScanCost:
    """A scan's cost model, measured by :func:`probe_cost`: one process spends
    ``per_chunk`` seconds on each chunk (its set-up, in Python) and ``per_point`` seconds on
    each pattern (its table of marginal queries, the walk, the scoring)."""

    per_chunk: float
    per_point: float

    def seconds(self, points: float, chunks: int) -> float:
        """Seconds of one process for ``points`` patterns in ``chunks`` chunks."""
        return chunks * self.per_chunk + points * self.per_point

    def chunks_for(self, points: float, seconds: float) -> int:
        """Chunks of about ``seconds`` each for ``points`` patterns (at least one)."""
        return max(1, math.ceil(points * self.per_point / max(seconds, 1e-9)))


def probe_cost(circuit: Circuit, plan: LatticePlan, query: LatticeQuery, log_z: float, *,
               seconds: float = 0.25, points: int = 1 << 20) -> ScanCost:
    """The scan's :class:`ScanCost` for ``query``, measured on a few chunks in about
    ``seconds``.

    A chunk costs a fixed set-up plus a cost per pattern, and small chunks are dominated by
    the former (about 8 ms a chunk, against 0.4 ns a pattern on German), so the probe times
    chunks of growing size: from at most about ``points`` patterns (a deeper prefix than
    ``plan``'s) it moves to the next coarser split (one prefix axis fewer, never coarser than
    ``plan``) while a chunk takes under a tenth of ``seconds`` and the next is predicted to
    take under a third; then it times more chunks at the size reached until ``seconds`` have
    passed or they hold as many patterns as the lattice. Prefixes are drawn at random
    (seeded); a first chunk loads the compiled kernels and is not timed; the prefixes are
    never listed, so this costs the same on any lattice. The cost per pattern is the slope
    between the medians of the two largest sizes timed (the set-up is what is left at the
    largest), or, with one size, its time over its patterns (set-up included: an upper
    bound).
    """
    cards = [plan.cards[v] + 1 for v in plan.nonsensitive]
    per, depth = float(plan.num_points), 0
    while depth < len(cards) and per > points:
        per /= cards[depth]
        depth += 1
    depth = max(depth, plan.prefix)
    rng = np.random.default_rng(0)
    query = LatticeQuery(deltas=query.deltas, min_support=query.min_support,
                         k_top=query.k_top, k_div=query.k_div, pareto=query.pareto)
    times: dict[float, list[float]] = {}

    def timed(depth: int) -> float:
        """Time one chunk at a random prefix of ``depth`` axes; its seconds."""
        probe = _replace(plan, depth)
        prefix = tuple(int(rng.integers(0, c)) for c in cards[:depth])
        t0 = time.perf_counter()
        scan_chunk(circuit, probe, prefix, query, log_z)
        spent = time.perf_counter() - t0
        times.setdefault(probe.num_points / probe.num_chunks, []).append(spent)
        return spent

    scan_chunk(circuit, _replace(plan, depth), (0,) * depth, query, log_z)  # load the kernels
    t_start = time.perf_counter()
    spent = max(timed(depth), timed(depth))
    while (depth > plan.prefix and spent < seconds / 10
           and spent * cards[depth - 1] < seconds / 3):
        depth -= 1
        spent = max(timed(depth), timed(depth))
    size = max(times)
    while time.perf_counter() - t_start < seconds and len(times[size]) * size < plan.num_points:
        timed(depth)
    sizes = sorted(times)
    big, t_big = sizes[-1], float(np.median(times[sizes[-1]]))
    if len(sizes) > 1:
        small, t_small = sizes[-2], float(np.median(times[sizes[-2]]))
        slope = (t_big - t_small) / (big - small)
        if slope > 0:
            return ScanCost(per_chunk=max(0.0, t_big - slope * big), per_point=slope)
    return ScanCost(per_chunk=0.0, per_point=t_big / big)


def estimate(circuit: Circuit, decision: int, favorable: int, sensitive: list[int], *,
             max_bytes: int = DEFAULT_MAX_BYTES, query: LatticeQuery | None = None,
             seconds: float = 0.25) -> dict:
    """Estimated time and memory of a full scan for ``query`` (default: a certification),
    from :func:`probe_cost` (about ``seconds`` of small chunks).

    Returns a dict with ``lattice_points``, ``chunks`` and ``chunk_bytes`` (of the plan a scan
    would use), ``summary_bytes`` (the bitmap of maximal/minimal patterns at 3 thresholds,
    :func:`summary_bytes`), ``points_per_second`` and ``estimated_seconds`` (one process).
    Raises :class:`~pcfair.errors.LatticeTooLarge` when one chunk does not fit ``max_bytes``.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> est = estimate(pc, 0, 1, [1], seconds=0.01)
    >>> est["lattice_points"], est["estimated_seconds"] > 0
    (5, True)
    """
    require_tractable_marginals(circuit)
    log_z = log_normalizer(float(circuit.log_marginal(None)[0]))
    plan = make_plan(circuit, decision, favorable, sensitive, max_bytes)
    query = LatticeQuery(deltas=(0.0,), k_top=1) if query is None else query
    cost = probe_cost(circuit, plan, query, log_z, seconds=seconds)
    total = cost.seconds(plan.num_points, plan.num_chunks)
    return {"lattice_points": plan.num_points, "chunks": plan.num_chunks,
            "chunk_bytes": plan.chunk_bytes(), "summary_bytes": summary_bytes(plan, 3),
            "points_per_second": plan.num_points / total, "estimated_seconds": total}

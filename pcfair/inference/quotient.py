"""Max and min of the quotient of two compatible deterministic circuits, and Lemma 2 bounds.

The pairwise pass (``circuit-layer.md`` §5, ``pc-certifier.md`` §4): for circuits ``P`` and ``Q``
that are smooth, deterministic and structured-decomposable on one vtree,

    R(n, m) = max over assignments x of the common support of  log p_n(x) − log q_m(x),

computed by a memoised recursion over pairs of nodes with the same scope: a sum pairs each
of its elements with the other side, products pair their factors by scope, and input nodes
compare value by value. The recursion is compiled once per circuit pair into a flat *plan*
(:class:`PairPlan`) by a numba builder (:mod:`._pair_builder`; the reference Python builder
stays available as ``builder="python"``), and a numba kernel evaluates the plan for each new
evidence, re-evaluating only the entries whose scope holds a variable whose state changed.

A circuit paired with itself under ``D = d`` and ``D = ¬d`` (the bounds and the search) gets a
plan *pruned* for that decision (:func:`self_plan`): pairs that share no support whatever the
evidence are never compiled, which makes it near-linear in the circuit (``nltcs.psdd``: about
20 k entries instead of 4.3 M; ``msnbc.psdd``: about 100 k instead of 53 M). The same compiled
walk in the Boolean semiring decides the pairwise tier of the determinism check.

Variables are free (maximised), observed (evidence; ``P`` and ``Q`` may observe different values,
as ``D = d`` and ``D = ¬d`` do), or marginalised. Marginalised variables are maximised too (the
always-sound rule: an upper bound by the mediant inequality) except in pairs whose whole vtree
node is observed, or that sit on the vtree's right-most path with no free variable and under
ancestors whose primes are mutually exclusive; there the exact ratio of marginals is used. The
``exact`` flag says whether any marginalised variable was maximised.

Support policy: values are maxima over the *common* support of the two sides.
:func:`conditional_bounds` checks, by counting supports, whether some completion has probability
zero under one side only, and then widens its bounds to 0 or 1 so that they stay sound.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit._scopes import bits
from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.derived import derived, peek, remember
from pcfair.circuit.properties import (
    _allowed_values,
    _syntactically_exclusive,
    compatible,
    node_vtree_nodes,
)
from pcfair.circuit.vtree import Vtree
from pcfair.errors import EvidenceError, OptionError, StructureError, VariableError
from pcfair.inference import _pair_builder as PB
from pcfair.inference import _quotient_kernels as K
from pcfair.inference.marginals import kernel_args, node_log_values


# ---------------------------------------------------------------------------------- the plan
class PairPlan:
    """The compiled pairwise recursion over two compatible circuits (built lazily per root pair).

    Parameters
    ----------
    p, q : Circuit
        Smooth, structured-decomposable circuits on the same vtree (checked by the caller).
    vtree : Vtree
        Their common vtree (used for the exact ratio-of-marginals shortcuts).
    path_primes : tuple, optional
        ``(exclusive, distinct_exclusive, shared_ok)`` from
        :func:`rightmost_path_primes`, combined for both circuits.
        Without it the right-most-path shortcuts are off (the pass stays sound).
    relaxed : array of bool or sequence of variables, optional
        The variables on which the two sides may differ (observed with different values, or
        relaxed by the marginal-determinism test): the decision ``D`` for a self-plan of the
        bounds. Given, the plan is *statically pruned* (see :mod:`._pair_builder`): pairs
        that share no support whatever the evidence are never compiled, which keeps
        self-plans near-linear in the circuit; evaluations must then differ on these
        variables only. None (default): no pruning, any evidence.
    builder : {"numba", "python"}, default "numba"
        The compiled builder, or the reference Python builder (one pair at a time; quadratic,
        kept for tests and benchmarks; never prunes).
    deterministic : bool, default False
        The circuit (``p is q``) is known deterministic (verified or declared): a pruned plan
        then pairs each element of a sum with itself only, under vtree nodes with no relaxed
        variable (different elements share no support there).

    Each evaluation keeps its results in a *slot* keyed by the variables on which the two
    sides' evidence differs; the next evaluation with the same key re-evaluates only the
    entries whose scope holds a variable whose state changed (see
    :func:`._quotient_kernels.plan_update`).
    """

    _MAX_SLOTS = 4

    def __init__(self, p: Circuit, q: Circuit, vtree: Vtree, path_primes: tuple | None = None,
                 *, relaxed=None, builder: str = "numba", deterministic: bool = False):
        if builder not in ("numba", "python"):
            raise OptionError(f"builder must be 'numba' or 'python', not {builder!r}")
        self.p, self.q, self.vtree = p, q, vtree
        m = vtree.num_nodes
        on_path = vtree.on_rightmost_path
        path = np.flatnonzero(on_path)[::-1]  # root first
        # short_ok[u]: summing out vars(u) leaves every strict path ancestor's element choice
        # unique (exclusive primes, or shared primes whose subs stay exclusive);
        # merge_ok[v]: the same for vars(right(v)), and v's distinct primes are exclusive
        self.short_ok = np.zeros(m, bool)
        self.merge_ok = np.zeros(m, bool)
        if path_primes is not None:
            excl, distinct, shared_ok = path_primes

            def ancestors_ok(u: int, upto: int) -> bool:
                return all(excl[a] or (distinct[a] and shared_ok[a, u]) for a in path[:upto])

            for k, u in enumerate(path):
                self.short_ok[u] = ancestors_ok(int(u), k)
                if not vtree.is_leaf(int(u)) and distinct[u]:
                    self.merge_ok[u] = ancestors_ok(int(vtree.right[u]), k)
        self.card = p.variables.cardinalities
        self.builder = builder
        nv = p.num_variables
        if relaxed is None:
            self.relaxed = None
        else:
            mask = np.zeros(nv, bool)
            r = np.asarray(relaxed)
            if r.dtype == bool:
                mask[:] = r
            else:
                mask[r.astype(int)] = True
            self.relaxed = mask
        self.prune = self.relaxed is not None and builder == "numba"
        self.deterministic = bool(deterministic) and q is p
        self._vt_args = (
            vtree.left, vtree.right, vtree.var, vtree.parent,
            vtree.leaf_of.astype(np.int32), on_path, self.short_ok, self.merge_ok,
        )
        self._impl = _PythonBuilder(self) if builder == "python" else _CompiledBuilder(self)
        self._kernel = None
        self._slots: dict = {}
        self._lock = threading.RLock()  # slots are shared state: one evaluation at a time

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.update(_lock=None, _slots={}, _kernel=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # ----------------------------------------------------------------------- building
    def entry(self, tp: int, tq: int) -> int:
        """The entry index of the pair of terms ``(tp, tq)``, compiling it if needed."""
        return int(self.entries([(tp, tq)])[0])

    def entries(self, pairs) -> np.ndarray:
        """Entry indices of several pairs of terms (compiled in one call)."""
        with self._lock:
            n0 = self.num_entries
            out = self._impl.entries(pairs)
            if self.num_entries != n0:
                self._kernel = None
                self._slots.clear()
            return out

    def arrays(self) -> tuple:
        """``(e_kind, e_pnode, e_qnode, e_var, e_vt, opt_ptr, opt_const, och_ptr, och)``."""
        return self._impl.arrays()

    @property
    def _merge_arrays(self) -> tuple:
        """``(m_ptr, m_child, m_gp, m_gq, g_ptr, g_side, g_logw, g_sub)``."""
        return self._impl.merge_arrays()

    @property
    def num_entries(self) -> int:
        return self._impl.num_entries

    def kernel_plan(self) -> tuple:
        """``(A, grp_ptr, grp_ent)``: the plan tuple the kernels take and the entries grouped
        by the vtree node of their scope (for incremental re-evaluation)."""
        if self._kernel is None:
            a = self.arrays()
            flags, svt = self._impl.extra_arrays()
            A = (*a, *self._merge_arrays, flags, svt)
            g = svt.astype(np.int64) + 1
            grp_ent = np.argsort(g, kind="stable").astype(np.int64)
            grp_ptr = np.zeros(self.vtree.num_nodes + 2, np.int64)
            np.cumsum(np.bincount(g, minlength=self.vtree.num_nodes + 1), out=grp_ptr[1:])
            self._kernel = (A, grp_ptr, grp_ent)
        return self._kernel

    # ----------------------------------------------------------------------- evaluation
    def _check(self, ev_p: np.ndarray, ev_q: np.ndarray, relaxed: np.ndarray) -> None:
        if np.any((ev_p >= 0) != (ev_q >= 0)):
            raise EvidenceError("each variable must be observed on both sides or on neither")
        if self.prune:
            differ = (ev_p != ev_q) | relaxed
            if np.any(differ & ~self.relaxed):
                raise EvidenceError(
                    "this plan was pruned for evidence that differs between the two sides on "
                    f"variables {np.flatnonzero(self.relaxed).tolist()} only")

    def _slot(self, ev_p: np.ndarray, ev_q: np.ndarray, free: np.ndarray,
              relaxed: np.ndarray) -> tuple:
        """The slot for this evidence, brought up to date (see the class docstring)."""
        A, grp_ptr, grp_ent = self.kernel_plan()
        differ = np.flatnonzero(ev_p != ev_q)
        key = (differ.tobytes(), ev_p[differ].tobytes(), ev_q[differ].tobytes())
        slot = self._slots.pop(key, None)
        if slot is None:
            n, nv = self.num_entries, len(ev_p)
            slot = (np.zeros(nv, np.int32), np.zeros(nv, np.int32), np.zeros(nv, np.bool_),
                    np.zeros(nv, np.bool_), np.zeros(1, np.bool_), np.empty(n),
                    np.empty(n, np.bool_), np.empty(n, np.int64), np.empty(n, np.bool_))
            while len(self._slots) >= self._MAX_SLOTS:
                self._slots.pop(next(iter(self._slots)))
        self._slots[key] = slot  # most recently used last
        K.plan_update(A, grp_ptr, grp_ent, kernel_args(self.p), kernel_args(self.q), self.card,
                      self._vt_args, ev_p, ev_q, free, relaxed, *slot)
        return slot

    def _prepare(self, ev_p, ev_q, free, relaxed):
        ev_p = np.ascontiguousarray(ev_p, np.int32)
        ev_q = np.ascontiguousarray(ev_q, np.int32)
        free = np.ascontiguousarray(free, np.bool_)
        relaxed = (np.zeros(len(free), np.bool_) if relaxed is None
                   else np.ascontiguousarray(relaxed, np.bool_))
        self._check(ev_p, ev_q, relaxed)
        return ev_p, ev_q, free, relaxed

    def common_support_count(self, root: int, ev_p: np.ndarray, ev_q: np.ndarray) -> float:
        """Completions (missing values range over their domains) where both sides are
        positive; exact while below 2**53."""
        a = self.arrays()
        out = np.empty(len(a[0]))
        p, q = self.p, self.q
        K.count_plan(a[0], a[3], a[1], a[2], a[5], a[7], a[8], p.kind, p.value, p.param_ptr,
                     p.params, q.kind, q.value, q.param_ptr, q.params, self.card,
                     np.ascontiguousarray(ev_p, np.int32), np.ascontiguousarray(ev_q, np.int32),
                     out)
        return float(out[root])

    def evaluate_all(self, ev_p: np.ndarray, ev_q: np.ndarray, free: np.ndarray,
                     relaxed: np.ndarray | None = None) -> tuple:
        """Evaluate every entry for one evidence (index arrays; ``free`` a boolean mask;
        ``relaxed`` variables use the Boolean marginal-determinism leaf rule).

        Returns ``(value, feasible, choice, marg_free)`` arrays over the entries (copies)."""
        args = self._prepare(ev_p, ev_q, free, relaxed)
        with self._lock:
            return tuple(a.copy() for a in self._slot(*args)[5:])

    def conditional_extremes(self, root: int, d: int, fav: int, ev: np.ndarray,
                             free: np.ndarray) -> tuple[float, bool, float, bool]:
        """For a plan of a circuit against itself: ``(max log P(d,e,u)/P(¬d,e,u), feasible,
        max log P(¬d,e,u)/P(d,e,u), feasible)`` over completions ``u`` of ``free``, in one
        kernel call (what :meth:`evaluate_all` gives with the two decision values swapped)."""
        if self.p is not self.q:
            raise StructureError("conditional_extremes needs a plan of a circuit against itself")
        if self.prune and not self.relaxed[d]:
            raise StructureError(f"this plan was not compiled for the decision variable {d}")
        ev = np.ascontiguousarray(ev, np.int32)
        free = np.ascontiguousarray(free, np.bool_)
        with self._lock:
            return self._conditional_extremes(root, d, fav, ev, free)

    def _conditional_extremes(self, root, d, fav, ev, free):
        A, grp_ptr, grp_ent = self.kernel_plan()
        slots = []
        for a, b in ((fav, 1 - fav), (1 - fav, fav)):
            ev_p, ev_q = ev.copy(), ev.copy()
            ev_p[d], ev_q[d] = a, b
            key = (np.array([d]).tobytes(), ev_p[[d]].tobytes(), ev_q[[d]].tobytes())
            slot = self._slots.get(key)
            if slot is None:
                n, nv = self.num_entries, len(ev)
                slot = (np.zeros(nv, np.int32), np.zeros(nv, np.int32), np.zeros(nv, np.bool_),
                        np.zeros(nv, np.bool_), np.zeros(1, np.bool_), np.empty(n),
                        np.empty(n, np.bool_), np.empty(n, np.int64), np.empty(n, np.bool_))
                while len(self._slots) >= self._MAX_SLOTS:
                    self._slots.pop(next(iter(self._slots)))
                self._slots[key] = slot
            slots.append(slot)
        out = np.empty(4)
        K.conditional_extremes(A, grp_ptr, grp_ent, kernel_args(self.p), self.card,
                               self._vt_args, root, d, fav, ev, free, tuple(slots), out)
        return float(out[0]), bool(out[1]), float(out[2]), bool(out[3])

    def result(self, root: int, state: tuple, free: np.ndarray,
               want_assignment: bool = True) -> "QuotientResult":
        """The :class:`QuotientResult` of entry ``root`` from :meth:`evaluate_all` output."""
        val, ok, choice, mf = state
        assignment = None
        if want_assignment and ok[root]:
            arrs = self.arrays()
            assignment = np.full(len(free), -1, np.int32)
            K.decode_plan(root, arrs[0], arrs[3], arrs[5], arrs[7], arrs[8],
                          self._merge_arrays[0], self._merge_arrays[1], choice, assignment)
            assignment[~free] = -1
            # free variables outside the circuit's scope do not matter; give them value 0
            assignment[free & (assignment < 0)] = 0
        return QuotientResult(
            value=float(val[root]) if ok[root] else float("-inf"),
            feasible=bool(ok[root]),
            exact=not bool(mf[root]),
            assignment=assignment,
        )

    def evaluate(self, root: int, ev_p: np.ndarray, ev_q: np.ndarray, free: np.ndarray,
                 want_assignment: bool = True, relaxed: np.ndarray | None = None
                 ) -> "QuotientResult":
        """Evaluate the plan for one evidence and return entry ``root``'s result."""
        ev_p, ev_q, free, relaxed = self._prepare(ev_p, ev_q, free, relaxed)
        with self._lock:
            slot = self._slot(ev_p, ev_q, free, relaxed)
            return self.result(root, slot[5:], free, want_assignment)

    def supports(self, pairs, relaxed: np.ndarray | None = None, budget: int = -1
                 ) -> np.ndarray:
        """Whether each pair of terms shares support (some ``x`` with ``p(x) > 0`` and
        ``q(x') > 0``, ``x'`` equal to ``x`` off the ``relaxed`` variables): the pairwise pass in
        the Boolean semiring, compiled, with no plan kept, memoised per ``relaxed`` set.

        Returns an int8 array: 1 (they meet), −1 (disjoint), or 0 (undecided: the pair needed
        more than ``budget`` new node pairs; ``budget`` < 0 means no limit)."""
        nv = self.p.num_variables
        mask = np.zeros(nv, np.bool_) if relaxed is None else np.asarray(relaxed, np.bool_)
        if not isinstance(self._impl, _CompiledBuilder):
            self._impl_bool = getattr(self, "_impl_bool", None) or _CompiledBuilder(self)
            cb = self._impl_bool
        else:
            cb = self._impl
        with self._lock:
            return cb.supports(pairs, mask, mask.tobytes(), budget)


class _ScopeIds:
    """Scope bitsets numbered densely (shared by the two circuits of a plan)."""

    def __init__(self):
        self.ids: dict[int, int] = {}
        self.scopes: list[int] = []

    def __call__(self, s: int) -> int:
        k = self.ids.get(s)
        if k is None:
            k = self.ids[s] = len(self.scopes)
            self.scopes.append(s)
        return k


def _circuit_tuple(c: Circuit, vtree: Vtree, table: _ScopeIds) -> tuple:
    """The arrays the compiled builder takes for one circuit (scope ids drawn from ``table``,
    shared by the two circuits of a plan; elements get the id of prime ∪ sub)."""
    scopes = c.scopes()
    sid = np.fromiter((table(s) for s in scopes), np.int64, len(scopes))
    ea, eb = c.edge_a.astype(np.int64), c.edge_b.astype(np.int64)
    sb = np.where(eb >= 0, sid[np.maximum(eb, 0)], -1)
    key = sid[ea] * (1 << 31) + (sb + 1)
    uniq, inv = np.unique(key, return_inverse=True)
    ids = np.empty(len(uniq), np.int64)
    for k, u in enumerate(uniq.tolist()):
        a, b = divmod(u, 1 << 31)
        s = table.scopes[a] | (table.scopes[b - 1] if b > 0 else 0)
        ids[k] = table(s)
    sid_edge = ids[inv.ravel()] if len(uniq) else np.zeros(0, np.int64)
    if len(c.var) and (np.max(np.where(c.kind <= CATEGORICAL, c.var, 0)) >= vtree.num_variables):
        raise StructureError("a variable of the circuit is not in the vtree")
    vt, vt_e = PB.node_vtree_nodes(c.kind, c.var, c.edge_ptr, c.edge_a, c.edge_b,
                                   vtree.leaf_of.astype(np.int64),
                                   vtree.parent.astype(np.int64), vtree.depth.astype(np.int64))
    const = node_log_values(c, np.full(c.num_variables, -1, np.int32))
    return (c.kind, c.var, c.value, c.param_ptr, c.params, c.edge_ptr, c.edge_a, c.edge_b,
            c.edge_logw, sid, sid_edge, const, vt, vt_e)


class _CompiledBuilder:
    """The numba builder's state for one :class:`PairPlan` (see :mod:`._pair_builder`)."""

    def __init__(self, plan: PairPlan):
        self.plan = plan
        p, q, vt = plan.p, plan.q, plan.vtree
        key = ("pair_builder_args", id(vt))
        if q is p:
            cached = peek(p, key)
            if cached is None or cached[0] is not vt:
                table = _ScopeIds()
                P = _circuit_tuple(p, vt, table)
                cached = remember(p, key, (vt, P, table.ids.get(0, -7)))
            _, self.P, self.empty_sid = cached
            self.Q = self.P
        else:
            table = _ScopeIds()
            self.P = _circuit_tuple(p, vt, table)
            self.Q = _circuit_tuple(q, vt, table)
            self.empty_sid = table.ids.get(0, -7)
        self.sc_vt = (vt.on_rightmost_path & plan.short_ok) if plan.prune else np.zeros(
            vt.num_nodes, bool)
        self.mc_vt = plan.merge_ok.copy()
        nv = p.num_variables
        self.relaxed = plan.relaxed if plan.relaxed is not None else np.zeros(nv, bool)
        self.same = q is p
        self.diag_vt = np.zeros(0, bool)
        if plan.prune and plan.deterministic:
            # vtree nodes with no relaxed variable below them (children before parents)
            below = np.zeros(vt.num_nodes, bool)
            for w in range(vt.num_nodes):
                x = vt.var[w]
                below[w] = self.relaxed[x] if x >= 0 else below[vt.left[w]] or below[vt.right[w]]
            self.diag_vt = ~below
        self.S = PB.new_state()
        self.cnt = PB.new_counters()
        self.dead: dict = {}
        self._pj = None
        self._bool: dict = {}
        self._arrays = None

    @property
    def num_entries(self) -> int:
        return int(self.cnt[0])

    def _projections(self, relaxed: np.ndarray, sc_vt: np.ndarray, mc_vt: np.ndarray) -> tuple:
        """The projection arrays of :func:`._pair_builder.build` (``PJ``)."""
        plan, vt = self.plan, self.plan.vtree
        if self._pj is None:
            card = plan.card.astype(np.int64)
            off = np.zeros(len(card), np.int64)
            np.cumsum(card[:-1], out=off[1:])
            n_words = max(1, (int(card.sum()) + 63) // 64)

            def proj(T):
                return PB.projections(T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7], T[8],
                                      T[11], off, card, n_words)

            pp = proj(self.P)
            qp = pp if self.Q is self.P else proj(self.Q)
            # the variables under each vtree node: a range of the in-order leaf sequence
            m = vt.num_nodes
            count = np.zeros(m, np.int64)
            for w in range(m):
                count[w] = 1 if vt.var[w] >= 0 else count[vt.left[w]] + count[vt.right[w]]
            lo = np.zeros(m, np.int64)
            for w in range(m - 1, -1, -1):  # parents after children: walk top-down
                if vt.var[w] < 0:
                    lo[vt.left[w]] = lo[w]
                    lo[vt.right[w]] = lo[w] + count[vt.left[w]]
            vv = np.empty(int(count[m - 1]), np.int64)
            leaves = np.flatnonzero(vt.var >= 0)
            vv[lo[leaves]] = vt.var[leaves]
            self._pj = (pp, qp, off, lo, lo + count, vv)
        pp, qp, off, vlo, vhi, vv = self._pj
        chk = ~np.asarray(relaxed, bool)
        # a pair on vtree node v may be feasible through a shortcut strictly below v, or a
        # merge at or below v, which relax the variables there: on the right-most path below
        # v, the first node p_k (k >= 1) with a shortcut, or whose parent merges, bounds them
        ex_lo = np.zeros(vt.num_nodes, np.int64)
        ex_hi = np.zeros(vt.num_nodes, np.int64)
        path = np.flatnonzero(vt.on_rightmost_path)[::-1]  # root first
        for i, v in enumerate(path):
            for k in range(i + 1, len(path)):
                if sc_vt[path[k]] or mc_vt[path[k - 1]]:
                    ex_lo[v], ex_hi[v] = vlo[path[k]], vhi[path[k]]
                    break
        return (pp, qp, off, chk, vlo, vhi, vv, ex_lo, ex_hi)

    def _run(self, pairs, relaxed, sc_vt, mc_vt, emit, prune, S, cnt, budget=-1):
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        pj = self._projections(relaxed, sc_vt, mc_vt)
        out = PB.run(self.P, self.Q, self.plan.card, self.empty_sid, relaxed, sc_vt, mc_vt,
                     emit, prune, pairs[:, 0], pairs[:, 1], S, cnt, budget, self.same,
                     self.diag_vt, pj)
        if cnt[PB.K_ERR]:
            err, tp, tq = int(cnt[PB.K_ERR]), int(cnt[PB.K_ERRP]), int(cnt[PB.K_ERRQ])
            cnt[PB.K_ERR] = 0
            _raise_incompatible(self.plan, err, tp, tq)
        return out

    def entries(self, pairs) -> np.ndarray:
        out = self._run(pairs, self.relaxed, self.sc_vt, self.mc_vt, True, self.plan.prune,
                        self.S, self.cnt)
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        for k in np.flatnonzero(out < 0):
            key = (int(pairs[k, 0]), int(pairs[k, 1]))
            if key not in self.dead:
                PB.grow(self.S, PB.G_ENT, int(self.cnt[PB.K_NENT]) + 2)
                self.dead[key] = int(PB.add_dead_entry(tuple(self.S), self.cnt))
            out[k] = self.dead[key]
        self._arrays = None
        return out

    def supports(self, pairs, relaxed: np.ndarray, key: bytes, budget: int = -1) -> np.ndarray:
        if key not in self._bool:
            self._bool[key] = (PB.new_state(), PB.new_counters())
        S, cnt = self._bool[key]
        off = np.zeros(self.plan.vtree.num_nodes, bool)
        out = self._run(pairs, relaxed, off, off, False, True, S, cnt, budget)
        return np.sign(out).astype(np.int8)

    def _slices(self):
        if self._arrays is None:
            S, c = self.S, self.cnt
            n, no, nm, ng = int(c[0]), int(c[1]), int(c[3]), int(c[4])
            nc, ngs = int(c[2]), int(c[5])
            self._arrays = (
                (S[2][:n], S[3][:n], S[4][:n], S[5][:n], S[6][:n], S[9][:n + 1], S[10][:no],
                 S[11][:no + 1], S[12][:nc]),
                (S[13][:n + 1], S[14][:nm], S[15][:nm], S[16][:nm], S[17][:ng + 1],
                 S[18][:ng], S[19][:ngs], S[20][:ngs]),
                (S[8][:n], S[7][:n]),
            )
        return self._arrays

    def arrays(self) -> tuple:
        return self._slices()[0]

    def merge_arrays(self) -> tuple:
        return self._slices()[1]

    def extra_arrays(self) -> tuple:
        return self._slices()[2]


def _raise_incompatible(plan: PairPlan, status: int, tp: int, tq: int):
    py = _PythonBuilder(plan)
    sp, sq = py._scope(plan.p, py._sp, tp), py._scope(plan.q, py._sq, tq)
    if status == PB.E_SCOPE:
        raise StructureError(
            "the circuits are not compatible: paired nodes have different scopes "
            f"({_vars(sp)} vs {_vars(sq)})"
        )
    if status == PB.E_KIND:
        raise StructureError("cannot pair these nodes (unexpected node kinds)")
    fp = [f for f in py._factors(plan.p, tp) if py._sp[f]]
    fq = [f for f in py._factors(plan.q, tq) if py._sq[f]]
    raise StructureError(
        "the circuits are not compatible (not structured-decomposable on one vtree): "
        f"scope {_vars(sp)} is split as {[_vars(py._sp[f]) for f in fp]} and as "
        f"{[_vars(py._sq[f]) for f in fq]}"
    )


class _PythonBuilder:
    """The reference builder: the pairwise recursion compiled one pair at a time in Python
    (quadratic; no pruning). Kept for tests and benchmarks (``builder="python"``)."""

    def __init__(self, plan: PairPlan):
        p, q, vtree = plan.p, plan.q, plan.vtree
        self.p, self.q, self.merge_ok = p, q, plan.merge_ok
        self._sp, self._sq = p.scopes(), q.scopes()
        self._vt_p = node_vtree_nodes(p, vtree)
        self._const_p = node_log_values(p, np.full(p.num_variables, -1, np.int32))
        self._const_q = node_log_values(q, np.full(q.num_variables, -1, np.int32))
        self._memo: dict[tuple[int, int], int] = {}
        self._tp: list[int] = []
        self._kind: list[int] = []
        self._pnode: list[int] = []
        self._qnode: list[int] = []
        self._var: list[int] = []
        self._vt: list[int] = []
        self._opts: list[list[tuple[float, list[int]]]] = []
        self._merges: list[list[tuple[int, int, int]]] = []  # (prime-pair entry, group p, group q)
        self._groups: list[tuple[int, list[tuple[float, int]]]] = []  # (side, [(logw, sub)])
        self._arrays: tuple | None = None

    @property
    def num_entries(self) -> int:
        return len(self._kind)

    def entries(self, pairs) -> np.ndarray:
        return np.array([self.entry(int(a), int(b)) for a, b in pairs], np.int64)

    # terms: node ids 0..N-1, elements N + edge index
    def _scope(self, c: Circuit, scopes: list[int], t: int) -> int:
        n = c.num_nodes
        if t < n:
            return scopes[t]
        e = t - n
        s = scopes[c.edge_a[e]]
        return s | scopes[c.edge_b[e]] if c.edge_b[e] >= 0 else s

    @staticmethod
    def _factors(c: Circuit, t: int) -> list[int]:
        n = c.num_nodes
        if t >= n:
            e = t - n
            return [int(c.edge_a[e])] + ([int(c.edge_b[e])] if c.edge_b[e] >= 0 else [])
        if c.kind[t] == PRODUCT:
            return [int(x) for x in c.edge_a[c.edge_ptr[t] : c.edge_ptr[t + 1]]]
        return [t]

    def _spec(self, tp: int, tq: int):
        p, q = self.p, self.q
        sp, sq = self._scope(p, self._sp, tp), self._scope(q, self._sq, tq)
        if sp != sq:
            raise StructureError(
                "the circuits are not compatible: paired nodes have different scopes "
                f"({_vars(sp)} vs {_vars(sq)})"
            )
        np_, nq = p.num_nodes, q.num_nodes
        p_sum = tp < np_ and p.kind[tp] == SUM
        q_sum = tq < nq and q.kind[tq] == SUM
        if p_sum:
            ep = [e for e in range(p.edge_ptr[tp], p.edge_ptr[tp + 1]) if p.edge_logw[e] > -np.inf]
            if q_sum:
                eq = [e for e in range(q.edge_ptr[tq], q.edge_ptr[tq + 1])
                      if q.edge_logw[e] > -np.inf]
                opts = [(float(p.edge_logw[a] - q.edge_logw[b]), [(np_ + a, nq + b)])
                        for a in ep for b in eq]
                w = int(self._vt_p[tp])
                if w >= 0 and self.merge_ok[w]:
                    return "max", opts, (_groups(p, ep), _groups(q, eq))
                return "max", opts
            return "max", [(float(p.edge_logw[a]), [(np_ + a, tq)]) for a in ep]
        if q_sum:
            eq = [e for e in range(q.edge_ptr[tq], q.edge_ptr[tq + 1]) if q.edge_logw[e] > -np.inf]
            return "max", [(float(-q.edge_logw[b]), [(tp, nq + b)]) for b in eq]
        fp, fq = self._factors(p, tp), self._factors(q, tq)
        const = 0.0
        keep_p = []
        for f in fp:
            if self._sp[f] == 0:
                const += self._const_p[f]
            else:
                keep_p.append(f)
        keep_q = []
        for f in fq:
            if self._sq[f] == 0:
                const -= self._const_q[f]
            else:
                keep_q.append(f)
        if not np.isfinite(const):
            return "max", []
        if len(keep_p) == 1 and len(keep_q) == 1 and keep_p[0] == tp and keep_q[0] == tq:
            if p.kind[tp] not in (INDICATOR, CATEGORICAL) or q.kind[tq] not in (INDICATOR, CATEGORICAL):
                raise StructureError("cannot pair these nodes (unexpected node kinds)")
            return "leaf", int(p.var[tp])
        by_scope = {self._sq[f]: f for f in keep_q}
        if len(by_scope) != len(keep_q) or len(keep_p) != len(keep_q) or any(
            self._sp[f] not in by_scope for f in keep_p
        ):
            raise StructureError(
                "the circuits are not compatible (not structured-decomposable on one vtree): "
                f"scope {_vars(sp)} is split as {[_vars(self._sp[f]) for f in keep_p]} and as "
                f"{[_vars(self._sq[f]) for f in keep_q]}"
            )
        return "max", [(const, [(f, by_scope[self._sp[f]]) for f in keep_p])]

    def entry(self, tp: int, tq: int) -> int:
        """The entry index of the pair of terms ``(tp, tq)``, compiling it if needed."""
        key = (tp, tq)
        if key in self._memo:
            return self._memo[key]
        specs: dict = {}
        stack = [key]
        while stack:
            k = stack[-1]
            if k in self._memo:
                stack.pop()
                continue
            if k not in specs:
                specs[k] = self._spec(*k)
            kind, data, *merge = specs[k]
            if kind == "max":
                missing = [c for _, cs in data for c in cs if c not in self._memo]
                if merge:
                    gp, gq = merge[0]
                    missing += [(a, b) for a in gp for b in gq if (a, b) not in self._memo]
                if missing:
                    stack.extend(missing)
                    continue
            stack.pop()
            self._add(k, kind, data, merge[0] if merge else None)
        self._arrays = None
        return self._memo[key]

    def _add(self, key, kind, data, merge=None) -> None:
        tp, tq = key
        merges = []
        if merge is not None:
            gp, gq = merge
            ids_p, ids_q = {}, {}
            for side, groups, ids in ((0, gp, ids_p), (1, gq, ids_q)):
                for prime, elems in groups.items():
                    ids[prime] = len(self._groups)
                    self._groups.append((side, elems))
            merges = [(self._memo[(a, b)], ids_p[a], ids_q[b]) for a in gp for b in gq]
        self._merges.append(merges)
        real = tp < self.p.num_nodes and tq < self.q.num_nodes
        self._pnode.append(tp if real else -1)
        self._tp.append(tp)
        self._qnode.append(tq if real else -1)
        self._vt.append(int(self._vt_p[tp]) if real else -1)
        if kind == "leaf":
            self._kind.append(K.LEAF)
            self._var.append(data)
            self._opts.append([])
        else:
            self._kind.append(K.MAX)
            self._var.append(-1)
            self._opts.append([(c, [self._memo[x] for x in cs]) for c, cs in data])
        self._memo[key] = len(self._kind) - 1

    def arrays(self) -> tuple:
        if self._arrays is None:
            opt_ptr = [0]
            consts: list[float] = []
            och_ptr = [0]
            och: list[int] = []
            for opts in self._opts:
                for c, cs in opts:
                    consts.append(c)
                    och.extend(cs)
                    och_ptr.append(len(och))
                opt_ptr.append(len(consts))
            m_ptr = [0]
            m_child: list[int] = []
            m_gp: list[int] = []
            m_gq: list[int] = []
            for merges in self._merges:
                for c, a, b in merges:
                    m_child.append(c)
                    m_gp.append(a)
                    m_gq.append(b)
                m_ptr.append(len(m_child))
            g_ptr = [0]
            g_side: list[int] = []
            g_logw: list[float] = []
            g_sub: list[int] = []
            for side, elems in self._groups:
                g_side.append(side)
                for lw, sub in elems:
                    g_logw.append(lw)
                    g_sub.append(sub)
                g_ptr.append(len(g_sub))
            i32 = np.int32
            self._arrays = (
                np.array(self._kind, np.int8), np.array(self._pnode, i32),
                np.array(self._qnode, i32), np.array(self._var, i32), np.array(self._vt, i32),
                np.array(opt_ptr, i32), np.array(consts, np.float64), np.array(och_ptr, i32),
                np.array(och, i32),
            )
            self._merge_arrays = (
                np.array(m_ptr, i32), np.array(m_child, i32), np.array(m_gp, i32),
                np.array(m_gq, i32), np.array(g_ptr, i32), np.array(g_side, np.int8),
                np.array(g_logw, np.float64), np.array(g_sub, i32),
            )
        return self._arrays

    def merge_arrays(self) -> tuple:
        self.arrays()
        return self._merge_arrays

    def extra_arrays(self) -> tuple:
        """``(e_flags, e_svt)``: no pruning here; merge entries flagged as the evaluator
        expects (those with merge options)."""
        self.arrays()
        m_ptr = self._merge_arrays[0]
        flags = np.where(np.diff(m_ptr) > 0, 4, 0).astype(np.int8)
        # the vtree node of each entry's scope (an element: its sum's), for re-evaluation
        p, n = self.p, self.p.num_nodes
        owner = np.repeat(np.arange(n), np.diff(p.edge_ptr))
        tp = np.array(self._tp, np.int64)
        svt = np.where(tp < n, self._vt_p[np.minimum(tp, n - 1)],
                       self._vt_p[owner[np.maximum(tp - n, 0)]] if len(owner) else -1)
        return flags, svt.astype(np.int32)


def _groups(c: Circuit, edges: list[int]) -> dict[int, list[tuple[float, int]]]:
    """Elements of a sum grouped by prime node: prime -> [(log w, sub)]."""
    out: dict[int, list[tuple[float, int]]] = {}
    for e in edges:
        out.setdefault(int(c.edge_a[e]), []).append((float(c.edge_logw[e]), int(c.edge_b[e])))
    return out


def _vars(scope: int) -> list[int]:
    return bits(scope)


@dataclass(frozen=True)
class QuotientResult:
    """``value`` = max log p/q over the common support (−inf when ``feasible`` is False);
    ``assignment`` = index values of the free variables at the maximum (−1 elsewhere)."""

    value: float
    feasible: bool
    exact: bool
    assignment: np.ndarray | None = field(repr=False, default=None)


# ------------------------------------------------------------------------- preconditions
def rightmost_path_primes(c: Circuit, vtree: Vtree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prime structure of the sums on the vtree's right-most path, per vtree node.

    Returns ``(exclusive, distinct_exclusive, shared_ok)``. At a path node ``a``,
    ``exclusive[a]`` holds when every sum normalised for ``a`` has elements with the prime on
    the left and the sub on the right and pairwise disjoint prime supports (its element is
    chosen by left variables only); ``distinct_exclusive[a]`` allows elements to share a prime
    node (determinism through the subs) and asks only that distinct primes be disjoint;
    ``shared_ok[a, u]`` (``u`` a path node below ``a``) holds when the subs of elements that
    share a prime at ``a`` stay disjoint after the variables of ``u`` are summed out (checked by
    the Boolean pass with those variables relaxed). Nodes off the path are True (nothing to
    choose there)."""
    m = vtree.num_nodes
    excl = np.ones(m, bool)
    distinct = np.ones(m, bool)
    shared_ok = np.ones((m, m), bool)
    vt_of = node_vtree_nodes(c, vtree)
    vs = vtree.scopes
    scopes = c.scopes()
    path = [int(u) for u in np.flatnonzero(vtree.on_rightmost_path)[::-1]]  # root first
    by_node: dict[int, list[int]] = {}
    for i in range(c.num_nodes):
        w = int(vt_of[i])
        if c.kind[i] == SUM and w >= 0 and vtree.on_rightmost_path[w] and not vtree.is_leaf(w):
            by_node.setdefault(w, []).append(i)
    plan = None
    n = c.num_variables
    # top-down with early exit: once a node's choice cannot be trusted for any summed-out set,
    # no shortcut below it is usable, so deeper nodes are not analysed (left False)
    for depth, w in enumerate(path):
        if vtree.is_leaf(w):
            break
        pending: list[tuple[int, int]] = []
        shared: list[tuple[int, int]] = []
        for i in by_node.get(w, []):
            lo, hi = c.edge_ptr[i], c.edge_ptr[i + 1]
            live = [e for e in range(lo, hi) if c.edge_logw[e] > -np.inf]
            if any(c.edge_b[e] < 0
                   or scopes[c.edge_a[e]] & vs[vtree.left[w]] != scopes[c.edge_a[e]]
                   or scopes[c.edge_b[e]] & vs[vtree.right[w]] != scopes[c.edge_b[e]]
                   for e in live):
                excl[w] = distinct[w] = False
                break
            for x, y in itertools.combinations(live, 2):
                pa, pb = int(c.edge_a[x]), int(c.edge_a[y])
                if pa == pb:
                    shared.append((int(c.edge_b[x]), int(c.edge_b[y])))
                    continue
                sa, sb = _allowed_values(c, pa), _allowed_values(c, pb)
                if not (sa and sb and _syntactically_exclusive(sa, sb)):
                    pending.append((pa, pb))
        if shared:
            excl[w] = False
        if distinct[w] and (pending or shared):
            if plan is None:
                plan = PairPlan(c, c, vtree)
            if pending and any(_intersections_chunked(plan, pending, None)):
                excl[w] = distinct[w] = False
            if shared and distinct[w]:
                below = path[depth + 1:]
                for u in reversed(below):  # smallest summed-out set first (monotone)
                    relaxed = np.zeros(n, bool)
                    relaxed[bits(vs[u])] = True
                    if any(_intersections_chunked(plan, shared, relaxed)):
                        shared_ok[w, [v for v in below if vs[v] & vs[u] == vs[u]]] = False
                        break
        if not excl[w] and (not distinct[w] or not shared_ok[w, path[-1]]):
            excl[path[depth + 1:]] = distinct[path[depth + 1:]] = False
            break
    return excl, distinct, shared_ok


def _intersections_chunked(plan, pairs, relaxed, chunk: int = 512):
    """Yield whether pairs of terms share support (relaxed variables may differ per side),
    decided by the compiled Boolean pass (``chunk`` is kept for the signature; one call)."""
    del chunk
    if not pairs:
        return
    yield bool(np.any(plan.supports(pairs, relaxed) > 0))


def quotient_structure(circuit: Circuit, assume_deterministic: bool = False) -> tuple[Vtree, tuple]:
    """Check that ``circuit`` supports the pairwise pass; return its vtree and the prime
    structure of its right-most path (for the exact shortcuts). Raises
    :class:`StructureError` with the reason.

    With ``assume_deterministic`` an undecided determinism check (``None``: too large for the
    pairwise tier) is taken as declared, e.g. for PSDD files, whose format promises it; a
    circuit proven non-deterministic is still refused."""
    return derived(circuit, ("quotient_structure", assume_deterministic),
                   lambda: _quotient_structure(circuit, assume_deterministic))


def _quotient_structure(circuit: Circuit, assume_deterministic: bool) -> tuple:
    rep = circuit.properties()
    reasons = []
    if not rep.smooth:
        reasons.append("not smooth")
    if not rep.decomposable:
        reasons.append("not decomposable")
    if rep.structured_decomposable is not True:
        reasons.append("not structured-decomposable")
    if rep.deterministic is False or (rep.deterministic is None and not assume_deterministic):
        reasons.append("not deterministic" if rep.deterministic is False
                       else "determinism could not be verified")
    if reasons:
        raise StructureError(
            "the max/min quotient needs a smooth, decomposable, deterministic and "
            "structured-decomposable circuit; this one is " + ", ".join(reasons)
            + ". Use an engine that needs only marginals (e.g. the lattice engine) instead."
        )
    vt = rep.vtree
    return vt, rightmost_path_primes(circuit, vt)


class SelfPlans:
    """The plans pairing one circuit with itself, one per decision variable, built on demand.

    What :func:`self_plan` returns without a decision: the bounds and the search pair the
    circuit with itself under ``D = d`` and ``D = ¬d``, and a plan pruned for that decision
    (:meth:`for_decision`) is near-linear in the circuit where a plan for any evidence is
    quadratic (53 M entries for ``msnbc.psdd``). :meth:`entry` only records the pair of terms
    and returns a handle; :meth:`conditional_extremes` (and :func:`bounds_core`) resolve it in
    the decision's plan.
    """

    def __init__(self, circuit: Circuit, vtree: Vtree, path_primes: tuple):
        self.circuit, self.vtree, self.path_primes = circuit, vtree, path_primes
        self.pairs: list[tuple[int, int]] = []
        self._handles: dict[tuple[int, int], int] = {}

    def for_decision(self, d: int) -> PairPlan:
        """The plan pruned for the decision variable ``d`` (shared with
        ``self_plan(circuit, decision=d)``)."""
        c = self.circuit
        return derived(c, ("self_plan", int(d)),
                       lambda: PairPlan(c, c, self.vtree, self.path_primes, relaxed=[int(d)],
                                        deterministic=True))

    def entry(self, tp: int, tq: int) -> int:
        """A handle on the pair of terms ``(tp, tq)`` (resolved per decision)."""
        key = (int(tp), int(tq))
        if key not in self._handles:
            self._handles[key] = len(self.pairs)
            self.pairs.append(key)
        return self._handles[key]

    def resolve(self, handle: int, d: int) -> tuple[PairPlan, int]:
        """The decision's plan and the entry of the pair behind ``handle`` in it."""
        plan = self.for_decision(d)
        return plan, plan.entry(*self.pairs[handle])

    def conditional_extremes(self, root: int, d: int, fav: int, ev: np.ndarray,
                             free: np.ndarray) -> tuple[float, bool, float, bool]:
        """:meth:`PairPlan.conditional_extremes` in the plan of ``d``."""
        plan, entry = self.resolve(root, d)
        return plan.conditional_extremes(entry, d, fav, ev, free)


def self_plan(circuit: Circuit, assume_deterministic: bool = False,
              decision: int | None = None) -> "PairPlan | SelfPlans":
    """The cached plan pairing ``circuit`` with itself (used by the bounds and the certifier).

    With ``decision`` (a variable index): the :class:`PairPlan` statically pruned for evidence
    that differs between the two sides on that variable only (``D = d`` against ``D = ¬d``),
    which is what :func:`conditional_bounds` and the search evaluate. Without it: the
    :class:`SelfPlans` of the circuit, which builds that plan for each decision it is asked
    about. Raises :class:`StructureError` when the circuit does not support the pass."""
    vt, path_primes = quotient_structure(circuit, assume_deterministic)
    if decision is not None:
        return SelfPlans(circuit, vt, path_primes).for_decision(int(decision))
    return derived(circuit, "self_plans", lambda: SelfPlans(circuit, vt, path_primes))


def _for_decision(plan, root: int, d: int) -> tuple[PairPlan, int]:
    return plan.resolve(root, d) if isinstance(plan, SelfPlans) else (plan, root)


# ---------------------------------------------------------------------------- public API
def _index_set(circuit: Circuit, names, what: str) -> list[int]:
    if names is None:
        return []
    if isinstance(names, (str, int)):
        names = [names]
    return [circuit.variables.index(v) for v in names]


def max_quotient(p: Circuit, q: Circuit, evidence: Mapping | None = None, *,
                 marginalized: Sequence | None = None, q_evidence: Mapping | None = None,
                 assume_deterministic: bool = False) -> QuotientResult:
    """max over free assignments of log p(e, u) − log q(e, u) for compatible circuits.

    Parameters
    ----------
    p, q : Circuit
        Smooth, deterministic circuits structured-decomposable on the same vtree.
    evidence : mapping, optional
        Observed values (used for ``p``, and for ``q`` unless ``q_evidence`` is given).
    marginalized : sequence of variables, optional
        Variables summed out (the result is then an upper bound unless ``exact``).
    q_evidence : mapping, optional
        Different observed values for ``q`` (same variables as ``evidence``).
    assume_deterministic : bool, default False
        Take determinism as declared where the check cannot decide it (see
        :func:`quotient_structure`).

    Returns
    -------
    QuotientResult
        ``value`` is the max log-quotient over the common support; the arg-max is in
        ``assignment`` (index form). With marginalised variables and a ``q`` that is zero
        somewhere, the sound bound is ``+inf`` (a ratio of sums can exceed every ratio of
        aligned terms when some terms of ``q`` vanish), and that is what is returned.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder, Vtree
    >>> b = CircuitBuilder(1)
    >>> p = b.build(b.bernoulli("1", 0.8), vtree=Vtree.from_nested(0))
    >>> q = b.build(b.bernoulli("1", 0.5), vtree=Vtree.from_nested(0))
    >>> r = max_quotient(p, q)
    >>> round(float(np.exp(r.value)), 6), r.assignment.tolist()
    (1.6, [1])
    """
    if p.variables != q.variables:
        raise VariableError("the two circuits must have the same variables")
    vt_p, ok_p = quotient_structure(p, assume_deterministic)
    if q is p:
        vt_q, ok_q = vt_p, ok_p
    else:
        vt_q, ok_q = quotient_structure(q, assume_deterministic)
        if vt_p != vt_q:
            if not compatible(p, q):
                raise StructureError("the circuits are not structured-decomposable on one vtree "
                                     "(incompatible); their quotient cannot be maximised exactly")
    key = ("pair_plan", id(q))
    plan = peek(p, key)
    if plan is None or plan.q is not q:
        same = vt_p == vt_q
        plan = remember(p, key, PairPlan(p, q, vt_p, tuple(a & b for a, b in zip(ok_p, ok_q))
                                         if same else None))
    root = plan.entry(p.root, q.root)
    ev_p = p.evidence_matrix(evidence or {})[0]
    ev_q = p.evidence_matrix(q_evidence)[0] if q_evidence is not None else ev_p.copy()
    marg = _index_set(p, marginalized, "marginalized")
    free = (ev_p < 0) & (ev_q < 0)
    free[marg] = False
    if np.any((ev_p >= 0)[marg]):
        raise VariableError("a variable cannot be both observed and marginalized")
    res = plan.evaluate(root, ev_p, ev_q, free)
    if marg and not res.exact and not _positive(q):
        # Σ_z p / Σ_z q is bounded by the common-support maximum only when no completion has
        # q = 0 < p (and summing can also create common support the pass did not see); without
        # that guarantee the only sound bound is +inf, unless p has no support at all.
        if support_counts(p, np.where(free, -1, ev_p).astype(np.int32)) == 0:
            return res
        return QuotientResult(value=float("inf"), feasible=True, exact=False, assignment=None)
    return res


@dataclass(frozen=True)
class ConditionalBounds:
    """Bounds on ``P(d | e, u)`` over the free assignments ``u`` (see :func:`conditional_bounds`).

    Attributes
    ----------
    min, max : float
        The minimum and maximum of ``P(d | e, u)``.
    argmin, argmax : dict or None
        Free-variable assignments (names → labels) attaining them (None where the bound came
        from the support check rather than from an assignment).
    exact : bool
        False when marginalised variables were maximised (the bounds are then sound but loose).
    max_ratio, min_ratio : float
        ``max_u P(e,u|d) / P(e,u|¬d)`` and the minimum.
    support_note : str
        Empty, or why a bound was widened to 0 or 1.
    """

    min: float
    max: float
    argmin: dict | None
    argmax: dict | None
    exact: bool
    max_ratio: float
    min_ratio: float
    support_note: str = ""


def _sigmoid(x: float) -> float:
    if x == np.inf:
        return 1.0
    if x == -np.inf:
        return 0.0
    return float(1.0 / (1.0 + np.exp(-x))) if x >= 0 else float(np.exp(x) / (1.0 + np.exp(x)))


def implicit_favorable(labels) -> int | None:
    """The code of the value ``1`` of a binary decision whose values say 0 and 1 (numbers,
    booleans, the strings ``"0"``/``"1"``, or labels that begin with their code such as
    ``"1 (Low or Medium)"``), else None: the favourable value must then be named.

    Examples
    --------
    >>> implicit_favorable([0, 1]), implicit_favorable(["0 (High)", "1 (Low)"])
    (1, 1)
    >>> implicit_favorable(["<=50K", ">50K"]) is None
    True
    """
    def code(label) -> int | None:
        if isinstance(label, (bool, np.bool_)):
            return int(label)
        if isinstance(label, (int, np.integer, float, np.floating)):
            return int(label) if label in (0, 1) else None
        text = str(label).strip()
        head = text.split(" (", 1)[0] if text.endswith(")") else text
        return int(head) if head in ("0", "1") else None

    codes = [code(label) for label in labels]
    if sorted(c for c in codes if c is not None) != [0, 1]:
        return None
    return codes.index(1)


def decision_evidence(circuit: Circuit, decision, favorable) -> tuple[int, int, int]:
    """Index of the binary decision variable, its favourable value and the other value.

    ``favorable=None`` means the value ``1`` where the decision's values say 0 and 1
    (:func:`implicit_favorable`); any other decision (``["<=50K", ">50K"]``) needs its
    favourable value named, and is refused with its values otherwise, never guessed. A model
    whose recipe (:mod:`pcfair.tables.recipe`) names the favourable value of this decision
    supplies it."""
    d = circuit.variables.index(decision)
    if circuit.variables.cardinalities[d] != 2:
        raise VariableError(f"the decision variable {circuit.names[d]!r} must be binary")
    recipe = circuit.recipe
    if favorable is None and recipe is not None and recipe.decision == circuit.names[d]:
        favorable = recipe.favorable
    if favorable is None:
        fav = implicit_favorable(circuit.variables.domains[d])
        if fav is None:
            raise OptionError(
                f"name the favourable value of the decision {circuit.names[d]!r} "
                f"(favorable= / --favorable): its values are "
                f"{list(circuit.variables.domains[d])}, not 0 and 1")
    else:
        fav = circuit.variables.value_index(d, favorable)
    return d, fav, 1 - fav


def support_counts(circuit: Circuit, ev: np.ndarray) -> float:
    """Number of completions of ``ev`` with positive probability (exact below 2**53)."""
    buf = np.empty(circuit.num_nodes)
    a = kernel_args(circuit)
    return float(K.support_count(a[0], a[1], a[2], a[3], a[4], a[6], a[7], a[8], a[9],
                                 circuit.variables.cardinalities, ev, buf))


def conditional_bounds(circuit: Circuit, decision, evidence: Mapping | None = None, *,
                       favorable=1, free: Sequence | None = None,
                       marginalized: Sequence | None = None,
                       assume_deterministic: bool = False) -> ConditionalBounds:
    """min and max over free assignments ``u`` of ``P(d | e, u)`` (Lemma 2 of the paper).

    ``max_u P(d|e,u) = 1 / (1 + exp(−max_u log[P(d,e,u) / P(¬d,e,u)]))``, the quotient taken by
    the pairwise pass of the circuit with itself under ``D = d`` and ``D = ¬d``.

    Parameters
    ----------
    circuit : Circuit
        Smooth, deterministic, structured-decomposable; ``decision`` binary and anywhere in it.
    decision : str or int
        The decision variable ``D``.
    evidence : mapping, optional
        Observed values ``e``.
    favorable : value, default 1
        The value ``d``.
    free : sequence, optional
        Variables maximised over (default: every variable not observed, not marginalised and not
        ``D``).
    marginalized : sequence, optional
        Variables summed out. Unless they sit where the pass is exact, the bounds are sound
        but not tight (``exact=False``).
    assume_deterministic : bool, default False
        Take determinism as declared where the check cannot decide it.

    Returns
    -------
    ConditionalBounds

    Raises
    ------
    StructureError
        If the circuit is not smooth, deterministic and structured-decomposable.
    EvidenceError
        If ``P(e) = 0`` (no completion has positive probability).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder, Vtree
    >>> b = CircuitBuilder({"d": [0, 1], "x": [0, 1]})
    >>> root = b.decision([(b.indicator("d", 1), b.categorical("x", [0.2, 0.8]), 0.5),
    ...                    (b.indicator("d", 0), b.categorical("x", [0.6, 0.4]), 0.5)])
    >>> pc = b.build(root, vtree=Vtree.from_nested((0, 1)))
    >>> r = conditional_bounds(pc, "d")
    >>> round(r.min, 4), round(r.max, 4), r.argmax
    (0.25, 0.6667, {'x': 1})
    """
    d, fav, unfav = decision_evidence(circuit, decision, favorable)
    plan = self_plan(circuit, assume_deterministic, decision=d)
    root = plan.entry(circuit.root, circuit.root)
    ev = circuit.evidence_matrix(evidence or {})[0]
    if ev[d] >= 0:
        raise VariableError("the decision variable cannot be part of the evidence")
    marg = _index_set(circuit, marginalized, "marginalized")
    if free is None:
        free_mask = ev < 0
        free_mask[marg] = False
    else:
        free_mask = np.zeros(circuit.num_variables, bool)
        free_mask[_index_set(circuit, free, "free")] = True
        if np.any(free_mask & (ev >= 0)) or np.any(free_mask[marg]):
            raise VariableError("a variable cannot be both free and observed or marginalized")
    free_mask[d] = False
    if np.any(ev[marg] >= 0) or d in marg:
        raise VariableError("marginalized variables must not be observed (nor the decision)")
    try:
        b = bounds_core(circuit, plan, root, d, fav, ev, free_mask)
    except EvidenceError:
        raise EvidenceError(f"the evidence {evidence!r} has probability zero") from None
    hi, lo, note = b.hi, b.lo, b.note
    max_val, min_val = b.max, b.min
    argmax = None if b.argmax is None else _decode(circuit, b.argmax, free_mask)
    argmin = None if b.argmin is None else _decode(circuit, b.argmin, free_mask)
    prior = circuit.log_marginal(np.array([_row(circuit, d, fav), _row(circuit, d, unfav)]))
    log_odds_prior = prior[1] - prior[0]
    return ConditionalBounds(
        min=min_val, max=max_val, argmin=argmin, argmax=argmax,
        # without marginalised variables a widened bound is attained (P(d|e,u) = 0 or 1 at a
        # completion u where one side vanishes), so it stays exact
        exact=hi.exact and lo.exact and (not note or not marg),
        max_ratio=float(np.exp(hi.value + log_odds_prior)) if hi.feasible else float("inf"),
        min_ratio=float(np.exp(-lo.value + log_odds_prior)) if lo.feasible else 0.0,
        support_note=note,
    )


@dataclass(frozen=True)
class _Bounds:
    min: float
    max: float
    argmin: np.ndarray | None
    argmax: np.ndarray | None
    hi: QuotientResult
    lo: QuotientResult
    note: str


def bounds_core(circuit: Circuit, plan: "PairPlan | SelfPlans", root: int, d: int, fav: int,
                ev: np.ndarray, free_mask: np.ndarray, want_assignment: bool = True) -> _Bounds:
    """min/max over ``free_mask`` of P(D = fav | ev, u) in index form (variables neither free
    nor observed are marginalised). The engine room of :func:`conditional_bounds` and of the
    branch-and-bound search; raises :class:`EvidenceError` when P(ev) = 0."""
    plan, root = _for_decision(plan, root, d)
    ev_d, ev_nd = ev.copy(), ev.copy()
    ev_d[d], ev_nd[d] = fav, 1 - fav
    hi = plan.evaluate(root, ev_d, ev_nd, free_mask, want_assignment)
    lo = plan.evaluate(root, ev_nd, ev_d, free_mask, want_assignment)
    note = ""
    max_val = _sigmoid(hi.value) if hi.feasible else None
    min_val = _sigmoid(-lo.value) if lo.feasible else None
    argmax = hi.assignment if hi.feasible else None
    argmin = lo.assignment if lo.feasible else None
    if not _positive(circuit):
        # completions (u, z) with P(d,e,u,z) > 0 = P(¬d,e,u,z) make max P(d|e,u) = 1 possible,
        # and the reverse makes min = 0 possible; the pass only saw the common support
        card = circuit.variables.cardinalities.astype(float)
        rest = (ev < 0)
        rest[d] = False
        total = float(np.prod(card[rest]))
        c_d = support_counts(circuit, ev_d)
        c_nd = support_counts(circuit, ev_nd)
        if c_d == 0 and c_nd == 0:
            raise EvidenceError("the evidence has probability zero")
        if c_nd == 0 or c_d == 0:  # one side vanishes everywhere: P(d|e,u) is constant
            max_val = min_val = 1.0 if c_nd == 0 else 0.0
            argmax = argmin = np.where(free_mask, 0, -1).astype(np.int32)
        elif total >= 2.0**53:
            max_val, min_val, argmax, argmin = 1.0, 0.0, None, None
            note = ("the circuit has zero-probability regions and too many completions to "
                    "count exactly; bounds widened to [0, 1]")
        else:
            both = plan.common_support_count(root, ev_d, ev_nd)
            if c_nd > both:
                min_val, argmin = 0.0, None
                note = "some completion has P(d, e, u) = 0 < P(¬d, e, u): min widened to 0"
            if c_d > both:
                max_val, argmax = 1.0, None
                note = (note + "; " if note else "") + (
                    "some completion has P(¬d, e, u) = 0 < P(d, e, u): max widened to 1")
    if max_val is None or min_val is None:
        raise EvidenceError("the evidence has probability zero")
    return _Bounds(min_val, max_val, argmin, argmax, hi, lo, note)


def conditional_range(circuit: Circuit, plan: "PairPlan | SelfPlans", root: int, d: int,
                      fav: int, ev: np.ndarray, free_mask: np.ndarray) -> tuple[float, float]:
    """``(min, max)`` over ``free_mask`` of P(D = fav | ev, u), as :func:`bounds_core` gives
    them, in one kernel call when every completion has positive probability (the search's
    hot path); raises :class:`EvidenceError` when P(ev) = 0."""
    if not _positive(circuit):
        b = bounds_core(circuit, plan, root, d, fav, ev, free_mask, want_assignment=False)
        return b.min, b.max
    hi, hi_ok, lo, lo_ok = plan.conditional_extremes(root, d, fav, ev, free_mask)
    if not (hi_ok and lo_ok):
        raise EvidenceError("the evidence has probability zero")
    return _sigmoid(-lo), _sigmoid(hi)


def _row(circuit: Circuit, var: int, value: int) -> np.ndarray:
    r = np.full(circuit.num_variables, -1, np.int32)
    r[var] = value
    return r


def _decode(circuit: Circuit, assignment: np.ndarray | None, free: np.ndarray) -> dict | None:
    if assignment is None:
        return None
    return {circuit.names[i]: circuit.variables.domains[i][int(assignment[i])]
            for i in np.flatnonzero(free)}


def _positive(circuit: Circuit) -> bool:
    """True when every complete assignment has positive probability (exact big-int count)."""
    return derived(circuit, "positive", lambda: _count_positive(circuit))


def _count_positive(circuit: Circuit) -> bool:
    card = [int(c) for c in circuit.variables.cardinalities]
    scopes = circuit.scopes()
    counts: list[int] = [0] * circuit.num_nodes
    for i in range(circuit.num_nodes):
        k = circuit.kind[i]
        lo, hi = circuit.edge_ptr[i], circuit.edge_ptr[i + 1]
        if k == INDICATOR:
            counts[i] = 1
        elif k == CATEGORICAL:
            p = circuit.params[circuit.param_ptr[i] : circuit.param_ptr[i] + circuit.param_len[i]]
            counts[i] = int(np.sum(p > -np.inf))
        elif k == PRODUCT:
            c = 1
            for e in range(lo, hi):
                c *= counts[circuit.edge_a[e]]
            counts[i] = c
        else:
            c = 0
            for e in range(lo, hi):
                if circuit.edge_logw[e] == -np.inf:
                    continue
                t = counts[circuit.edge_a[e]]
                if circuit.edge_b[e] >= 0:
                    t *= counts[circuit.edge_b[e]]
                c += t
            counts[i] = c
    total = 1
    root_scope = scopes[-1]
    for v in range(circuit.num_variables):
        if root_scope >> v & 1:
            total *= card[v]
    return counts[-1] == total

"""Max and min of the quotient of two compatible deterministic circuits, and Lemma 2 bounds.

The pairwise pass (``circuit-layer.md`` §5, ``pc-certifier.md`` §4): for circuits ``P`` and ``Q``
that are smooth, deterministic and structured-decomposable on one vtree,

    R(n, m) = max over assignments x of the common support of  log p_n(x) − log q_m(x),

computed by a memoised recursion over pairs of nodes with the same scope: a sum pairs each
of its elements with the other side, products pair their factors by scope, and input nodes
compare value by value. The recursion is compiled once per circuit pair into a flat *plan*
(:class:`PairPlan`) that a numba kernel evaluates for each new evidence in one linear sweep.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.vtree import Vtree
from pcfair.errors import EvidenceError, StructureError, VariableError
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
        :func:`pcfair.circuit.properties.rightmost_path_primes`, combined for both circuits.
        Without it the right-most-path shortcuts are off (the pass stays sound).
    """

    def __init__(self, p: Circuit, q: Circuit, vtree: Vtree, path_primes: tuple | None = None):
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
        self._sp, self._sq = p.scopes(), q.scopes()
        from pcfair.circuit.properties import node_vtree_nodes

        self._vt_p = node_vtree_nodes(p, vtree)
        self._const_p = node_log_values(p, np.full(p.num_variables, -1, np.int32))
        self._const_q = node_log_values(q, np.full(q.num_variables, -1, np.int32))
        self._memo: dict[tuple[int, int], int] = {}
        self._kind: list[int] = []
        self._pnode: list[int] = []
        self._qnode: list[int] = []
        self._var: list[int] = []
        self._vt: list[int] = []
        self._opts: list[list[tuple[float, list[int]]]] = []
        self._merges: list[list[tuple[int, int, int]]] = []  # (prime-pair entry, group p, group q)
        self._groups: list[tuple[int, list[tuple[float, int]]]] = []  # (side, [(logw, sub)])
        self._arrays: tuple | None = None
        self.card = p.variables.cardinalities

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

    @property
    def num_entries(self) -> int:
        return len(self._kind)

    def evaluate_all(self, ev_p: np.ndarray, ev_q: np.ndarray, free: np.ndarray,
                     relaxed: np.ndarray | None = None) -> tuple:
        """Evaluate every entry for one evidence (index arrays; ``free`` a boolean mask;
        ``relaxed`` variables use the Boolean marginal-determinism leaf rule).

        Returns ``(value, feasible, choice, marg_free)`` arrays over the entries.
        """
        ev_p = np.ascontiguousarray(ev_p, np.int32)
        ev_q = np.ascontiguousarray(ev_q, np.int32)
        free = np.ascontiguousarray(free, np.bool_)
        if np.any((ev_p >= 0) != (ev_q >= 0)):
            raise EvidenceError("each variable must be observed on both sides or on neither")
        arrs = self.arrays()
        vt = self.vtree
        short, merge = K.shortcut_nodes(vt.left, vt.right, vt.var, vt.on_rightmost_path,
                                        self.short_ok, self.merge_ok, free, ev_p >= 0)
        if short.any() or merge.any():
            val_p = node_log_values(self.p, np.where(free, -1, ev_p).astype(np.int32))
            val_q = node_log_values(self.q, np.where(free, -1, ev_q).astype(np.int32))
        else:
            val_p = val_q = np.zeros(1)
        n = len(arrs[0])
        out = (np.empty(n), np.empty(n, np.bool_), np.empty(n, np.int64), np.empty(n, np.bool_))
        p, q = self.p, self.q
        K.evaluate_plan(*arrs, *self._merge_arrays, p.kind, p.value, p.param_ptr, p.params,
                        q.kind, q.value, q.param_ptr, q.params, self.card, ev_p, ev_q, free,
                        relaxed if relaxed is not None else np.zeros(len(free), np.bool_),
                        short, merge, val_p, val_q, *out)
        return out

    def conditional_extremes(self, root: int, d: int, fav: int, ev: np.ndarray,
                             free: np.ndarray) -> tuple[float, bool, float, bool]:
        """For a plan of a circuit against itself: ``(max log P(d,e,u)/P(¬d,e,u), feasible,
        max log P(¬d,e,u)/P(d,e,u), feasible)`` over completions ``u`` of ``free``, in one
        kernel call (what :meth:`evaluate_all` gives with the two decision values swapped)."""
        if self.p is not self.q:
            raise ValueError("conditional_extremes needs a plan of a circuit against itself")
        vt = self.vtree
        out = np.empty(4)
        K.conditional_extremes(*self.arrays(), *self._merge_arrays, *kernel_args(self.p),
                               self.card, vt.left, vt.right, vt.var, vt.on_rightmost_path,
                               self.short_ok, self.merge_ok, root, d, fav,
                               np.ascontiguousarray(ev, np.int32),
                               np.ascontiguousarray(free, np.bool_), out)
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
                 want_assignment: bool = True) -> "QuotientResult":
        """Evaluate the plan for one evidence and return entry ``root``'s result."""
        state = self.evaluate_all(ev_p, ev_q, free)
        return self.result(root, state, np.ascontiguousarray(free, np.bool_), want_assignment)


def _groups(c: Circuit, edges: list[int]) -> dict[int, list[tuple[float, int]]]:
    """Elements of a sum grouped by prime node: prime -> [(log w, sub)]."""
    out: dict[int, list[tuple[float, int]]] = {}
    for e in edges:
        out.setdefault(int(c.edge_a[e]), []).append((float(c.edge_logw[e]), int(c.edge_b[e])))
    return out


def _vars(scope: int) -> list[int]:
    from pcfair.circuit._scopes import bits

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
def quotient_structure(circuit: Circuit, assume_deterministic: bool = False) -> tuple[Vtree, tuple]:
    """Check that ``circuit`` supports the pairwise pass; return its vtree and the prime
    structure of its right-most path (for the exact shortcuts). Raises
    :class:`StructureError` with the reason.

    With ``assume_deterministic`` an undecided determinism check (``None``: too large for the
    pairwise tier) is taken as declared, e.g. for PSDD files, whose format promises it; a
    circuit proven non-deterministic is still refused."""
    key = ("quotient_structure", assume_deterministic)
    if key in circuit._cache:
        return circuit._cache[key]
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
            + ". Use an engine that needs only marginals (e.g. the dense engine) instead."
        )
    vt = rep.vtree
    from pcfair.circuit.properties import rightmost_path_primes

    out = (vt, rightmost_path_primes(circuit, vt))
    circuit._cache[key] = out
    return out


def self_plan(circuit: Circuit, assume_deterministic: bool = False) -> PairPlan:
    """The cached plan pairing ``circuit`` with itself (used by the bounds and the certifier)."""
    if "self_plan" not in circuit._cache:
        vt, path_primes = quotient_structure(circuit, assume_deterministic)
        circuit._cache["self_plan"] = PairPlan(circuit, circuit, vt, path_primes)
    return circuit._cache["self_plan"]


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
            from pcfair.circuit.properties import compatible

            if not compatible(p, q):
                raise StructureError("the circuits are not structured-decomposable on one vtree "
                                     "(incompatible); their quotient cannot be maximised exactly")
    key = ("pair_plan", id(q))
    plan = p._cache.get(key)
    if plan is None or plan.q is not q:
        same = vt_p == vt_q
        plan = PairPlan(p, q, vt_p, tuple(a & b for a, b in zip(ok_p, ok_q)) if same else None)
        p._cache[key] = plan
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


def decision_evidence(circuit: Circuit, decision, favorable) -> tuple[int, int, int]:
    """Index of the binary decision variable, its favourable value and the other value."""
    d = circuit.variables.index(decision)
    if circuit.variables.cardinalities[d] != 2:
        raise VariableError(f"the decision variable {circuit.names[d]!r} must be binary")
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
    plan = self_plan(circuit, assume_deterministic)
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


def bounds_core(circuit: Circuit, plan: PairPlan, root: int, d: int, fav: int, ev: np.ndarray,
                free_mask: np.ndarray, want_assignment: bool = True) -> _Bounds:
    """min/max over ``free_mask`` of P(D = fav | ev, u) in index form (variables neither free
    nor observed are marginalised). The engine room of :func:`conditional_bounds` and of the
    branch-and-bound search; raises :class:`EvidenceError` when P(ev) = 0."""
    ev_d, ev_nd = ev.copy(), ev.copy()
    ev_d[d], ev_nd[d] = fav, 1 - fav
    state = plan.evaluate_all(ev_d, ev_nd, free_mask)
    hi = plan.result(root, state, free_mask, want_assignment)
    state = plan.evaluate_all(ev_nd, ev_d, free_mask)
    lo = plan.result(root, state, free_mask, want_assignment)
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


def conditional_range(circuit: Circuit, plan: PairPlan, root: int, d: int, fav: int,
                      ev: np.ndarray, free_mask: np.ndarray) -> tuple[float, float]:
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
    key = "positive"
    if key not in circuit._cache:
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
        circuit._cache[key] = counts[-1] == total
    return circuit._cache[key]

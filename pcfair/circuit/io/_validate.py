"""The one validation every reader (and writer) runs: what a loaded model must satisfy.

:func:`circuit_problem` returns the first violation of what a format promises as
``(node, message)``, or None. :func:`check_loaded` turns it into a :class:`FormatError` naming
the file and, where the reader knows it, the line that defined the node; :func:`check_writable`
into a :class:`StructureError` (a writer refuses what its reader would refuse).

Checks, cheapest first (all linear in the circuit's size, up to the cost of the scope bitsets):

1. numbers: no NaN and no +inf anywhere among the sum log-weights and leaf log-parameters
   (``-inf``, a zero weight, is allowed);
2. with ``normalised=True`` (``.psdd``, ``.jpc``, ``.json``): no log-weight or leaf
   log-parameter above :data:`LOG_ROUNDING` (``1e-9``), every sum has at least one element and
   its weights sum to 1, every categorical leaf's parameters sum to 1, both within
   :data:`NORM_TOL` (``|log Σ| <= 1e-6``, i.e. a relative tolerance of about 1e-6); and the
   root mentions every variable (otherwise the joint sums to the product of the arities of the
   unmentioned variables, not to 1). Together with smoothness and decomposability this makes
   the circuit a normalised distribution (``Z = 1`` up to the tolerance);
3. smoothness and decomposability, by :func:`pcfair.circuit.properties._smooth_decomposable`
   (``smooth=False`` checks decomposability only: ``.sdd`` files are compressed and trimmed, so
   not smooth);
4. with a vtree: the variable counts agree and every split follows it (prime over the left,
   sub over the right subtree of the lowest vtree node above the element; a product's children
   each on one side), the test of :func:`pcfair.circuit.properties.respects_vtree` computed with
   leaf-order intervals and a range-minimum table, so that it stays linear on large PSDDs.

Determinism is not checked here: it costs a pairwise pass; ``Circuit.properties()`` decides it
and the engines check it where they rely on it.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit._scopes import bits
from pcfair.circuit.circuit import CATEGORICAL, PRODUCT, SUM, Circuit
from pcfair.circuit.io._text import LOG_ROUNDING
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError, StructureError

#: Tolerance on ``|log Σ w|`` of a sum's weights and of a categorical leaf's parameters.
NORM_TOL = 1e-6

Problem = tuple[int, str]


def _edge_owner(c: Circuit) -> np.ndarray:
    return np.repeat(np.arange(c.num_nodes), np.diff(c.edge_ptr))


def _segment_lse(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """log Σ exp over consecutive segments of the given (positive) lengths; -inf for a segment
    of zero weights."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    m = np.maximum.reduceat(values, starts)
    safe = np.where(np.isfinite(m), m, 0.0)
    s = np.add.reduceat(np.exp(values - np.repeat(safe, lengths)), starts)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(m), safe + np.log(s), -np.inf)


def _numbers_problem(c: Circuit, normalised: bool) -> Problem | None:
    owner = _edge_owner(c)
    is_sum_edge = (c.kind == SUM)[owner] if len(owner) else np.zeros(0, bool)
    w = c.edge_logw
    bad = np.flatnonzero(np.isnan(w) | (w == np.inf))
    if len(bad):
        i = int(owner[bad[0]])
        return i, f"{c.describe_node(i)} has log-weight {w[bad[0]]} (NaN and +inf are refused)"
    # the leaves' parameters, gathered leaf by leaf (p_owner: the leaf of each)
    leaves = np.flatnonzero(c.kind == CATEGORICAL)
    plen = c.param_len[leaves].astype(np.int64)
    if np.any(plen < 1):
        i = int(leaves[np.flatnonzero(plen < 1)[0]])
        return i, f"{c.describe_node(i)} has no parameters"
    first = np.cumsum(plen) - plen
    idx = np.repeat(c.param_ptr[leaves].astype(np.int64) - first, plen) + np.arange(plen.sum())
    p = c.params[idx]
    p_owner = np.repeat(leaves, plen)
    bad = np.flatnonzero(np.isnan(p) | (p == np.inf))
    if len(bad):
        i = int(p_owner[bad[0]])
        return i, f"{c.describe_node(i)} has log-parameter {p[bad[0]]} (NaN and +inf are refused)"
    if not normalised:
        return None
    bad = np.flatnonzero(is_sum_edge & (w > LOG_ROUNDING))
    if len(bad):
        i = int(owner[bad[0]])
        return i, (f"{c.describe_node(i)} has log-weight {w[bad[0]]!r} > 0, a weight above 1; "
                   "this format stores normalised probabilities")
    bad = np.flatnonzero(p > LOG_ROUNDING)
    if len(bad):
        i = int(p_owner[bad[0]])
        return i, (f"{c.describe_node(i)} has log-probability {p[bad[0]]!r} > 0, a probability "
                   "above 1")
    sums = np.flatnonzero(c.kind == SUM)
    deg = np.diff(c.edge_ptr)[sums]
    if np.any(deg == 0):
        i = int(sums[np.flatnonzero(deg == 0)[0]])
        return i, f"{c.describe_node(i)} has no elements: its weights cannot sum to 1"
    if len(sums):
        lse = _segment_lse(w[is_sum_edge], deg)
        bad = np.flatnonzero(~(np.abs(lse) <= NORM_TOL))
        if len(bad):
            i = int(sums[bad[0]])
            return i, (f"the weights of {c.describe_node(i)} sum to {np.exp(lse[bad[0]]):.17g}, "
                       f"not 1 (tolerance {NORM_TOL:g} relative)")
    if len(leaves):
        ln = _segment_lse(p, plen)
        bad = np.flatnonzero(~(np.abs(ln) <= NORM_TOL))
        if len(bad):
            i = int(leaves[bad[0]])
            return i, (f"the parameters of {c.describe_node(i)} sum to "
                       f"{np.exp(ln[bad[0]]):.17g}, not 1 (tolerance {NORM_TOL:g} relative)")
    return None


def _structure_problem(c: Circuit, smooth: bool, normalised: bool) -> Problem | None:
    from pcfair.circuit.properties import _smooth_decomposable

    problems: list = []
    _smooth_decomposable(c, problems)
    for prob in problems:
        if prob.property == "decomposable" or smooth:
            return prob.node, f"not {prob.property}: {prob.message}"
    if normalised:
        root = c.scopes()[-1]
        missing = [v for v in range(c.num_variables) if not root >> v & 1]
        if missing:
            names = [c.names[v] for v in missing[:10]]
            return c.root, (f"the root does not mention variable(s) {names}"
                            f"{' ...' if len(missing) > 10 else ''}: the model is not a "
                            "distribution over all its variables")
    return None


class _Gaps:
    """Range-minimum (by depth) over the internal vtree nodes in in-order: the internal node
    between leaves ``k`` and ``k + 1`` (in leaf order) is gap ``k``; the lowest common ancestor
    of leaves ``p < q`` is the shallowest gap in ``p .. q-1``; its left subtree holds leaves
    ``.. g`` and its right subtree leaves ``g+1 ..``."""

    def __init__(self, vtree: Vtree):
        inorder = vtree.inorder_ids()
        by_inorder = np.empty(vtree.num_nodes, np.int64)
        by_inorder[inorder] = np.arange(vtree.num_nodes)
        leaves_in_order = by_inorder[0::2]
        self.pos = np.empty(vtree.num_variables, np.int64)
        self.pos[vtree.var[leaves_in_order]] = np.arange(vtree.num_variables)
        self.depth = vtree.depth[by_inorder[1::2]].astype(np.int64)
        g = len(self.depth)
        table = [np.arange(g)]
        k = 1
        while (1 << k) <= g:
            prev, half = table[-1], 1 << (k - 1)
            a, b = prev[: g - (1 << k) + 1], prev[half : half + g - (1 << k) + 1]
            table.append(np.where(self.depth[a] <= self.depth[b], a, b))
            k += 1
        self.table = table

    def argmin(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The shallowest gap in ``lo .. hi`` (inclusive; ``lo <= hi``), elementwise."""
        out = np.empty(len(lo), np.int64)
        if not len(lo):
            return out
        k = np.floor(np.log2(hi - lo + 1)).astype(np.int64)
        for level in np.unique(k):
            sel = k == level
            t = self.table[level]
            a, b = t[lo[sel]], t[hi[sel] - (1 << level) + 1]
            out[sel] = np.where(self.depth[a] <= self.depth[b], a, b)
        return out


def _intervals(c: Circuit, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest leaf-order position of every node's scope (n, -1 when empty).

    Nodes share few distinct scopes in structured circuits, so the U distinct scope bitsets are
    unpacked with numpy (U · n bits); when that is more work than a loop over the nodes and
    edges, the loop is used instead."""
    scopes = c.scopes()
    n = c.num_variables
    uniq: dict[int, int] = {}
    idx = np.fromiter((uniq.setdefault(s, len(uniq)) for s in scopes), np.int64, len(scopes))
    if len(uniq) * n > 30 * (c.num_nodes + len(c.edge_a)):
        return _intervals_loop(c, pos)
    nbytes = (n + 7) // 8
    keys = list(uniq)
    lo_u = np.empty(len(keys), np.int64)
    hi_u = np.empty(len(keys), np.int64)
    rows = max(1, 10_000_000 // max(n, 1))
    for start in range(0, len(keys), rows):
        chunk = keys[start : start + rows]
        raw = np.frombuffer(b"".join(k.to_bytes(nbytes, "little") for k in chunk), np.uint8)
        m = np.unpackbits(raw.reshape(len(chunk), nbytes), axis=1, bitorder="little")[:, :n]
        m = m.astype(bool)
        lo_u[start : start + len(chunk)] = np.where(m, pos[None, :], n).min(axis=1)
        hi_u[start : start + len(chunk)] = np.where(m, pos[None, :], -1).max(axis=1)
    return lo_u[idx], hi_u[idx]


def _intervals_loop(c: Circuit, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = c.num_nodes
    kind = c.kind.tolist()
    var = c.var.tolist()
    ptr = c.edge_ptr.tolist()
    ea = c.edge_a.tolist()
    eb = c.edge_b.tolist()
    posl = pos.tolist()
    big = len(posl)
    lo = [big] * n
    hi = [-1] * n
    for i in range(n):
        if kind[i] <= CATEGORICAL:
            lo[i] = hi[i] = posl[var[i]]
            continue
        a0, a1 = ptr[i], ptr[i + 1]
        if a0 == a1:
            continue
        kids = ea[a0:a1]
        if kind[i] == SUM:
            kids = kids + [b for b in eb[a0:a1] if b >= 0]
        lo[i] = min([lo[k] for k in kids])
        hi[i] = max([hi[k] for k in kids])
    return np.array(lo, np.int64), np.array(hi, np.int64)


def vtree_problem(c: Circuit, vtree: Vtree) -> Problem | None:
    """The first split of ``c`` that does not follow ``vtree`` (the test of
    :func:`pcfair.circuit.properties.respects_vtree`, in linear time); assumes ``c`` is
    decomposable."""
    if vtree.num_variables != c.num_variables:
        return c.root, (f"the vtree has {vtree.num_variables} variables but the circuit has "
                        f"{c.num_variables}")
    if int(np.max(c.var, initial=-1)) >= vtree.num_variables:
        return c.root, "the circuit mentions a variable the vtree does not have"
    if vtree.num_variables == 1:
        return None
    gaps = _Gaps(vtree)
    lo, hi = _intervals(c, gaps.pos)
    owner = _edge_owner(c)
    kind_e = c.kind[owner] if len(owner) else np.zeros(0, np.int8)
    # sum elements (prime, sub): prime left of the gap, sub right of it
    els = np.flatnonzero((kind_e == SUM) & (c.edge_b >= 0))
    a, b = c.edge_a[els], c.edge_b[els]
    both = (hi[a] >= 0) & (hi[b] >= 0)
    els, a, b = els[both], a[both], b[both]
    ok = hi[a] < lo[b]
    g = np.full(len(els), -1, np.int64)
    g[ok] = gaps.argmin(lo[a][ok], hi[b][ok] - 1)
    ok &= (hi[a] <= g) & (g < lo[b])
    if not ok.all():
        e = int(els[np.flatnonzero(~ok)[0]])
        i = int(owner[e])
        sc = c.scopes()
        pa, sb = sc[c.edge_a[e]], sc[c.edge_b[e]]
        return i, (f"{c.describe_node(i)} has an element with prime over "
                   f"{[c.names[v] for v in bits(pa)]} and sub over "
                   f"{[c.names[v] for v in bits(sb)]}, which does not follow the vtree "
                   "(the prime's variables must lie under the left and the sub's under the "
                   "right child of their lowest common vtree node)")
    # products: every non-empty child on one side of the gap of the product's scope
    pe = np.flatnonzero(kind_e == PRODUCT)
    if len(pe):
        ch = c.edge_a[pe]
        nonempty = hi[ch] >= 0
        pe, ch = pe[nonempty], ch[nonempty]
        par = owner[pe]
        counts = np.bincount(par, minlength=c.num_nodes)
        split = np.flatnonzero((c.kind == PRODUCT) & (counts >= 2))
        if len(split):
            gp = np.full(c.num_nodes, -1, np.int64)
            gp[split] = gaps.argmin(lo[split], hi[split] - 1)
            sel = counts[par] >= 2
            gpe = gp[par[sel]]
            good = (hi[ch[sel]] <= gpe) | (lo[ch[sel]] > gpe)
            if not good.all():
                i = int(par[sel][np.flatnonzero(~good)[0]])
                return i, (f"{c.describe_node(i)} splits its variables in a way that does not "
                           "follow the vtree (each child must lie under one child of the "
                           "lowest vtree node above the product)")
    return None


def circuit_problem(c: Circuit, *, normalised: bool, smooth: bool = True,
                    vtree: Vtree | None = None) -> Problem | None:
    """The first violation (``(node, message)``) of what the format promises, or None (see the
    module docstring for the checks and tolerances)."""
    return (_numbers_problem(c, normalised)
            or _structure_problem(c, smooth, normalised)
            or (vtree_problem(c, vtree) if vtree is not None else None))


def check_loaded(c: Circuit, path: str, lines=None, *, normalised: bool, smooth: bool = True,
                 vtree: Vtree | None = None, what: str = "") -> Circuit:
    """Raise :class:`FormatError` (file and the node's line when ``lines`` maps node → line)
    unless ``c`` passes :func:`circuit_problem`; returns ``c``."""
    prob = circuit_problem(c, normalised=normalised, smooth=smooth, vtree=vtree)
    if prob is not None:
        node, message = prob
        line = int(lines[node]) if lines is not None and 0 <= node < len(lines) else None
        raise FormatError(message + what, path, line)
    return c


def check_writable(c: Circuit, fmt: str, *, vtree: Vtree | None = None) -> None:
    """Raise :class:`StructureError` when ``c`` could not be read back from ``fmt``."""
    prob = circuit_problem(c, normalised=True, vtree=vtree)
    if prob is not None:
        raise StructureError(f"cannot save as {fmt}: {prob[1]} ({fmt} stores smooth, "
                             "decomposable, normalised circuits)")

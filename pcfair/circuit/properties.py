"""Structural properties: smoothness, decomposability, determinism, structured decomposability.

:func:`check_properties` (also ``Circuit.properties()``) returns a :class:`PropertyReport`; every
failure is a :class:`Problem` naming the node, the property and, for determinism, a
counterexample: an assignment on which two elements of a sum are both non-zero.

Determinism is decided in tiers, and the report says which tier decided:

1. ``"syntactic"``: elements that hold indicators (or leaves with zero parameters) of one variable
   with disjoint allowed values are exclusive;
2. ``"pairwise"``: for structured-decomposable circuits, the supports of two elements are
   intersected exactly by the pairwise pass in the Boolean semiring;
3. ``"exhaustive"``: enumeration of every assignment of the node's scope when it is small.

Where no tier applies the answer is ``None`` (unknown), never a guess. Zero-weight elements
never count as support.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit._scopes import bits
from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.derived import derived
from pcfair.circuit.vtree import Vtree


@dataclass(frozen=True)
class Problem:
    """One structural failure: the node, the property, a message, and a counterexample."""

    node: int
    property: str
    message: str
    counterexample: dict | None = None

    def to_dict(self) -> dict:
        return {"node": self.node, "property": self.property, "message": self.message,
                "counterexample": self.counterexample}


@dataclass(frozen=True)
class PropertyReport:
    """The structural report of a circuit (see the module docstring)."""

    smooth: bool
    decomposable: bool
    deterministic: bool | None
    determinism_tier: str | None
    structured_decomposable: bool | None
    vtree: Vtree | None
    normalized: bool
    num_nodes: int
    num_edges: int
    num_variables: int
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready dictionary (the vtree as nested pairs of variable indices)."""
        return {
            "smooth": self.smooth,
            "decomposable": self.decomposable,
            "deterministic": self.deterministic,
            "determinism_tier": self.determinism_tier,
            "structured_decomposable": self.structured_decomposable,
            "vtree": None if self.vtree is None else self.vtree.to_nested(),
            "normalized": self.normalized,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "num_variables": self.num_variables,
            "problems": [p.to_dict() for p in self.problems],
        }


# ------------------------------------------------------------------------------ helpers
def node_vtree_nodes(circuit: Circuit, vtree: Vtree) -> np.ndarray:
    """The vtree node of every circuit node: the lowest common ancestor of its scope (−1 for
    an empty scope)."""
    out = np.full(circuit.num_nodes, -1, np.int64)
    leaf_of = vtree.leaf_of
    for i in range(circuit.num_nodes):
        if circuit.kind[i] in (INDICATOR, CATEGORICAL):
            v = int(circuit.var[i])
            if v >= vtree.num_variables:
                raise ValueError(f"variable {v} is not in the vtree")
            out[i] = leaf_of[v]
            continue
        w = -1
        for c in circuit.children(i):
            cw = out[c]
            if cw < 0:
                continue
            w = cw if w < 0 else vtree.lca(w, int(cw))
        out[i] = w
    return out


def _element_scope(c: Circuit, scopes: list[int], e: int) -> int:
    s = scopes[c.edge_a[e]]
    return s | scopes[c.edge_b[e]] if c.edge_b[e] >= 0 else s


def _factor_blocks(c: Circuit, scopes: list[int], node: int, e: int | None) -> list[int]:
    """Non-empty child scopes of a product node (e is None) or of a sum's element e."""
    if e is None:
        kids = c.edge_a[c.edge_ptr[node] : c.edge_ptr[node + 1]]
    else:
        kids = [c.edge_a[e]] + ([c.edge_b[e]] if c.edge_b[e] >= 0 else [])
    return [scopes[k] for k in kids if scopes[k]]


def _splits(c: Circuit):
    """Yield (node, element or None, blocks) for every product and element with >= 2 blocks."""
    scopes = c.scopes()
    for i in range(c.num_nodes):
        if c.kind[i] == PRODUCT:
            blocks = _factor_blocks(c, scopes, i, None)
            if len(blocks) >= 2:
                yield i, None, blocks
        elif c.kind[i] == SUM:
            for e in range(c.edge_ptr[i], c.edge_ptr[i + 1]):
                if c.edge_b[e] >= 0:
                    blocks = _factor_blocks(c, scopes, i, e)
                    if len(blocks) >= 2:
                        yield i, e, blocks


def _names(c: Circuit, scope: int) -> list[str]:
    return [c.names[v] for v in bits(scope)]


# ------------------------------------------------------------------------ smooth/decomp
def _smooth_decomposable(c: Circuit, problems: list[Problem]) -> tuple[bool, bool]:
    scopes = c.scopes()
    smooth = decomposable = True
    for i in range(c.num_nodes):
        lo, hi = c.edge_ptr[i], c.edge_ptr[i + 1]
        if c.kind[i] == SUM:
            el = [_element_scope(c, scopes, e) for e in range(lo, hi)]
            if len(set(el)) > 1:
                smooth = False
                a, b = el[0], next(s for s in el if s != el[0])
                problems.append(Problem(i, "smooth", f"children of {c.describe_node(i)} have "
                                        f"different scopes: {_names(c, a)} vs {_names(c, b)}"))
            for e in range(lo, hi):
                if c.edge_b[e] >= 0 and scopes[c.edge_a[e]] & scopes[c.edge_b[e]]:
                    decomposable = False
                    shared = scopes[c.edge_a[e]] & scopes[c.edge_b[e]]
                    problems.append(Problem(i, "decomposable", f"an element of "
                                            f"{c.describe_node(i)} has prime and sub sharing "
                                            f"{_names(c, shared)}"))
        elif c.kind[i] == PRODUCT:
            seen = 0
            for e in range(lo, hi):
                s = scopes[c.edge_a[e]]
                if seen & s:
                    decomposable = False
                    problems.append(Problem(i, "decomposable", f"children of "
                                            f"{c.describe_node(i)} share variables "
                                            f"{_names(c, seen & s)}"))
                    break
                seen |= s
    return smooth, decomposable


def require_tractable_marginals(circuit: Circuit) -> None:
    """Refuse a circuit whose marginals the engines cannot compute exactly.

    Marginals by one bottom-up pass are exact when the circuit is smooth and decomposable and
    its root's scope is every variable (a variable outside it would count each of its values
    with the whole mass). Checked once per circuit (cached).

    Raises
    ------
    StructureError
        Naming the first failing node and property.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder(2)
    >>> pc = b.build(b.sum([b.bernoulli("1", 0.5), b.bernoulli("2", 0.5)], [0.5, 0.5]))
    >>> require_tractable_marginals(pc)
    Traceback (most recent call last):
    ...
    pcfair.errors.StructureError: not smooth: children of node 2 (sum with 2 elements) ...
    """
    from pcfair.errors import StructureError

    def find() -> list[Problem]:
        problems: list[Problem] = []
        _smooth_decomposable(circuit, problems)
        missing = [v for v in range(circuit.num_variables)
                   if not circuit.scopes()[circuit.root] >> v & 1]
        if missing:
            problems.append(Problem(circuit.root, "covering", "the root does not cover the "
                                    f"variables {[circuit.names[v] for v in missing]}"))
        return problems

    problems = derived(circuit, "marginal_problems", find)
    if problems:
        p = problems[0]
        raise StructureError(f"not {p.property}: {p.message}; exact marginals need a smooth, "
                             "decomposable circuit whose root covers every variable")


# --------------------------------------------------------------- structured decomposability
def _partition_map(c: Circuit, problems: list[Problem] | None) -> dict[int, tuple] | None:
    """scope -> blocks (in the order of the first split seen: prime first) for every split;
    None (with a problem) if a scope is split two different ways."""
    found: dict[int, tuple[frozenset, int, tuple]] = {}
    for node, _e, blocks in _splits(c):
        scope = 0
        for b in blocks:
            scope |= b
        part = frozenset(blocks)
        if scope in found and found[scope][0] != part:
            if problems is not None:
                other = sorted(_names(c, b) for b in found[scope][0])
                this = sorted(_names(c, b) for b in part)
                problems.append(Problem(node, "structured_decomposable",
                                        f"{c.describe_node(node)} splits {_names(c, scope)} as "
                                        f"{this}, but node {found[scope][1]} splits it as {other}"))
            return None
        found.setdefault(scope, (part, node, tuple(blocks)))
    return {s: order for s, (_, _, order) in found.items()}


def vtree_from_partitions(parts: dict[int, tuple], root_scope: int, num_vars: int
                          ) -> Vtree | None:
    """A vtree in which every partition is a node's split, or None if they do not nest."""
    used: set[int] = set()

    def build(scope: int):
        vs = bits(scope)
        if len(vs) == 1:
            return vs[0]
        if scope in parts:
            used.add(scope)
            blocks = list(parts[scope])
            sub = [build(b) for b in blocks]
            t = sub[-1]
            for x in reversed(sub[:-1]):
                t = (x, t)
            return t
        # no product splits this scope: any split works; honour nested partitions inside it
        inner = [s for s in parts if s & scope == s and s != scope]
        maximal = [s for s in inner if not any(s & o == s and s != o for o in inner)]
        blocks = maximal + [1 << v for v in vs if not any(s >> v & 1 for s in maximal)]
        if len(blocks) == 1:
            return build(blocks[0])
        blocks.sort(key=lambda b: bits(b)[0])
        sub = [build(b) for b in blocks]
        t = sub[-1]
        for x in reversed(sub[:-1]):
            t = (x, t)
        return t

    for s, part in parts.items():  # partitions must be laminar among themselves
        for o in parts:
            if o != s and o & s and not (o & s == o or o & s == s):
                return None
    if root_scope == 0:
        return None
    tree = build(root_scope)
    if set(parts) - used:  # a split scope that is not a block of its parent's split
        return None
    missing = [v for v in range(num_vars) if not root_scope >> v & 1]
    for v in missing:
        tree = (tree, v)
    return Vtree.from_nested(tree)


def respects_vtree(c: Circuit, vtree: Vtree) -> Problem | None:
    """None if every split of ``c`` follows ``vtree`` (prime left, sub right), else a Problem."""
    if vtree.num_variables != c.num_variables:
        return Problem(c.root, "structured_decomposable", "the vtree has "
                       f"{vtree.num_variables} variables, the circuit {c.num_variables}")
    vs = vtree.scopes
    for node, _e, blocks in _splits(c):
        scope = 0
        for b in blocks:
            scope |= b
        w = vtree.lca_of_vars(bits(scope))
        left, right = vs[vtree.left[w]], vs[vtree.right[w]]
        if len(blocks) == 2 and _e is not None:
            ok = blocks[0] & left == blocks[0] and blocks[1] & right == blocks[1]
        else:
            ok = all(b & left == b or b & right == b for b in blocks)
        if not ok:
            return Problem(node, "structured_decomposable", f"{c.describe_node(node)} splits "
                           f"{_names(c, scope)} into {[_names(c, b) for b in blocks]}, which "
                           "does not follow the attached vtree")
    return None


def compatible(c1: Circuit, c2: Circuit) -> bool:
    """True when both circuits are structured-decomposable with respect to one vtree."""
    if c1.variables != c2.variables:
        return False
    p1 = _partition_map(c1, None)
    p2 = _partition_map(c2, None)
    if p1 is None or p2 is None:
        return False
    merged = dict(p1)
    for s, part in p2.items():
        if s in merged and frozenset(merged[s]) != frozenset(part):
            return False
        merged[s] = part
    root = c1.scopes()[-1] | c2.scopes()[-1]
    return vtree_from_partitions(merged, root, c1.num_variables) is not None


# ---------------------------------------------------------------------------- determinism
def _allowed_values(c: Circuit, node: int) -> dict[int, frozenset] | None:
    """Values a factor allows per variable when it is an input node (None otherwise)."""
    k = c.kind[node]
    v = int(c.var[node])
    if k == INDICATOR:
        return {v: frozenset([int(c.value[node])])}
    if k == CATEGORICAL:
        p = c.params[c.param_ptr[node] : c.param_ptr[node] + c.param_len[node]]
        return {v: frozenset(np.flatnonzero(p > -np.inf).tolist())}
    return None


def _literal_constraints(c: Circuit, e: int) -> dict[int, frozenset]:
    out: dict[int, frozenset] = {}
    factors = [c.edge_a[e]] + ([c.edge_b[e]] if c.edge_b[e] >= 0 else [])
    for f in factors:
        kids = [f]
        if c.kind[f] == PRODUCT:
            kids = list(c.edge_a[c.edge_ptr[f] : c.edge_ptr[f + 1]])
        for k in kids:
            a = _allowed_values(c, int(k))
            if a:
                for v, vals in a.items():
                    out[v] = out[v] & vals if v in out else vals
    return out


def _syntactically_exclusive(ca: dict, cb: dict) -> bool:
    return any(v in cb and not (vals & cb[v]) for v, vals in ca.items())


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
                from pcfair.inference.quotient import PairPlan

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


def _counterexample(c: Circuit, vtree: Vtree, ta: int, tb: int) -> dict:
    """A point where the terms ``ta`` and ``tb`` are both non-zero (they are known to meet)."""
    from pcfair.inference.quotient import PairPlan

    plan = PairPlan(c, c, vtree, relaxed=np.zeros(c.num_variables, bool))
    none = np.full(c.num_variables, -1, np.int32)
    free = np.ones(c.num_variables, bool)
    res = plan.evaluate(plan.entry(ta, tb), none, none, free)
    scopes = c.scopes()
    n = c.num_nodes
    scope = 0
    for t in (ta, tb):
        if t < n:
            scope |= scopes[t]
        else:
            e = t - n
            scope |= scopes[c.edge_a[e]] | (scopes[c.edge_b[e]] if c.edge_b[e] >= 0 else 0)
    return {c.names[v]: c.variables.domains[v][int(res.assignment[v])] for v in bits(scope)}


def _determinism(c: Circuit, structured_vtree: Vtree | None, exhaustive_limit: int,
                 pairwise_budget: int, problems: list[Problem]) -> tuple[bool | None, str | None]:
    tiers_used: set[str] = set()
    unknown = False
    failed = False
    n = c.num_nodes
    pairwise: list[tuple[int, int, int]] = []  # (node, edge x, edge y) for the pairwise tier
    card = c.variables.cardinalities
    for i, live, pending in _pending_element_pairs(c):
        if not pending:
            tiers_used.add("syntactic")
        elif structured_vtree is not None:
            pairwise.extend((i, x, y) for x, y in pending)
        else:
            scope_vars = bits(c.scopes()[i])
            size = int(np.prod([int(card[v]) for v in scope_vars])) if scope_vars else 1
            if size > (1 << exhaustive_limit):
                unknown = True
                continue
            tiers_used.add("exhaustive")
            hit = _exhaustive_overlap(c, live, scope_vars, pending)
            if hit is not None:
                failed = True
                problems.append(Problem(i, "deterministic", f"two elements of "
                                        f"{c.describe_node(i)} are both non-zero on the "
                                        "counterexample", hit))
    if pairwise:
        from pcfair.inference.quotient import PairPlan

        tiers_used.add("pairwise")
        plan = PairPlan(c, c, structured_vtree, relaxed=np.zeros(c.num_variables, bool))
        pairs = np.array([(n + x, n + y) for _, x, y in pairwise], np.int64)
        hits = plan.supports(pairs, budget=pairwise_budget)
        reported: set[int] = set()
        for (i, x, y), hit in zip(pairwise, hits.tolist()):
            if hit == 0:
                unknown = True
            elif hit > 0 and i not in reported:
                failed = True
                reported.add(i)
                problems.append(Problem(
                    i, "deterministic", f"two elements of {c.describe_node(i)} are both "
                    "non-zero on the counterexample",
                    _counterexample(c, structured_vtree, n + x, n + y)))
    if failed:
        return False, "pairwise" if "pairwise" in tiers_used else "exhaustive"
    if unknown:
        return None, None
    for t in ("exhaustive", "pairwise", "syntactic"):
        if t in tiers_used:
            return True, t
    return True, "syntactic"


def _pending_element_pairs(c: Circuit):
    """Yield ``(sum node, live elements, element pairs not syntactically exclusive)`` for
    every sum with at least two live elements (tier 1 of the determinism check)."""
    for i in np.flatnonzero(c.kind == SUM).tolist():
        lo, hi = int(c.edge_ptr[i]), int(c.edge_ptr[i + 1])
        if hi - lo < 2:
            continue
        live = [e for e in range(lo, hi) if c.edge_logw[e] > -np.inf]
        if len(live) < 2:
            continue
        cons = {e: _literal_constraints(c, e) for e in live}
        pending = [(x, y) for x, y in itertools.combinations(live, 2)
                   if not _syntactically_exclusive(cons[x], cons[y])]
        yield i, live, pending


def _exhaustive_overlap(c: Circuit, live: list[int], scope_vars: list[int],
                        pending) -> dict | None:
    from pcfair.inference.marginals import node_log_values

    card = c.variables.cardinalities
    for values in itertools.product(*[range(int(card[v])) for v in scope_vars]):
        ev = np.full(c.num_variables, -1, np.int32)
        ev[scope_vars] = values
        vals = node_log_values(c, ev)
        active = set()
        for e in live:
            t = c.edge_logw[e] + vals[c.edge_a[e]] + (vals[c.edge_b[e]] if c.edge_b[e] >= 0 else 0)
            if t > -np.inf:
                active.add(e)
        for x, y in pending:
            if x in active and y in active:
                return {c.names[v]: c.variables.domains[v][int(ev[v])] for v in scope_vars}
    return None


def _normalized(c: Circuit) -> bool:
    from pcfair.inference.marginals import node_log_values

    if np.any(np.abs(c.leaf_lognorm[c.kind == CATEGORICAL]) > 1e-9):
        return False
    for i in np.flatnonzero(c.kind == SUM):
        w = c.edge_logw[c.edge_ptr[i] : c.edge_ptr[i + 1]]
        m = w.max()
        if m == -np.inf or abs(m + np.log(np.exp(w - m).sum())) > 1e-9:
            return False
    z = node_log_values(c, np.full(c.num_variables, -1, np.int32))[-1]
    return bool(abs(z) < 1e-9)


# ------------------------------------------------------------------------------- entry point
def check_properties(circuit: Circuit, *, exhaustive_limit: int = 16,
                     pairwise_budget: int = 50_000) -> PropertyReport:
    """Check the structural properties of ``circuit``.

    Parameters
    ----------
    circuit : Circuit
    exhaustive_limit : int, default 16
        The exhaustive determinism tier enumerates a sum's scope when it has at most
        ``2**exhaustive_limit`` assignments.
    pairwise_budget : int, default 50000
        Most new node pairs the (compiled) pairwise determinism tier may explore for one pair
        of elements; element pairs left over are undecided and make ``deterministic`` None
        (unknown) rather than a guess. Node pairs are memoised across element pairs.

    Returns
    -------
    PropertyReport

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder(2)
    >>> x1, x2 = b.literal("1"), b.literal("2")
    >>> root = b.sum([b.product(x1, x2), b.product(x1, b.bernoulli("2", 0.5))], [0.5, 0.5])
    >>> rep = b.build(root).properties()
    >>> rep.deterministic, rep.problems[0].counterexample
    (False, {'1': 1, '2': 1})
    """
    problems: list[Problem] = []
    smooth, decomposable = _smooth_decomposable(circuit, problems)
    vtree: Vtree | None = None
    structured: bool | None
    if not decomposable:
        structured = False
    else:
        parts = _partition_map(circuit, problems)
        if parts is None:
            structured = False
        else:
            if circuit.vtree is not None:
                prob = respects_vtree(circuit, circuit.vtree)
                if prob is None:
                    vtree, structured = circuit.vtree, True
                else:
                    problems.append(prob)
            if vtree is None:
                inferred = vtree_from_partitions(parts, circuit.scopes()[-1],
                                                 circuit.num_variables)
                if inferred is None:
                    structured = False
                    problems.append(Problem(circuit.root, "structured_decomposable",
                                            "the products' splits do not nest into one vtree"))
                else:
                    vtree, structured = inferred, True
    det_vtree = vtree if (structured and smooth) else None
    deterministic, tier = _determinism(circuit, det_vtree, exhaustive_limit, pairwise_budget,
                                       problems)
    return PropertyReport(
        smooth=smooth, decomposable=decomposable, deterministic=deterministic,
        determinism_tier=tier, structured_decomposable=structured, vtree=vtree,
        normalized=_normalized(circuit), num_nodes=circuit.num_nodes,
        num_edges=circuit.num_edges, num_variables=circuit.num_variables, problems=problems,
    )

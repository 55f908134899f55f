"""Structural properties: smoothness, decomposability, structured decomposability.

:class:`PropertyReport` and :class:`Problem` are the report that
:func:`pcfair.inference.properties.check_properties` (also ``Circuit.properties()``) returns;
this module holds the checks that read the circuit's graph only (:func:`check_structure`,
:func:`require_tractable_marginals`, :func:`respects_vtree`, :func:`compatible`, and the
syntactic exclusivity of elements, determinism's first tier). The checks that evaluate the
circuit (determinism by the pairwise Boolean pass or by enumeration, normalisation) live in
:mod:`pcfair.inference.properties`, so that this package imports nothing from
:mod:`pcfair.inference`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pcfair.circuit._kinds import CATEGORICAL, INDICATOR, PRODUCT, SUM
from pcfair.circuit._scopes import bits
from pcfair.circuit.derived import derived
from pcfair.circuit.vtree import Vtree
from pcfair.errors import StructureError

if TYPE_CHECKING:  # pragma: no cover
    from pcfair.circuit.circuit import Circuit  # which imports this module (compatible_with)


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
                raise StructureError(f"variable {v} is not in the vtree")
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


# ------------------------------------------------------------------------------- structure
def check_structure(circuit: Circuit, problems: list[Problem]
                    ) -> tuple[bool, bool, bool | None, Vtree | None]:
    """``(smooth, decomposable, structured_decomposable, vtree)`` of ``circuit``, appending
    a :class:`Problem` for each failure: the purely structural half of
    :func:`pcfair.inference.properties.check_properties` (determinism and normalisation,
    which need inference, are decided there).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    >>> pc = b.build(b.product(b.categorical("a", [0.5, 0.5]), b.categorical("b", [0.5, 0.5])))
    >>> check_structure(pc, [])[:3]
    (True, True, True)
    """
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
    return smooth, decomposable, structured, vtree

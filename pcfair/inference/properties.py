"""The property report of a circuit: structure plus the checks that need inference.

:func:`check_properties` (also ``Circuit.properties()``) returns a
:class:`~pcfair.circuit.properties.PropertyReport`; every failure is a
:class:`~pcfair.circuit.properties.Problem` naming the node, the property and, for
determinism, a counterexample: an assignment on which two elements of a sum are both non-zero.
The structural checks are :func:`pcfair.circuit.properties.check_structure`'s.

Determinism is decided in tiers, and the report says which tier decided:

1. ``"syntactic"``: elements that hold indicators (or leaves with zero parameters) of one variable
   with disjoint allowed values are exclusive;
2. ``"pairwise"``: for structured-decomposable circuits, the supports of two elements are
   intersected exactly by the pairwise pass in the Boolean semiring
   (:class:`pcfair.inference.quotient.PairPlan`);
3. ``"exhaustive"``: enumeration of every assignment of the node's scope when it is small.

Where no tier applies the answer is ``None`` (unknown), never a guess. Zero-weight elements
never count as support.
"""

from __future__ import annotations

import itertools

import numpy as np

from pcfair.circuit._scopes import bits
from pcfair.circuit.circuit import CATEGORICAL, SUM, Circuit
from pcfair.circuit.properties import (
    Problem,
    PropertyReport,
    _literal_constraints,
    _syntactically_exclusive,
    check_structure,
)
from pcfair.circuit.vtree import Vtree
from pcfair.inference.marginals import node_log_values
from pcfair.inference.quotient import PairPlan


def _counterexample(c: Circuit, vtree: Vtree, ta: int, tb: int) -> dict:
    """A point where the terms ``ta`` and ``tb`` are both non-zero (they are known to meet)."""
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
    smooth, decomposable, structured, vtree = check_structure(circuit, problems)
    det_vtree = vtree if (structured and smooth) else None
    deterministic, tier = _determinism(circuit, det_vtree, exhaustive_limit, pairwise_budget,
                                       problems)
    return PropertyReport(
        smooth=smooth, decomposable=decomposable, deterministic=deterministic,
        determinism_tier=tier, structured_decomposable=structured, vtree=vtree,
        normalized=_normalized(circuit), num_nodes=circuit.num_nodes,
        num_edges=circuit.num_edges, num_variables=circuit.num_variables, problems=problems,
    )

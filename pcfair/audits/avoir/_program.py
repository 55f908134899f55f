"""A specification compiled to a flat, pre-ordered node list with vectorised evaluation.

The monitor and the optimiser share this representation. Nodes are numbered in pre-order
(the root is 0, every child comes after its parent), so iterating in reverse evaluates children
before parents. Evaluation is vectorised over check times: estimates and counts are arrays of
shape ``(k, L)`` for ``k`` checks and ``L`` leaf occurrences.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from pcfair.audits.avoir.ast import (
    And,
    Constant,
    Expectation,
    Or,
    Spec,
    TermOp,
    Threshold,
)
from pcfair.audits.avoir.rules import (
    UNDETERMINED,
    compare_arrays,
    kleene_and,
    kleene_or,
    point_truth,
    propagate,
)
from pcfair.errors import SpecError

_NAMESPACE = uuid.UUID("5b0c3f0e-59a8-4bb4-9d0e-8f4c1f2a7a11")

#: Node kinds as named in the paper's tree view.
TYPE_NAMES = {
    "and": "Specification",
    "or": "Specification",
    "cmp": "SpecificationThreshold",
    "op": "ETerm",
    "leaf": "Expectation",
    "const": "Constant",
}


#: Node kind of each class of the specification tree.
_KIND = {And: "and", Or: "or", Threshold: "cmp", TermOp: "op", Constant: "const",
         Expectation: "leaf"}


@dataclass
class Node:
    index: int
    kind: str  # and | or | cmp | op | leaf | const
    obj: object
    parent: int | None
    children: list[int] = field(default_factory=list)
    op: str | None = None  # for cmp and op
    c: float | None = None  # threshold (cmp) or value (const)
    leaf: int | None = None  # occurrence index (leaf)
    id: str = ""

    @property
    def type(self) -> str:
        return TYPE_NAMES[self.kind]

    @property
    def is_spec(self) -> bool:
        return self.kind in ("and", "or", "cmp")


@dataclass
class Evaluation:
    """Per-node arrays of shape ``(k, N)``; ``truth``/``charged`` are meaningful on spec nodes."""

    value: np.ndarray
    epsilon: np.ndarray
    delta: np.ndarray
    truth: np.ndarray
    charged: np.ndarray

    @property
    def root_truth(self) -> np.ndarray:
        return self.truth[:, 0]

    @property
    def root_charged(self) -> np.ndarray:
        return self.charged[:, 0]


class Program:
    """A compiled specification: nodes, leaf occurrences and their distinct signatures."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.nodes: list[Node] = []
        self.leaves: list[Expectation] = []
        self.leaf_nodes: list[int] = []
        self._build(spec, None, "0")
        if not self.leaves:
            raise SpecError(f"the specification {spec} has no E[...] term to monitor")
        keys: dict[tuple, int] = {}
        self.signatures: list[Expectation] = []
        sig = []
        for leaf in self.leaves:
            k = leaf.key()
            if k not in keys:
                keys[k] = len(self.signatures)
                self.signatures.append(leaf)
            sig.append(keys[k])
        self.sig_of_leaf = np.asarray(sig, dtype=np.intp)
        self.widths = np.asarray([leaf.width for leaf in self.leaves], dtype=float)
        self.cmp_nodes = [n.index for n in self.nodes if n.kind == "cmp"]
        # leaves and ratio denominators below each comparison
        self.leaves_below: dict[int, list[int]] = {}
        self.div_below: dict[int, list[int]] = {}
        for k in self.cmp_nodes:
            below = list(self._descendants(k))
            self.leaves_below[k] = [self.nodes[i].leaf for i in below
                                    if self.nodes[i].kind == "leaf"]
            self.div_below[k] = [i for i in below
                                 if self.nodes[i].kind == "op" and self.nodes[i].op == "/"]
        self.convex_cmp = {
            k: all(self._is_linear(i) for i in self._descendants(k)) for k in self.cmp_nodes
        }

    # construction -----------------------------------------------------------------------------
    def _build(self, obj, parent: int | None, path: str) -> int:
        idx, kind = len(self.nodes), _KIND[type(obj)]
        node = Node(idx, kind, obj, parent, op=obj.op if kind in ("cmp", "op") else None,
                    c=obj.c if kind == "cmp" else obj.value if kind == "const" else None)
        if kind == "leaf":
            node.leaf = len(self.leaves)
            self.leaves.append(obj)
            self.leaf_nodes.append(idx)
        node.id = str(uuid.uuid5(_NAMESPACE, f"{path}:{obj.to_text()}"))
        self.nodes.append(node)
        for j, child in enumerate(obj.children()):
            node.children.append(self._build(child, idx, f"{path}.{j}"))
        return idx

    def _descendants(self, i: int):
        stack = list(self.nodes[i].children)
        while stack:
            j = stack.pop()
            yield j
            stack.extend(self.nodes[j].children)

    def _is_linear(self, i: int) -> bool:
        """Sum, difference, or a product with a constant factor: ε is linear in leaf ε."""
        node = self.nodes[i]
        if node.kind != "op":
            return True
        if node.op in ("+", "-"):
            return True
        if node.op == "*":
            return any(self.nodes[c].kind == "const" for c in node.children)
        if node.op == "/":
            return self.nodes[node.children[1]].kind == "const"
        return False

    @property
    def n_leaves(self) -> int:
        return len(self.leaves)

    # evaluation -------------------------------------------------------------------------------
    def evaluate(self, est, counts, deltas, bound, *, tol: float, charge: str,
                 finite: bool = False, eps_override=None) -> Evaluation:
        """Evaluate every node for ``k`` check states.

        Parameters
        ----------
        est, counts : array of shape (k, L)
            Leaf estimates and sample counts per check.
        deltas : array of shape (L,) or (k, L)
            The failure probability assigned to each leaf occurrence.
        eps_override : array of shape (k, L), optional
            Use these leaf half-widths instead of computing them from ``deltas``.
        """
        est = np.atleast_2d(np.asarray(est, dtype=float))
        counts = np.atleast_2d(np.asarray(counts, dtype=float))
        k = est.shape[0]
        # a leaf without observations makes no claim: ε = ∞ and δ = 1 (spec §2.2)
        deltas = np.where(counts > 0, np.broadcast_to(np.asarray(deltas, dtype=float),
                                                      est.shape), 1.0)
        if eps_override is None:
            eps_leaf = self.widths * np.asarray(bound.epsilon(deltas, counts), dtype=float)
        else:
            eps_leaf = np.asarray(eps_override, dtype=float)
        n_nodes = len(self.nodes)
        value = np.full((k, n_nodes), np.nan)
        eps = np.zeros((k, n_nodes))
        delta = np.zeros((k, n_nodes))
        truth = np.full((k, n_nodes), UNDETERMINED, dtype=np.int8)
        charged = np.ones((k, n_nodes))
        for node in reversed(self.nodes):
            i = node.index
            if node.kind == "leaf":
                j = node.leaf
                value[:, i] = est[:, j]
                eps[:, i] = eps_leaf[:, j]
                delta[:, i] = deltas[:, j]
            elif node.kind == "const":
                value[:, i] = node.c
            elif node.kind == "op":
                a, b = node.children
                value[:, i], eps[:, i], delta[:, i] = propagate(
                    node.op, value[:, a], eps[:, a], delta[:, a],
                    value[:, b], eps[:, b], delta[:, b], finite=finite)
            elif node.kind == "cmp":
                (a,) = node.children
                value[:, i], eps[:, i], delta[:, i] = value[:, a], eps[:, a], delta[:, a]
                truth[:, i] = compare_arrays(node.op, value[:, a], eps[:, a], node.c, tol)
                charged[:, i] = delta[:, a]
            else:
                a, b = node.children
                combine = kleene_and if node.kind == "and" else kleene_or
                truth[:, i], charged[:, i] = combine(truth[:, a], charged[:, a],
                                                     truth[:, b], charged[:, b], charge)
                delta[:, i] = np.minimum(delta[:, a] + delta[:, b], 1.0)
        return Evaluation(value, eps, delta, truth, charged)

    def point_values(self, est) -> tuple[np.ndarray, np.ndarray]:
        """Point-estimate values of all nodes and point truths of spec nodes (one state).

        Returns
        -------
        values : array (N,)
        truth : array (N,) of bool (meaningful on spec nodes)
        """
        est = np.asarray(est, dtype=float)
        n_nodes = len(self.nodes)
        values = np.full(n_nodes, np.nan)
        truth = np.zeros(n_nodes, dtype=bool)
        for node in reversed(self.nodes):
            i = node.index
            if node.kind == "leaf":
                values[i] = est[node.leaf]
            elif node.kind == "const":
                values[i] = node.c
            elif node.kind == "op":
                a, b = node.children
                with np.errstate(divide="ignore", invalid="ignore"):
                    values[i] = propagate(node.op, values[a], 0.0, 0.0, values[b], 0.0, 0.0)[0]
            elif node.kind == "cmp":
                values[i] = values[node.children[0]]
                truth[i] = bool(point_truth(node.op, values[i], node.c))
            else:
                a, b = node.children
                truth[i] = (truth[a] and truth[b]) if node.kind == "and" else (truth[a] or truth[b])
        return values, truth

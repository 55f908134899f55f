"""Vtrees: full binary trees whose leaves are the circuit's variables.

A :class:`Vtree` is stored as flat arrays in post-order (children before parents, the root last):
``left[M]``, ``right[M]`` (−1 at leaves) and ``var[M]`` (the 0-based variable of a leaf, −1 at
internal nodes). A structured-decomposable circuit splits the scope of every product the way
some vtree node splits its variables (left child / right child).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from pcfair.errors import StructureError


_I32 = np.iinfo(np.int32)


def _int32_array(values, what: str) -> np.ndarray:
    """``values`` as a 1-D int32 array; anything else (floats, huge or non-numeric entries)
    is a :class:`StructureError`, never an OverflowError or TypeError."""
    try:
        a = np.asarray(values)
    except (ValueError, TypeError, OverflowError) as exc:
        raise StructureError(f"vtree array {what!r} is not a list of integers ({exc})") from None
    if a.ndim != 1:
        raise StructureError(f"vtree array {what!r} must be one-dimensional")
    if a.size == 0:
        return np.zeros(0, np.int32)
    if a.dtype.kind == "O":
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in a):
            raise StructureError(f"vtree array {what!r} must hold integers")
    elif a.dtype.kind not in "iu":
        raise StructureError(f"vtree array {what!r} must hold integers, got {a.dtype}")
    lo, hi = min(a.tolist()), max(a.tolist())
    if lo < _I32.min or hi > _I32.max:
        raise StructureError(f"vtree array {what!r} holds {hi if hi > _I32.max else lo}, "
                             "out of range")
    return a.astype(np.int32)


class Vtree:
    """A vtree over variables ``0 .. n-1``.

    Parameters
    ----------
    left, right, var : array-like of int
        Post-order arrays (see the module docstring).

    Examples
    --------
    >>> vt = Vtree.from_nested(((0, 1), (2, 3)))
    >>> vt.num_variables, vt.num_nodes, vt.lca_of_vars([0, 1])
    (4, 7, 2)
    """

    def __init__(self, left, right, var):
        self.left = _int32_array(left, "left")
        self.right = _int32_array(right, "right")
        self.var = _int32_array(var, "var")
        m = len(self.var)
        if not (len(self.left) == len(self.right) == m) or m == 0:
            raise StructureError("vtree arrays must be non-empty and of equal length")
        leaves = self.var >= 0
        if np.any(leaves & ((self.left >= 0) | (self.right >= 0))):
            raise StructureError("a vtree leaf cannot have children")
        inner = ~leaves
        if np.any(inner & ((self.left < 0) | (self.right < 0))):
            raise StructureError("an internal vtree node needs two children")
        idx = np.arange(m)
        if np.any(inner & ((self.left >= idx) | (self.right >= idx))):
            raise StructureError("vtree children must come before their parents")
        n = int(leaves.sum())
        if sorted(self.var[leaves].tolist()) != list(range(n)):
            raise StructureError("vtree leaves must hold each variable 0..n-1 exactly once")
        kids = np.concatenate([self.left[inner], self.right[inner]])
        counts = np.bincount(kids, minlength=m)
        if np.any(counts[:-1] != 1) or counts[-1] != 0:
            raise StructureError("every vtree node but the root (the last) must have one parent")
        for a in (self.left, self.right, self.var):
            a.setflags(write=False)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_nested(cls, tree) -> "Vtree":
        """Build from nested pairs of variable indices, e.g. ``((0, 1), (2, 3))``.

        Iterative, so deep (e.g. right-linear) vtrees need no recursion."""
        left: list[int] = []
        right: list[int] = []
        var: list[int] = []
        done: list[int] = []  # post-order indices of finished subtrees
        stack: list[tuple[object, bool]] = [(tree, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                b = done.pop()
                a = done.pop()
                left.append(a)
                right.append(b)
                var.append(-1)
                done.append(len(var) - 1)
            elif isinstance(t, (int, np.integer)) and not isinstance(t, bool):
                left.append(-1)
                right.append(-1)
                var.append(int(t))
                done.append(len(var) - 1)
            elif isinstance(t, (tuple, list)) and len(t) == 2:
                stack.append((t, True))
                stack.append((t[1], False))
                stack.append((t[0], False))
            else:
                raise StructureError(f"vtree nodes are pairs or variable indices, got {t!r}")
        return cls(left, right, var)

    @classmethod
    def right_linear(cls, order: Sequence[int]) -> "Vtree":
        """The right-linear vtree ``(o0, (o1, (o2, ...)))``."""
        order = list(order)
        if not order:
            raise StructureError("a vtree needs at least one variable")
        t = order[-1]
        for v in reversed(order[:-1]):
            t = (v, t)
        return cls.from_nested(t)

    @classmethod
    def balanced(cls, order: Sequence[int]) -> "Vtree":
        """A balanced vtree over ``order``."""
        order = list(order)
        if not order:
            raise StructureError("a vtree needs at least one variable")

        def rec(xs):
            if len(xs) == 1:
                return xs[0]
            h = len(xs) // 2
            return (rec(xs[:h]), rec(xs[h:]))

        return cls.from_nested(rec(order))

    def to_nested(self, node: int | None = None):
        """The nested-pairs form (inverse of :meth:`from_nested`); iterative."""
        node = self.root if node is None else int(node)
        out: dict[int, object] = {}
        stack: list[tuple[int, bool]] = [(node, False)]
        while stack:
            i, expanded = stack.pop()
            if self.var[i] >= 0:
                out[i] = int(self.var[i])
            elif expanded:
                out[i] = (out.pop(int(self.left[i])), out.pop(int(self.right[i])))
            else:
                stack.append((i, True))
                stack.append((int(self.right[i]), False))
                stack.append((int(self.left[i]), False))
        return out[node]

    # ------------------------------------------------------------------ basic facts
    @property
    def num_nodes(self) -> int:
        return len(self.var)

    @property
    def num_variables(self) -> int:
        return (len(self.var) + 1) // 2

    @property
    def root(self) -> int:
        return len(self.var) - 1

    def is_leaf(self, node: int) -> bool:
        return bool(self.var[node] >= 0)

    @cached_property
    def leaf_of(self) -> np.ndarray:
        """``leaf_of[v]``: the leaf node holding variable ``v``."""
        out = np.empty(self.num_variables, np.int32)
        leaves = np.flatnonzero(self.var >= 0)
        out[self.var[leaves]] = leaves
        return out

    @cached_property
    def parent(self) -> np.ndarray:
        out = np.full(self.num_nodes, -1, np.int32)
        inner = np.flatnonzero(self.var < 0)
        out[self.left[inner]] = inner
        out[self.right[inner]] = inner
        return out

    @cached_property
    def depth(self) -> np.ndarray:
        d = np.zeros(self.num_nodes, np.int32)
        for i in range(self.num_nodes - 2, -1, -1):
            d[i] = d[self.parent[i]] + 1
        return d

    @cached_property
    def scopes(self) -> list[int]:
        """Variables under each node as Python int bitsets."""
        s = [0] * self.num_nodes
        for i in range(self.num_nodes):
            if self.var[i] >= 0:
                s[i] = 1 << int(self.var[i])
            else:
                s[i] = s[self.left[i]] | s[self.right[i]]
        return s

    @cached_property
    def on_rightmost_path(self) -> np.ndarray:
        """True for nodes reached from the root by right steps only (the root included)."""
        out = np.zeros(self.num_nodes, bool)
        node = self.root
        while True:
            out[node] = True
            if self.var[node] >= 0:
                break
            node = int(self.right[node])
        return out

    @cached_property
    def _lift(self) -> np.ndarray:
        levels = max(1, int(np.ceil(np.log2(max(2, self.num_nodes)))) + 1)
        up = np.empty((levels, self.num_nodes), np.int32)
        p = self.parent.copy()
        p[self.root] = self.root
        up[0] = p
        for k in range(1, levels):
            up[k] = up[k - 1][up[k - 1]]
        return up

    def lca(self, a: int, b: int) -> int:
        """Lowest common ancestor of two vtree nodes."""
        if a == b:
            return a
        depth, up = self.depth, self._lift
        if depth[a] < depth[b]:
            a, b = b, a
        diff = int(depth[a] - depth[b])
        k = 0
        while diff:
            if diff & 1:
                a = int(up[k, a])
            diff >>= 1
            k += 1
        if a == b:
            return a
        for k in range(up.shape[0] - 1, -1, -1):
            if up[k, a] != up[k, b]:
                a, b = int(up[k, a]), int(up[k, b])
        return int(self.parent[a])

    def lca_of_vars(self, variables) -> int:
        """The lowest vtree node whose variables include all of ``variables``."""
        variables = list(variables)
        if not variables:
            raise StructureError("the empty set of variables has no vtree node")
        node = int(self.leaf_of[variables[0]])
        for v in variables[1:]:
            node = self.lca(node, int(self.leaf_of[v]))
        return node

    def is_ancestor(self, a: int, b: int) -> bool:
        """True when ``a`` is ``b`` or one of its ancestors."""
        return (self.scopes[a] & self.scopes[b]) == self.scopes[b]

    # ------------------------------------------------------------------ comparisons
    @cached_property
    def _postfix(self) -> tuple[int, ...]:
        """The tree in postfix notation (left-first DFS; a leaf is its variable, an internal
        node -1): equal exactly for equal nested forms, and flat, so comparing and hashing deep
        vtrees needs no recursion."""
        out: list[int] = []
        stack: list[tuple[int, bool]] = [(self.root, False)]
        while stack:
            i, expanded = stack.pop()
            if self.var[i] >= 0 or expanded:
                out.append(int(self.var[i]))
            else:
                stack.append((i, True))
                stack.append((int(self.right[i]), False))
                stack.append((int(self.left[i]), False))
        return tuple(out)

    def __eq__(self, other) -> bool:
        return isinstance(other, Vtree) and self._postfix == other._postfix

    def __hash__(self) -> int:
        return hash(self._postfix)

    def inorder_ids(self) -> np.ndarray:
        """In-order position of every node (SDD-package numbering: leaves even)."""
        out = np.empty(self.num_nodes, np.int32)
        counter = 0
        stack: list[tuple[int, bool]] = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            if self.var[node] >= 0 or expanded:
                out[node] = counter
                counter += 1
                if self.var[node] < 0:
                    stack.append((int(self.right[node]), False))
            else:
                stack.append((node, True))
                stack.append((int(self.left[node]), False))
        return out

    def __repr__(self) -> str:
        return f"Vtree({self.num_variables} variables)"

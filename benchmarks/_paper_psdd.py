"""A binary tree-augmented model written as a PSDD in the paper pipeline's shape.

The AAAI-23 code and Juice hand users ``.psdd``/``.vtree`` files compiled from a Chow-Liu tree
with the decision at the root: one decision node over the decision's two literals, below each
the tree of that decision value compiled without memoisation (a variable's conditional is
repeated below every path that reaches it), the decision numbered last, and a vtree that
follows the tree (a variable's leaf left of its children's). :func:`write_paper_psdd` writes
the model a :class:`~pcfair.patterns.bounds.TreeBound` recognised that way, so the benchmarks
can time the same distribution as it reaches pcfair from that pipeline.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pcfair.patterns.bounds import TreeBound


def write_paper_psdd(tb: TreeBound, stem: str | Path) -> tuple[Path, Path, dict[int, int]]:
    """Write ``stem.psdd`` and ``stem.vtree`` for the binary model ``tb`` (features keep their
    order, numbered from 1; the decision is numbered last). Returns the two paths and the map
    from ``tb``'s variable indices to the PSDD's 1-based variable numbers."""
    card = tb.card
    if int(card.max()) != 2:
        raise ValueError("the PSDD format holds binary variables only")
    n = len(card)
    d = tb.d
    features = [v for v in range(n) if v != d]
    number = {v: i + 1 for i, v in enumerate(features)}
    number[d] = n
    children: dict[int, list[int]] = {v: [] for v in range(-1, n)}
    for v in features:
        children[int(tb.parent[v])].append(v)
    roots = children[-1]

    vlines: list[str] = []
    leaf: dict[int, int] = {}

    def vt_leaf(v: int) -> int:
        leaf[v] = len(vlines)
        vlines.append(f"L {leaf[v]} {number[v]}")
        return leaf[v]

    def vt_inner(a: int, b: int) -> int:
        i = len(vlines)
        vlines.append(f"I {i} {a} {b}")
        return i

    vt_of: dict[int, int] = {}
    forest_vt: dict[tuple, int] = {}

    def vt_tree(v: int) -> int:
        left = vt_leaf(v)
        vt_of[v] = vt_inner(left, vt_forest(tuple(children[v]))) if children[v] else left
        return vt_of[v]

    def vt_forest(cs: tuple) -> int:
        if len(cs) == 1:
            forest_vt[cs] = vt_tree(cs[0])
        else:
            first = vt_tree(cs[0])
            forest_vt[cs] = vt_inner(first, vt_forest(cs[1:]))
        return forest_vt[cs]

    vt_root = vt_inner(vt_leaf(d), vt_forest(tuple(roots)))

    lines: list[str] = []
    lits: dict[tuple[int, int], int] = {}

    def emit(text: str) -> int:
        lines.append(text.format(id=len(lines)))
        return len(lines) - 1

    def literal(v: int, k: int) -> int:
        if (v, k) not in lits:
            lits[(v, k)] = emit(f"L {{id}} {leaf[v]} {number[v] if k == 1 else -number[v]}")
        return lits[(v, k)]

    def log_theta(v: int, q: int, j: int) -> np.ndarray:
        lt = tb.lt1 if q == tb.fav else tb.lt0
        start = int(tb.toff[v] + j * card[v])
        return lt[start: start + 2]

    def fmt(x: float) -> str:
        return "-inf" if x == -math.inf else repr(float(x))

    def tree(v: int, q: int, j: int) -> int:  # no memo: one copy per path, as compilers do
        lt = log_theta(v, q, j)
        if not children[v]:
            return emit(f"T {{id}} {leaf[v]} {number[v]} {fmt(lt[1])}")
        elements = [(literal(v, k), forest(tuple(children[v]), q, k), lt[k]) for k in (0, 1)]
        body = " ".join(f"{p} {s} {fmt(w)}" for p, s, w in elements)
        return emit(f"D {{id}} {vt_of[v]} 2 {body}")

    def forest(cs: tuple, q: int, k: int) -> int:
        if len(cs) == 1:
            return tree(cs[0], q, k)
        first = tree(cs[0], q, k)
        rest = forest(cs[1:], q, k)
        return emit(f"D {{id}} {forest_vt[cs]} 1 {first} {rest} 0.0")

    prior = {tb.fav: tb.log_prior[0], 1 - tb.fav: tb.log_prior[1]}
    elements = [(literal(d, q), forest(tuple(roots), q, 0), prior[q]) for q in (0, 1)]
    emit(f"D {{id}} {vt_root} 2 " + " ".join(f"{p} {s} {fmt(w)}" for p, s, w in elements))

    stem = Path(stem)
    psdd, vtree = stem.with_suffix(".psdd"), stem.with_suffix(".vtree")
    psdd.write_text(f"psdd {len(lines)}\n" + "\n".join(lines) + "\n")
    vtree.write_text(f"vtree {len(vlines)}\n" + "\n".join(vlines) + "\n")
    return psdd, vtree, number

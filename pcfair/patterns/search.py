"""Branch and bound over discrimination patterns (Algorithm 1 of the paper).

Variables are decided in a fixed order, sensitive ones first: each is put in ``x`` (with each
value; sensitive variables only), in ``y`` (with each value), or excluded. Every pattern is
generated exactly once (at the node that decides its last variable) and scored by marginal
queries. A node's subtree is pruned when the bound of ``pc-certifier.md`` §4,

    UB = max(max_u P(d|x,y,u) − min_u P(d|y,u),  max_u P(d|y,u) − min_u P(d|x,y,u)),

(``u`` complete assignments of the undecided variables; excluded variables, and ``X`` in the
``P(d|y,u)`` terms, marginalised) cannot exceed the threshold: δ when enumerating or
certifying, ``max(δ, k-th best |Δ|)`` for top-k. The bounds come from the pairwise quotient
pass, so the circuit must be deterministic and structured-decomposable (checked).

A ``time_limit`` stops the search; the result then says it is incomplete.
"""

from __future__ import annotations

import contextlib
import heapq
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import EvidenceError
from pcfair.inference.quotient import bounds_core, self_plan
from pcfair.patterns.scores import score_patterns


@dataclass
class SearchResult:
    """Patterns found as ``(x, y, Δ, P(x, y))`` with index-form dicts, plus statistics."""

    patterns: list = field(default_factory=list)
    complete: bool = True
    nodes: int = 0
    bounds: int = 0
    pruned: int = 0
    seconds: float = 0.0


class _Stop(Exception):
    """Raised inside the recursion to end the search (first witness, or the time limit)."""


def progress_bar(progress: bool | None, desc: str):
    """A tqdm counter, shown when ``progress`` is True, or None and stderr is a terminal."""
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    return tqdm(desc=desc, unit=" nodes", disable=not show, mininterval=0.5)


def search(circuit: Circuit, d: int, fav: int, sensitive: list[int], delta: float, *,
           mode: str = "all", k: int = 10, time_limit: float | None = None,
           assume_deterministic: bool = False, progress: bool | None = None) -> SearchResult:
    """Branch-and-bound search.

    ``mode``: ``"all"`` (every pattern with |Δ| > δ), ``"first"`` (stop at the first one:
    certification), ``"topk"`` (the ``k`` largest |Δ| above δ). ``progress`` shows a counter
    of visited nodes (default: when stderr is a terminal).
    """
    plan = self_plan(circuit, assume_deterministic)
    root = plan.entry(circuit.root, circuit.root)
    n = circuit.num_variables
    card = [int(c) for c in circuit.variables.cardinalities]
    sens = set(sensitive)
    order = sorted(sensitive) + [v for v in range(n) if v != d and v not in sens]
    res = SearchResult()
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    top: list[tuple[float, int, tuple]] = []  # min-heap of (|Δ|, tie, pattern) for topk
    counter = [0]

    def threshold() -> float:
        if mode == "topk" and len(top) >= k:
            return max(delta, top[0][0])
        return delta

    def score(x: dict, y: dict):
        return score_patterns(circuit, d, fav, [(x, y)])[0]

    def bound(x: dict, y: dict, excluded: set, depth: int) -> float:
        free = np.zeros(n, bool)
        free[order[depth:]] = True
        res.bounds += 1
        ev_xy = np.full(n, -1, np.int32)
        for v, val in {**x, **y}.items():
            ev_xy[v] = val
        ev_y = np.full(n, -1, np.int32)
        for v, val in y.items():
            ev_y[v] = val
        try:
            a = bounds_core(circuit, plan, root, d, fav, ev_xy, free, want_assignment=False)
        except EvidenceError:
            return -1.0  # P(x, y) = 0: no extension is a defined pattern
        try:
            b = bounds_core(circuit, plan, root, d, fav, ev_y, free, want_assignment=False)
        except EvidenceError:
            return -1.0
        return max(a.max - b.min, b.max - a.min)

    def record(x: dict, y: dict, s: float, p: float) -> None:
        if abs(s) <= delta:
            return
        pat = (dict(x), dict(y), s, p)
        if mode == "topk":
            counter[0] += 1
            item = (abs(s), -counter[0], pat)
            if len(top) < k:
                heapq.heappush(top, item)
            elif abs(s) > top[0][0]:
                heapq.heapreplace(top, item)
        else:
            res.patterns.append(pat)
            if mode == "first":
                raise _Stop

    bar = progress_bar(progress, "branch and bound")

    def visit(x: dict, y: dict, excluded: set, depth: int) -> None:
        res.nodes += 1
        if res.nodes % 256 == 0:
            bar.update(256)
        if deadline is not None and time.perf_counter() > deadline:
            res.complete = False
            raise _Stop
        if depth == len(order):
            return
        if not x and not any(v in sens for v in order[depth:]):
            return  # no sensitive variable left to put in x
        if x or y:
            if bound(x, y, excluded, depth) <= threshold():
                res.pruned += 1
                return
        z = order[depth]
        children = []
        if z in sens:
            children += [("x", val) for val in range(card[z])]
        children += [("y", val) for val in range(card[z])]
        for where, val in children:
            nx, ny = (({**x, z: val}, y) if where == "x" else (x, {**y, z: val}))
            if nx:
                s, p = score(nx, ny)
                if s is None:
                    continue  # P(x, y) = 0: neither it nor its extensions are defined
                record(nx, ny, s, p)
            visit(nx, ny, excluded, depth + 1)
        visit(x, y, excluded | {z}, depth + 1)

    with bar, contextlib.suppress(_Stop):
        visit({}, {}, set(), 0)
    if mode == "topk":
        res.patterns = [item[2] for item in sorted(top, reverse=True)]
    res.seconds = time.perf_counter() - t0
    return res

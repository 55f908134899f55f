"""Strudel: grow a deterministic, structured-decomposable circuit by splitting elements.

Starting from the Chow-Liu circuit, each step picks the element (edge) with the largest data
flow (*eFlow*) among those that can still be split, and the variable of its scope with the
largest summed pairwise mutual information on the rows flowing through it (*vMI*). The element
``(p, s, w)`` is replaced by one element per value ``v`` of that variable: the child whose scope
holds the variable is conditioned on it (its support restricted to ``x = v``), the other child
is copied to ``copy_depth`` levels so the branches get their own parameters. The new elements
have disjoint supports, so determinism is kept; scopes and splits are unchanged, so the vtree is
too. Parameters are re-fitted in closed form after each split. Learning stops at ``max_splits``,
at ``max_nodes``, or when validation log-likelihood has not improved for ``patience`` splits;
the best circuit on validation is returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.builder import from_arrays
from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.learn.chow_liu import mutual_information
from pcfair.inference.flows import data_flows
from pcfair.learn.parameters import fit_parameters


class _Model:
    """A mutable copy of a circuit's structure (node ids are list indices, in any order)."""

    def __init__(self, c: Circuit):
        self.variables = c.variables
        self.vtree = c.vtree
        self.kind = [int(k) for k in c.kind]
        self.var = [int(v) for v in c.var]
        self.value = [int(v) for v in c.value]
        self.params = [c.params[c.param_ptr[i]:c.param_ptr[i] + c.param_len[i]].copy()
                       if c.kind[i] == CATEGORICAL else None for i in range(c.num_nodes)]
        self.edges = []
        for i in range(c.num_nodes):
            lo, hi = c.edge_ptr[i], c.edge_ptr[i + 1]
            if c.kind[i] == SUM:
                self.edges.append([[int(c.edge_a[e]), int(c.edge_b[e]), float(c.edge_logw[e])]
                                   for e in range(lo, hi)])
            elif c.kind[i] == PRODUCT:
                self.edges.append([int(x) for x in c.edge_a[lo:hi]])
            else:
                self.edges.append(None)
        self.root = c.num_nodes - 1
        self.scope = list(c.scopes())

    def add(self, kind, var=-1, value=-1, params=None, edges=None, scope=0) -> int:
        self.kind.append(kind)
        self.var.append(var)
        self.value.append(value)
        self.params.append(params)
        self.edges.append(edges)
        self.scope.append(scope)
        return len(self.kind) - 1

    def condition(self, n: int, x: int, v: int, memo: dict) -> int | None:
        """A copy of ``n`` restricted to ``x = v`` (None where nothing remains)."""
        if not (self.scope[n] >> x) & 1:
            return n
        if n in memo:
            return memo[n]
        k = self.kind[n]
        if k == INDICATOR:
            out = n if self.value[n] == v else None
        elif k == CATEGORICAL:
            out = self.add(INDICATOR, x, v, scope=1 << x)
        elif k == PRODUCT:
            kids = [self.condition(c, x, v, memo) for c in self.edges[n]]
            out = None if any(c is None for c in kids) else self.add(
                PRODUCT, edges=kids, scope=self.scope[n])
        else:
            els = []
            for a, b, w in self.edges[n]:
                a2 = self.condition(a, x, v, memo)
                b2 = self.condition(b, x, v, memo) if b >= 0 else -1
                if a2 is not None and b2 is not None:
                    els.append([a2, b2, w])
            out = self.add(SUM, edges=els, scope=self.scope[n]) if els else None
        memo[n] = out
        return out

    def copy(self, n: int, depth: int) -> int:
        if depth <= 0 or self.kind[n] == INDICATOR:
            return n
        k = self.kind[n]
        if k == CATEGORICAL:
            return self.add(CATEGORICAL, self.var[n], params=self.params[n].copy(),
                            scope=self.scope[n])
        if k == PRODUCT:
            return self.add(PRODUCT, edges=[self.copy(c, depth - 1) for c in self.edges[n]],
                            scope=self.scope[n])
        return self.add(SUM, edges=[[self.copy(a, depth - 1),
                                     self.copy(b, depth - 1) if b >= 0 else -1, w]
                                    for a, b, w in self.edges[n]], scope=self.scope[n])

    def split(self, node: int, e: int, x: int, copy_depth: int) -> bool:
        a, b, w = self.edges[node][e]
        card = int(self.variables.cardinalities[x])
        new = []
        for v in range(card):
            memo: dict = {}
            if (self.scope[a] >> x) & 1:
                a2 = self.condition(a, x, v, memo)
                if a2 is not None:
                    new.append([a2, self.copy(b, copy_depth) if b >= 0 else -1, w])
            else:
                b2 = self.condition(b, x, v, memo)
                if b2 is not None:
                    new.append([self.copy(a, copy_depth), b2, w])
        if len(new) < 2:
            return False
        self.edges[node][e:e + 1] = new
        return True

    def compile(self) -> tuple[Circuit, list[tuple[int, int]]]:
        """The flat circuit (post-order from the root) and, per compiled sum edge, its
        (model node, element index)."""
        order: list[int] = []
        seen: set[int] = set()
        stack = [(self.root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            k = self.kind[n]
            if k == SUM:
                for a, b, _ in self.edges[n]:
                    for c in (a, b):
                        if c >= 0 and c not in seen:
                            stack.append((c, False))
            elif k == PRODUCT:
                for c in self.edges[n]:
                    if c not in seen:
                        stack.append((c, False))
        new = {n: i for i, n in enumerate(order)}
        edges_out, where = [], []
        for n in order:
            k = self.kind[n]
            if k == SUM:
                edges_out.append([(new[a], new[b] if b >= 0 else -1, w)
                                  for a, b, w in self.edges[n]])
                where.extend((n, j) for j in range(len(self.edges[n])))
            elif k == PRODUCT:
                edges_out.append([new[c] for c in self.edges[n]])
            else:
                edges_out.append(None)
        c = from_arrays(self.variables, [self.kind[n] for n in order],
                        [self.var[n] for n in order], [self.value[n] for n in order],
                        [self.params[n] for n in order], edges_out, vtree=self.vtree)
        return c, where


@dataclass
class StrudelHistory:
    """Per accepted split: nodes, train and validation log-likelihood (per row)."""

    nodes: list[int] = field(default_factory=list)
    train_ll: list[float] = field(default_factory=list)
    valid_ll: list[float] = field(default_factory=list)


def strudel(initial: Circuit, train: np.ndarray, valid: np.ndarray | None = None, *,
            pseudocount: float = 1.0, max_splits: int = 50, max_nodes: int = 20_000,
            patience: int = 5, copy_depth: int = 1, progress: bool | None = False
            ) -> tuple[Circuit, StrudelHistory]:
    """Grow ``initial`` (deterministic, structured-decomposable) by Strudel splits.

    ``train``/``valid`` are complete index-form code matrices. Returns the circuit with the
    best validation log-likelihood (the last one when ``valid`` is None) and the history.
    ``progress`` shows a bar over the splits on stderr (None: when stderr is a terminal).
    """
    bar = progress_bar(progress, max_splits, "strudel splits", "split")
    try:
        return _strudel(initial, train, valid, pseudocount, max_splits, max_nodes, patience,
                        copy_depth, bar)
    finally:
        bar.close()


def progress_bar(progress: bool | None, total: int | None, desc: str, unit: str):
    """A bar of ``unit``s (:func:`pcfair._progress.progress_bar`: on a terminal or in
    Jupyter), cleared when it closes."""
    from pcfair._progress import progress_bar as bar

    return bar(progress, desc, total=total, unit=f" {unit}s", leave=False)


def _strudel(initial, train, valid, pseudocount, max_splits, max_nodes, patience, copy_depth,
             bar):
    model = _Model(initial)
    circuit = fit_parameters(initial, train, pseudocount)
    hist = StrudelHistory()

    def score(c: Circuit) -> tuple[float, float]:
        tr = float(c.log_marginal(train).mean())
        va = float(c.log_marginal(valid).mean()) if valid is not None else tr
        return tr, va

    tr, va = score(circuit)
    hist.nodes.append(circuit.num_nodes)
    hist.train_ll.append(tr)
    hist.valid_ll.append(va)
    best, best_va, since = circuit, va, 0
    tried: set[tuple[int, int]] = set()
    _, where = model.compile()
    for _ in range(max_splits):
        elem, _, _ = data_flows(circuit, train)
        applied = False
        for e in np.argsort(-elem, kind="stable"):
            if elem[e] < 2:
                break
            node, j = where[e]
            key = (node, model.edges[node][j][0] * 1_000_003 + model.edges[node][j][1])
            if key in tried:
                continue
            tried.add(key)
            x = _pick_variable(circuit, train, int(e), pseudocount)
            if x is None:
                continue
            if model.split(node, j, x, copy_depth):
                applied = True
                break
        if not applied:
            break
        compiled, where = model.compile()
        circuit = fit_parameters(compiled, train, pseudocount)
        tr, va = score(circuit)
        hist.nodes.append(circuit.num_nodes)
        hist.train_ll.append(tr)
        hist.valid_ll.append(va)
        bar.update(1)
        bar.set_postfix(nodes=circuit.num_nodes, valid_ll=f"{va:.4f}", refresh=False)
        if va > best_va + 1e-12:
            best, best_va, since = circuit, va, 0
        else:
            since += 1
            if since >= patience:
                break
        if circuit.num_nodes >= max_nodes:
            break
    return (best if valid is not None else circuit), hist


def _pick_variable(circuit: Circuit, codes: np.ndarray, e: int, pseudocount: float) -> int | None:
    """vMI: the variable of element e's scope with the largest summed MI on its rows."""
    _, _, rows = data_flows(circuit, codes, target_edge=e)
    if rows.sum() < 2:
        return None
    scopes = circuit.scopes()
    s = scopes[circuit.edge_a[e]] | (scopes[circuit.edge_b[e]] if circuit.edge_b[e] >= 0 else 0)
    vs = [v for v in range(circuit.num_variables) if (s >> v) & 1]
    sub = codes[rows][:, vs]
    varied = [k for k in range(len(vs)) if len(np.unique(sub[:, k])) > 1]
    if not varied:
        return None
    if len(vs) == 1:
        return vs[varied[0]]
    mi = mutual_information(sub, circuit.variables.cardinalities[vs], pseudocount)
    total = mi.sum(axis=1)
    k = max(varied, key=lambda i: total[i])
    return vs[k]

"""Building circuits by hand: a small hash-consing builder that compiles to :class:`Circuit`.

Nodes are integer handles returned by the builder's methods. Identical nodes are shared (a unique
table keyed by kind, variable and children/parameters), so building the same sub-circuit twice
costs nothing. :meth:`CircuitBuilder.build` compiles the nodes reachable from a root into the flat
form; binary products under a sum become PSDD elements ``(prime, sub, weight)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.variables import Variables
from pcfair.errors import ParameterError, StructureError

NodeId = int


def _as_variables(variables) -> Variables:
    if isinstance(variables, Variables):
        return variables
    if isinstance(variables, (int, np.integer)):
        return Variables.numbered(int(variables))
    if isinstance(variables, Mapping):
        return Variables(list(variables.keys()), [tuple(d) for d in variables.values()])
    raise TypeError("variables must be a Variables, a mapping name -> values, or a count")


#: A log-weight may exceed 0 by this much (rounding); above it is refused.
LOG_ROUNDING = 1e-9


def _log(weights, log_weights, n: int, what: str) -> tuple[float, ...]:
    """Natural logs of the weights of a sum, decision node or categorical leaf.

    ``weights`` (linear) must be finite and non-negative; they are taken as given, normalised
    or not (``weights=[1, 1]`` is a legitimate unnormalised sum, e.g. of a logical circuit).
    ``log_weights`` are log-probabilities: NaN, +inf and values above 0 by more than
    :data:`LOG_ROUNDING` (weights above 1) are refused, ``-inf`` (a zero weight) is kept and
    values in ``(0, 1e-9]`` are read as 0. Either way a refusal is a
    :class:`~pcfair.errors.ParameterError` (a ``ValueError``)."""
    if (weights is None) == (log_weights is None):
        raise ParameterError(f"give exactly one of weights= or log_weights= for the {what}")
    try:
        raw = log_weights if log_weights is not None else weights
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParameterError(f"{what} weights must be numbers ({exc})") from None
    if log_weights is not None:
        lw = arr
        if np.any(np.isnan(lw)) or np.any(lw == np.inf):
            raise ParameterError(f"{what} log-weights must not be NaN or +inf, got {lw.tolist()}")
        if np.any(lw > LOG_ROUNDING):
            raise ParameterError(f"{what} log-weights must be log-probabilities (<= 0); got "
                                 f"{lw.tolist()} (a weight above 1); give weights= for an "
                                 "unnormalised weight")
        lw = np.minimum(lw, 0.0)
    else:
        w = arr
        if np.any(np.isnan(w)) or np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ParameterError(f"{what} weights must be finite and non-negative, got "
                                 f"{w.tolist()}")
        with np.errstate(divide="ignore"):
            lw = np.log(w)
    if lw.shape != (n,):
        raise ParameterError(f"{what} needs {n} weights, got {lw.shape[0] if lw.ndim else 1}")
    return tuple(float(x) for x in lw)


class CircuitBuilder:
    """Make circuits by hand.

    Parameters
    ----------
    variables : Variables, mapping of name to value labels, or int
        The variables; an int ``n`` gives binary variables named ``"1"`` .. ``"n"``.

    Examples
    --------
    A naive Bayes model ``P(rain) P(wet | rain)`` in a few lines:

    >>> b = CircuitBuilder({"rain": [0, 1], "wet": [0, 1]})
    >>> root = b.decision([
    ...     (b.indicator("rain", 1), b.categorical("wet", [0.1, 0.9]), 0.4),
    ...     (b.indicator("rain", 0), b.categorical("wet", [0.7, 0.3]), 0.6),
    ... ])
    >>> pc = b.build(root)
    >>> round(float(pc.probability({"wet": 1})), 4)
    0.54
    """

    def __init__(self, variables):
        self.variables = _as_variables(variables)
        self._nodes: list[tuple] = []
        self._table: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    def _add(self, key: tuple) -> NodeId:
        found = self._table.get(key)
        if found is not None:
            return found
        self._nodes.append(key)
        self._table[key] = len(self._nodes) - 1
        return len(self._nodes) - 1

    def _check(self, node: NodeId) -> int:
        if not isinstance(node, (int, np.integer)) or not 0 <= int(node) < len(self._nodes):
            raise StructureError(f"{node!r} is not a node of this builder")
        return int(node)

    # ------------------------------------------------------------------ input nodes
    def indicator(self, var: str | int, value: Hashable) -> NodeId:
        """The indicator ``[var = value]``."""
        v = self.variables.index(var)
        return self._add(("ind", v, self.variables.value_index(v, value)))

    def literal(self, var: str | int, positive: bool = True) -> NodeId:
        """A Boolean literal: ``[var = 1]`` or ``[var = 0]`` for a binary variable."""
        v = self.variables.index(var)
        if len(self.variables.domains[v]) != 2:
            raise StructureError(f"literal() needs a binary variable; {var!r} has "
                             f"{len(self.variables.domains[v])} values")
        return self._add(("ind", v, 1 if positive else 0))

    def categorical(self, var: str | int, probs=None, *, log_probs=None) -> NodeId:
        """A distribution over one variable (probabilities in domain order)."""
        v = self.variables.index(var)
        k = len(self.variables.domains[v])
        return self._add(("cat", v, _log(probs, log_probs, k, f"categorical leaf on {var!r}")))

    def bernoulli(self, var: str | int, p_one: float) -> NodeId:
        """The PSDD ``T`` node: a binary variable that is 1 with probability ``p_one``."""
        return self.categorical(var, [1.0 - p_one, p_one])

    # ------------------------------------------------------------------ inner nodes
    def product(self, *children: NodeId) -> NodeId:
        """The product of ``children`` (their scopes should be disjoint)."""
        if len(children) == 1 and isinstance(children[0], (list, tuple)):
            children = tuple(children[0])
        if not children:
            raise StructureError("a product needs at least one child")
        return self._add(("prod", tuple(self._check(c) for c in children)))

    def sum(self, children: Sequence[NodeId], weights=None, *, log_weights=None) -> NodeId:
        """A weighted sum of ``children`` (weights as probabilities, or log_weights)."""
        children = [self._check(c) for c in children]
        if not children:
            raise StructureError("a sum needs at least one child")
        lw = _log(weights, log_weights, len(children), "sum")
        return self._add(("sum", tuple((c, -1, w) for c, w in zip(children, lw))))

    def decision(self, elements: Sequence[tuple], *, log: bool = False) -> NodeId:
        """A PSDD decision node: ``Σ_i w_i · prime_i · sub_i`` from ``(prime, sub, w)`` triples.

        ``sub`` may be ``None`` for an element with a single factor. Weights are probabilities,
        or natural logs with ``log=True``.
        """
        if not elements:
            raise StructureError("a decision node needs at least one element")
        ws = [e[2] for e in elements]
        lw = _log(None, ws, len(ws), "decision") if log else _log(ws, None, len(ws), "decision")
        edges = tuple(
            (self._check(p), -1 if s is None else self._check(s), w)
            for (p, s, _), w in zip(elements, lw)
        )
        return self._add(("sum", edges))

    # ------------------------------------------------------------------ compile
    def build(self, root: NodeId, vtree=None) -> Circuit:
        """Compile the nodes reachable from ``root`` into a :class:`Circuit`."""
        root = self._check(root)
        nodes = self._nodes

        def element(c: int, w: float) -> tuple[int, int, float]:
            # a binary product under a sum is stored as a (prime, sub) element
            key = nodes[c]
            if key[0] == "prod" and len(key[1]) == 2:
                return key[1][0], key[1][1], w
            return c, -1, w

        expanded: dict[int, tuple] = {}
        reach = np.zeros(len(nodes), dtype=bool)
        reach[root] = True
        for i in range(root, -1, -1):
            if not reach[i]:
                continue
            key = nodes[i]
            if key[0] == "sum":
                edges = tuple(element(a, w) if b < 0 else (a, b, w) for a, b, w in key[1])
                expanded[i] = edges
                for a, b, _ in edges:
                    reach[a] = True
                    if b >= 0:
                        reach[b] = True
            elif key[0] == "prod":
                for c in key[1]:
                    reach[c] = True
        order = np.flatnonzero(reach)
        new_id = {int(old): new for new, old in enumerate(order)}
        kind, var, value, params, edges = [], [], [], [], []
        for old in order:
            key = nodes[old]
            tag = key[0]
            kind.append({"ind": INDICATOR, "cat": CATEGORICAL, "prod": PRODUCT, "sum": SUM}[tag])
            var.append(key[1] if tag in ("ind", "cat") else -1)
            value.append(key[2] if tag == "ind" else -1)
            params.append(key[2] if tag == "cat" else None)
            if tag == "prod":
                edges.append([new_id[c] for c in key[1]])
            elif tag == "sum":
                edges.append([(new_id[a], new_id[b] if b >= 0 else -1, w)
                              for a, b, w in expanded[int(old)]])
            else:
                edges.append(None)
        return from_arrays(self.variables, kind, var, value, params, edges, vtree)


def from_arrays(variables, kind, var, value, params_by_node, edges_by_node, vtree=None) -> Circuit:
    """Assemble a circuit from per-node lists, checking topological order.

    ``params_by_node[i]`` is a sequence of log-parameters (categorical leaves) or None;
    ``edges_by_node[i]`` is a list of ``(a, b, logw)`` (sums; ``b = -1`` for one factor) or of
    child ids (products). Raises :class:`StructureError` if a child does not precede its parent.
    """
    n = len(kind)
    pptr = np.zeros(n, np.int32)
    plen = np.zeros(n, np.int32)
    params: list[float] = []
    eptr = np.zeros(n + 1, np.int32)
    ea: list[int] = []
    eb: list[int] = []
    ew: list[float] = []
    for i in range(n):
        if kind[i] == CATEGORICAL:
            p = params_by_node[i]
            pptr[i], plen[i] = len(params), len(p)
            params.extend(p)
        elif kind[i] == SUM:
            els = edges_by_node[i]
            if els:
                a_, b_, w_ = zip(*els)
                if min(a_) < 0 or max(a_) >= i or min(b_) < -1 or max(b_) >= i:
                    bad = next(a if not 0 <= a < i else b for a, b, _ in els
                               if not (0 <= a < i and -1 <= b < i))
                    raise StructureError(f"node {i}: child {bad} is not defined before it")
                ea.extend(a_)
                eb.extend(b_)
                ew.extend(w_)
        elif kind[i] == PRODUCT:
            kids = edges_by_node[i]
            if kids:
                if min(kids) < 0 or max(kids) >= i:
                    bad = next(c for c in kids if not 0 <= c < i)
                    raise StructureError(f"node {i}: child {bad} is not defined before it")
                ea.extend(kids)
                eb.extend([-1] * len(kids))
                ew.extend([0.0] * len(kids))
        eptr[i + 1] = len(ea)
    c = Circuit(
        _as_variables(variables), np.asarray(kind), np.asarray(var), np.asarray(value), pptr, plen,
        np.array(params, np.float64), eptr, np.array(ea, np.int32), np.array(eb, np.int32),
        np.array(ew, np.float64),
    )
    return c.with_vtree(vtree) if vtree is not None else c

"""The compiled, immutable circuit every algorithm runs on.

A :class:`Circuit` is a probabilistic circuit stored as flat, topologically ordered numpy arrays
(children before parents, the root last):

* ``kind[N]`` (int8): :data:`INDICATOR` (variable = value), :data:`CATEGORICAL` (a distribution
  over one variable; the PSDD ``T`` node is the two-value case), :data:`PRODUCT`, :data:`SUM`;
* ``var[N]`` / ``value[N]`` for input nodes, ``param_ptr[N]`` / ``param_len[N]`` into the
  ``params`` heap of log-probabilities for categorical leaves;
* edges in CSR form: node ``i`` owns edges ``edge_ptr[i]:edge_ptr[i+1]``. A product's edge ``e``
  points at the child ``edge_a[e]``. A sum's edge is an *element* ``(edge_a[e], edge_b[e],
  edge_logw[e])``: the weighted product ``exp(logw) * a * b`` of a prime and a sub, as in a PSDD
  decision node, or ``exp(logw) * a`` when ``edge_b[e] == -1``. Binary products under sums are
  stored this way and never materialised.

Weights are natural logs; ``-inf`` (a zero weight) is allowed and kept; NaN and ``+inf`` are refused
(:class:`pcfair.errors.NumericalError`). Nothing is renormalised: the engines that need a
distribution divide by the circuit's mass themselves.

Build circuits with :class:`pcfair.circuit.CircuitBuilder` or read them with :func:`pcfair.load`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pcfair.circuit._kinds import CATEGORICAL, INDICATOR, KIND_NAMES, PRODUCT, SUM
from pcfair.circuit.derived import carry_structural, derived
from pcfair.circuit.variables import Variables
from pcfair.errors import NumericalError, ParameterError, StructureError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from pcfair.circuit.properties import PropertyReport
    from pcfair.circuit.vtree import Vtree
    from pcfair.circuit.counts import ParameterCounts
    from pcfair.tables.recipe import Recipe


@dataclass(frozen=True, eq=False)
class Circuit:
    """A probabilistic circuit in compiled flat form (see the module docstring).

    Use :class:`CircuitBuilder` to make one; the constructor only validates arrays.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    >>> root = b.sum([b.product(b.indicator("a", 1), b.categorical("b", [0.5, 0.5])),
    ...               b.product(b.indicator("a", 0), b.categorical("b", [0.9, 0.1]))],
    ...              weights=[0.6, 0.4])
    >>> pc = b.build(root)
    >>> round(float(pc.probability({"b": 1})), 4)
    0.34
    """

    variables: Variables
    kind: np.ndarray
    var: np.ndarray
    value: np.ndarray
    param_ptr: np.ndarray
    param_len: np.ndarray
    params: np.ndarray
    edge_ptr: np.ndarray
    edge_a: np.ndarray
    edge_b: np.ndarray
    edge_logw: np.ndarray
    vtree: "Vtree | None" = None
    #: How raw tables become this circuit's values (a :class:`pcfair.tables.recipe.Recipe`), for a
    #: circuit learned from one; kept by :meth:`with_vtree` and :meth:`with_parameters`.
    recipe: "Recipe | None" = field(default=None, compare=False)
    #: Training rows through each parameter (a :class:`pcfair.circuit.counts.ParameterCounts`),
    #: for a circuit learned from data: what its parameter posterior is drawn from. Kept by
    #: every ``with_*`` copy (the structure, hence the meaning of the counts, is the same).
    counts: "ParameterCounts | None" = field(default=None, compare=False)
    #: Values derived from the circuit; owned by :mod:`pcfair.circuit.derived` (never touched
    #: elsewhere).
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        n = len(self.kind)
        if n == 0:
            raise StructureError("a circuit needs at least one node")
        casts = {
            "kind": np.int8, "var": np.int32, "value": np.int32, "param_ptr": np.int32,
            "param_len": np.int32, "params": np.float64, "edge_ptr": np.int32,
            "edge_a": np.int32, "edge_b": np.int32, "edge_logw": np.float64,
        }
        for name, dtype in casts.items():
            arr = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        for name in ("var", "value", "param_ptr", "param_len"):
            if len(getattr(self, name)) != n:
                raise StructureError(
                    f"array {name!r} has length {len(getattr(self, name))}, not {n}")
        if len(self.edge_ptr) != n + 1:
            raise StructureError("edge_ptr must have one more entry than there are nodes")
        ne = int(self.edge_ptr[-1])
        for name in ("edge_a", "edge_b", "edge_logw"):
            if len(getattr(self, name)) != ne:
                raise StructureError(
                    f"array {name!r} has length {len(getattr(self, name))}, not {ne}")
        for name in ("params", "edge_logw"):
            bad = np.flatnonzero(np.isnan(getattr(self, name)) | (getattr(self, name) == np.inf))
            if len(bad):
                raise NumericalError(
                    f"{'leaf log-parameter' if name == 'params' else 'sum log-weight'} "
                    f"{int(bad[0])} is {getattr(self, name)[bad[0]]}: log-parameters must be "
                    "finite or -inf (a zero)")

    # ------------------------------------------------------------------ sizes and names
    @property
    def num_nodes(self) -> int:
        """Number of compiled nodes (elements of sums are not nodes)."""
        return len(self.kind)

    @property
    def num_edges(self) -> int:
        """Number of parent-child links: product children, plus for each sum element one link
        to the element and one per factor (prime, sub) as in the uncompressed graph."""
        def count() -> int:
            is_sum = np.repeat(self.kind == SUM, np.diff(self.edge_ptr))
            factors = 1 + (self.edge_b >= 0)
            return int(np.sum(np.where(is_sum, 1 + np.where(factors > 1, factors, 0), 1)))

        return derived(self, "num_edges", count)

    @property
    def num_elements(self) -> int:
        """Number of sum edges (PSDD elements)."""
        return int(np.sum(np.diff(self.edge_ptr)[self.kind == SUM]))

    @property
    def num_variables(self) -> int:
        return len(self.variables)

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names in index order."""
        return self.variables.names

    @property
    def root(self) -> int:
        return self.num_nodes - 1

    def num_parameters(self) -> int:
        """Number of sum weights plus categorical leaf parameters."""
        return self.num_elements + int(self.param_len.sum())

    def with_vtree(self, vtree: "Vtree | None") -> "Circuit":
        """A copy of this circuit with ``vtree`` attached (checked to cover its variables)."""
        if vtree is not None and vtree.num_variables != self.num_variables:
            raise StructureError(
                f"vtree has {vtree.num_variables} variables, circuit has {self.num_variables}"
            )
        return Circuit(
            self.variables, self.kind, self.var, self.value, self.param_ptr, self.param_len,
            self.params, self.edge_ptr, self.edge_a, self.edge_b, self.edge_logw, vtree,
            self.recipe, self.counts,
        )

    def with_recipe(self, recipe: "Recipe | None") -> "Circuit":
        """A copy of this circuit carrying ``recipe`` (:mod:`pcfair.tables.recipe`); the compiled
        structure and everything derived from it are shared."""
        c = Circuit(
            self.variables, self.kind, self.var, self.value, self.param_ptr, self.param_len,
            self.params, self.edge_ptr, self.edge_a, self.edge_b, self.edge_logw, self.vtree,
            recipe, self.counts, self._cache,
        )
        return c

    def with_counts(self, counts: "ParameterCounts | None") -> "Circuit":
        """A copy carrying training ``counts`` (:mod:`pcfair.inference.posterior`), checked
        against the structure; everything else is shared."""
        if counts is not None:
            counts.check(self)
        return Circuit(
            self.variables, self.kind, self.var, self.value, self.param_ptr, self.param_len,
            self.params, self.edge_ptr, self.edge_a, self.edge_b, self.edge_logw, self.vtree,
            self.recipe, counts, self._cache,
        )

    def with_parameters(self, edge_logw: np.ndarray, params: np.ndarray | None = None) -> "Circuit":
        """A copy with new sum log-weights (and optionally leaf log-parameters), same structure."""
        edge_logw = np.asarray(edge_logw, dtype=np.float64)
        if edge_logw.shape != self.edge_logw.shape:
            raise ParameterError(
                f"edge_logw has shape {edge_logw.shape}, not {self.edge_logw.shape}")
        params = self.params if params is None else np.asarray(params, dtype=np.float64)
        if params.shape != self.params.shape:
            raise ParameterError(f"params has shape {params.shape}, not {self.params.shape}")
        c = Circuit(
            self.variables, self.kind, self.var, self.value, self.param_ptr, self.param_len,
            params, self.edge_ptr, self.edge_a, self.edge_b, edge_logw, self.vtree, self.recipe,
            self.counts,
        )
        carry_structural(self, c)
        return c

    # ------------------------------------------------------------------ derived arrays
    @property
    def leaf_lognorm(self) -> np.ndarray:
        """log Σ of each categorical leaf's parameters (0 for normalised leaves), else 0."""
        def lognorm() -> np.ndarray:
            out = np.zeros(self.num_nodes)
            for i in np.flatnonzero(self.kind == CATEGORICAL):
                p = self.params[self.param_ptr[i] : self.param_ptr[i] + self.param_len[i]]
                m = p.max() if len(p) else -np.inf
                out[i] = m + np.log(np.exp(p - m).sum()) if np.isfinite(m) else -np.inf
            out.setflags(write=False)
            return out

        return derived(self, "leaf_lognorm", lognorm)

    def scopes(self) -> list[int]:
        """Scope of every node as a Python int bitset (bit ``v`` set = variable ``v`` in scope)."""
        from pcfair.circuit._scopes import compute_scopes

        return derived(self, "scopes", lambda: compute_scopes(self))

    def children(self, i: int) -> list[int]:
        """All child nodes of node ``i`` (for sums: primes and subs of its elements)."""
        lo, hi = self.edge_ptr[i], self.edge_ptr[i + 1]
        out = [int(a) for a in self.edge_a[lo:hi]]
        out += [int(b) for b in self.edge_b[lo:hi] if b >= 0]
        return out

    def describe_node(self, i: int) -> str:
        """A short human-readable description of node ``i``."""
        k = int(self.kind[i])
        if k == INDICATOR:
            v = int(self.var[i])
            return f"node {i} (indicator {self.names[v]}={self.variables.domains[v][self.value[i]]})"
        if k == CATEGORICAL:
            return f"node {i} (categorical leaf on {self.names[int(self.var[i])]})"
        n = int(self.edge_ptr[i + 1] - self.edge_ptr[i])
        return f"node {i} ({KIND_NAMES[k]} with {n} {'elements' if k == SUM else 'children'})"

    # ------------------------------------------------------------------ queries
    def evidence_matrix(self, evidence) -> np.ndarray:
        """Evidence in index form (see :meth:`Variables.evidence_matrix`)."""
        return self.variables.evidence_matrix(evidence)

    def log_marginal(self, evidence=None, *, backend: str = "numba") -> np.ndarray:
        """log P(evidence) for each row of ``evidence``.

        Parameters
        ----------
        evidence : DataFrame, mapping, list of mappings or int array
            One column per variable; NaN (or −1 in an int array) marks a missing value, which
            is marginalised. ``None`` is the empty evidence (gives log Z).
        backend : {"numba", "numpy"}
            The numba kernel (default) or the per-node numpy loop; both give the same numbers.

        Returns
        -------
        ndarray of float64, one entry per row.

        Examples
        --------
        >>> from pcfair.circuit import CircuitBuilder
        >>> b = CircuitBuilder({"x": [0, 1]})
        >>> pc = b.build(b.categorical("x", [0.25, 0.75]))
        >>> pc.log_marginal({"x": 1}).round(4).tolist()
        [-0.2877]
        """
        from pcfair.inference.marginals import log_marginals

        return log_marginals(self, self.evidence_matrix(evidence), backend=backend)

    def probability(self, evidence=None) -> np.ndarray | float:
        """P(evidence): a float for a single mapping, else an array (see :meth:`log_marginal`)."""
        out = np.exp(self.log_marginal(evidence))
        return float(out[0]) if isinstance(evidence, Mapping) or evidence is None else out

    def conditional(self, query, evidence=None) -> np.ndarray | float:
        """P(query | evidence).

        ``query`` and ``evidence`` are mappings ``{var: value}`` (a float is returned) or
        DataFrames of equal length (an array is returned; row ``r`` of each is used together).
        Raises :class:`pcfair.EvidenceError` where P(evidence) = 0 or the two disagree.

        Examples
        --------
        >>> from pcfair.circuit import CircuitBuilder
        >>> b = CircuitBuilder({"x": [0, 1], "y": [0, 1]})
        >>> pc = b.build(b.product(b.categorical("x", [0.5, 0.5]), b.categorical("y", [0.2, 0.8])))
        >>> round(pc.conditional({"y": 1}, {"x": 0}), 6)
        0.8
        """
        from pcfair.inference.marginals import conditional

        return conditional(self, query, evidence)

    def sample(self, n: int, evidence=None, random_state=None) -> "pd.DataFrame":
        """Draw ``n`` exact samples, optionally conditioned on ``evidence`` (one mapping).

        Returns a DataFrame with one column per variable holding value labels.

        Examples
        --------
        >>> from pcfair.circuit import CircuitBuilder
        >>> b = CircuitBuilder({"x": [0, 1]})
        >>> pc = b.build(b.categorical("x", [0.0, 1.0]))
        >>> pc.sample(3, random_state=0)["x"].tolist()
        [1, 1, 1]
        """
        from pcfair.inference.sampling import sample

        return sample(self, n, evidence=evidence, random_state=random_state)

    def compatible_with(self, other: "Circuit") -> bool:
        """True when both circuits are structured-decomposable with respect to one vtree, the
        precondition of their pairwise (quotient, product, KL) passes."""
        from pcfair.circuit.properties import compatible

        return compatible(self, other)

    def map(self, evidence=None) -> tuple[dict, float]:
        """Most probable completion of ``evidence`` and its log-probability (max-product;
        exact for deterministic circuits). See :func:`pcfair.inference.map_assignment`."""
        from pcfair.inference.sampling import map_assignment

        return map_assignment(self, evidence)

    def properties(self, *, exhaustive_limit: int = 16,
                   pairwise_budget: int = 50_000) -> "PropertyReport":
        """Check smoothness, decomposability, determinism and structured decomposability.

        See :func:`pcfair.inference.properties.check_properties` (results are cached).
        """
        from pcfair.inference.properties import check_properties

        return derived(self, ("properties", exhaustive_limit, pairwise_budget),
                       lambda: check_properties(self, exhaustive_limit=exhaustive_limit,
                                                pairwise_budget=pairwise_budget))

    def __repr__(self) -> str:
        vt = ", vtree" if self.vtree is not None else ""
        return (
            f"Circuit({self.num_variables} variables, {self.num_nodes} nodes, "
            f"{self.num_elements} elements{vt})"
        )

"""Gradients of log-marginals with respect to a circuit's parameters (circuit flows).

A circuit's *parameters* are the weights of every sum node's elements and the value
probabilities of every categorical leaf (a categorical leaf is a sum over indicators). Each such
normalised *group* is parameterised by unconstrained logits, ``log w_j = η_j − logsumexp(η_g) +
c_g`` (softmax within group ``g``; ``c_g`` is the group's log-total in the circuit the logits
were read from, 0 for a normalised circuit), so any logit vector gives a valid circuit on the
same structure.

- :class:`GradientPlan` compiles a circuit *structure* once: the arrays the kernel takes and the
  layout of the groups. Plans depend on the structure only, so a circuit re-parameterised with
  :meth:`pcfair.circuit.Circuit.with_parameters` reuses its plan (:func:`structure_key`).
- :class:`SoftmaxParameters` adds what depends on one circuit's parameters: which entries are
  free (zero weights and single-element groups stay fixed, so the support never changes), the
  logits, and the offsets ``c_g``.
- :func:`log_marginal_gradients` gives ``∂ log P(e) / ∂ log w`` and ``∂ log P(e) / ∂ log θ``
  for raw parameters; :meth:`SoftmaxParameters.log_marginals` chains them to the logits.

The top-down sweep runs in the numba kernel
:func:`pcfair.inference._gradient_kernels.log_marginal_gradients_kernel` (rows split across
threads), after the bottom-up sweep of the marginal kernels.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, SUM, Circuit
from pcfair.errors import EvidenceError, ParameterError, StructureError
from pcfair.inference import _gradient_kernels as K

_STRUCTURE_ARRAYS = ("kind", "var", "value", "param_ptr", "param_len", "edge_ptr", "edge_a",
                     "edge_b")


def structure_key(circuit: Circuit) -> str:
    """A digest of a circuit's structure (everything but its weights and leaf parameters).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.2, 0.8]))
    >>> other = pc.with_parameters(pc.edge_logw, np.log([0.5, 0.5]))
    >>> structure_key(pc) == structure_key(other)
    True
    """
    h = hashlib.sha1()
    h.update(np.int64(circuit.num_variables).tobytes())
    h.update(circuit.variables.cardinalities.tobytes())
    for name in _STRUCTURE_ARRAYS:
        h.update(name.encode())
        h.update(np.ascontiguousarray(getattr(circuit, name)).tobytes())
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class GradientPlan:
    """A circuit structure compiled for gradient sweeps (see the module docstring).

    Raw parameters are laid out as ``[edge_logw (num_elements entries, product edges
    included), params (the leaf heap)]``. ``group_start`` / ``group_stop`` delimit each group in
    that raw vector; ``group_node`` is the sum node or categorical leaf it belongs to.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> plan = GradientPlan.from_circuit(b.build(b.categorical("x", [0.2, 0.8])))
    >>> plan.num_groups, plan.num_raw
    (1, 2)
    """

    key: str
    num_variables: int
    kind: np.ndarray
    var: np.ndarray
    value: np.ndarray
    param_ptr: np.ndarray
    param_len: np.ndarray
    edge_ptr: np.ndarray
    edge_a: np.ndarray
    edge_b: np.ndarray
    max_degree: int
    group_node: np.ndarray
    group_start: np.ndarray
    group_stop: np.ndarray
    leaf_nodes: np.ndarray

    @classmethod
    def from_circuit(cls, circuit: Circuit) -> GradientPlan:
        """Compile ``circuit``'s structure."""
        ne = len(circuit.edge_a)
        nodes, starts, stops = [], [], []
        for i in range(circuit.num_nodes):
            k = int(circuit.kind[i])
            if k == SUM:
                lo, hi = int(circuit.edge_ptr[i]), int(circuit.edge_ptr[i + 1])
            elif k == CATEGORICAL:
                lo = ne + int(circuit.param_ptr[i])
                hi = lo + int(circuit.param_len[i])
            else:
                continue
            nodes.append(i)
            starts.append(lo)
            stops.append(hi)
        deg = np.diff(circuit.edge_ptr)
        return cls(
            key=structure_key(circuit), num_variables=circuit.num_variables,
            kind=circuit.kind, var=circuit.var, value=circuit.value,
            param_ptr=circuit.param_ptr, param_len=circuit.param_len,
            edge_ptr=circuit.edge_ptr, edge_a=circuit.edge_a, edge_b=circuit.edge_b,
            max_degree=int(deg.max()) if len(deg) else 0,
            group_node=np.array(nodes, np.int64), group_start=np.array(starts, np.int64),
            group_stop=np.array(stops, np.int64),
            leaf_nodes=np.flatnonzero(circuit.kind == CATEGORICAL))

    @property
    def num_elements(self) -> int:
        """Entries of ``edge_logw`` (the first block of the raw vector)."""
        return len(self.edge_a)

    @property
    def num_raw(self) -> int:
        """Length of the raw parameter vector."""
        return len(self.edge_a) + int(self.param_len.sum())

    @property
    def num_groups(self) -> int:
        return len(self.group_node)

    def check(self, circuit: Circuit) -> None:
        """Raise :class:`StructureError` unless ``circuit`` has this plan's structure."""
        same = all(getattr(circuit, n) is getattr(self, n) for n in _STRUCTURE_ARRAYS)
        if not same and structure_key(circuit) != self.key:
            raise StructureError("the circuit's structure differs from the one this plan was "
                                 "compiled for; compile a plan for it")

    def leaf_lognorm(self, params: np.ndarray) -> np.ndarray:
        """log Σ of every categorical leaf's parameters (0 for other nodes)."""
        out = np.zeros(len(self.kind))
        if len(self.leaf_nodes):
            starts = self.param_ptr[self.leaf_nodes]
            m = np.maximum.reduceat(params, starts)
            safe = np.where(np.isfinite(m), m, 0.0)
            lens = self.param_len[self.leaf_nodes]
            s = np.add.reduceat(np.exp(params - np.repeat(safe, lens)), starts)
            with np.errstate(divide="ignore"):
                out[self.leaf_nodes] = np.where(np.isfinite(m), safe + np.log(s), -np.inf)
        return out

    def log_marginal_gradients(self, edge_logw: np.ndarray, params: np.ndarray,
                               evidence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log P(e)`` per row and the raw gradient matrix (rows × :attr:`num_raw`) for the
        circuit with these parameters (see :func:`log_marginal_gradients`)."""
        ev = np.ascontiguousarray(evidence, dtype=np.int32)
        if ev.ndim != 2 or ev.shape[1] != self.num_variables:
            raise EvidenceError(
                f"evidence must have shape (rows, {self.num_variables}), got {ev.shape}")
        edge_logw = np.ascontiguousarray(edge_logw, np.float64)
        params = np.ascontiguousarray(params, np.float64)
        logp = np.empty(len(ev))
        grad = np.zeros((len(ev), self.num_raw))
        K.log_marginal_gradients_kernel(
            self.kind, self.var, self.value, self.param_ptr, self.param_len, params,
            self.leaf_lognorm(params), self.edge_ptr, self.edge_a, self.edge_b, edge_logw,
            self.max_degree, ev, logp, grad)
        return logp, grad


def log_marginal_gradients(circuit: Circuit, evidence, *, plan: GradientPlan | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log P(e) and its gradient with respect to the log of every raw parameter.

    Parameters
    ----------
    circuit : Circuit
        Smooth and decomposable (flows are fractions of the root's mass).
    evidence : DataFrame, mapping, list of mappings or int array
        As for :meth:`pcfair.circuit.Circuit.log_marginal` (−1 / NaN = missing).
    plan : GradientPlan, optional
        A compiled plan for this structure (compiled here when omitted).

    Returns
    -------
    logp : ndarray of shape (rows,)
    d_edge_logw : ndarray of shape (rows, num_elements)
        ``∂ log P(e) / ∂ log w`` for every sum element (0 for product edges).
    d_params : ndarray of shape (rows, len(circuit.params))
        ``∂ log P(e) / ∂ log θ`` for every entry of the categorical-leaf heap.

    Rows with ``P(e) = 0`` have a zero gradient.

    Notes
    -----
    Partial derivatives of a circuit by one upward and one downward pass (Darwiche, "A
    differential approach to inference in Bayesian networks", JACM 2003); the downward pass is
    kept in the normalised form of circuit *flows* (as in Juice and Strudel, Dang et al.,
    PGM 2020), where the derivative with respect to a log-weight is the share of ``P(e)``
    that passes through its element.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1], "y": [0, 1]})
    >>> pc = b.build(b.sum([b.product(b.indicator("x", 1), b.categorical("y", [0.5, 0.5])),
    ...                     b.product(b.indicator("x", 0), b.categorical("y", [0.9, 0.1]))],
    ...                    weights=[0.6, 0.4]))
    >>> logp, dw, dp = log_marginal_gradients(pc, {"y": 1})
    >>> dw.round(4).tolist()   # shares of P(y=1) = 0.3 + 0.04 through each element
    [[0.8824, 0.1176]]
    """
    if plan is None:
        plan = GradientPlan.from_circuit(circuit)
    else:
        plan.check(circuit)
    logp, grad = plan.log_marginal_gradients(circuit.edge_logw, circuit.params,
                                             circuit.evidence_matrix(evidence))
    ne = plan.num_elements
    return logp, grad[:, :ne], grad[:, ne:]


@dataclass(frozen=True, eq=False)
class SoftmaxParameters:
    """Logits for the free parameters of circuits on one structure and support.

    ``theta`` (the logits) has one entry per free raw parameter, grouped: entry ``t`` is raw
    parameter ``raw_index[t]`` of group ``group_of[t]``. An entry is free when its weight is
    positive and its group has at least two positive entries; the rest keep their values, so
    zero weights stay zero.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.2, 0.8]))
    >>> sp = SoftmaxParameters.from_circuit(pc)
    >>> theta = sp.logits(pc)
    >>> round(float(sp.circuit(theta + [0.0, 1.0]).probability({"x": 1})), 4)
    0.9158
    """

    plan: GradientPlan
    free: np.ndarray          # bool over the raw vector
    raw_index: np.ndarray     # raw position of each logit
    group_of: np.ndarray      # dense group id (0..num_free_groups-1) of each logit
    starts: np.ndarray        # first logit of each free group (for reduceat)
    offsets: np.ndarray       # c_g per free group
    base_raw: np.ndarray      # raw log-parameters of the circuit it was made from
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_circuit(cls, circuit: Circuit, plan: GradientPlan | None = None
                     ) -> SoftmaxParameters:
        """Parameterise ``circuit`` (compiling a plan for its structure when none is given)."""
        if plan is None:
            plan = GradientPlan.from_circuit(circuit)
        else:
            plan.check(circuit)
        raw = np.concatenate([circuit.edge_logw, circuit.params])
        free = np.zeros(len(raw), bool)
        raw_index, group_of, starts, offsets = [], [], [], []
        for lo, hi in zip(plan.group_start, plan.group_stop):
            pos = np.flatnonzero(np.isfinite(raw[lo:hi])) + lo
            if len(pos) < 2:
                continue
            free[pos] = True
            starts.append(len(raw_index))
            group_of.extend([len(offsets)] * len(pos))
            raw_index.extend(pos.tolist())
            vals = raw[pos]
            m = vals.max()
            offsets.append(m + np.log(np.exp(vals - m).sum()))
        out = cls(plan=plan, free=free, raw_index=np.array(raw_index, np.int64),
                  group_of=np.array(group_of, np.int64), starts=np.array(starts, np.int64),
                  offsets=np.array(offsets), base_raw=raw)
        out._cache["template"] = circuit
        return out

    @property
    def num_parameters(self) -> int:
        """Number of logits."""
        return len(self.raw_index)

    @property
    def group_sizes(self) -> np.ndarray:
        return np.diff(np.append(self.starts, len(self.raw_index)))

    def logits(self, circuit: Circuit) -> np.ndarray:
        """The logits of ``circuit`` (same structure; its free weights must be positive)."""
        self.plan.check(circuit)
        raw = np.concatenate([circuit.edge_logw, circuit.params])
        theta = raw[self.raw_index]
        if not np.all(np.isfinite(theta)):
            raise StructureError("the circuit has a zero weight where this parameterisation has "
                                 "a free one; make a SoftmaxParameters for its support")
        return theta

    def log_softmax(self, theta: np.ndarray) -> np.ndarray:
        """``η − logsumexp(η_g)`` for every logit (its log-weight within its group)."""
        theta = np.asarray(theta, np.float64)
        if len(theta) == 0:
            return theta.copy()
        m = np.maximum.reduceat(theta, self.starts)
        sizes = self.group_sizes
        shifted = theta - np.repeat(m, sizes)
        lse = np.log(np.add.reduceat(np.exp(shifted), self.starts))
        return shifted - np.repeat(lse, sizes)

    def raw_log_parameters(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(edge_logw, params)`` of the circuit with logits ``theta``."""
        theta = np.asarray(theta, np.float64)
        if theta.shape != (self.num_parameters,):
            raise ParameterError(f"theta must have shape ({self.num_parameters},), got {theta.shape}")
        raw = self.base_raw.copy()
        raw[self.raw_index] = self.log_softmax(theta) + self.offsets[self.group_of]
        ne = self.plan.num_elements
        return raw[:ne], raw[ne:]

    def circuit(self, theta: np.ndarray) -> Circuit:
        """The circuit with logits ``theta`` (variables and vtree of the circuit this
        parameterisation was made from)."""
        edge_logw, params = self.raw_log_parameters(theta)
        return self._cache["template"].with_parameters(edge_logw, params)

    def chain(self, theta: np.ndarray, raw_grad: np.ndarray) -> np.ndarray:
        """Chain rule from raw log-parameter gradients (rows × num_raw) to the logits:
        ``∂/∂η_j = G_j − softmax_j · Σ_{j' in group} G_j'``."""
        g = raw_grad[:, self.raw_index]
        if g.shape[1] == 0:
            return g
        sm = np.exp(self.log_softmax(theta))
        tot = np.add.reduceat(g, self.starts, axis=1)
        return g - sm[None, :] * np.repeat(tot, self.group_sizes, axis=1)

    def log_marginals(self, theta: np.ndarray, evidence: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``log P(e)`` per row of an index-form evidence matrix and its gradient with respect
        to the logits (rows × :attr:`num_parameters`)."""
        edge_logw, params = self.raw_log_parameters(theta)
        logp, grad = self.plan.log_marginal_gradients(edge_logw, params, evidence)
        return logp, self.chain(theta, grad)

    def statistics(self, raw_counts: np.ndarray, pseudocount: float = 0.0) -> np.ndarray:
        """Counts per logit from raw counts (``[element counts, leaf-value counts]``, e.g. from
        :func:`pcfair.inference.flows.data_flows`), plus ``pseudocount`` spread evenly over each
        group's free entries."""
        m = np.asarray(raw_counts, np.float64)[self.raw_index]
        return m + pseudocount / self.group_sizes[self.group_of]

    def weighted_log_likelihood(self, theta: np.ndarray, counts: np.ndarray
                                ) -> tuple[float, np.ndarray]:
        """``Σ_j m_j log w_j(η)`` over the free entries and its gradient ``m_j − M_g
        softmax_j``: the log-likelihood of complete data in a deterministic circuit, up to the
        fixed entries' constant, when ``m`` are data flows (:meth:`statistics`)."""
        ls = self.log_softmax(theta)
        value = float(np.dot(counts, ls + self.offsets[self.group_of]))
        tot = np.add.reduceat(counts, self.starts) if len(counts) else counts
        grad = counts - np.exp(ls) * np.repeat(tot, self.group_sizes)
        return value, grad

    def maximum_likelihood(self, counts: np.ndarray, floor: float = 1e-12) -> np.ndarray:
        """Logits maximising :meth:`weighted_log_likelihood` (``log m``, floored at ``floor``
        times the group total so that they stay finite)."""
        tot = np.repeat(np.add.reduceat(counts, self.starts), self.group_sizes) \
            if len(counts) else counts
        return np.log(np.maximum(counts, floor * np.maximum(tot, 1.0)))

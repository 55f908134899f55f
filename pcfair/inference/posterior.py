"""The posterior of a deterministic circuit's parameters given its training data.

For a circuit with a fixed structure that is smooth, decomposable and deterministic, each
complete row follows one path: it passes through one element of every sum node it reaches and
one value of every categorical leaf it reaches. The likelihood of the data is then a product,
over sum nodes and leaves, of ``Π_k w_k^{n_k}`` with ``n_k`` the rows through entry ``k`` (the
*flows*, :func:`pcfair.inference.flows.data_flows`). With the learners' prior, an independent
``Dirichlet(α/K, ..., α/K)`` on each node's ``K`` entries (``α`` the pseudocount), the posterior
is an independent ``Dirichlet(n_k + α/K)`` per node, whose mean ``(n_k + α/K) / (n + α)`` is
exactly the estimate the learners return. Zero weights of the circuit stay zero (its support
is fixed; a node whose entries have zero posterior mass keeps its weights).

:class:`~pcfair.circuit.counts.ParameterCounts` holds the flows, the pseudocount and the row
count; the learners store them in the model (:attr:`pcfair.circuit.Circuit.counts`; the JSON format's ``counts`` key), and
:func:`pcfair.inference.flows.parameter_counts` computes them from a table for models without
them.
:class:`ParameterPosterior` draws parameter sets, reproducibly, as circuits on the shared
structure (only the parameter arrays differ, so compiled plans are reused).

Tied parameters. The circuit builders share a node wherever two contexts get identical
parameters (every context that no training row reached, for one), and the flows of a shared node
are pooled: the posterior is then that of the circuit as given, whose tied node is one
parameter, drawn once for all its contexts. It differs from the posterior of the untied model
only where the learner's tables happened to coincide.

A model fitted under constraints (:func:`pcfair.learn.fair.learn_fair_pc`) keeps the counts
of its data: its posterior is that of the *unconstrained* parameters given the data, centred on
the maximum-likelihood model of its structure, not on the constrained model. Its draws say how
sure the data are about the unconstrained model's patterns; the constrained model's certificate
is a statement about that one model.

What this covers and what it does not: the uncertainty of the parameters *given the structure*
(the Chow-Liu tree, Strudel's splits, the bins are taken as fixed). Structure uncertainty needs
re-learning on resampled rows: :class:`pcfair.learn.bootstrap.BootstrapPosterior`
(``method="bootstrap"`` in :mod:`pcfair.patterns.uncertainty`), a learner's work that this
module does not do.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pcfair._random import check_random_state
from pcfair.circuit.circuit import CATEGORICAL, SUM, Circuit
from pcfair.circuit.counts import ParameterCounts
from pcfair.errors import OptionError, StructureError

__all__ = ["ParameterCounts", "ParameterPosterior"]  # counts: re-exported


class ParameterPosterior:
    """Draws of a deterministic circuit's parameters from their posterior (module docstring).

    Parameters
    ----------
    circuit : Circuit
        Smooth, decomposable and deterministic; its zero weights stay zero.
    counts : ParameterCounts, optional
        Default: the circuit's own (:attr:`Circuit.counts`, stored by the learners).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.5, 0.5]))
    >>> from pcfair.inference.flows import parameter_counts
    >>> counts = parameter_counts(pc, np.array([[1]] * 30 + [[0]] * 10), 0.0)
    >>> post = ParameterPosterior(pc, counts)
    >>> draws = [float(c.probability({"x": 1})) for c in post.circuits(2000, random_state=0)]
    >>> round(float(np.mean(draws)), 2)       # Beta(30, 10): mean 0.75
    0.75
    """

    def __init__(self, circuit: Circuit, counts: ParameterCounts | None = None):
        counts = circuit.counts if counts is None else counts
        if counts is None:
            raise OptionError("the model carries no training counts (models learned by pcfair "
                              "do); pass the training data (data=, --data) to compute them")
        counts.check(circuit)
        rep = circuit.properties()
        if not (rep.smooth and rep.decomposable and rep.deterministic):
            raise StructureError("the Dirichlet posterior of the parameters needs a smooth, "
                                 "decomposable, deterministic circuit (each row one path)")
        self.circuit = circuit
        self.counts = counts
        raw = np.concatenate([circuit.edge_logw, circuit.params])
        flows = np.concatenate([counts.elements, counts.leaves])
        ne = len(circuit.edge_logw)
        groups = []
        for i in np.flatnonzero(circuit.kind == SUM):
            groups.append(np.arange(circuit.edge_ptr[i], circuit.edge_ptr[i + 1]))
        for i in np.flatnonzero(circuit.kind == CATEGORICAL):
            lo = circuit.param_ptr[i]
            groups.append(np.arange(lo, lo + circuit.param_len[i]) + ne)
        index, starts, shapes = [], [], []
        alpha = counts.pseudocount
        for g in groups:
            k = len(g)
            shape = np.where(np.isfinite(raw[g]), flows[g] + alpha / k, 0.0)
            keep = shape > 0
            if keep.sum() < 2:  # one entry with mass (or none): its weights are fixed
                continue
            starts.append(len(index))
            index.extend(g[keep].tolist())
            shapes.extend(shape[keep].tolist())
        self._raw = raw
        self._ne = ne
        self._index = np.array(index, np.int64)
        self._starts = np.array(starts, np.int64)
        self._sizes = np.diff(np.append(self._starts, len(self._index)))
        self._shapes = np.array(shapes)

    @property
    def num_free(self) -> int:
        """Number of parameters that vary between draws."""
        return len(self._index)

    def mean(self) -> Circuit:
        """The circuit with the posterior mean of each free parameter."""
        raw = self._raw.copy()
        if len(self._index):
            totals = np.add.reduceat(self._shapes, self._starts)
            mass = np.exp(raw[self._index])
            mass_total = np.add.reduceat(mass, self._starts)  # the group's free mass, kept
            share = self._shapes / np.repeat(totals, self._sizes)
            raw[self._index] = np.log(share * np.repeat(mass_total, self._sizes))
        return self.circuit.with_parameters(raw[:self._ne], raw[self._ne:])

    def sample_log_parameters(self, n: int, random_state=None) -> np.ndarray:
        """``n`` draws of the raw log-parameter vector (``edge_logw`` then ``params``), shape
        ``(n, len(edge_logw) + len(params))``.

        Each free group is a Dirichlet drawn in log space, ``log G_k − log Σ G`` with
        ``log G = log Gamma(a + 1) + log(U) / a`` (``U`` uniform): exact for every shape
        ``a > 0`` and free of the underflow that a direct Gamma draw of a tiny shape (a
        pseudocount spread over ten values) suffers, so no weight of the support becomes zero.
        The group's mass outside its free entries (a fixed zero) is kept.
        """
        if n < 1:
            raise OptionError(f"the number of draws must be positive, got {n}")
        rng = check_random_state(random_state)
        out = np.repeat(self._raw[None, :], n, axis=0)
        if not len(self._index):
            return out
        a = self._shapes[None, :]
        log_g = (np.log(rng.gamma(a + 1.0, size=(n, len(self._shapes))))
                 + np.log(rng.random((n, len(self._shapes)))) / a)
        m = np.maximum.reduceat(log_g, self._starts, axis=1)
        shifted = log_g - np.repeat(m, self._sizes, axis=1)
        lse = np.log(np.add.reduceat(np.exp(shifted), self._starts, axis=1))
        log_share = shifted - np.repeat(lse, self._sizes, axis=1)
        mass = np.exp(self._raw[self._index])
        log_mass = np.log(np.add.reduceat(mass, self._starts))  # 1 for a normalised node
        out[:, self._index] = log_share + np.repeat(log_mass, self._sizes)[None, :]
        return out

    def circuits(self, n: int, random_state=None) -> Iterator[Circuit]:
        """``n`` circuits with parameters drawn from the posterior (shared structure)."""
        draws = self.sample_log_parameters(n, random_state)
        for row in draws:
            yield self.circuit.with_parameters(row[:self._ne], row[self._ne:])

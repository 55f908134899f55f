"""What every branch-and-bound search shares: its options (:class:`SearchOptions`,
:data:`PAPER`), its result (:class:`SearchResult`), the variable order it walks
(:func:`search_order`) and the identity of a pattern (:func:`pattern_key`).

The Python search (:mod:`pcfair.patterns.search`) and the compiled ones
(:mod:`pcfair.patterns.naive_bayes_search`, :mod:`pcfair.patterns.tree_search`) import these
from here, and none imports another: which one runs is decided by the engine table
(:mod:`pcfair.patterns.engines`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import OptionError
from pcfair.inference.marginals import log_marginals
from pcfair.patterns.scores import log_normalizer

#: The modes of the branch-and-bound searches.
MODES = ("all", "first", "topk", "pareto", "extension")


@dataclass(frozen=True)
class SearchOptions:
    """Switches for the search's improvements (see the module docstring)."""

    ordering: str = "influence"  # or "index": sensitive first, then the circuit's order
    share_bounds: bool = True
    best_first: bool = True
    seed_runs: int = 20  # sampling-miner runs whose patterns pre-fill a top-k (0: off)
    naive_bayes_bound: bool = True  # the coupled bound when the circuit is naive Bayes in D
    # the pruning bound (pcfair.patterns.bounds): "auto" the tightest that applies, or
    # "quotient", "naive_bayes", "tree" forced
    bound: str = "auto"
    # run the compiled search (naive Bayes, tree models) where one applies: the same answers
    # and bound, no per-node Python
    compiled: bool = True


#: The paper's search: file order, no shared bounds, children in generation order, no seeding,
#: the quotient bound only.
PAPER = SearchOptions(ordering="index", share_bounds=False, best_first=False, seed_runs=0,
                      naive_bayes_bound=False, bound="quotient")


@dataclass
class SearchResult:
    """Patterns found (:class:`~pcfair.patterns.scores.ScoredPattern`), plus statistics;
    ``best`` is the largest ``|Δ|`` among the patterns the run scored (a lower bound on the
    model's largest)."""

    patterns: list = field(default_factory=list)
    complete: bool = True
    nodes: int = 0
    bounds: int = 0
    pruned: int = 0
    seconds: float = 0.0
    order: list = field(default_factory=list)
    best: float = 0.0
    bound: str = ""  # the pruning bound used (pcfair.patterns.bounds)
    compiled: bool = False  # run by a compiled search (pcfair.patterns._compiled)


def decision_information(circuit: Circuit, d: int, variables: list[int]) -> np.ndarray:
    """Mutual information ``I(V; D)`` (nats) under the circuit for each variable ``V``."""
    card = circuit.variables.cardinalities
    out = np.zeros(len(variables))
    for j, v in enumerate(variables):
        k = int(card[v])
        rows = np.full((2 * k, circuit.num_variables), -1, np.int32)
        rows[:, v] = np.repeat(np.arange(k), 2)
        rows[:, d] = np.tile([0, 1], k)
        lp = log_marginals(circuit, rows)
        top = log_normalizer(float(lp.max()))  # refuses a circuit of mass zero
        joint = np.exp(lp - top).reshape(k, 2)  # any constant factor cancels here
        joint /= joint.sum()
        indep = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
        pos = joint > 0
        out[j] = float(np.sum(joint[pos] * np.log(joint[pos] / indep[pos])))
    return out


def search_order(circuit: Circuit, d: int, fav: int, sensitive: list[int],
                 ordering: str = "influence") -> list[int]:
    """The variable order: sensitive variables first, then the others; within each group by
    decreasing mutual information with the decision (``"influence"``) or by index."""
    sens = sorted(set(sensitive))
    rest = [v for v in range(circuit.num_variables) if v != d and v not in set(sens)]
    if ordering == "index":
        return sens + rest
    if ordering != "influence":
        raise OptionError(f"ordering must be 'influence' or 'index', not {ordering!r}")
    info = decision_information(circuit, d, sens + rest)
    key = dict(zip(sens + rest, info))
    return (sorted(sens, key=lambda v: -key[v]) + sorted(rest, key=lambda v: -key[v]))


def pattern_key(x: dict, y: dict) -> tuple:
    """A hashable key of a pattern (index form)."""
    return tuple(sorted(x.items())), tuple(sorted(y.items()))

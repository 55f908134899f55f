"""What every branch-and-bound search shares: its options (:class:`SearchOptions`,
:data:`PAPER`), what it is asked (:class:`SearchQuery`), its result (:class:`SearchResult`),
the variable order it walks (:func:`search_order`) and the identity of a pattern
(:func:`pattern_key`).

Every runner (the searches, their split over processes, the sampler) takes the model as the
engines' :class:`~pcfair.patterns._arguments.Problem` and what is asked as one
:class:`SearchQuery`, plus at most a few keywords of its own.

The Python search (:mod:`pcfair.patterns.search`) and the compiled ones
(:mod:`pcfair.patterns.naive_bayes_search`, :mod:`pcfair.patterns.tree_search`) import these
from here, and none imports another: which one runs is decided by the engine table
(:mod:`pcfair.patterns.engines`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from pcfair._clock import deadline_within
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import derived
from pcfair.errors import OptionError
from pcfair.inference.marginals import log_marginals
from pcfair.patterns.bounds import BOUNDS, TreeBound
from pcfair.patterns.scores import log_normalizer

if TYPE_CHECKING:  # _arguments imports this module
    from pcfair.patterns._arguments import Request

__all__ = ["ORDERINGS", "PAPER", "SearchOptions", "SearchQuery", "SearchResult", "check_choice",
           "pattern_key", "search_order", "tree_preorder"]

#: The orderings :func:`search_order` knows.
ORDERINGS = ("auto", "tree", "influence", "index")


def check_choice(value: object, choices: tuple[str, ...], name: str) -> None:
    """Refuse a ``value`` that is not one of ``choices`` with an
    :class:`~pcfair.errors.OptionError` naming the option ``name`` and what it accepts (the
    one wording of every choice of the pattern API).

    Examples
    --------
    >>> check_choice("tre", BOUNDS, "bound")
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: bound must be one of ('auto', 'quotient', ...), not 'tre'
    """
    if not isinstance(value, str) or value not in choices:
        raise OptionError(f"{name} must be one of {choices}, not {value!r}")


@dataclass(frozen=True)
class SearchOptions:
    """Switches for the search's improvements (see :mod:`pcfair.patterns.search`), checked
    when made: the searches below take them as they are.

    Attributes
    ----------
    ordering : str
        The variable order (:func:`search_order`): ``"auto"`` (the tree order where the
        circuit is a decision-rooted tree model, else ``"influence"``), ``"tree"``,
        ``"influence"`` or ``"index"``.
    share_bounds : bool
        Compute the bound's ``P(d|y,u)`` extremes once for the siblings that share them.
    best_first : bool
        Visit a top-k or Pareto node's children by decreasing score.
    seed_runs : int
        Runs of the sampling miner whose patterns pre-fill a top-k (0: off).
    naive_bayes_bound : bool
        The coupled bound where the circuit is naive Bayes in the decision.
    bound : str
        The pruning bound (:func:`pcfair.patterns.bounds.select_bound`): ``"auto"`` the
        tightest that applies, or ``"quotient"``, ``"naive_bayes"``, ``"tree"`` forced.
    compiled : bool
        Run the compiled search (naive Bayes, tree models) where one applies: the same
        answers and bound, no per-node Python.

    Raises
    ------
    OptionError
        A field out of range or of the wrong type (the message names it).

    Examples
    --------
    >>> SearchOptions(ordering="index", seed_runs=0).bound
    'auto'
    >>> SearchOptions(bound="tre")
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: bound must be one of ('auto', 'quotient', ...), not 'tre'
    """

    ordering: str = "auto"
    share_bounds: bool = True
    best_first: bool = True
    seed_runs: int = 20
    naive_bayes_bound: bool = True
    bound: str = "auto"
    compiled: bool = True

    def __post_init__(self) -> None:
        check_choice(self.ordering, ORDERINGS, "ordering")
        check_choice(self.bound, BOUNDS, "bound")
        for name in ("share_bounds", "best_first", "naive_bayes_bound", "compiled"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise OptionError(f"{name} must be True or False, not {value!r}")
        runs = self.seed_runs
        if isinstance(runs, (bool, np.bool_)) or not isinstance(runs, numbers.Integral) \
                or runs < 0:
            raise OptionError(f"seed_runs must be an integer >= 0 (0: no seeding), not {runs!r}")


#: The paper's search: file order, no shared bounds, children in generation order, no seeding,
#: the quotient bound only.
PAPER = SearchOptions(ordering="index", share_bounds=False, best_first=False, seed_runs=0,
                      naive_bayes_bound=False, bound="quotient")


@dataclass(frozen=True)
class SearchQuery:
    """What a search is asked, taken as the API checked it
    (:func:`pcfair.patterns._arguments.resolve_request`): nothing here is checked again.

    Attributes
    ----------
    delta : float
        The threshold δ: a pattern discriminates where ``|Δ| > δ``.
    mode : str
        ``"all"`` (every pattern), ``"first"`` (stop at the first one: certification),
        ``"topk"`` (the ``k`` best by ``rank_by``), ``"pareto"`` (the strict Pareto front by
        ``|Δ|`` and ``P(x, y)``) or ``"extension"`` (the Python search only: is some strict
        extension of its ``start`` one of its ``member`` patterns; stops at the first).
    k : int
        The size of a top-k.
    rank_by : str
        How a top-k ranks: ``"discrimination"`` (``|Δ|``) or ``"divergence"``.
    min_support : float
        Patterns with ``P(x, y)`` below it are not patterns here (set aside, not counted), and
        a node below it is pruned with its subtree (every extension is rarer still).
    deadline : float or None
        A :func:`time.time` value, the one clock of every engine and process (None: no
        limit); a run it stops says it is incomplete.
    progress : bool or None
        Show a counter of visited nodes (None: when the user can see it,
        :func:`pcfair._progress.show_progress`).
    options : SearchOptions
        The search's switches.
    order : list of int or None
        The features in search order, sensitive first (None: :func:`search_order` of
        ``options.ordering``).
    partition : tuple of int or None
        ``(w, n, depth)``: explore only the subtrees below ``depth`` whose node hashes to
        ``w`` modulo ``n`` (one share of :func:`pcfair.patterns.parallel.parallel_search`).

    Examples
    --------
    >>> import time
    >>> query = SearchQuery(0.05, mode="topk", k=3)
    >>> query.but(mode="first").mode, query.within(0).deadline <= time.time()
    ('first', True)
    """

    delta: float
    mode: str = "all"
    k: int = 10
    rank_by: str = "discrimination"
    min_support: float = 0.0
    deadline: float | None = None
    progress: bool | None = None
    options: SearchOptions = SearchOptions()
    order: list | None = None
    partition: tuple[int, int, int] | None = None

    @classmethod
    def from_request(cls, request: Request, mode: str | None = None) -> SearchQuery:
        """The query of the API's :class:`~pcfair.patterns._arguments.Request` (its threshold,
        top-k, support, deadline, progress and options), in ``mode`` (default: ``"first"``
        for a certification, else the request's kind)."""
        if mode is None:
            mode = "first" if request.kind == "certify" else request.kind
        return cls(request.delta, mode=mode, k=request.k, rank_by=request.rank_by,
                   min_support=request.min_support, deadline=request.deadline,
                   progress=request.progress, options=request.search_options)

    def within(self, seconds: float | None) -> SearchQuery:
        """The same query with the deadline brought forward to ``seconds`` from now (0: an
        immediate deadline), never past its own; None changes nothing
        (:func:`pcfair._clock.deadline_within`)."""
        return replace(self, deadline=deadline_within(self.deadline, seconds))

    def but(self, **changes) -> SearchQuery:
        """The same query with ``changes`` (:func:`dataclasses.replace`)."""
        return replace(self, **changes)


@dataclass
class SearchResult:
    """Patterns found (:class:`~pcfair.patterns.scores.ScoredPattern`), plus statistics;
    ``best`` is the largest ``|Δ|`` among the patterns the run scored (a lower bound on the
    model's largest). ``nodes`` counts the patterns scored (the tree search's plateau solver
    adds one per assignment of a part it evaluates and one per candidate it scores; ``solved``
    counts the subtrees it answered whole)."""

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
    solved: int = 0  # subtrees the tree search's plateau solver answered whole


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
        pos = joint > 0
        # log(joint / (row · column)) as a difference of logs: the product of the margins can
        # underflow where the joint does not
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (np.log(joint) - np.log(joint.sum(axis=1, keepdims=True))
                     - np.log(joint.sum(axis=0, keepdims=True)))
        out[j] = float(np.sum(joint[pos] * ratio[pos]))
    return out


def search_order(circuit: Circuit, d: int, fav: int, sensitive: list[int],
                 ordering: str = "auto") -> list[int]:
    """The variable order of a branch-and-bound search: sensitive variables first (by
    decreasing mutual information with the decision), then the others.

    - ``"influence"``: the others by decreasing mutual information with the decision;
    - ``"index"``: both groups in the circuit's order;
    - ``"tree"`` (a circuit that :meth:`TreeBound.from_circuit
      <pcfair.patterns.bounds.TreeBound.from_circuit>` recognises; an
      :class:`~pcfair.errors.OptionError` otherwise): the others in :func:`tree_preorder`;
    - ``"auto"``: ``"tree"`` where it applies, else ``"influence"``.

    Every order visits the same lattice, so the answers do not depend on it (each pattern is
    one node); only the pruning does. ``benchmarks/bench_tree_order.py`` measures
    the orders against each other. The order is computed once per circuit and question
    (:mod:`pcfair.circuit.derived`): the engine table, the split search and each compiled
    search ask for it again for free.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0], "s": [0, 1, 1, 0], "a": [1, 1, 0, 0],
    ...                    "b": [0, 1, 0, 1]})
    >>> order = search_order(learn_pc(df, "d"), 0, 1, [1])
    >>> order[0], sorted(order)
    (1, [1, 2, 3])
    """
    check_choice(ordering, ORDERINGS, "ordering")
    sens = tuple(sorted(set(int(v) for v in sensitive)))
    key = ("search_order", int(d), int(fav), sens, ordering)
    return list(derived(circuit, key, lambda: tuple(_search_order(circuit, d, fav, list(sens),
                                                                  ordering))))


def _search_order(circuit: Circuit, d: int, fav: int, sens: list[int],
                  ordering: str) -> list[int]:
    """:func:`search_order`, computed (``sens`` sorted, ``ordering`` checked)."""
    rest = [v for v in range(circuit.num_variables) if v != d and v not in set(sens)]
    if ordering == "index":
        return sens + rest
    info = decision_information(circuit, d, sens + rest)
    key = dict(zip(sens + rest, info))
    head = sorted(sens, key=lambda v: -key[v])
    if ordering in ("auto", "tree"):
        tb = TreeBound.from_circuit(circuit, d, fav)
        if tb is not None:
            return head + [v for v in tree_preorder(tb.parent, d, sens, key) if v not in sens]
        if ordering == "tree":
            raise OptionError("the tree ordering needs a decision-rooted tree-augmented "
                              "circuit (TreeBound.from_circuit)")
    return head + sorted(rest, key=lambda v: -key[v])


def tree_preorder(parent, d: int, sensitive: list[int], info: dict) -> list[int]:
    """The features of a tree model (``parent[v]`` a feature, or negative for a child of
    the decision ``d``) in depth-first pre-order: a variable before its subtree, a subtree
    whole before the next; siblings whose subtree holds a sensitive variable first, then
    smaller subtrees first, then by decreasing ``info``.

    Why it prunes (the tree bound, :class:`~pcfair.patterns.bounds.TreeBound`): in pre-order
    the undecided variables of every search node form whole subtrees below decided parents,
    and a subtree below an observed parent adds its ratio to both sides of ``Δ`` (case (P2)),
    so the bound's intervals add instead of mixing; the subtrees that can hold ``x`` come
    first, so deep in the search the difference ``B − A`` is decided and only the shared
    shift ``A`` is bounded. Measured, not proved, to be a good order
    (``benchmarks/bench_tree_order.py``); any order is sound.

    Examples
    --------
    >>> tree_preorder([-1, 0, 0, -1, -1], 4, [2], {0: .1, 1: .3, 2: .2, 3: .0})
    [0, 2, 1, 3]
    """
    n = len(parent)
    children: dict[int, list[int]] = {v: [] for v in range(-1, n)}
    for v in range(n):
        if v != d:
            children[int(parent[v]) if parent[v] >= 0 else -1].append(v)
    size: dict[int, int] = {}
    holds: dict[int, bool] = {}
    sens = set(sensitive)

    def measure(v: int) -> None:  # iterative post-order: sizes and "holds a sensitive"
        stack = [(v, False)]
        while stack:
            u, done = stack.pop()
            if done:
                size[u] = 1 + sum(size[c] for c in children[u])
                holds[u] = u in sens or any(holds[c] for c in children[u])
            else:
                stack.append((u, True))
                stack.extend((c, False) for c in children[u])

    for r in children[-1]:
        measure(r)

    def rank(v: int) -> tuple:
        return (not holds[v], size[v], -info.get(v, 0.0), v)

    out: list[int] = []
    stack = sorted(children[-1], key=rank, reverse=True)
    while stack:
        v = stack.pop()
        out.append(v)
        stack.extend(sorted(children[v], key=rank, reverse=True))
    return out


def pattern_key(x: dict, y: dict) -> tuple:
    """A hashable key of a pattern (index form)."""
    return tuple(sorted(x.items())), tuple(sorted(y.items()))

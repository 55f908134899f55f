"""Chow-Liu trees compiled into deterministic, structured-decomposable circuits.

:func:`learn_pc` learns one Chow-Liu tree over the features (pairwise mutual information with a
pseudocount, maximum spanning tree, rooted at the tree's centre) and compiles it, as the
fairness papers' learner does, into a circuit whose root decides on the decision variable ``D``:

    P(D, Z) = Σ_d [D = d] · P(D = d) · CLT_d(Z),

where every ``CLT_d`` has the shared tree structure and its own parameters
``θ_d(v = k | parent = j) = P(v = k | parent = j, D = d)`` (a tree-augmented naive Bayes). All
sub-circuits are normalised for one vtree ``(D, vtree(root feature))`` with
``vtree(v) = (v, chain(vtree(children of v)))``, so the circuit is smooth, decomposable,
deterministic (every decision node branches on one variable's indicators) and
structured-decomposable: exactly what the quotient bound and the certifier need.

Parameters are closed-form maximum-likelihood estimates with a pseudocount ``α`` spread
evenly over the values (Juice's convention): ``(n(v=k, u=j, d) + α/K_v) / (n(u=j, d) + α)``.
A context never seen with ``α = 0`` gets the uniform distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import pandas as pd

from pcfair.circuit.builder import CircuitBuilder
from pcfair._random import check_random_state
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import DataError, OptionError
from pcfair.inference.flows import parameter_counts
from pcfair.learn.chow_liu import maximum_spanning_tree, mutual_information
from pcfair.tables.data import encode_frame, prepare_frame
from pcfair.learn.parameters import conditional_table, fit_parameters
from pcfair.tables.recipe import Recipe


@dataclass(frozen=True)
class TreeStructure:
    """The learned tree: ``parent[v]`` over all variables (the root feature's parent is the
    decision variable, whose parent is −1), and the mutual-information matrix of the
    features (indexed like ``features``)."""

    decision: int
    features: tuple[int, ...]
    parent: np.ndarray
    mutual_information: np.ndarray


def learn_tree(codes: np.ndarray, cards: np.ndarray, decision: int, pseudocount: float,
               last=()) -> TreeStructure:
    """Chow-Liu tree over the features, rooted at its centre, hung below ``decision``.

    With ``last`` (feature indices), the best tree in which no other feature hangs below one
    of ``last``: the Chow-Liu tree of the other features, then the ``last`` ones attached one
    at a time by the largest mutual information with a feature already in the tree. This is
    Prim's algorithm on the graph with the first tree contracted to one node (an edge's weight
    the largest to any of its members), so the ``last`` part is a maximum spanning tree of
    that graph, and the whole the maximum over the trees of that shape (the two parts' sums
    are independent). :mod:`pcfair.learn.decouple` uses it for sensitive features: moving
    their tables then leaves the rest of the tree as it was learned.
    """
    m = codes.shape[1]
    features = [v for v in range(m) if v != decision]
    parent = np.full(m, -1, np.int64)
    if not features:
        return TreeStructure(decision, (), parent, np.zeros((0, 0)))
    mi = mutual_information(codes[:, features], cards[features], pseudocount)
    late = {features.index(int(v)) for v in last}
    first = [i for i in range(len(features)) if i not in late] or sorted(late)[:1]
    local = maximum_spanning_tree(mi[np.ix_(first, first)], 0)
    g = nx.Graph([(first[int(u)], first[int(v)]) for v, u in enumerate(local) if u >= 0])
    g.add_nodes_from(first)
    centre = min(nx.center(g)) if len(first) > 1 else first[0]
    for u, v in nx.bfs_edges(g, centre):
        parent[features[v]] = features[u]
    parent[features[centre]] = decision
    placed, rest = list(first), [i for i in sorted(late) if i not in first]
    while rest:  # Prim: the late feature with the largest link to the tree, lowest index first
        gain = mi[np.ix_(rest, placed)]
        i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
        parent[features[rest[i]]] = features[placed[j]]
        placed.append(rest.pop(i))
    return TreeStructure(decision, tuple(features), parent, mi)


def compile_tree(variables: Variables, tree: TreeStructure, prior: np.ndarray,
                 tables: dict[int, np.ndarray]) -> Circuit:
    """Compile the tree and its tables into the circuit described in the module docstring."""
    d = tree.decision
    children: dict[int, list[int]] = {v: [] for v in range(len(variables))}
    for v, u in enumerate(tree.parent):
        if u >= 0 and v != d:
            children[int(u)].append(v)
    b = CircuitBuilder(variables)
    cards = variables.cardinalities
    memo: dict[tuple[int, int, int], int] = {}

    def node_for(v: int, j: int, dv: int) -> int:
        """The distribution of v's subtree given its parent's value j, under D = dv."""
        key = (v, j, dv)
        if key in memo:
            return memo[key]
        theta = tables[v][dv, j]
        kids = children[v]
        if not kids:
            out = b.categorical(v, theta)
        else:
            out = b.decision([(b.indicator(v, label(v, k)), combine([node_for(c, k, dv) for c in kids]),
                               float(theta[k])) for k in range(int(cards[v]))])
        memo[key] = out
        return out

    label = b.variables.value_label  # indicators take values; the tables are indexed by code

    def combine(nodes: list[int]) -> int:
        if len(nodes) == 1:
            return nodes[0]
        return b.decision([(nodes[0], combine(nodes[1:]), 1.0)])

    roots = children[d]
    if not roots:
        return b.build(b.categorical(d, prior), vtree=Vtree.from_nested(d))
    (r,) = roots
    root = b.decision([(b.indicator(d, label(d, dv)), node_for(r, dv, dv), float(prior[dv]))
                       for dv in range(int(cards[d]))])
    return b.build(root, vtree=Vtree.from_nested((d, _vtree_of(r, children))))


def _vtree_of(v: int, children: dict[int, list[int]]):
    kids = children[v]
    if not kids:
        return v
    chain = _vtree_of(kids[-1], children)
    for c in reversed(kids[:-1]):
        chain = (_vtree_of(c, children), chain)
    return (v, chain)


@dataclass(frozen=True)
class TreeModel:
    """A tree model: the tree of the module docstring (or, with ``naive_bayes``, every
    feature's parent the decision) and its circuit.

    :meth:`compile` makes the circuit of any prior and tables on the same tree
    (``tables[v][dv, j, k] = θ_dv(v = k | u(v) = j)``, as
    :func:`pcfair.learn.parameters.conditional_table` gives);
    :mod:`pcfair.learn.decouple` uses it to move the sensitive variables' tables.
    """

    variables: Variables
    tree: TreeStructure
    circuit: Circuit | None = None
    naive_bayes: bool = False

    def compile(self, prior: np.ndarray, tables: dict[int, np.ndarray]) -> Circuit:
        """The circuit of ``prior`` (the decision's distribution) and ``tables``."""
        if self.naive_bayes:
            from pcfair.learn.naive_bayes import naive_bayes_circuit

            diag = np.arange(len(prior))
            return naive_bayes_circuit(self.variables, self.tree.decision, prior,
                                       {v: t[diag, diag] for v, t in tables.items()})
        return compile_tree(self.variables, self.tree, prior, tables)


def tree_model(codes: np.ndarray, variables: Variables, decision: int, pseudocount: float,
               naive_bayes: bool = False, last=()) -> TreeModel:
    """The maximum-likelihood tree model (Chow-Liu, or naive Bayes) of index-form ``codes``
    (``last``: see :func:`learn_tree`)."""
    cards = variables.cardinalities
    if naive_bayes:
        parent = np.full(len(cards), -1, np.int64)
        features = tuple(v for v in range(len(cards)) if v != decision)
        parent[list(features)] = decision
        tree = TreeStructure(decision, features, parent, np.zeros((0, 0)))
    else:
        tree = learn_tree(codes, cards, decision, pseudocount, last)
    kd = int(cards[decision])
    prior = ((np.bincount(codes[:, decision], minlength=kd) + pseudocount / kd)
             / (len(codes) + pseudocount))
    tables = {v: conditional_table(codes, cards, v, int(tree.parent[v]), decision, pseudocount)
              for v in tree.features}
    model = TreeModel(variables, tree, naive_bayes=naive_bayes)
    return TreeModel(variables, tree, model.compile(prior, tables), naive_bayes)


def learn_tree_model(df: pd.DataFrame, decision: str, structure: str = "clt",
                     pseudocount: float = 1.0) -> TreeModel:
    """:func:`tree_model` of a complete categorical frame (``structure``: ``"clt"`` or
    ``"naive_bayes"``).

    Examples
    --------
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0], "a": [0, 1, 1, 1], "b": [0, 1, 0, 0]})
    >>> model = learn_tree_model(df, "d")
    >>> model.tree.parent.tolist(), model.circuit.properties().deterministic
    ([-1, 0, 1], True)
    """
    if structure not in ("clt", "naive_bayes"):
        raise OptionError(f"a tree model is 'clt' or 'naive_bayes', not {structure!r}")
    if decision not in df.columns:
        raise DataError(f"decision column {decision!r} is not in the data; columns are "
                        f"{list(df.columns)}")
    codes, variables = encode_frame(df)
    return tree_model(codes, variables, variables.index(decision), pseudocount,
                      naive_bayes=structure == "naive_bayes")


#: Structures :func:`learn_pc` learns.
STRUCTURES = ("clt", "strudel", "naive_bayes")


def learn_pc(df: pd.DataFrame, decision: str, structure: str = "clt", pseudocount: float = 1.0,
             random_state=None, *, bins=None, max_splits: int = 50, max_nodes: int = 20_000,
             valid_size: float = 0.2, progress: bool | None = None) -> Circuit:
    """Learn a smooth, decomposable, deterministic, structured-decomposable PC from data.

    Parameters
    ----------
    df : DataFrame
        Complete categorical data (any labels); each column is a variable whose domain is its
        sorted distinct values (a pandas categorical column: its categories, in order). A
        numeric column with more than 20 distinct values is *continuous* and refused with a
        :class:`DataError` naming it, unless ``bins`` is given (:mod:`pcfair.tables.data`).
    decision : str
        The decision column; the circuit's root decides on it.
    structure : {"clt", "strudel", "naive_bayes"}
        ``"clt"``: a Chow-Liu tree compiled as in the module docstring. ``"strudel"``: that
        circuit grown by Strudel splits (:mod:`pcfair.learn.strudel`), choosing the size by
        log-likelihood on a validation split of ``valid_size`` of the rows, then re-fitting
        the parameters on all rows. ``"naive_bayes"``: ``P(D) Π_z P(z | D)``
        (:mod:`pcfair.learn.naive_bayes`).
    pseudocount : float, default 1.0
        Laplace pseudocount ``α`` for mutual information and parameters.
    random_state : None, int or Generator
        Seeds the validation split of Strudel; the CLT learner is deterministic.
    bins : int or mapping of str to int, optional
        Quantile-bin the continuous columns into at most this many bins (a mapping: bin exactly
        the named numeric columns); the bin intervals, e.g. ``"[18, 25)"``, become the values
        of those variables. Bin new rows the same way with
        :func:`pcfair.tables.data.apply_bins` and :func:`pcfair.tables.data.bin_columns`'s edges,
        or use :class:`pcfair.learn.PCClassifier`, which does it for you.
    max_splits, max_nodes : int
        Strudel's budgets.
    valid_size : float, default 0.2
        Strudel's validation fraction.
    progress : bool, optional
        A progress bar over Strudel's splits on stderr (default: when stderr is a terminal).

    Returns
    -------
    Circuit
        With its vtree attached, its training counts (:mod:`pcfair.inference.posterior`: the
        parameter posterior) and its recipe (:mod:`pcfair.tables.recipe`: the columns, the bin
        edges, the decision and the row count), so that raw rows can be read by it
        (``data=``, :func:`pcfair.tables.recipe.model_frame`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1], "x": ["a", "b", "b", "a", "a"],
    ...                    "y": [0, 1, 1, 0, 1]})
    >>> pc = learn_pc(df, "d")
    >>> rep = pc.properties()
    >>> rep.deterministic, rep.structured_decomposable
    (True, True)
    >>> ages = pd.DataFrame({"d": [0, 1] * 50, "age": [18 + (7 * i) % 60 for i in range(100)]})
    >>> learn_pc(ages, "d", bins=3).variables.domains[1]
    ('[18, 37)', '[37, 56)', '[56, 77]')
    """
    if structure not in STRUCTURES:
        raise OptionError(f"structure must be one of {STRUCTURES}, not {structure!r}")
    if pseudocount < 0 or not np.isfinite(pseudocount):
        raise OptionError("pseudocount must be a finite non-negative number")
    if decision not in df.columns:
        raise DataError(f"decision column {decision!r} is not in the data; columns are "
                        f"{list(df.columns)}")
    columns = tuple(str(c) for c in df.columns)
    df, edges = prepare_frame(df, decision, bins)
    codes, variables = encode_frame(df)
    pc = _learn_codes(codes, variables, variables.index(decision), structure, pseudocount,
                      random_state, max_splits, max_nodes, valid_size, progress)
    pc = pc.with_counts(parameter_counts(pc, codes, pseudocount))
    return pc.with_recipe(Recipe(columns=columns, bins={c: tuple(map(float, e))
                                                        for c, e in edges.items()},
                                 decision=str(decision), rows=len(df)))


def _learn_codes(codes: np.ndarray, variables, d: int, structure: str, pseudocount: float,
                 random_state, max_splits: int, max_nodes: int, valid_size: float,
                 progress: bool | None) -> Circuit:
    """:func:`learn_pc` on encoded data."""
    clt = tree_model(codes, variables, d, pseudocount,
                     naive_bayes=structure == "naive_bayes").circuit
    if structure != "strudel":
        return clt
    from pcfair.learn.strudel import strudel

    order = check_random_state(random_state).permutation(len(codes))
    cut = max(1, int(round(len(codes) * (1 - valid_size))))
    grown, _ = strudel(clt, codes[order[:cut]], codes[order[cut:]], pseudocount=pseudocount,
                       max_splits=max_splits, max_nodes=max_nodes, progress=progress)
    return fit_parameters(grown, codes, pseudocount)


def train_valid_split(df: pd.DataFrame, valid_size: float = 0.2, random_state=None
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A shuffled split of the rows into train and validation frames."""
    if not 0 < valid_size < 1:
        raise OptionError("valid_size must be between 0 and 1")
    rng = check_random_state(random_state)
    order = rng.permutation(len(df))
    cut = int(round(len(df) * (1 - valid_size)))
    return df.iloc[order[:cut]], df.iloc[order[cut:]]


def log_likelihood(circuit: Circuit, df: pd.DataFrame) -> np.ndarray:
    """log P(row) for each row of ``df`` (missing values are marginalised)."""
    return circuit.log_marginal(df)

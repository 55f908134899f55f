"""Decoupling the sensitive variables of a tree model: a path from a model to a fair one.

A *tree model* is the tree-augmented naive Bayes that :func:`pcfair.learn_pc` compiles for
``"clt"`` (:mod:`pcfair.learn.clt`) and, with every feature's parent the decision, the naive
Bayes of ``"naive_bayes"``:

    P(d, z) = P(d) Π_v θ_d(z_v | z_u(v)),    u(v) the tree parent of v (or the decision).

:func:`decoupled_tables` replaces the tables that tie the sensitive variables ``S`` to the
rest by tables that do not:

- a sensitive ``s`` whose parent is sensitive: ``P(s | u)``, pooled over the decision;
- any other sensitive ``s``: its marginal ``P(s)``;
- a non-sensitive ``v`` whose parent is sensitive: ``P(v | d)``, pooled over the parent;
- every other table is kept.

(The marginals are the model's own, so the decoupled model keeps the marginal of each
sensitive variable and of each variable given the decision.) :func:`blend_tables` mixes the
two, ``θ_λ = (1 − λ) θ + λ q``, and :func:`decoupled_circuit` compiles the mixture.

Theorem (λ = 1 is fair for every δ). With the decoupled tables, every table of a
non-sensitive variable depends on the decision and at most one *non-sensitive* variable, and
every table of a sensitive variable depends on at most one *sensitive* variable. So the joint is

    P(d, n, s) = [P(d) Π_{v ∈ N} q_v(n_v | d, n_u(v))] · [Π_{s ∈ S} q_s(s | s_u(s))] = f(d, n) g(s),

where each bracket is a normalised Bayesian network (the first a forest under ``D`` over the
non-sensitive variables, the second a forest over ``S``). Hence ``S ⊥ (D, N)``, and for every
pattern ``(x, y)`` with ``P(x, y) > 0`` (``x`` over sensitive, ``y`` over any other
variables, ``y = (y_S, y_N)``): ``P(d | x, y) = P(d | y_N) = P(d | y)``, so ``Δ(x, y) = 0``.
For ``0 < λ < 1`` nothing is claimed: a model on the path is called fair only when the
certifier proves it (:func:`pcfair.learn.fair.learn_fair_pc`).

Examples
--------
>>> import pandas as pd
>>> from pcfair.learn.clt import learn_tree_model
>>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1, 0], "s": [0, 1, 1, 0, 1, 1],
...                    "z": [0, 1, 0, 0, 1, 1]})
>>> model = learn_tree_model(df, "d")
>>> fair = decoupled_circuit(model, model.circuit, [1], 1.0)
>>> gap = fair.conditional({"d": 1}, {"s": 1, "z": 1}) - fair.conditional({"d": 1}, {"z": 1})
>>> abs(gap) < 1e-12
True
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import OptionError
from pcfair.inference.marginals import log_marginals
from pcfair.learn.clt import TreeModel


def _conditionals(circuit: Circuit, given: list[int], v: int) -> np.ndarray:
    """``P(v = k | given = g)`` for every joint value ``g`` of ``given`` (row-major over
    ``given``) and value ``k``: shape ``(Π cards[given], cards[v])``. A zero-probability
    ``g`` gets the uniform distribution (nothing depends on it)."""
    cards = circuit.variables.cardinalities
    shape = [int(cards[g]) for g in given]
    grid = np.indices(shape).reshape(len(given), -1).T if given else np.zeros((1, 0), int)
    kv = int(cards[v])
    ev = np.full((len(grid) * (kv + 1), circuit.num_variables), -1, np.int32)
    for i, g in enumerate(given):
        ev[:, g] = np.repeat(grid[:, i], kv + 1)
    ev[:, v] = np.tile(np.append(np.arange(kv), -1), len(grid))
    lm = log_marginals(circuit, ev).reshape(len(grid), kv + 1)
    out = np.full((len(grid), kv), 1.0 / kv)
    seen = np.isfinite(lm[:, -1])
    out[seen] = np.exp(lm[seen, :kv] - lm[seen, -1:])
    return out / out.sum(axis=1, keepdims=True)


def tree_tables(model: TreeModel, circuit: Circuit) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The prior and tables of ``circuit``, a model with ``model``'s tree (any parameters).

    ``tables[v][dv, j, k] = P(v = k | u(v) = j, D = dv)``, read by inference; for the tree
    model of ``model.tree`` this is exactly the parameter (the Markov property: given its
    parent and the decision, ``v`` is independent of its non-descendants, and its descendants
    sum out). A feature under the decision has ``j`` over the decision's values (only
    ``j = dv`` is used, as in :func:`pcfair.learn.parameters.conditional_table`).
    """
    tree = model.tree
    d = tree.decision
    kd = int(circuit.variables.cardinalities[d])
    prior = _conditionals(circuit, [], d)[0]
    tables = {}
    for v in tree.features:
        u = int(tree.parent[v])
        if u == d:
            per_d = _conditionals(circuit, [d], v)
            tables[v] = np.repeat(per_d[:, None, :], kd, axis=1)
        else:
            ku = int(circuit.variables.cardinalities[u])
            tables[v] = _conditionals(circuit, [d, u], v).reshape(kd, ku, -1)
    return prior, tables


def decoupled_tables(model: TreeModel, circuit: Circuit, sensitive,
                     tables: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The tables of the decoupled model (module docstring), shaped like ``tables`` (the
    model's own, from :func:`tree_tables`, kept where nothing changes), with the marginals
    of ``circuit``."""
    tree = model.tree
    d = tree.decision
    sens = {int(s) for s in sensitive}
    unknown = sens - set(tree.features)
    if unknown:
        raise OptionError(f"sensitive variable(s) {sorted(unknown)} are not features of the "
                          f"tree model")
    out = {}
    for v in tree.features:
        u = int(tree.parent[v])
        shape = tables[v].shape
        if v in sens and u in sens:  # P(s | u), pooled over the decision
            q = _conditionals(circuit, [u], v)[None, :, :]
        elif v in sens:  # P(s)
            q = _conditionals(circuit, [], v)[None, :, :]
        elif u in sens:  # P(v | d), pooled over the parent
            q = _conditionals(circuit, [d], v)[:, None, :]
        else:
            out[v] = tables[v]
            continue
        out[v] = np.broadcast_to(q, shape).copy()
    return out


def decoupling_groups(model: TreeModel, sensitive) -> dict[int, int]:
    """Which sensitive variable each decoupled table belongs to: a sensitive variable's own
    table, and the table of each non-sensitive child of it (the tables
    :func:`decoupled_tables` changes)."""
    sens = {int(s) for s in sensitive}
    groups = {}
    for v in model.tree.features:
        u = int(model.tree.parent[v])
        if v in sens:
            groups[v] = v
        elif u in sens:
            groups[v] = u
    return groups


def blend_tables(tables: dict[int, np.ndarray], target: dict[int, np.ndarray],
                 lam, groups: dict[int, int] | None = None) -> dict[int, np.ndarray]:
    """``(1 − λ) tables + λ target``, table by table (each row stays a distribution).

    ``lam`` is one weight for every table, or a mapping from sensitive variable to weight,
    applied to the tables of its group (``groups``, from :func:`decoupling_groups`; a table
    in no group is kept). With every weight 1 the model is the decoupled one, whichever
    weights are mappings, so the theorem of the module docstring holds there too.
    """
    weights = lam if isinstance(lam, dict) else None
    out = {}
    for v in tables:
        if weights is None:
            w = float(lam)
        else:
            if groups is None:
                raise OptionError("per-variable blend weights need the decoupling groups")
            w = float(weights[groups[v]]) if v in groups else 0.0
        if not 0.0 <= w <= 1.0:
            raise OptionError(f"the blend weight must be in [0, 1], got {w}")
        out[v] = (1.0 - w) * tables[v] + w * target[v]
    return out


def decoupled_circuit(model: TreeModel, circuit: Circuit, sensitive, lam: float) -> Circuit:
    """``circuit`` (a model with ``model``'s tree) with every table blended a fraction ``lam``
    of the way to its decoupled table; ``lam = 1`` has ``Δ = 0`` for every pattern (module
    docstring), ``lam = 0`` is ``circuit`` again.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn.clt import learn_tree_model
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1], "s": [0, 1, 1, 0, 0], "z": [0, 1, 0, 0, 1]})
    >>> model = learn_tree_model(df, "d")
    >>> same = decoupled_circuit(model, model.circuit, [1], 0.0)
    >>> bool(abs(same.conditional({"d": 1}, {"s": 1}) - model.circuit.conditional(
    ...     {"d": 1}, {"s": 1})) < 1e-12)
    True
    """
    prior, tables = tree_tables(model, circuit)
    blended = blend_tables(tables, decoupled_tables(model, circuit, sensitive, tables), lam)
    return model.compile(prior, blended)

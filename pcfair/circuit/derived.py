"""The one cache of values derived from a circuit.

A :class:`~pcfair.circuit.Circuit` is immutable, so whatever an algorithm computes from it (its
scopes, its normalised copy, the flat arrays of the marginal kernels, a property report,
compiled quotient plans, naive-Bayes tables, a gradient plan...) can be computed once and kept
for the circuit's lifetime. This module owns that memory; algorithms in :mod:`pcfair.inference`
and :mod:`pcfair.patterns` never touch it directly but ask :func:`derived`::

    plan = derived(circuit, ("self_plan", d), lambda: PairPlan(...))

Rules:

- A key is a string or a tuple whose first item is a string naming the quantity (the rest are
  its arguments). Every name in use is listed in :data:`KEYS` with the module that computes it,
  so that two modules cannot silently share one name for different things.
- Values live as long as the circuit. A circuit made by :meth:`Circuit.with_parameters` shares
  the structure of its source, so the values listed in :data:`STRUCTURAL` (those that depend on
  the graph only, never on a parameter) are carried over by :func:`carry_structural`; every
  other value is recomputed for the new parameters.
- The storage is the circuit's private ``_cache`` slot, which is pickled with the circuit: a
  worker process receives what the parent already computed.

Examples
--------
>>> from pcfair.circuit import CircuitBuilder
>>> b = CircuitBuilder({"a": [0, 1]})
>>> pc = b.build(b.categorical("a", [0.3, 0.7]))
>>> calls = []
>>> derived(pc, ("normalized",), lambda: calls.append(1) or "computed once")
'computed once'
>>> derived(pc, ("normalized",), lambda: calls.append(1) or "again")
'computed once'
>>> len(calls)
1
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pcfair.circuit.circuit import Circuit

T = TypeVar("T")

#: Every quantity kept for a circuit: name -> the module that computes it.
KEYS = {
    "num_edges": "pcfair.circuit.circuit",
    "leaf_lognorm": "pcfair.circuit.circuit",
    "scopes": "pcfair.circuit._scopes",
    "properties": "pcfair.inference.properties",
    "marginal_problems": "pcfair.circuit.properties",
    "positive": "pcfair.inference.quotient",
    "kernel_args": "pcfair.inference.marginals",
    "normalized": "pcfair.inference.marginals",
    "smallest_probability": "pcfair.inference.smallest",
    "quotient_structure": "pcfair.inference.quotient",
    "self_plan": "pcfair.inference.quotient",
    "self_plans": "pcfair.inference.quotient",
    "pair_plan": "pcfair.inference.quotient",
    "pair_builder_args": "pcfair.inference.quotient",
    "gradient_plan": "pcfair.patterns.oracle",
    "naive_bayes_bound": "pcfair.patterns.bounds",
    "tree_bound": "pcfair.patterns.bounds",
    "naive_bayes_tables": "pcfair.patterns.naive_bayes_search",
    "search_order": "pcfair.patterns.search_types",
}

#: Quantities that depend on the circuit's graph only (kept by :meth:`Circuit.with_parameters`).
STRUCTURAL = frozenset({"num_edges", "scopes", "marginal_problems"})


def _name(key) -> str:
    name = key[0] if isinstance(key, tuple) else key
    if name not in KEYS:
        raise KeyError(f"{name!r} is not a registered derived quantity; add it to "
                       "pcfair.circuit.derived.KEYS with the module that computes it")
    return name


def derived(circuit: "Circuit", key, compute: Callable[[], T]) -> T:
    """The value of ``key`` for ``circuit``: ``compute()`` the first time, the kept value after.

    Parameters
    ----------
    circuit : Circuit
    key : str or tuple
        The quantity's registered name (see :data:`KEYS`), or a tuple of it and its arguments.
    compute : callable
        Computes the value from ``circuit`` (called at most once per key and circuit).

    Returns
    -------
    object
        The value, shared by every caller that asks for the same key.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"a": [0, 1]})
    >>> pc = b.build(b.categorical("a", [0.5, 0.5]))
    >>> derived(pc, ("self_plan", 0), lambda: 42)
    42
    """
    _name(key)
    store = circuit._cache
    if key not in store:
        store[key] = compute()
    return store[key]


def peek(circuit: "Circuit", key):
    """The kept value of ``key`` for ``circuit``, or ``None`` when it was not computed yet."""
    _name(key)
    return circuit._cache.get(key)


def remember(circuit: "Circuit", key, value: T) -> T:
    """Keep ``value`` as ``key`` for ``circuit`` (replacing a kept one) and return it.

    For values that must be rebuilt when a kept one no longer fits the request (e.g. a pair plan
    made for another second circuit)."""
    _name(key)
    circuit._cache[key] = value
    return value


def carry_structural(source: "Circuit", target: "Circuit") -> None:
    """Copy the :data:`STRUCTURAL` values of ``source`` to ``target`` (same graph)."""
    for key, value in source._cache.items():
        if _name(key) in STRUCTURAL:
            target._cache.setdefault(key, value)

"""The branch-and-bound search split into disjoint shares, run by
:func:`pcfair.patterns.executors.map_chunks` (local processes, any executor, a Dask cluster).

Local workers are started with ``spawn`` and import the caller's main module, so a script that
calls ``certify(..., n_jobs=2)`` at its top level needs the usual guard::

    if __name__ == "__main__":
        print(pcfair.certify(pc, "D", ["S"], 0.05, engine="search", n_jobs=2))

Without it the workers fail while starting and the shares run in the calling process instead,
with a :class:`RuntimeWarning` that names the guard (same answer, one core).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable

import numpy as np

from pcfair._clock import seconds_left
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io.json_io import from_dict, to_dict
from pcfair.errors import OptionError
from pcfair.patterns._arguments import Problem
from pcfair.patterns.executors import map_chunks
from pcfair.patterns.scores import pattern_divergences
from pcfair.patterns.search_types import SearchQuery, SearchResult, pattern_key, search_order

__all__ = ["merge_patterns", "parallel_search"]


def _share(runner: Callable, data, d: int, fav: int, sensitive: list[int],
           query: SearchQuery) -> SearchResult:
    """One share of the search (``query.partition``), run by ``runner`` (a search function
    defined at the top level of a module, so that it pickles by name) on the circuit ``data``
    (a :class:`Circuit` or its :func:`~pcfair.circuit.io.json_io.to_dict`). The query's
    deadline is a :func:`time.time` value, comparable across processes; one already past
    stops the search at its root: incomplete, never "fair"."""
    circuit = data if isinstance(data, Circuit) else from_dict(data)
    return runner(Problem(circuit, d, fav, sensitive), query)


def merge_patterns(problem: Problem, query: SearchQuery, parts: list[SearchResult]) -> list:
    """The patterns of the workers' disjoint shares of ``query`` as one search would return
    them.

    Patterns are merged by identity (:func:`pattern_key`); ``"first"`` keeps one, ``"topk"``
    the ``k`` best of the union by ``rank_by`` (each worker kept its share's best, so this is
    exact); the other modes keep them all (``"pareto"`` fronts are reduced by the caller).
    """
    seen: dict = {}
    for p in parts:
        for it in p.patterns:
            seen.setdefault(pattern_key(it.x, it.y), it)
    items = list(seen.values())
    if query.mode == "first":
        return items[:1]
    if query.mode == "topk" and items:
        pc, d, fav, _ = problem
        score = np.array([it.score for it in items], float)
        key = (pattern_divergences(pc, d, fav, [it[:2] for it in items], score, query.delta)
               if query.rank_by == "divergence" else np.abs(score))
        items = [items[i] for i in np.argsort(-key, kind="stable")[:query.k]]
    return items


def parallel_search(runner: Callable[[Problem, SearchQuery], SearchResult], problem: Problem,
                    query: SearchQuery, *, n_jobs: int = 1, executor=None) -> SearchResult:
    """The search ``runner`` (:func:`pcfair.patterns.search.search` or a compiled search that
    takes a ``partition``, called as ``runner(problem, query)``) split into disjoint shares
    run on ``n_jobs`` local processes or on ``executor`` (see
    :func:`pcfair.patterns.executors.map_chunks`). The arguments are taken as the API checked
    them (:func:`pcfair.patterns._arguments.resolve_request`): ``n_jobs`` is a process count
    as :func:`~pcfair.patterns.executors.resolve_n_jobs` gives it (1: this process). The
    variable order is computed here once (``query.order``, else :func:`search_order` of
    ``query.options.ordering``) and given to every share.

    Every share walks the few nodes above a split depth (chosen so there are at least 16
    subtrees per worker) and then only the subtrees that hash to it, so the shares are disjoint
    and cover the tree whatever each prunes; patterns are merged by identity. Top-k and Pareto
    shares prune with their own thresholds (sound: each keeps its share's best), so the merge
    is exact. ``"first"`` stops the others once one share has a witness. Workers start by
    loading the circuit and the compiled kernels (about a second), so this pays for searches
    that take longer than that. Which search runs is the engine table's choice
    (:mod:`pcfair.patterns.engines`).

    The query's deadline (a :func:`time.time` value, the one clock of every engine) bounds
    the run, starting the workers included: at the deadline the shares stop themselves and
    report what they have (the run waits a grace of 5% of the time left, at most a second,
    for those reports, then stops waiting), and the result is marked incomplete (a search cut
    short never says "fair"). Scripts need the ``if __name__ == "__main__":`` guard (module
    docstring).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns.search import search
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> res = parallel_search(search, Problem(pc, 0, 1, [1]), SearchQuery(0.1, progress=False))
    >>> len(res.patterns), res.complete
    (2, True)
    """
    pc, d, fav, sensitive = problem
    mode = query.mode
    if mode == "extension":
        raise OptionError("the extension mode is not split across processes")
    workers = n_jobs if executor is None else 2
    order = query.order
    if order is None:
        order = search_order(pc, d, fav, sensitive, query.options.ordering)
    query = query.but(order=order)
    if workers <= 1 and executor is None:
        return runner(problem, query)
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a spawned worker re-running a script without the guard: end it quietly (no
        # traceback per worker); the parent runs the shares itself and warns
        raise SystemExit(1)
    t0 = time.perf_counter()
    card = pc.variables.cardinalities
    sens = set(sensitive)
    split, width = 0, 1
    while split < len(order) - 1 and width < 16 * workers:
        v = order[split]
        width *= (2 * int(card[v]) + 1) if v in sens else (int(card[v]) + 1)
        split += 1
    data = to_dict(pc)
    tasks = [(runner, data, d, fav, sensitive,
              query.but(progress=False, partition=(w, workers, split)))
             for w in range(workers)]
    parts: list[SearchResult] = []

    def collect(_index: int, part: SearchResult) -> bool:
        parts.append(part)
        return mode == "first" and bool(part.patterns)  # a witness settles it

    # the shares stop themselves at the deadline and return what they have: wait a short
    # grace beyond it for those partial results (their node counts, their patterns)
    left = seconds_left(query.deadline)
    wait = None if left is None else query.deadline + min(1.0, 0.05 * left)
    run = map_chunks(_share, tasks, collect, executor=executor, n_jobs=workers,
                     deadline=wait, progress=query.progress, desc="search shares")
    res = SearchResult(order=order, bound=parts[0].bound if parts else "",
                       compiled=bool(parts) and parts[0].compiled)
    res.complete = (run.complete and not run.stopped_early and len(parts) == workers
                    and all(p.complete for p in parts))
    for p in parts:
        res.best = max(res.best, p.best)
        res.nodes += p.nodes
        res.bounds += p.bounds
        res.pruned += p.pruned
    res.patterns = merge_patterns(problem, query, parts)
    if mode == "first" and res.patterns:
        res.complete = True  # a witness settles the question
    res.seconds = time.perf_counter() - t0
    return res

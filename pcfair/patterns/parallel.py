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

from pcfair._clock import deadline_from, seconds_left
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io.json_io import from_dict, to_dict
from pcfair.errors import OptionError
from pcfair.patterns.executors import map_chunks
from pcfair.patterns.scores import pattern_divergences
from pcfair.patterns.search_types import SearchResult, pattern_key, search_order

__all__ = ["merge_patterns", "parallel_search"]


def _share(runner: Callable, data, d: int, fav: int, sensitive: list[int], delta: float,
           deadline: float | None, kwargs: dict) -> SearchResult:
    """One share of the search, run by ``runner`` (a search function defined at the top level
    of a module, so that it pickles by name). ``deadline`` is a :func:`time.time` value, the
    one clock of every engine (comparable across processes). A deadline already past stops
    the search at its root: incomplete, never "fair"."""
    circuit = data if isinstance(data, Circuit) else from_dict(data)
    return runner(circuit, d, fav, sensitive, delta, deadline=deadline, **kwargs)


def merge_patterns(circuit: Circuit, d: int, fav: int, parts: list[SearchResult], mode: str,
                   k: int, rank_by: str, delta: float) -> list:
    """The patterns of the workers' disjoint shares as one search would return them.

    Patterns are merged by identity (:func:`pattern_key`); ``"first"`` keeps one, ``"topk"``
    the ``k`` best of the union by ``rank_by`` (each worker kept its share's best, so this is
    exact); the other modes keep them all (``"pareto"`` fronts are reduced by the caller).
    """
    seen: dict = {}
    for p in parts:
        for it in p.patterns:
            seen.setdefault(pattern_key(it.x, it.y), it)
    items = list(seen.values())
    if mode == "first":
        return items[:1]
    if mode == "topk" and items:
        score = np.array([it.score for it in items], float)
        key = (pattern_divergences(circuit, d, fav, [it[:2] for it in items], score, delta)
               if rank_by == "divergence" else np.abs(score))
        items = [items[i] for i in np.argsort(-key, kind="stable")[:k]]
    return items


def parallel_search(runner: Callable, circuit: Circuit, d: int, fav: int, sensitive: list[int],
                    delta: float, *, n_jobs: int = 1, mode: str = "all", k: int = 10,
                    rank_by: str = "discrimination", time_limit: float | None = None,
                    deadline: float | None = None, progress: bool | None = None,
                    executor=None, min_support: float = 0.0, ordering: str = "auto",
                    **options) -> SearchResult:
    """The search ``runner`` (:func:`pcfair.patterns.search.search` or a compiled search that
    takes a ``partition``) split into disjoint shares run on ``n_jobs`` local processes or on
    ``executor`` (see :func:`pcfair.patterns.executors.map_chunks`); ``options`` are passed to
    every share as they are. The arguments are taken as the API checked them
    (:func:`pcfair.patterns._arguments.resolve_request`): ``n_jobs`` is a process count as
    :func:`~pcfair.patterns.executors.resolve_n_jobs` gives it (1: this process).

    Every share walks the few nodes above a split depth (chosen so there are at least 16
    subtrees per worker) and then only the subtrees that hash to it, so the shares are disjoint
    and cover the tree whatever each prunes; patterns are merged by identity. Top-k and Pareto
    shares prune with their own thresholds (sound: each keeps its share's best), so the merge
    is exact. ``"first"`` stops the others once one share has a witness. Workers start by
    loading the circuit and the compiled kernels (about a second), so this pays for searches
    that take longer than that. Which search runs is the engine table's choice
    (:mod:`pcfair.patterns.engines`).

    ``deadline`` (a :func:`time.time` value, the one clock of every engine; it overrides
    ``time_limit``, seconds from this call) bounds the run, starting the workers included: at
    the deadline the shares stop themselves and report what they have (the run waits a grace
    of 5% of the time left, at most a second, for those reports, then stops waiting), and the
    result is marked incomplete (a search cut short never says "fair"). Scripts need the
    ``if __name__ == "__main__":`` guard (module docstring).
    """
    if mode == "extension":
        raise OptionError("the extension mode is not split across processes")
    deadline = deadline_from(time_limit, deadline)
    kwargs = {"mode": mode, "k": k, "rank_by": rank_by, "min_support": min_support, **options}
    workers = n_jobs if executor is None else 2
    order = search_order(circuit, d, fav, sensitive, ordering)
    if workers <= 1 and executor is None:
        return runner(circuit, d, fav, sensitive, delta, deadline=deadline,
                      progress=progress, order=order, **kwargs)
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a spawned worker re-running a script without the guard: end it quietly (no
        # traceback per worker); the parent runs the shares itself and warns
        raise SystemExit(1)
    t0 = time.perf_counter()
    card = circuit.variables.cardinalities
    sens = set(sensitive)
    split, width = 0, 1
    while split < len(order) - 1 and width < 16 * workers:
        v = order[split]
        width *= (2 * int(card[v]) + 1) if v in sens else (int(card[v]) + 1)
        split += 1
    data = to_dict(circuit)
    tasks = [(runner, data, d, fav, sensitive, delta, deadline,
              {**kwargs, "progress": False, "order": order, "partition": (w, workers, split)})
             for w in range(workers)]
    parts: list[SearchResult] = []

    def collect(_index: int, part: SearchResult) -> bool:
        parts.append(part)
        return mode == "first" and bool(part.patterns)  # a witness settles it

    # the shares stop themselves at the deadline and return what they have: wait a short
    # grace beyond it for those partial results (their node counts, their patterns)
    left = seconds_left(deadline)
    grace = None if left is None else left + min(1.0, 0.05 * left)
    run = map_chunks(_share, tasks, collect, executor=executor, n_jobs=workers,
                     time_limit=grace, progress=progress, desc="search shares")
    res = SearchResult(order=order, bound=parts[0].bound if parts else "",
                       compiled=bool(parts) and parts[0].compiled)
    res.complete = (run.complete and not run.stopped_early and len(parts) == workers
                    and all(p.complete for p in parts))
    for p in parts:
        res.best = max(res.best, p.best)
        res.nodes += p.nodes
        res.bounds += p.bounds
        res.pruned += p.pruned
    res.patterns = merge_patterns(circuit, d, fav, parts, mode, k, rank_by, delta)
    if mode == "first" and res.patterns:
        res.complete = True  # a witness settles the question
    res.seconds = time.perf_counter() - t0
    return res

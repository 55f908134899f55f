"""The branch-and-bound search split across processes (``n_jobs``)."""

from __future__ import annotations

import time

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.inference.quotient import self_plan
from pcfair.patterns.scores import divergence_scores
from pcfair.patterns.search import SearchOptions, SearchResult, pattern_key, search, search_order


def _worker(args: tuple) -> SearchResult:
    from pcfair.circuit.io.json_io import from_dict

    data, d, fav, sensitive, delta, kwargs = args
    return search(from_dict(data), d, fav, sensitive, delta, **kwargs)


def parallel_search(circuit: Circuit, d: int, fav: int, sensitive: list[int], delta: float, *,
                    n_jobs: int = 1, mode: str = "all", k: int = 10,
                    rank_by: str = "discrimination", time_limit: float | None = None,
                    assume_deterministic: bool = False, progress: bool | None = None,
                    options: SearchOptions = SearchOptions()) -> SearchResult:
    """:func:`search` split across ``n_jobs`` processes (``-1``: every core).

    Every worker walks the few nodes above a split depth (chosen so there are at least 16
    subtrees per worker) and then only the subtrees that hash to it, so the shares are disjoint
    and cover the tree whatever each worker prunes; patterns are merged by identity. Top-k and
    Pareto workers prune with their own thresholds (sound: each keeps its share's best), so the
    merge is exact. ``"first"`` stops every worker once one has a witness. Workers start by
    loading the circuit and the compiled kernels (about a second), so this pays for searches
    that take longer than that.
    """
    import multiprocessing as mp
    import os

    from pcfair.circuit.io.json_io import to_dict

    n_jobs = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    if mode == "extension":
        raise ValueError("the extension mode is not split across processes")
    if n_jobs <= 1:
        return search(circuit, d, fav, sensitive, delta, mode=mode, k=k, rank_by=rank_by,
                      time_limit=time_limit, assume_deterministic=assume_deterministic,
                      progress=progress, options=options)
    t0 = time.perf_counter()
    self_plan(circuit, assume_deterministic)  # refuse unsuitable circuits before forking
    order = search_order(circuit, d, fav, sensitive, options.ordering)
    card = circuit.variables.cardinalities
    sens = set(sensitive)
    split, width = 0, 1
    while split < len(order) - 1 and width < 16 * n_jobs:
        v = order[split]
        width *= (2 * int(card[v]) + 1) if v in sens else (int(card[v]) + 1)
        split += 1
    data = to_dict(circuit)
    jobs = [(data, d, fav, sensitive, delta,
             {"mode": mode, "k": k, "rank_by": rank_by, "time_limit": time_limit,
              "assume_deterministic": assume_deterministic, "progress": False,
              "options": options, "order": order, "partition": (w, n_jobs, split)})
            for w in range(n_jobs)]
    parts = []
    pool = mp.get_context("spawn").Pool(n_jobs)
    early = False
    try:
        for part in pool.imap_unordered(_worker, jobs):
            parts.append(part)
            if mode == "first" and part.patterns:
                early = True  # a witness: stop the other workers
                break
    finally:
        if early:
            pool.terminate()
        else:
            pool.close()
        pool.join()
    res = SearchResult(order=order)
    res.complete = all(p.complete for p in parts) and len(parts) == n_jobs
    for p in parts:
        res.nodes += p.nodes
        res.bounds += p.bounds
        res.pruned += p.pruned
    seen: dict = {}
    for p in parts:
        for it in p.patterns:
            seen.setdefault(pattern_key(it[0], it[1]), it)
    items = list(seen.values())
    if mode == "first":
        items = items[:1]
        res.complete = res.complete or bool(items)
    elif mode == "topk" and items:
        s_, pxy, pdxy, py = (np.array([it[i] for it in items]) for i in (2, 3, 4, 5))
        key = (divergence_scores(s_, pdxy, pxy, py, delta) if rank_by == "divergence"
               else np.abs(s_))
        items = [items[i] for i in np.argsort(-key, kind="stable")[:k]]
    res.patterns = items
    res.seconds = time.perf_counter() - t0
    return res

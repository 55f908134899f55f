"""The branch-and-bound search split across processes (``n_jobs``).

Workers are started with the ``spawn`` method (a fresh interpreter: safe with threads, the same
on every platform) by :class:`concurrent.futures.ProcessPoolExecutor`. A spawned worker first
imports the caller's main module, so a script that calls ``certify(..., n_jobs=2)`` at its top
level needs the usual guard::

    if __name__ == "__main__":
        print(pcfair.certify(pc, "D", ["S"], 0.05, engine="search", n_jobs=2))

Without it each worker would run the script again and fail while starting; the pool breaks and
:func:`parallel_search` runs the search in the calling process instead, with a
:class:`RuntimeWarning` that names the guard (same answer, one core).
"""

from __future__ import annotations

import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.inference.quotient import self_plan
from pcfair.patterns.scores import pattern_divergences
from pcfair.patterns.search import SearchOptions, SearchResult, pattern_key, search, search_order

#: Seconds the parent still waits after the deadline for the workers' partial results (they
#: stop at the deadline themselves); at most this or a tenth of the time limit.
DEADLINE_GRACE = 0.25

GUARD_WARNING = (
    "n_jobs > 1: the worker processes failed to start, so the search ran in this process on "
    "one core. The usual cause: the script calling pcfair lacks the guard "
    "'if __name__ == \"__main__\":' around its main code; worker processes are started with "
    "'spawn' and import the main script, which must not start the search again at import. "
    "Put the calls under that guard (or use n_jobs=1) to search in parallel.")


def _init_worker() -> None:
    """Give tqdm (the search's progress counter) a thread lock: its default lock is a
    multiprocessing semaphore, which a worker ended early would leave behind (and the resource
    tracker would warn about at exit)."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def _worker(args: tuple) -> SearchResult:
    """One worker's share. ``deadline_wall`` is a ``time.time()`` value (comparable across
    processes); :func:`search` wants a ``time.perf_counter()`` one, of this process."""
    from pcfair.circuit.io.json_io import from_dict

    data, d, fav, sensitive, delta, deadline_wall, kwargs = args
    circuit = from_dict(data)
    deadline = (None if deadline_wall is None
                else time.perf_counter() + (deadline_wall - time.time()))
    # a deadline already past stops the search at its root: incomplete, never "fair"
    return search(circuit, d, fav, sensitive, delta, deadline=deadline, **kwargs)


def resolve_n_jobs(n_jobs: int) -> int:
    """``n_jobs`` as a process count: ``-1`` is every core; otherwise an integer >= 1."""
    import os

    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise ValueError(f"n_jobs must be a positive integer or -1, not {n_jobs!r}")
    if n_jobs == -1:
        return os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer or -1 (every core), not {n_jobs}")
    return int(n_jobs)


def merge_patterns(circuit: Circuit, d: int, fav: int, parts: list[SearchResult], mode: str,
                   k: int, rank_by: str, delta: float) -> list:
    """The patterns of the workers' disjoint shares as one search would return them.

    Patterns are merged by identity (:func:`pattern_key`); ``"first"`` keeps one, ``"topk"``
    the ``k`` best of the union by ``rank_by`` (each worker kept its share's best, so this is
    exact); the other modes keep them all (``"pareto"`` fronts are reduced by the caller).
    This is the only place that reads the search's items, and only their first fields
    ``(x, y, Δ, ...)``.
    """
    seen: dict = {}
    for p in parts:
        for it in p.patterns:
            seen.setdefault(pattern_key(it[0], it[1]), it)
    items = list(seen.values())
    if mode == "first":
        return items[:1]
    if mode == "topk" and items:
        score = np.array([it[2] for it in items], float)
        key = (pattern_divergences(circuit, d, fav, [it[:2] for it in items], score, delta)
               if rank_by == "divergence" else np.abs(score))
        items = [items[i] for i in np.argsort(-key, kind="stable")[:k]]
    return items


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the worker processes now (a search cannot be told
    to stop early, so a worker still searching is terminated)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    processes = dict(getattr(pool, "_processes", None) or {})  # what 3.14 does, by hand
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes.values():
        try:
            if proc.is_alive():
                proc.terminate()
        except (ValueError, ProcessLookupError, OSError):
            continue
    for proc in processes.values():
        try:
            proc.join(timeout=2.0)
        except (ValueError, AssertionError, OSError):
            continue
    if manager is not None:
        manager.join(timeout=2.0)  # it sees the ended workers and releases the queues


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` (called by our caller) that points at the
    first frame outside the pcfair package: the user's line."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


def _bootstrapping() -> bool:
    """True in a spawned process that is still importing its parent's main module: the caller's
    script is being re-run at import because it lacks the ``__main__`` guard."""
    import multiprocessing

    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _remaining(deadline_wall: float | None) -> float | None:
    return None if deadline_wall is None else deadline_wall - time.time()


def _serial(circuit: Circuit, d: int, fav: int, sensitive: list[int], delta: float,
            deadline_wall: float | None, **kwargs) -> SearchResult:
    deadline = (None if deadline_wall is None
                else time.perf_counter() + (deadline_wall - time.time()))
    return search(circuit, d, fav, sensitive, delta, deadline=deadline, **kwargs)


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

    ``time_limit`` is a wall-clock bound from this call: the deadline is fixed on entry and
    covers starting the workers; at the deadline the parent collects what has arrived, ends
    the other workers and returns a result marked incomplete (a search cut short never says
    "fair"). It returns within about the limit (plus at most :data:`DEADLINE_GRACE` seconds
    for partial results and the time to end the workers).

    The workers are started with ``spawn`` and import the caller's main module: a script that
    calls this (or ``certify``/``find_patterns`` with ``n_jobs > 1``) at its top level must do
    so under ``if __name__ == "__main__":``. Without the guard the workers fail to start and
    the search runs in this process instead, with a :class:`RuntimeWarning` saying so.
    """
    n_jobs = resolve_n_jobs(n_jobs)
    deadline_wall = None if time_limit is None else time.time() + float(time_limit)
    if mode == "extension":
        raise ValueError("the extension mode is not split across processes")
    kwargs = {"mode": mode, "k": k, "rank_by": rank_by,
              "assume_deterministic": assume_deterministic, "options": options}
    if n_jobs <= 1:
        return search(circuit, d, fav, sensitive, delta, time_limit=time_limit,
                      progress=progress, **kwargs)
    if _bootstrapping():
        # A worker re-running a script without the guard: end it quietly (no traceback per
        # worker); the parent sees a broken pool and searches by itself, with a warning.
        raise SystemExit(1)
    t0 = time.perf_counter()
    self_plan(circuit, assume_deterministic)  # refuse unsuitable circuits before spawning
    order = search_order(circuit, d, fav, sensitive, options.ordering)
    card = circuit.variables.cardinalities
    sens = set(sensitive)
    split, width = 0, 1
    while split < len(order) - 1 and width < 16 * n_jobs:
        v = order[split]
        width *= (2 * int(card[v]) + 1) if v in sens else (int(card[v]) + 1)
        split += 1
    from pcfair.circuit.io.json_io import to_dict

    data = to_dict(circuit)
    jobs = [(data, d, fav, sensitive, delta, deadline_wall,
             {**kwargs, "progress": False, "order": order, "partition": (w, n_jobs, split)})
            for w in range(n_jobs)]
    parts: list[SearchResult] = []
    cut = False  # stopped before every share was done: the deadline, or a witness in "first"
    if deadline_wall is not None and time.time() >= deadline_wall:
        cut = True  # the time went on the preparation: no worker is started
    else:
        try:
            parts, cut = _run_pool(jobs, n_jobs, mode, deadline_wall, time_limit)
        except BrokenProcessPool:
            warnings.warn(GUARD_WARNING, RuntimeWarning, stacklevel=_caller_stacklevel())
            res = _serial(circuit, d, fav, sensitive, delta, deadline_wall,
                          progress=progress, order=order, **kwargs)
            res.seconds = time.perf_counter() - t0
            return res
    res = SearchResult(order=order)
    res.complete = not cut and len(parts) == n_jobs and all(p.complete for p in parts)
    for p in parts:
        res.nodes += p.nodes
        res.bounds += p.bounds
        res.pruned += p.pruned
    res.patterns = merge_patterns(circuit, d, fav, parts, mode, k, rank_by, delta)
    if mode == "first" and res.patterns:
        res.complete = True  # a witness settles the question
    res.seconds = time.perf_counter() - t0
    return res


def _run_pool(jobs: list, n_jobs: int, mode: str, deadline_wall: float | None,
              time_limit: float | None) -> tuple[list[SearchResult], bool]:
    """Run the shares; returns the results that arrived and whether the run was cut short."""
    import multiprocessing as mp

    grace = 0.0 if time_limit is None else min(DEADLINE_GRACE, 0.1 * max(float(time_limit), 0))
    parts: list[SearchResult] = []
    cut = False
    pool = ProcessPoolExecutor(n_jobs, mp_context=mp.get_context("spawn"),
                               initializer=_init_worker)
    clean = False
    try:
        pending: set[Future] = {pool.submit(_worker, job) for job in jobs}
        while pending:
            left = _remaining(deadline_wall)
            timeout = None if left is None else max(0.0, left + grace)
            done, pending = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            for fut in done:
                parts.append(fut.result())  # BrokenProcessPool propagates to the caller
            if mode == "first" and any(p.patterns for p in parts):
                cut = bool(pending)  # a witness: stop the other workers
                break
            if pending and not done:
                cut = True  # the deadline (and its grace) passed
                break
        clean = not pending
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            _stop_workers(pool)
    return parts, cut

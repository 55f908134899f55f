"""Permutation test of the Conditional Bias Scan (paper App. A.3).

Each null data set is a copy of the data with the protected-class indicator A shuffled over
all rows; the *whole* scan (propensity model, Î, value filter, subset scan) is rerun on it and
its best score recorded. The p-value is ``(1 + #{null >= observed}) / (1 + R)`` (pcfair
decision; the paper gives no formula). Permutations run in worker processes when ``n_jobs``
allows; every permutation gets its own seed drawn up front, so results do not depend on the
number of workers. A deadline stops the test early: the p-value is then computed over the
permutations that finished, ``(1 + #{null >= observed}) / (1 + k)``, still a valid
permutation p-value, though coarser (its smallest value is ``1 / (1 + k)``).
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

from pcfair._progress import progress_bar
from pcfair._clock import expired
from pcfair.audits.cbs.options import CBSOptionError

__all__ = ["permutation_pvalue", "run_permutations", "resolve_n_jobs"]


def permutation_pvalue(observed: float, null_scores: Sequence[float]) -> float:
    """``(1 + #{null >= observed}) / (1 + R)``, the permutation p-value.

    The smallest attainable value is ``1 / (1 + R)``. A null score within 1e-9 (relative) of
    the observed one counts as at least as large.

    Examples
    --------
    >>> permutation_pvalue(5.0, [1.0, 2.0, 6.0, 0.5])
    0.4
    """
    null = np.asarray(null_scores, dtype=float)
    if null.size == 0:
        raise CBSOptionError("a permutation p-value needs at least one null score")
    tol = 1e-9 * max(1.0, abs(float(observed)))
    return float((1 + np.count_nonzero(null >= observed - tol)) / (1 + null.size))


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Number of worker processes: None or 1 -> 1, -1 -> all cores, k > 1 -> k.

    Examples
    --------
    >>> resolve_n_jobs(None), resolve_n_jobs(3)
    (1, 3)
    """
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise CBSOptionError(f"n_jobs={n_jobs!r} must be an integer")
    n_cpu = os.cpu_count() or 1
    if n_jobs < 0:
        return max(1, n_cpu + 1 + int(n_jobs))
    if n_jobs == 0:
        raise CBSOptionError("n_jobs=0 is not valid; use 1 for serial or -1 for all cores")
    return int(n_jobs)


_WORKER_TASK: Callable[[int], float | None] | None = None
_WORKER_LIMITS = None  # the worker's BLAS limit, held for the worker's lifetime


def _init_worker(task: Callable[[int], float | None]) -> None:
    """Hold the task in a worker process (it is sent once, not with every seed) and keep the
    worker's BLAS to one thread: the permutations are the parallel work."""
    global _WORKER_TASK, _WORKER_LIMITS
    from threadpoolctl import threadpool_limits

    _WORKER_TASK = task
    _WORKER_LIMITS = threadpool_limits(limits=1, user_api="blas")


def _run_seed(seed: int) -> float | None:
    return _WORKER_TASK(seed)


def run_permutations(
    task: Callable[[int], float | None],
    seeds: Sequence[int],
    *,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    description: str = "permutations",
    deadline: float | None = None,
) -> np.ndarray:
    """Run ``task(seed)`` for every seed, in parallel when ``n_jobs`` allows.

    Parameters
    ----------
    task : callable
        ``task(seed) -> score``, or None when a deadline cut that permutation short (its
        score would come from an incomplete scan, so it is left out). It must be picklable
        (a module-level object) to run in workers, which receive it once; an unpicklable
        task runs serially with a warning.
    seeds : sequence of int
        One seed per permuted data set.
    n_jobs : int or None
        Worker processes (-1: all cores).
    progress : bool or None
        Show a progress bar over the permutations; None shows it only where the user can
        see it (a terminal or a notebook; see :mod:`pcfair._progress`).
    description : str
        The progress bar's label.
    deadline : float, optional
        A :func:`time.time` value: permutations not started by then are not run (those
        under way stop at it through ``task``, which should be given the same deadline).

    Returns
    -------
    numpy.ndarray
        The scores of the permutations that finished, in the order of ``seeds`` (all of
        them without a deadline).

    Examples
    --------
    >>> run_permutations(float, [3, 1, 2], n_jobs=1, progress=False).tolist()
    [3.0, 1.0, 2.0]
    """
    seeds = [int(s) for s in seeds]
    workers = min(resolve_n_jobs(n_jobs), max(1, len(seeds)))
    if workers > 1:
        try:
            pickle.dumps(task)
        except Exception as err:  # noqa: BLE001 - any pickling failure means: run serially
            warnings.warn(
                f"the permutation task cannot be sent to worker processes ({err}); running "
                "the permutations serially",
                RuntimeWarning,
                stacklevel=3,
            )
            workers = 1
    out = np.full(len(seeds), np.nan)
    with progress_bar(progress, description, total=len(seeds), unit=" permutations",
                      leave=False) as bar:
        if workers == 1:
            for k, s in enumerate(seeds):
                if expired(deadline):
                    break
                score = task(s)
                if score is not None:
                    out[k] = score
                bar.update(1)
        else:
            with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                                     initargs=(task,)) as pool:
                futures = {pool.submit(_run_seed, s): k for k, s in enumerate(seeds)}
                try:
                    for fut in as_completed(futures):
                        score = fut.result()
                        if score is not None:
                            out[futures[fut]] = score
                        bar.update(1)
                        if expired(deadline):
                            break
                finally:  # at the deadline, or on an error: what has not started never runs
                    for fut in futures:
                        fut.cancel()
            # the pool has shut down: the permutations under way at the deadline have ended
            for fut, k in futures.items():
                if not fut.cancelled() and np.isnan(out[k]):
                    score = fut.result()
                    if score is not None:
                        out[k] = score
    return out[~np.isnan(out)]

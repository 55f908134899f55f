"""Permutation test of the Conditional Bias Scan (paper App. A.3).

Each null data set is a copy of the data with the protected-class indicator A shuffled over
all rows; the *whole* scan (propensity model, Î, value filter, subset scan) is rerun on it and
its best score recorded. The p-value is ``(1 + #{null >= observed}) / (1 + R)`` (pcfair
decision; the paper gives no formula). Permutations run in worker processes when ``n_jobs``
allows; every permutation gets its own seed drawn up front, so results do not depend on the
number of workers.
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from tqdm.auto import tqdm

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


def _run_chunk(task: Callable[[int], float], seeds: Sequence[int]) -> list[float]:
    return [float(task(int(s))) for s in seeds]


def run_permutations(
    task: Callable[[int], float],
    seeds: Sequence[int],
    *,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    description: str = "permutations",
) -> np.ndarray:
    """Run ``task(seed)`` for every seed, in parallel when ``n_jobs`` allows.

    Parameters
    ----------
    task : callable
        ``task(seed) -> score``; it must be picklable (a module-level object) to run in
        workers. An unpicklable task runs serially with a warning.
    seeds : sequence of int
        One seed per permuted data set.
    n_jobs : int or None
        Worker processes (-1: all cores).
    progress : bool or None
        Show a progress bar; None shows it only on an interactive terminal.

    Returns
    -------
    numpy.ndarray
        The scores, in the order of ``seeds``.

    Examples
    --------
    >>> run_permutations(float, [3, 1, 2], n_jobs=1, progress=False).tolist()
    [3.0, 1.0, 2.0]
    """
    seeds = [int(s) for s in seeds]
    workers = min(resolve_n_jobs(n_jobs), max(1, len(seeds)))
    disable = None if progress is None else not progress
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
    out = np.empty(len(seeds))
    with tqdm(total=len(seeds), desc=description, disable=disable, leave=False) as bar:
        if workers == 1:
            for k, s in enumerate(seeds):
                out[k] = task(s)
                bar.update(1)
            return out
        # several chunks per worker so the bar moves and the load stays balanced
        n_chunks = min(len(seeds), workers * 4)
        bounds = np.linspace(0, len(seeds), n_chunks + 1).astype(int)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [
                (lo, pool.submit(_run_chunk, task, seeds[lo:hi]))
                for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
                if hi > lo
            ]
            for lo, fut in futures:
                vals = fut.result()
                out[lo:lo + len(vals)] = vals
                bar.update(len(vals))
    return out

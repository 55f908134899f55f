"""Run independent chunk tasks: serially, on local processes, on any Executor, or on Dask.

:func:`map_chunks` is the one mechanism the engines use to run work that splits into
independent *chunk tasks*: pure functions of small picklable arguments whose partial results
merge exactly (counts add, heaps and fronts merge).

**Tasks.** The task function must be picklable by reference, that is defined at the top level
of an importable module (``pcfair``'s own task functions, or a function of the standard
library such as :func:`math.factorial`): worker processes and Dask workers import it by name,
and Dask workers need ``pcfair`` (the same version) installed. Each task is one tuple of
positional arguments (the *i*-th task runs ``fn(*tasks[i])``), small and picklable (a
circuit as :func:`pcfair.circuit.io.json_io.to_dict` gives it, a chunk prefix, query
parameters). On Dask, an argument that is the same object in every task (the circuit, say) is
sent to the cluster once, not once per task.

**Results.** :func:`map_chunks` never merges or reorders results: it hands each one, in
completion order (not task order), to the caller's ``on_result(index, result)``, called in
this process once per finished task. The merge must not depend on the order (sums, set
unions, heap merges, ...), which makes the answer the same on every backend. ``on_result``
returning True stops the run: pending tasks are cancelled and the call returns at once
(``stopped_early=True``, ``complete=True``); any other value (None, False, ...) goes on. An
exception raised by a task or by ``on_result`` cancels the pending tasks and propagates.

**Backends.** The same call runs

- serially in this process (``executor=None`` and ``n_jobs=1``, the default);
- on a pool of local processes that the call starts and shuts down (``n_jobs=2``,
  ``n_jobs=-1`` for every core: :func:`resolve_n_jobs`), a
  :class:`concurrent.futures.ProcessPoolExecutor` started with ``spawn``;
- on any :class:`concurrent.futures.Executor` the caller passes (a ``ThreadPoolExecutor``, a
  ``ProcessPoolExecutor``, a ``client.get_executor()``), used as is and never shut down; it
  decides how many tasks run at once (``n_jobs`` is then ignored);
- on a Dask cluster: a :class:`dask.distributed.Client`, or a scheduler address such as
  ``"tcp://127.0.0.1:8786"``, for which the call opens a ``Client`` and closes it afterwards
  (install the extra: ``pip install pcfair[distributed]``).

**Time.** ``time_limit`` (seconds from the call, pcfair's one rule:
:func:`pcfair._clock.check_time_limit`, 0 an immediate deadline) or ``deadline`` (a
:func:`time.time` value shared with the caller's other work; it overrides ``time_limit``)
bound the run: at the deadline the call stops waiting, cancels the pending tasks and returns
``complete=False``. In this process the check falls between tasks, so a task that runs on
finishes first; tasks that accept a deadline should get the same one
(:func:`pcfair._clock.deadline_from`) to stop at the same moment. When a run on the local
pool stops early or hits the deadline, its worker processes are terminated, so a task that
ignores its deadline does not keep a core busy afterwards. Dask cannot interrupt a task
already running on a worker: the cancelled task's result is discarded when it ends.

**Scripts.** Worker processes are started with ``spawn``: each imports the caller's main
module first, so a script that calls ``map_chunks`` (or an engine built on it) with
``n_jobs > 1`` at its top level needs the usual guard::

    if __name__ == "__main__":
        main()

Without it the workers fail while starting, the pool breaks, and :func:`map_chunks` finishes
the run in the calling process with a :class:`RuntimeWarning` that names the guard (same
answer, one core).

Examples
--------
>>> import math
>>> from pcfair.patterns.executors import map_chunks
>>> total = []
>>> run = map_chunks(math.factorial, [(n,) for n in range(6)],
...                  lambda i, r: total.append(r), progress=False)
>>> sum(total), run.complete, run.done, run.backend
(154, True, 6, 'serial')

The same on two local processes gives the same answer:

>>> total.clear()
>>> run = map_chunks(math.factorial, [(n,) for n in range(6)],
...                  lambda i, r: total.append(r), n_jobs=2, progress=False)
>>> sum(total), run.backend, run.complete
(154, 'processes', True)

Stop at the first result above 100 (serially the tasks finish in order):

>>> seen = []
>>> def first_big(index, result):
...     seen.append(result)
...     return result > 100
>>> run = map_chunks(math.factorial, [(n,) for n in range(10)], first_big, progress=False)
>>> run.stopped_early, run.complete, run.done, run.total
(True, True, 6, 10)

On a Dask cluster, given a client or the scheduler's address:

>>> from dask.distributed import Client                              # doctest: +SKIP
>>> client = Client("tcp://scheduler.example.org:8786")              # doctest: +SKIP
>>> run = map_chunks(pow, [(2, 3)], first_big, executor=client)      # doctest: +SKIP
>>> run = map_chunks(pow, [(2, 3)], first_big, executor="tcp://10.0.0.5:8786")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeoutError
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from pcfair._clock import deadline_from
from pcfair._progress import progress_bar
from pcfair.errors import OptionError, ResourceCappedWarning

__all__ = ["ChunkRun", "DASK_INSTALL_HINT", "GUARD_WARNING", "map_chunks",
           "resolve_n_jobs"]

DASK_INSTALL_HINT = ("running on a Dask cluster needs the 'distributed' package: "
                     "pip install pcfair[distributed]")

GUARD_WARNING = (
    "n_jobs > 1: the worker processes failed to start, so the remaining chunks ran in this "
    "process on one core. The usual cause: the script calling pcfair lacks the guard "
    "'if __name__ == \"__main__\":' around its main code; worker processes are started with "
    "'spawn' and import the main script, which must not start the computation again at import. "
    "Put the calls under that guard (or use n_jobs=1) to run in parallel.")

#: Tasks in flight at once on a caller's executor (its size is unknown here); a local pool
#: keeps two per worker.
EXECUTOR_WINDOW = 256

_ACCEPTED = ("executor must be None, a concurrent.futures.Executor, a dask.distributed.Client "
             "or a Dask scheduler address such as 'tcp://127.0.0.1:8786'")


@dataclass
class ChunkRun:
    """What a :func:`map_chunks` call did.

    Attributes
    ----------
    complete : bool
        Every task ran, or the caller stopped the run early (``on_result`` returned True).
        False only when the time limit cut the run short: then some tasks were never reported
        and a merged answer is partial.
    stopped_early : bool
        ``on_result`` returned True; the tasks still pending were cancelled.
    done : int
        Tasks whose results were handed to ``on_result``.
    total : int
        Tasks submitted (``len(tasks)``).
    seconds : float
        Wall-clock time of the call.
    backend : str
        Where the tasks ran: ``"serial"``, ``"processes"``, ``"executor"`` or ``"dask"``.
        A process pool that failed to start and fell back to this process reports
        ``"serial"``.
    """

    complete: bool
    stopped_early: bool
    done: int
    total: int
    seconds: float
    backend: str


def map_chunks(fn: Callable[..., Any], tasks: Sequence[tuple], on_result: Callable[[int, Any], Any],
               *, executor: Any = None, n_jobs: int = 1, time_limit: float | None = None,
               deadline: float | None = None, progress: bool | None = None,
               desc: str = "chunks") -> ChunkRun:
    """Run ``fn(*task)`` for every task and hand each result to ``on_result`` as it completes
    (what the tasks, the results, the backends and the time limit must be: the module
    docstring).

    Parameters
    ----------
    fn : callable
        The task function, defined at the top level of an importable module.
    tasks : sequence of tuple
        One tuple of positional arguments per task.
    on_result : callable
        ``on_result(index, result)``, in completion order; True stops the run.
    executor : None, concurrent.futures.Executor, dask.distributed.Client or str, optional
        Where the tasks run (None: here, or on ``n_jobs`` local processes).
    n_jobs : int, default 1
        Local processes when ``executor`` is None; ``-1`` is every core.
    time_limit : float, optional
        Seconds of wall-clock time from this call (0: an immediate deadline).
    deadline : float, optional
        A :func:`time.time` value; it overrides ``time_limit``.
    progress : bool, optional
        Show a progress bar over the chunks on stderr (None: when stderr is a terminal).
    desc : str, default "chunks"
        The progress bar's label.

    Returns
    -------
    ChunkRun
        Whether the run completed, stopped early or hit the deadline, how many tasks were
        reported, the time it took and the backend used.

    Raises
    ------
    TypeError
        ``fn`` or ``on_result`` is not callable, a task is not a tuple, or ``executor`` is
        none of the accepted kinds.
    ImportError
        A Dask scheduler address was given but ``distributed`` is not installed.
    OptionError
        ``n_jobs`` (:func:`resolve_n_jobs`), ``time_limit``
        (:func:`pcfair._clock.check_time_limit`) or a scheduler address is out of range.

    Examples
    --------
    Merge by a sum, which does not depend on the completion order:

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> totals = {"sum": 0}
    >>> def merge(index, result):
    ...     totals["sum"] += result
    >>> with ThreadPoolExecutor(2) as pool:
    ...     run = map_chunks(pow, [(2, k) for k in range(10)], merge, executor=pool,
    ...                      progress=False)
    >>> totals["sum"], run.backend
    (1023, 'executor')
    """
    start = time.perf_counter()
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {fn!r}")
    if not callable(on_result):
        raise TypeError(f"on_result must be callable, not {on_result!r}")
    tasks = _check_tasks(tasks)
    deadline = deadline_from(time_limit, deadline)
    kind = _executor_kind(executor)  # raises TypeError before anything starts
    workers = resolve_n_jobs(n_jobs) if kind == "none" else 1
    bar = progress_bar(progress, desc, total=len(tasks), unit=" chunks")
    state = _State(len(tasks), on_result, deadline, bar)
    with bar:
        if kind == "none" and (workers == 1 or len(tasks) <= 1):
            backend, status = "serial", _run_serial(fn, tasks, range(len(tasks)), state)
        elif kind == "none":
            backend, status = _run_processes(fn, tasks, state, workers)
        elif kind == "executor":
            backend = "executor"
            status = _run_futures(executor, fn, tasks, range(len(tasks)), state,
                                  window=EXECUTOR_WINDOW)
        else:
            backend, status = "dask", _run_on_dask(executor, kind, fn, tasks, state)
    return ChunkRun(complete=status != "timeout" or state.done == len(tasks),
                    stopped_early=status == "stopped", done=state.done, total=len(tasks),
                    seconds=time.perf_counter() - start, backend=backend)


# --------------------------------------------------------------------------------------------
# the backends: each returns "done", "stopped" (on_result said so) or "timeout"


class _State:
    """The bookkeeping the backends share: which tasks were reported, the bar, the deadline."""

    def __init__(self, total: int, on_result: Callable[[int, Any], Any],
                 deadline: float | None, bar: Any) -> None:
        self.reported = bytearray(total)
        self.done = 0
        self.on_result = on_result
        self.deadline = deadline  # a time.time() value
        self.bar = bar

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.time())

    def expired(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    def report(self, index: int, result: Any) -> bool:
        """Hand one result to ``on_result``; True when the caller asks to stop."""
        self.reported[index] = 1
        self.done += 1
        self.bar.update(1)
        return _is_stop(self.on_result(index, result))


def _is_stop(value: Any) -> bool:
    """Only True (or a NumPy True) stops: ``on_result`` may return what a merge call returns."""
    if value is True:
        return True
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_") and bool(value)


def _run_serial(fn: Callable[..., Any], tasks: Sequence[tuple], indices: Any,
                state: _State) -> str:
    for i in indices:
        if state.expired():
            return "timeout"
        if state.report(i, fn(*tasks[i])):
            return "stopped"
    return "done"


def _run_futures(executor: Executor, fn: Callable[..., Any], tasks: Sequence[tuple],
                 indices: Any, state: _State, cancel: bool = True,
                 window: int | None = None) -> str:
    """The tasks on a concurrent.futures executor, at most ``window`` in flight (all of them
    when None): a new one is submitted as each finishes, so a long list of tasks costs no
    up-front pickling and a stop leaves little to cancel. ``cancel=False`` leaves the pending
    futures to ``shutdown(cancel_futures=True)`` (a pool of this module's own: see
    :func:`_close_pool`)."""
    queue = list(indices)
    queue.reverse()
    futures: dict = {}

    def submit() -> None:
        while queue and (window is None or len(futures) < window):
            i = queue.pop()
            futures[executor.submit(fn, *tasks[i])] = i

    try:
        submit()
        while futures:
            finished = as_completed(list(futures), timeout=state.remaining())
            try:
                future = next(finished)
            except FuturesTimeoutError:  # the deadline (a task's own TimeoutError is not here)
                return "timeout"
            index = futures.pop(future)
            if state.report(index, future.result()):
                return "stopped"
            submit()
        return "done"
    finally:
        if cancel:
            for future in futures:  # pending ones are cancelled; running ones finish unheard
                future.cancel()


def _run_processes(fn: Callable[..., Any], tasks: Sequence[tuple], state: _State,
                   workers: int) -> tuple[str, str]:
    """The tasks on a pool of ``workers`` local processes started with ``spawn`` (two tasks in
    flight per worker), then the pool closed; where the workers never started (the missing
    ``__main__`` guard), the tasks not reported run here with :data:`GUARD_WARNING`.
    Returns the backend that ran them and the status."""
    status = None
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)),
                               mp_context=multiprocessing.get_context("spawn"))
    clean = False
    try:
        status = _run_futures(pool, fn, tasks, range(len(tasks)), state, cancel=False,
                              window=2 * workers)
        clean = status == "done"
    except BrokenProcessPool:
        if state.done:  # the workers had started: a task killed its worker (memory?)
            raise
    finally:
        _close_pool(pool, kill=not clean)
    if status is not None:
        return "processes", status
    warnings.warn(GUARD_WARNING, RuntimeWarning, stacklevel=3)
    rest = [i for i in range(len(tasks)) if not state.reported[i]]
    return "serial", _run_serial(fn, tasks, rest, state)


def _run_on_dask(executor: Any, kind: str, fn: Callable[..., Any], tasks: Sequence[tuple],
                 state: _State) -> str:
    """The tasks on a Dask client, or (``kind == "address"``) on a client this call opens
    for the scheduler address ``executor`` and closes afterwards."""
    if kind != "address":
        return _run_dask(executor, fn, tasks, state)
    client = _import_distributed().Client(executor, set_as_default=False)
    try:
        return _run_dask(client, fn, tasks, state)
    finally:
        client.close()


def _close_pool(pool: ProcessPoolExecutor, kill: bool) -> None:
    """Shut down a pool this module started; ``kill`` terminates workers still running tasks
    (after an early stop, the time limit or an error), so the call returns at once and no
    core stays busy with work nobody waits for.

    The pending futures must not have been cancelled one by one before: Python 3.10 and 3.11
    then fail in the pool's manager thread (``InvalidStateError`` on a cancelled future) when
    it finds its workers terminated; ``shutdown(cancel_futures=True)`` cancels them itself."""
    if not kill:
        pool.shutdown(wait=True)
        return
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def _run_dask(client: Any, fn: Callable[..., Any], tasks: Sequence[tuple], state: _State) -> str:
    """The tasks on a Dask cluster, through the client's own API: one batched ``client.map``
    (or ``submit`` for tasks of different lengths), ``distributed.as_completed`` with the
    deadline as its timeout, and ``client.cancel`` for what is left."""
    distributed = _import_distributed()
    if getattr(client, "asynchronous", False):
        raise TypeError("map_chunks needs a synchronous dask.distributed.Client "
                        "(asynchronous=False)")
    if not tasks:
        return "done"
    prefix = f"{getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex}"
    keys = [f"{prefix}-{i}" for i in range(len(tasks))]
    shared = _lift_shared(client, tasks, prefix)
    args = [tuple(shared.get(j, a) for j, a in enumerate(task)) for task in tasks]
    pending: dict = {}
    try:
        arity = {len(a) for a in args}
        if len(arity) == 1 and arity != {0}:
            futures = client.map(fn, *zip(*args), key=keys, pure=False)
        else:
            futures = [client.submit(fn, *a, key=k, pure=False) for a, k in zip(args, keys)]
        index_of = {future.key: i for i, future in enumerate(futures)}
        pending = dict(zip(index_of, futures))
        finished = distributed.as_completed(futures, loop=client.loop,
                                            timeout=state.remaining())
        del futures
        while True:
            try:
                future = next(finished)
            except StopIteration:
                return "done"
            except (TimeoutError, asyncio.TimeoutError):
                return "timeout"
            pending.pop(future.key, None)
            result = future.result()
            if state.report(index_of[future.key], result):
                return "stopped"
    finally:
        leftovers = list(pending.values()) + list(shared.values())
        if leftovers:
            client.cancel(leftovers)


def _lift_shared(client: Any, tasks: Sequence[tuple], prefix: str) -> dict:
    """Send to the cluster once each argument that is the same object in every task (the
    circuit, say), as the result of a one-off task the others depend on: the scheduler then
    holds one copy instead of one per task. (A task rather than ``client.scatter``, which
    waits for a worker: an adaptive cluster may have none yet.)"""
    if len(tasks) < 2:
        return {}
    first = tasks[0]
    lifted = {}
    for j, value in enumerate(first):
        if isinstance(value, (bool, int, float, complex, type(None))):
            continue
        if isinstance(value, (str, bytes)) and len(value) < 1024:
            continue
        if all(len(task) > j and task[j] is value for task in tasks):
            lifted[j] = client.submit(_identity, value, key=f"{prefix}-shared-{j}", pure=False)
    return lifted


def _identity(value: Any) -> Any:
    """A task that returns its argument (how :func:`_lift_shared` places shared data)."""
    return value


# --------------------------------------------------------------------------------------------
# argument checks


def _check_tasks(tasks: Any) -> list[tuple]:
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__iter__"):
        raise TypeError(f"tasks must be a sequence of argument tuples, not {type(tasks).__name__}")
    out = []
    for i, task in enumerate(tasks):
        if not isinstance(task, (tuple, list)):
            raise TypeError(f"task {i} is {task!r}, not a tuple of arguments "
                            f"(write a single argument x as (x,))")
        out.append(tuple(task))
    return out


def resolve_n_jobs(n_jobs: Any) -> int:
    """``n_jobs`` as a local process count: ``-1`` is every core; otherwise an integer >= 1,
    capped at the number of cores with a :class:`~pcfair.errors.ResourceCappedWarning`
    (processes beyond the cores only compete for them: 64 on 2 cores ran 30× slower).

    Examples
    --------
    >>> resolve_n_jobs(1)
    1
    """
    import numbers

    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise OptionError(f"n_jobs must be a positive integer or -1, not {n_jobs!r}")
    cores = os.cpu_count() or 1
    if n_jobs == -1:
        return cores
    if n_jobs < 1:
        raise OptionError(f"n_jobs must be a positive integer or -1 (every core), not {n_jobs}")
    if n_jobs > cores:
        warnings.warn(f"n_jobs={n_jobs} is more than this machine's {cores} core(s): using "
                      f"{cores} (more processes than cores only slow the run down)",
                      ResourceCappedWarning, stacklevel=3)
        return cores
    return int(n_jobs)


def _executor_kind(executor: Any) -> str:
    """``"none"``, ``"executor"``, ``"dask"`` (a Client) or ``"address"``; TypeError otherwise."""
    if executor is None:
        return "none"
    if isinstance(executor, Executor):
        return "executor"
    distributed = sys.modules.get("distributed")  # a Client exists only if this was imported
    if distributed is not None and isinstance(executor, getattr(distributed, "Client", ())):
        return "dask"
    if isinstance(executor, str):
        if ":" not in executor:
            raise OptionError(f"{executor!r} is not a Dask scheduler address; expected "
                             f"'tcp://HOST:PORT' (or 'HOST:PORT')")
        return "address"
    raise TypeError(f"{_ACCEPTED}, not {type(executor).__module__}.{type(executor).__name__}")


def _import_distributed() -> Any:
    try:
        return importlib.import_module("distributed")
    except ImportError as exc:
        raise ImportError(DASK_INSTALL_HINT) from exc

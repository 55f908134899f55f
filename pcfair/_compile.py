"""Say when numba compiles pcfair's kernels (the first run on a machine), and for how long.

A numba kernel is compiled the first time it is called with new argument types; pcfair's
kernels are all ``cache=True``, so the machine code is saved (beside the package, or under
``NUMBA_CACHE_DIR``) and later processes load it instead. The first command after installing
therefore spends most of its time compiling, silently unless told.

**How a compilation is detected.** It is *observed*, not predicted. numba's event API
(:mod:`numba.core.event`) broadcasts a ``"numba:compile"`` event around every compilation and
only then: a dispatcher that finds the signature among its compiled overloads, or in its
on-disk cache, loads it without the event (``numba.core.dispatcher.Dispatcher.compile``). So
the first such event of a pcfair kernel is the moment compiling starts, whatever the reason
(a fresh install, a new numba or Python version, an edited source file, the first use of an
engine whose kernels nothing compiled yet), and a warm run sees none. Checking beforehand
whether a marker kernel's cache index exists would be weaker: it says nothing about the other
kernels the command needs, and an index can exist yet be stale (numba keys it by the source
file's time stamp and size, so an edited file compiles again).

While a command runs, :func:`compile_notice` listens to these events. At the first one whose
dispatcher is one of pcfair's it prints, once, to standard error::

    pcfair: compiling the numerical kernels for this machine (once: numba caches them) ...

and when the command ends, the time the compilations took (the outermost compilations'
durations summed, so the work done between them does not count) and the rest of the run::

    pcfair: compiled in 9.3 s (once: the next runs load the kernels from numba's cache; the
    rest of this run took 1.7 s)

It prints only where a progress bar would show (:func:`pcfair._progress.show_progress`: standard
error is a terminal, or ``PCFAIR_PROGRESS=1``). numba compiles under one global lock, so the
events of one compilation come from one thread and the nesting count is consistent across the
engines' threads; kernels compiled in worker processes (the ``processes`` and Dask executors)
are not seen.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from numba.core import event
from tqdm import tqdm

from pcfair._progress import show_progress

#: What the first compilation of a command prints.
START_MESSAGE = ("pcfair: compiling the numerical kernels for this machine "
                 "(once: numba caches them) ...")


def _say(text: str) -> None:
    """One line on standard error, around any progress bar (never an error: a closed stream
    must not break the compilation that is running)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        tqdm.write(text, file=sys.stderr)


def is_pcfair_kernel(dispatcher: object) -> bool:
    """Whether a numba dispatcher compiles one of pcfair's functions (and not one of numba's own
    overloads, or another library's kernel).

    Examples
    --------
    >>> from pcfair.inference import _marginal_kernels
    >>> is_pcfair_kernel(_marginal_kernels.node_values_kernel), is_pcfair_kernel(len)
    (True, False)
    """
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
    return module == "pcfair" or module.startswith("pcfair.")


class CompileWatch(event.Listener):
    """A ``"numba:compile"`` listener: announces the first compilation of a pcfair kernel and
    adds up the time spent compiling pcfair's kernels (see the module docstring).

    Parameters
    ----------
    say : callable, optional
        Where the announcement goes (default: one line on standard error).

    Attributes
    ----------
    seconds : float
        Time spent in the outermost compilations of pcfair kernels so far.
    compiled : int
        How many of them there were.

    Examples
    --------
    Two new kernels of this module (a pcfair one), announced once:

    >>> import numba
    >>> watch = CompileWatch(say=print)
    >>> with event.install_listener("numba:compile", watch):
    ...     numba.njit(lambda x: x + 1)(1)
    ...     numba.njit(lambda x: x + 2)(1)
    pcfair: compiling the numerical kernels for this machine (once: numba caches them) ...
    2
    3
    >>> watch.compiled, watch.seconds > 0
    (2, True)
    """

    def __init__(self, say: Callable[[str], None] = _say) -> None:
        self.seconds = 0.0
        self.compiled = 0
        self._say = say
        self._depth = 0
        self._outer_start: float | None = None  # set while an outermost pcfair compile runs

    def on_start(self, ev: event.Event) -> None:
        """A compilation starts (numba calls this)."""
        self._depth += 1
        if self._depth == 1 and is_pcfair_kernel(ev.data.get("dispatcher")):
            if self.compiled == 0:
                self._say(START_MESSAGE)
            self._outer_start = time.perf_counter()

    def on_end(self, ev: event.Event) -> None:
        """A compilation ends, or fails (numba calls this)."""
        self._depth -= 1
        if self._depth == 0 and self._outer_start is not None:
            self.seconds += time.perf_counter() - self._outer_start
            self.compiled += 1
            self._outer_start = None

    def summary(self, elapsed: float) -> str:
        """The closing line for a run of ``elapsed`` seconds that compiled.

        Examples
        --------
        >>> watch = CompileWatch(say=print)
        >>> watch.seconds, watch.compiled = 9.31, 12
        >>> print(watch.summary(11.0))  # doctest: +NORMALIZE_WHITESPACE
        pcfair: compiled in 9.3 s (once: the next runs load the kernels from numba's cache;
        the rest of this run took 1.7 s)
        """
        rest = max(elapsed - self.seconds, 0.0)
        return (f"pcfair: compiled in {self.seconds:.1f} s (once: the next runs load the kernels "
                f"from numba's cache; the rest of this run took {rest:.1f} s)")


@contextlib.contextmanager
def compile_notice(progress: bool | None = None) -> Iterator[CompileWatch | None]:
    """Within the block, announce the first compilation of a pcfair kernel and, at its end,
    how long compiling took (see the module docstring); nothing on a warm cache.

    Parameters
    ----------
    progress : bool or None
        As for the progress bars (:func:`pcfair._progress.show_progress`): None (default)
        shows the lines where standard error is a terminal or ``PCFAIR_PROGRESS=1``.

    Yields
    ------
    CompileWatch or None
        The listener, or None where nothing is shown (then none listens).

    Examples
    --------
    >>> with compile_notice(False) as watch:
    ...     pass
    >>> watch is None
    True
    """
    if not show_progress(progress):
        yield None
        return
    watch = CompileWatch()
    start = time.perf_counter()
    with event.install_listener("numba:compile", watch):
        yield watch
    if watch.compiled:
        _say(watch.summary(time.perf_counter() - start))

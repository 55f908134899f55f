"""The one progress bar every engine shows: a terminal bar, or a notebook widget in Jupyter.

A bar is shown when ``progress`` is True, or when it is None (the default) and the user can
see it: standard error is a terminal, or the code runs in a Jupyter kernel; the environment
variable ``PCFAIR_PROGRESS`` (``0`` or ``1``) overrides that default. In a notebook the
bar is :mod:`tqdm.auto`'s widget where ``ipywidgets`` is installed (tqdm's widget fails
without it), else the text bar, which Jupyter shows too.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ``get_ipython`` says so).

    Examples
    --------
    >>> in_notebook()
    False
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = getattr(ipython, "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def show_progress(progress: bool | None) -> bool:
    """Whether a bar is shown for ``progress`` (see the module docstring).

    Examples
    --------
    >>> show_progress(True), show_progress(False)
    (True, False)
    """
    if progress is not None:
        return bool(progress)
    forced = os.environ.get("PCFAIR_PROGRESS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    stderr = sys.stderr
    return bool(stderr is not None and hasattr(stderr, "isatty") and stderr.isatty()) \
        or in_notebook()


def progress_bar(progress: bool | None, desc: str, *, total: int | None = None,
                 unit: str = " nodes", leave: bool = True):
    """A tqdm bar (a counter when ``total`` is None), shown as :func:`show_progress` says.

    Examples
    --------
    >>> with progress_bar(False, "work", total=3, unit=" chunks") as bar:
    ...     bar.update(3)
    >>> bar.disable, bar.total
    (True, 3)
    """
    if in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(desc=desc, total=total, unit=unit, disable=not show_progress(progress),
                mininterval=0.5, dynamic_ncols=True, leave=leave)

"""Keyword-only options with a grace period for positional callers (Fairlearn's habit).

The public pattern functions take their options as keywords after the threshold (``delta``):
``find_patterns(pc, "d", ["s"], 0.1, kind="topk", k=5)`` reads as what it asks, and the order of
the options may change without breaking callers. Until pcfair 0.3 a call that still passes the
options positionally, in their old order, works as before and raises a :class:`FutureWarning`
that names the keywords to use.

Examples
--------
>>> import warnings
>>> @positional_options("kind", "k")
... def find(pc, delta, *, kind="all", k=None):
...     return kind, k
>>> find("pc", 0.1, kind="topk", k=3)
('topk', 3)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     find("pc", 0.1, "topk", 3)
('topk', 3)
>>> print(caught[0].message)
pass kind='topk', k=3 as keywords: find's options after delta are keyword-only (positional use stops working in pcfair 0.3)
"""

from __future__ import annotations

import functools
import inspect
import reprlib
import warnings
from collections.abc import Callable
from typing import TypeVar

__all__ = ["positional_options"]

F = TypeVar("F", bound=Callable)


def positional_options(*old_order: str) -> Callable[[F], F]:
    """Let the keyword-only options ``old_order`` still be passed positionally, in that order,
    after the function's positional parameters, with a :class:`FutureWarning`.

    Parameters
    ----------
    *old_order : str
        The options callers could pass positionally before they became keyword-only, in
        their old order; each must be a keyword-only parameter of the decorated function.

    Returns
    -------
    callable
        A decorator. More positional arguments than the positional parameters and
        ``old_order`` together raise the usual :class:`TypeError`; an option given both
        positionally and by keyword too.

    Examples
    --------
    See the module docstring.
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        positional = [p.name for p in signature.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        keyword_only = {p.name for p in signature.parameters.values() if p.kind == p.KEYWORD_ONLY}
        unknown = [name for name in old_order if name not in keyword_only]
        if unknown:
            raise TypeError(f"{function.__name__} has no keyword-only {unknown}")
        n = len(positional)
        last = positional[-1] if positional else "the data"

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if len(args) <= n:
                return function(*args, **kwargs)
            extra = args[n:]
            if len(extra) > len(old_order):
                raise TypeError(f"{function.__name__}() takes {n} positional arguments but "
                                f"{len(args)} were given")
            moved = dict(zip(old_order, extra))
            twice = sorted(set(moved) & set(kwargs))
            if twice:
                raise TypeError(f"{function.__name__}() got multiple values for {twice}")
            shown = ", ".join(f"{k}={reprlib.repr(v)}" for k, v in moved.items())
            warnings.warn(f"pass {shown} as keywords: {function.__name__}'s options after "
                          f"{last} are keyword-only (positional use stops working in pcfair "
                          "0.3)", FutureWarning, stacklevel=2)
            return function(*args[:n], **moved, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate

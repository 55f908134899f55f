"""The audits' clock: ``time_limit=`` (seconds) and ``deadline=`` (a :func:`time.time` value).

Every audit port that runs long takes ``time_limit``; a caller that shares one clock among
several calls (``pcfair audit cbs`` scanning several protected classes) passes the same
``deadline`` to each, which overrides ``time_limit``. The limit is checked between units of
work (a restart, a permutation, a block of samples, a bootstrap replicate, a chunk of
records), so a unit under way finishes first. A run stopped by the limit keeps what it
established and says that it is incomplete, naming the limit: it never reads as a clean
"nothing found".
"""

from __future__ import annotations

import math
import numbers
import time

from pcfair.errors import OptionError

__all__ = ["check_time_limit", "deadline_from", "expired", "time_limit_note"]


def check_time_limit(time_limit: float | None) -> float | None:
    """``time_limit`` as seconds: None (no limit) or a finite number > 0.

    Raises
    ------
    OptionError
        Anything else (a bool, text, 0, a negative number, NaN, infinity).

    Examples
    --------
    >>> check_time_limit(2), check_time_limit(None)
    (2.0, None)
    >>> check_time_limit(0)
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: time_limit must be a positive number of seconds, not 0
    """
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real):
        raise OptionError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    value = float(time_limit)
    if not (math.isfinite(value) and value > 0):
        raise OptionError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
    return value


def deadline_from(time_limit: float | None, deadline: float | None = None) -> float | None:
    """The wall-clock deadline (a :func:`time.time` value): ``deadline`` when given, else
    ``time_limit`` seconds from now, else None (no limit).

    Examples
    --------
    >>> deadline_from(None) is None, deadline_from(5.0, deadline=12.5)
    (True, 12.5)
    """
    limit = check_time_limit(time_limit)
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, numbers.Real) \
                or not math.isfinite(float(deadline)):
            raise OptionError(f"deadline must be a time.time() value, not {deadline!r}")
        return float(deadline)
    return None if limit is None else time.time() + limit


def expired(deadline: float | None) -> bool:
    """Whether ``deadline`` (a :func:`time.time` value, None: never) has passed.

    Examples
    --------
    >>> expired(None), expired(0.0)
    (False, True)
    """
    return deadline is not None and time.time() >= deadline


def time_limit_note(done: int, total: int, what: str) -> str:
    """The note an incomplete result carries, e.g. ``"12 of 99 permutations (time limit)"``.

    Examples
    --------
    >>> time_limit_note(3, 50, "restarts")
    '3 of 50 restarts (time limit)'
    """
    return f"{done} of {total} {what} (time limit)"

"""The one clock of pcfair: ``time_limit=`` (seconds) and ``deadline=`` (a :func:`time.time`
value).

One rule for every entry point that takes a time limit (the pattern API, the executors'
:func:`~pcfair.patterns.executors.map_chunks`, the audits): a limit is None (no limit) or a
finite number of seconds ``>= 0``. **0 is an immediate deadline**: the run stops at its first
check and says that it is incomplete (it never reads as "fair" or "nothing found"). A limit
becomes one deadline where it enters (:func:`deadline_from`); below that, runs read the
deadline, so work split over processes stops at the same moment (``time.time()`` values
compare across processes).

Examples
--------
>>> deadline = deadline_from(0)
>>> expired(deadline), seconds_left(deadline)
(True, 0.0)
"""

from __future__ import annotations

import math
import numbers
import time

from pcfair.errors import OptionError

__all__ = ["check_time_limit", "deadline_from", "deadline_within", "expired", "seconds_left"]


def check_time_limit(time_limit: float | None) -> float | None:
    """``time_limit`` as seconds: None (no limit) or a finite number ``>= 0`` (0: a deadline
    already reached, so the run stops at once, incomplete).

    Parameters
    ----------
    time_limit : float or None
        Seconds of wall-clock time.

    Returns
    -------
    float or None
        ``float(time_limit)``, or None.

    Raises
    ------
    OptionError
        Anything else: a bool, text, a negative number, NaN, infinity.

    Examples
    --------
    >>> check_time_limit(2), check_time_limit(0), check_time_limit(None)
    (2.0, 0.0, None)
    >>> check_time_limit(-1)
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: time_limit must be a positive number of seconds or 0, not -1
    """
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real) \
            or not (math.isfinite(float(time_limit)) and float(time_limit) >= 0):
        raise OptionError("time_limit must be a positive number of seconds or 0, not "
                          f"{time_limit!r}")
    return float(time_limit)


def deadline_from(time_limit: float | None, deadline: float | None = None) -> float | None:
    """The wall-clock deadline (a :func:`time.time` value): ``deadline`` when given, else
    ``time_limit`` seconds from now (checked by :func:`check_time_limit`), else None (no
    limit).

    Parameters
    ----------
    time_limit : float or None
        Seconds from now.
    deadline : float or None
        A :func:`time.time` value shared with other calls; it overrides ``time_limit``.

    Returns
    -------
    float or None
        The deadline, or None.

    Raises
    ------
    OptionError
        ``time_limit`` is refused by :func:`check_time_limit`, or ``deadline`` is not a
        finite number.

    Examples
    --------
    >>> import time
    >>> deadline_from(None) is None, deadline_from(5.0, deadline=12.5)
    (True, 12.5)
    >>> 9.0 < deadline_from(10.0) - time.time() <= 10.0
    True
    """
    limit = check_time_limit(time_limit)
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, numbers.Real) \
                or not math.isfinite(float(deadline)):
            raise OptionError(f"deadline must be a time.time() value, not {deadline!r}")
        return float(deadline)
    return None if limit is None else time.time() + limit


def deadline_within(deadline: float | None, seconds: float | None) -> float | None:
    """``deadline`` brought forward to ``seconds`` from now (a probe's share of a run: 0 or
    less is an immediate deadline), never past itself; None or ``+inf`` seconds change
    nothing.

    Examples
    --------
    >>> deadline_within(None, None) is None, deadline_within(1.0, 60.0)
    (True, 1.0)
    >>> expired(deadline_within(None, -1.0))
    True
    """
    if seconds is None or seconds == math.inf:
        return deadline
    end = time.time() + max(0.0, float(seconds))
    return end if deadline is None else min(end, deadline)


def expired(deadline: float | None) -> bool:
    """Whether ``deadline`` (a :func:`time.time` value, None: never) has passed.

    Examples
    --------
    >>> expired(None), expired(0.0)
    (False, True)
    """
    return deadline is not None and time.time() >= deadline


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (a :func:`time.time` value), never negative; None without
    one.

    Examples
    --------
    >>> seconds_left(None), seconds_left(0.0)
    (None, 0.0)
    """
    return None if deadline is None else max(0.0, deadline - time.time())

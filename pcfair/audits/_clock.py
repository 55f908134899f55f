"""What an audit stopped by its clock says: the note of :func:`time_limit_note`.

The clock itself is pcfair's one clock (:mod:`pcfair._clock`), which the audits import
directly: ``time_limit=`` (seconds) and ``deadline=`` (a :func:`time.time` value).

Every audit port that runs long takes ``time_limit``; a caller that shares one clock among
several calls (``pcfair audit cbs`` scanning several protected classes) passes the same
``deadline`` to each, which overrides ``time_limit``. The rule is pcfair's one clock
(:mod:`pcfair._clock`: None, or a finite number of seconds ``>= 0``, 0 an immediate
deadline); this module adds the note an incomplete audit carries. The limit is checked
between units of work (a restart, a permutation, a block of samples, a bootstrap replicate,
a chunk of records), so a unit under way finishes first. A run stopped by the limit keeps
what it established and says that it is incomplete, naming the limit: it never reads as a
clean "nothing found".
"""

from __future__ import annotations

__all__ = ["time_limit_note"]


def time_limit_note(done: int, total: int, what: str) -> str:
    """The note an incomplete result carries, e.g. ``"12 of 99 permutations (time limit)"``.

    Examples
    --------
    >>> time_limit_note(3, 50, "restarts")
    '3 of 50 restarts (time limit)'
    """
    return f"{done} of {total} {what} (time limit)"

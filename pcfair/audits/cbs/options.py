"""Validation of the Conditional Bias Scan's option values (direction, family, penalty...).

Bad option values raise :class:`CBSOptionError`, a :class:`pcfair.errors.SpecError` (hence a
``ValueError``) whose message names the option, the bad value and the valid choices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pcfair.errors import SpecError

DIRECTIONS = ("positive", "negative")


class CBSOptionError(SpecError):
    """An option of the Conditional Bias Scan has an invalid value; the message lists choices.

    Examples
    --------
    >>> from pcfair.audits.cbs.scoring import BernoulliScore
    >>> try:
    ...     BernoulliScore("upward")
    ... except CBSOptionError as err:
    ...     print(err)
    direction='upward' is not valid; choose one of 'positive', 'negative'
    """


def check_choice(option: str, value: object, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; raise :class:`CBSOptionError` otherwise."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise CBSOptionError(
            f"{option}={value!r} is not valid; choose one of {', '.join(map(repr, choices))}"
        )
    return value


def direction_sign(direction: str) -> int:
    """+1 for ``"positive"`` (I above Î: q > 1, mu > 0), -1 for ``"negative"``."""
    return 1 if check_choice("direction", direction, DIRECTIONS) == "positive" else -1


def check_penalty(penalty: float) -> float:
    """The complexity penalty lambda must be a finite real number >= 0."""
    try:
        lam = float(penalty)
    except (TypeError, ValueError) as err:
        raise CBSOptionError(f"penalty={penalty!r} is not a number") from err
    if not math.isfinite(lam) or lam < 0:
        raise CBSOptionError(f"penalty={penalty!r} must be a finite number >= 0")
    return lam


def check_positive_int(option: str, value: int, minimum: int = 1) -> int:
    """An integer option that must be at least ``minimum``."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise CBSOptionError(f"{option}={value!r} must be an integer >= {minimum}")
    ivalue = int(value.__index__())
    if ivalue < minimum:
        raise CBSOptionError(f"{option}={value!r} must be an integer >= {minimum}")
    return ivalue

"""Exception classes specific to the AVOIR port (all subclass :mod:`pcfair.errors` classes)."""

from __future__ import annotations

from pcfair.errors import PCFairError, SpecError

__all__ = ["MonitorSettingError", "SpecSyntaxError"]


class SpecSyntaxError(SpecError):
    """A specification string could not be parsed; ``position`` is the offending token's offset.

    Attributes
    ----------
    text : str
        The whole specification text.
    position : int
        0-based character offset of the offending token.
    reason : str
        The message without the pointer lines.

    Examples
    --------
    >>> from pcfair.audits.avoir import SpecSyntaxError, parse_spec
    >>> try:
    ...     parse_spec("E[r] >= 0.5")
    ... except SpecSyntaxError as err:
    ...     print(err.position)
    5
    """

    def __init__(self, message: str, text: str, position: int):
        self.text = text
        self.position = position
        self.reason = message
        pointer = " " * position + "^"
        super().__init__(f"{message} (at position {position})\n  {text}\n  {pointer}")


class MonitorSettingError(PCFairError, ValueError):
    """A monitor setting (Δ, split, batch size, bound...) is out of its allowed range.

    Examples
    --------
    >>> from pcfair.audits.avoir import Monitor
    >>> from pcfair.audits.avoir.errors import MonitorSettingError
    >>> try:
    ...     Monitor("E[r] > 0.5", failure_prob=2)
    ... except MonitorSettingError as err:
    ...     print("failure_prob" in str(err))
    True
    """

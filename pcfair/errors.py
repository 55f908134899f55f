"""Exception classes raised by pcfair.

Every error pcfair raises on bad input derives from :class:`PCFairError`, so callers can catch
one class; the subclasses say what went wrong.
"""

from __future__ import annotations


class PCFairError(Exception):
    """Base class of every error pcfair raises on purpose."""


class FormatError(PCFairError, ValueError):
    """A model file is malformed. Carries the file name and the 1-based line number."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)


class StructureError(PCFairError, ValueError):
    """A circuit lacks a structural property an algorithm needs (smoothness, determinism...)."""


class VariableError(PCFairError, KeyError):
    """An unknown variable or value was named."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class EvidenceError(PCFairError, ValueError):
    """Evidence is malformed or has probability zero where a conditional is asked for."""


class DataError(PCFairError, ValueError):
    """Input data is malformed (missing values, wrong columns, unknown categories...)."""


class SpecError(PCFairError, ValueError):
    """A specification string could not be parsed; the message points at the token."""


class NumericalError(PCFairError, ValueError):
    """A computation produced a value that cannot be trusted (NaN where a probability was
    expected, an infinite or zero normaliser). Raised instead of reading such a value as
    "no pattern"."""


class ParameterError(PCFairError, ValueError):
    """A weight or probability is not a valid (log-)probability (NaN, +inf, a log above 0...)."""


class OptionError(PCFairError, ValueError):
    """An argument or command-line option is out of range, or not one of the accepted
    choices; the message names it and what is accepted."""


class MissingDependencyError(PCFairError, ImportError):
    """An optional dependency is not installed (matplotlib, the ``plot`` extra, for
    pictures); the message names the extra to install."""


class LatticeTooLarge(PCFairError, MemoryError):
    """The lattice engine's memory budget (``max_bytes``) is too small for the request; the
    message says how much is needed."""


class PCFairWarning(UserWarning):
    """Base class of the warnings pcfair issues: the call went on, with something left out."""


class SummariesOmittedWarning(PCFairWarning):
    """A census left maximal and minimal patterns out (None): their bitmap would exceed the
    memory budget, or there are more thresholds than one pass can carry. The message says
    how much memory they need."""


class ResourceCappedWarning(PCFairWarning):
    """A resource request was lowered to what the machine has (``n_jobs`` above the number of
    cores); the message says what was asked and what is used."""


class UnknownValueWarning(PCFairWarning):
    """A value the model never saw in training (a category, a number outside a binned
    column's training range) was read as unobserved (``handle_unknown="missing"``); the
    message names the column and the value."""

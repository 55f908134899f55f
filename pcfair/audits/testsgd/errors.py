"""Exception and warning classes specific to the TestSGD port.

They subclass the project-wide classes in :mod:`pcfair.errors`, so ``except PCFairError``
still catches them.
"""

from __future__ import annotations

from pcfair.errors import EvidenceError, PCFairError


class RuleSetError(PCFairError, ValueError):
    """A rule or rule set is malformed (two rules on one feature, an empty rule set...).

    Examples
    --------
    >>> issubclass(RuleSetError, ValueError)
    True
    """


class EmptyGroupError(EvidenceError):
    """No row of the data can seed a sample of the requested group (R or not-R is empty).

    Examples
    --------
    >>> issubclass(EmptyGroupError, EvidenceError)
    True
    """


class SkippedRuleSetWarning(UserWarning):
    """A frequent rule set was not scored because one of its two groups cannot be sampled.

    Examples
    --------
    >>> issubclass(SkippedRuleSetWarning, UserWarning)
    True
    """

"""Discrimination patterns: certification and mining (``pc-certifier.md``)."""

from pcfair.patterns.api import (
    Certificate,
    Pattern,
    PatternSet,
    certify,
    find_patterns,
    pattern_census,
)
from pcfair.patterns.dense import LatticeTooLarge

__all__ = ["Certificate", "LatticeTooLarge", "Pattern", "PatternSet", "certify", "find_patterns",
           "pattern_census"]

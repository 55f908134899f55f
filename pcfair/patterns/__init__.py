"""Discrimination patterns: certification and mining (``pc-certifier.md``)."""

from pcfair.patterns.api import (
    Certificate,
    Pattern,
    PatternSet,
    certify,
    find_patterns,
    pattern_census,
    sample_patterns,
)
from pcfair.patterns.dense import LatticeTooLarge
from pcfair.patterns.metrics import FairnessMetrics, fairness_metrics

__all__ = ["Certificate", "FairnessMetrics", "LatticeTooLarge", "fairness_metrics", "Pattern", "PatternSet", "certify", "find_patterns",
           "pattern_census", "sample_patterns"]

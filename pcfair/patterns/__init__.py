"""Discrimination patterns: certification and mining (``pc-certifier.md``)."""

from pcfair.errors import LatticeTooLarge
from pcfair.patterns.api import certify, find_patterns, pattern_census, sample_patterns
from pcfair.patterns.metrics import FairnessMetrics, fairness_metrics
from pcfair.patterns.results import Certificate, Pattern, PatternSet

__all__ = ["Certificate", "FairnessMetrics", "LatticeTooLarge", "fairness_metrics", "Pattern", "PatternSet", "certify", "find_patterns",
           "pattern_census", "sample_patterns"]

"""Structured regression for disaggregated evaluation across intersectional subgroups.

A port of Herlihy, Truong, Chouldechova and Dudík (FAccT 2024). The standard estimate of a
metric on a small intersectional group is noisy; :class:`StructuredRegression` fits a weighted
group-level lasso over marginal indicators and explanatory features to borrow strength across
groups, with rBLPR confidence intervals. The package also has the paper's baselines (pooled,
James-Stein, empirical Bayes), goodness-of-fit F-tests that show which attributes and
interactions drive performance differences, the semi-synthetic generating models, and
sampling of evaluation data from a PC; the evaluated model goes through
:func:`pcfair.audits._model.as_model` (``model=``).
"""

from pcfair.audits.structured_regression.estimator import (
    NotFittedError,
    SRResult,
    StructuredRegression,
)
from pcfair.audits.structured_regression.gof import gof_test, GofResult
from pcfair.audits.structured_regression.metrics import METRIC_NAMES, group_metric
from pcfair.audits.structured_regression.populations import stratified_draw
from pcfair.audits.structured_regression.semi_synthetic import true_group_metric

__all__ = [
    "METRIC_NAMES",
    "gof_test",
    "GofResult",
    "group_metric",
    "NotFittedError",
    "SRResult",
    "stratified_draw",
    "StructuredRegression",
    "true_group_metric",
]

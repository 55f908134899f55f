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

from .baselines import empirical_bayes, james_stein_bock, pooled_estimate
from .estimator import NotFittedError, SRResult, StructuredRegression
from .gof import GofResult, gof_table, gof_test, nested_f_test
from .metrics import METRIC_NAMES, group_metric
from .plot import plot_estimates
from .populations import (
    make_diabetes_like_population,
    proportional_sizes,
    sample_population,
    stratified_draw,
    stratified_sample,
)
from .semi_synthetic import SEMI_SYNTHETIC_MODELS, add_semi_synthetic_output, true_group_metric
from .variance import pooled_variance

__all__ = [
    "METRIC_NAMES",
    "SEMI_SYNTHETIC_MODELS",
    "GofResult",
    "NotFittedError",
    "SRResult",
    "StructuredRegression",
    "add_semi_synthetic_output",
    "empirical_bayes",
    "gof_table",
    "gof_test",
    "group_metric",
    "james_stein_bock",
    "make_diabetes_like_population",
    "nested_f_test",
    "plot_estimates",
    "pooled_estimate",
    "pooled_variance",
    "proportional_sizes",
    "sample_population",
    "stratified_draw",
    "stratified_sample",
    "true_group_metric",
]

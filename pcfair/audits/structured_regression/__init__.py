"""Structured regression for disaggregated evaluation across intersectional subgroups.

A port of Herlihy, Truong, Chouldechova and Dudík (FAccT 2024). The standard estimate of a
metric on a small intersectional group is noisy; :class:`StructuredRegression` fits a weighted
group-level lasso over marginal indicators and explanatory features to borrow strength across
groups, with rBLPR confidence intervals, and returns an :class:`SRResult`. :func:`gof_test`
tells which attributes and interactions drive performance differences; :func:`group_metric`
and :func:`true_group_metric` give the standard estimates and a population's ground truth;
:func:`stratified_draw` draws an evaluation set as the paper does. The evaluated model goes
through :func:`pcfair.audits._model.as_model` (``model=``).

More in the modules: the paper's baselines (:mod:`.baselines`: pooled, James-Stein, empirical
Bayes), nested F-tests (:mod:`.gof`), sampling evaluation data from a circuit
(:mod:`.populations`), the estimate plot (:mod:`.plot`).
"""

from pcfair.audits.structured_regression.estimator import (
    NotFittedError,
    SRResult,
    StructuredRegression,
)
from pcfair.audits.structured_regression.gof import GofResult, gof_test
from pcfair.audits.structured_regression.metrics import (
    METRIC_NAMES,
    group_metric,
    true_group_metric,
)
from pcfair.audits.structured_regression.populations import stratified_draw

__all__ = [
    "METRIC_NAMES",
    "GofResult",
    "NotFittedError",
    "SRResult",
    "StructuredRegression",
    "gof_test",
    "group_metric",
    "stratified_draw",
    "true_group_metric",
]

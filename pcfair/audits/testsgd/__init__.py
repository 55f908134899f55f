"""TestSGD: interpretable testing of a model against subtle group discrimination.

A port of Zhang, Sun, Wang and Sun, "TestSGD: Interpretable Testing of Neural Networks
Against Subtle Group Discrimination" (arXiv 2208.11321v1). A *rule set* is a conjunction of
rules on sensitive features ("gender=F, race=B or C, 40<=age<70", or the terms
``"gay", "muslim"`` for text). TestSGD mines the rule sets with enough support in the data
(Algorithm 1, here with exact Apriori-style pruning), estimates for each one the group
fairness score f = |P(M(x) = l | R) - P(M(x) = l | not R)| by sequential sampling within a
stated margin (Algorithm 2, batched), ranks them, and can mitigate the worst one by
retraining on generated group members.

The main entry point is :func:`audit`; :func:`group_fairness_score` scores one rule set.
The model is a circuit, a classifier or any callable from a batch (DataFrame or list of
texts) to labels (see :func:`pcfair.audits._model.as_model`); a probabilistic circuit can also
serve as the sampler (:class:`PCConditionalSampler`, or ``sampler="circuit"``).
"""

from pcfair.audits.testsgd.audit import audit, flagged, TestSGDResult
from pcfair.audits.testsgd.circuit_sampler import PCConditionalSampler
from pcfair.audits.testsgd.mitigation import mitigate, MitigationResult
from pcfair.audits.testsgd.rules import CategoricalRule, RuleSet
from pcfair.audits.testsgd.scoring import group_fairness_score
from pcfair.audits.testsgd.specs import SensitiveSpec

__all__ = [
    "audit",
    "CategoricalRule",
    "flagged",
    "group_fairness_score",
    "mitigate",
    "MitigationResult",
    "PCConditionalSampler",
    "RuleSet",
    "SensitiveSpec",
    "TestSGDResult",
]

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

from .audit import RESULT_COLUMNS, TestSGDResult, audit, flagged, score_rule_sets, scores_to_frame
from .circuit_sampler import BinCodes, PCConditionalSampler
from .errors import EmptyGroupError, RuleSetError, SkippedRuleSetWarning
from .mining import frequent_rule_sets, num_candidate_rule_sets, single_feature_rules
from .mitigation import MitigationResult, default_schedule, mitigate
from .rules import CategoricalRule, RangeRule, Rule, RuleSet, TermRule
from .scoring import (
    GroupScore,
    group_fairness_score,
    max_sample_size,
    score_from_counts,
    sequential_group_fairness_score,
)
from .specs import SensitiveSpec, resolve_specs
from .streams import GroupSampler, SampleStream
from .tabular_sampler import TabularPerturbationSampler
from .terms import DIXON_TERMS, TermMatcher
from .text_sampler import TermReplacementSampler

__all__ = [
    "BinCodes",
    "CategoricalRule",
    "DIXON_TERMS",
    "EmptyGroupError",
    "GroupSampler",
    "GroupScore",
    "MitigationResult",
    "PCConditionalSampler",
    "RESULT_COLUMNS",
    "RangeRule",
    "Rule",
    "RuleSet",
    "RuleSetError",
    "SampleStream",
    "SensitiveSpec",
    "SkippedRuleSetWarning",
    "TabularPerturbationSampler",
    "TestSGDResult",
    "TermMatcher",
    "TermReplacementSampler",
    "TermRule",
    "audit",
    "default_schedule",
    "flagged",
    "frequent_rule_sets",
    "group_fairness_score",
    "max_sample_size",
    "mitigate",
    "num_candidate_rule_sets",
    "resolve_specs",
    "score_from_counts",
    "score_rule_sets",
    "scores_to_frame",
    "sequential_group_fairness_score",
    "single_feature_rules",
]

"""Conditional Bias Scan (CBS): find the subgroup of a protected class where a classifier is most
biased, for any group-fairness definition of separation or sufficiency type.

Port of Boxer, McFowland III and Neill, *Auditing Predictive Models for Intersectional
Biases* (arXiv 2306.13064), written from the paper and ``specs/cbs.md``.

- :func:`conditional_bias_scan` runs the whole method on a DataFrame and returns a
  :class:`CBSResult`; :func:`cbs_audit` runs it for every protected value (paper Table 4).
- :data:`DEFINITIONS` names every fairness definition of the paper's Table 1.
- Building blocks: :func:`estimate_expectations` (Î by propensity re-weighting), the scores
  :class:`BernoulliScore` and :class:`GaussianLogitShiftScore`, the subset scan
  (:func:`scan`, :func:`coordinate_step`, :func:`score_subgroup`, :class:`SubsetScanner`) and
  the permutation p-value (:func:`permutation_pvalue`).
- Preprocessing and models: :func:`discretize`, :func:`circuit_propensity`; the audited
  model goes through :func:`pcfair.audits._model.as_model` (``model=``).
- The paper's experiments: :func:`make_semisynthetic`, :func:`compas_like_covariates`,
  :func:`jaccard`, and :mod:`pcfair.audits.cbs.case_study` (COMPAS, Table 4).
"""

from pcfair.audits.cbs.audit import cbs_audit, conditional_bias_scan
from pcfair.audits.cbs.definitions import DEFINITIONS
from pcfair.audits.cbs.discretize import discretize
from pcfair.audits.cbs.options import CBSOptionError
from pcfair.audits.cbs.result import CBSResult, CBSScans, subgroup_mask

__all__ = [
    "DEFINITIONS",
    "cbs_audit",
    "CBSOptionError",
    "CBSResult",
    "CBSScans",
    "conditional_bias_scan",
    "discretize",
    "subgroup_mask",
]

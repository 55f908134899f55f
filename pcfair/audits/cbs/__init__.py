"""Conditional Bias Scan (CBS): find the subgroup of a protected class where a classifier is most
biased, for any group-fairness definition of separation or sufficiency type.

Port of Boxer, McFowland III and Neill, *Auditing Predictive Models for Intersectional
Biases* (arXiv 2306.13064), written from the paper and ``specs/cbs.md``.

- :func:`conditional_bias_scan` runs the whole method on a DataFrame and returns a
  :class:`CBSResult`; :func:`cbs_audit` runs it for every protected value (paper Table 4);
  :class:`CBSScans` holds the four scans of one protected class.
- :data:`DEFINITIONS` names every fairness definition of the paper's Table 1;
  :func:`discretize` bins continuous covariates; :func:`subgroup_mask` selects a subgroup.
- Building blocks, importable from their modules: :mod:`.expectations` (Î by propensity
  re-weighting), :mod:`.scoring`, :mod:`.search` (the subset scan), :mod:`.permutation`
  (the p-value), :mod:`.models` (:func:`~.models.circuit_propensity`); the audited model goes
  through :func:`pcfair.audits._model.as_model` (``model=``).
- The paper's experiments: :mod:`.case_study` (COMPAS, Table 4); its semi-synthetic data
  with a planted bias subgroup are :func:`pcfair.datasets.synthetic.make_semisynthetic`.
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
